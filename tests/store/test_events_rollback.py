"""Events wait for the commit, and a block that rolls back takes its events with it.

``memory_written`` and friends fire through ``store.after_commit``; a nested
``atomic()`` or a ``savepoint()`` that rolls back inside a transaction that
commits must not report the writes it undid.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from plugin_sdk import Store, resolve_pack
from plugin_sdk.errors import StoreError
from plugin_sdk.plugin import hookimpl
from plugin_sdk.testing import fresh_plugin_manager


class Written:
    def __init__(self) -> None:
        self.ids: list[int] = []

    @hookimpl
    def memory_written(self, store: Store, memory_id: int, created: bool) -> None:
        self.ids.append(memory_id)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[Store, Written]]:
    plugins = fresh_plugin_manager()
    seen = Written()
    plugins.register(seen)
    with Store(tmp_path / "a.db", project="p", plugins=plugins) as s:
        s.packs.install(resolve_pack("ops"))
        yield s, seen


def blocks(store: Store) -> dict[str, Callable[[], AbstractContextManager[object]]]:
    return {"atomic": store.atomic, "savepoint": store.savepoint}


@pytest.mark.parametrize("inner", ["atomic", "savepoint"])
def test_a_rolled_back_inner_block_reports_nothing_it_undid(
    store: tuple[Store, Written], inner: str
) -> None:
    s, seen = store
    category = s.category_names()[0]
    with s.atomic():
        kept = s.memories.write("kept: before the failing block", category).id
        with pytest.raises(ValueError), blocks(s)[inner]():
            s.memories.write("undone: inside the failing block", category)
            raise ValueError("this item fails")
        with blocks(s)[inner]():
            also = s.memories.write("kept: a block that succeeds", category).id
        assert seen.ids == []  # nothing before the commit
    assert seen.ids == [kept, also]
    assert [m.id for m in s.memories.list()] == sorted([kept, also])


def test_a_savepoint_needs_an_open_transaction(store: tuple[Store, Written]) -> None:
    s, _ = store
    with pytest.raises(StoreError, match="inside a transaction"), s.savepoint():
        pass
