"""plugin_sdk.testing's store templates: a copy is the store a new one with those packs would be."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from plugin_sdk import Pack, Store
from plugin_sdk.errors import PackConflict
from plugin_sdk.store import driver
from plugin_sdk.testing import StoreTemplates, fresh_plugin_manager

# Columns that hold the time a row was written: a template's rows were written earlier.
TIMES = {"installed_at", "updated_at", "created_at", "at", "applied_at"}
TABLES = ("packs", "categories", "criteria", "criteria_history", "_sqlite_migrations")


def contents(path: Path) -> dict[str, list]:
    """sqlite_master and the policy tables, with the write times left out."""
    with closing(driver.connect(path)) as conn:
        dump: dict[str, list] = {"sqlite_master": list(conn.execute("SELECT * FROM sqlite_master"))}
        for table in TABLES:
            cursor = conn.execute(f"SELECT * FROM [{table}] ORDER BY rowid")
            columns = [d[0] for d in cursor.description]
            dump[table] = [
                {k: v for k, v in zip(columns, row, strict=True) if k not in TIMES}
                for row in cursor
            ]
        return dump


@pytest.fixture
def templates(tmp_path: Path) -> StoreTemplates:
    directory = tmp_path / "templates"
    directory.mkdir()
    return StoreTemplates(directory)


def test_a_copy_is_the_store_a_new_one_with_those_packs_would_be(templates, ops_pack, tmp_path):
    templates.open(tmp_path / "copy.db", ops_pack, project="p").close()
    with Store(tmp_path / "new.db", project="p", plugins=fresh_plugin_manager()) as store:
        store.packs.install(ops_pack)
    assert contents(tmp_path / "copy.db") == contents(tmp_path / "new.db")


def test_a_template_is_built_once_for_each_list_of_packs(templates, ops_pack, tmp_path):
    for name in ("a.db", "b.db"):
        with templates.open(tmp_path / name, ops_pack, project="p") as store:
            assert store.category_names()
    with templates.open(tmp_path / "empty.db", project="p") as store:
        assert store.category_names() == []
    assert len(list((tmp_path / "templates").iterdir())) == 2
    assert templates.template([ops_pack]) == templates.template([ops_pack])


def test_copies_are_independent(templates, ops_pack: Pack, tmp_path):
    with templates.open(tmp_path / "a.db", ops_pack, project="p") as store:
        category = store.category_names()[0]
        store.memories.write("Written in the first copy only.", category)
    with templates.open(tmp_path / "b.db", ops_pack, project="p") as store:
        assert store.memories.list() == []
    with Store(templates.template([ops_pack]), project="p") as store:
        assert store.memories.list() == []


def test_a_template_is_copied_only_to_a_new_file(templates, tmp_path):
    taken = tmp_path / "taken.db"
    taken.write_text("something else", "utf-8")
    with pytest.raises(FileExistsError, match=r"taken\.db"):
        templates.copy(taken)
    assert taken.read_text("utf-8") == "something else"


def test_a_template_that_cannot_be_built_leaves_nothing_behind(templates, ops_pack, tmp_path):
    with pytest.raises(PackConflict):
        templates.template([ops_pack, ops_pack])  # the same pack twice
    assert list((tmp_path / "templates").iterdir()) == []
    with templates.open(tmp_path / "a.db", ops_pack, project="p") as store:
        assert store.category_names()
