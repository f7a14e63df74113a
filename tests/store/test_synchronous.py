"""How durable a commit is: ``synchronous`` per store, from the argument or the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from plugin_sdk import Store, resolve_pack
from plugin_sdk.errors import StoreError
from plugin_sdk.store import forget

LEVELS = {"normal": 1, "full": 2, "extra": 3}


def level(store: Store) -> int:
    return int(store.db.execute("PRAGMA synchronous").fetchone()[0])


def test_a_store_commits_with_normal_by_default_in_wal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMSDK_SYNCHRONOUS", raising=False)
    with Store(tmp_path / "a.db", project="p") as store:
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert level(store) == LEVELS["normal"]


@pytest.mark.parametrize("name", sorted(LEVELS))
def test_the_argument_and_the_environment_choose_the_level(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.delenv("MEMSDK_SYNCHRONOUS", raising=False)
    with Store(tmp_path / "a.db", project="p", synchronous=name) as store:
        assert level(store) == LEVELS[name]
    monkeypatch.setenv("MEMSDK_SYNCHRONOUS", name.upper())
    with Store(tmp_path / "b.db", project="p") as store:
        assert level(store) == LEVELS[name]


def test_an_unknown_level_is_refused_naming_where_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(StoreError, match=r"synchronous='off' is not a synchronous level"):
        Store(tmp_path / "a.db", project="p", synchronous="off")
    monkeypatch.setenv("MEMSDK_SYNCHRONOUS", "fast")
    with pytest.raises(StoreError, match=r"MEMSDK_SYNCHRONOUS='fast'"):
        Store(tmp_path / "b.db", project="p")
    assert not (tmp_path / "a.db").exists() and not (tmp_path / "b.db").exists()


def test_a_forget_commits_durably_and_leaves_the_level_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMSDK_SYNCHRONOUS", raising=False)
    with Store(tmp_path / "a.db", project="p") as store:
        store.packs.install(resolve_pack("ops"))
        memory = store.memories.write("the staging password is hunter2", store.category_names()[0])
        statements: list[str] = []
        store.db.conn.set_trace_callback(statements.append)
        try:
            forget.forget(store, memory.id, reason="a secret")
        finally:
            store.db.conn.set_trace_callback(None)
        pragmas = [i for i, sql in enumerate(statements) if sql.startswith("PRAGMA synchronous =")]
        commit = max(i for i, sql in enumerate(statements) if sql.upper().startswith("COMMIT"))
        assert statements[pragmas[0]] == "PRAGMA synchronous = 2" and pragmas[0] < commit
        assert statements[pragmas[-1]] == "PRAGMA synchronous = 1" and pragmas[-1] > commit
        assert level(store) == LEVELS["normal"]
