"""The walk over any table by name (store/tables/walk.py): names come only from the schema."""

from __future__ import annotations

import pytest

from plugin_sdk.errors import StoreError


def test_tables_and_columns_are_the_schemas(empty_store):
    walk = empty_store.tables.walk
    names = walk.table_names()
    assert "memories" in names and "entities" in names
    assert "memories_fts" not in names  # a virtual table only when asked for
    if empty_store.engine == "sqlite":  # PostgreSQL's index is a column: no table
        assert "memories_fts" in walk.table_names(virtual=True)
    assert not any(name.startswith("sqlite_") for name in walk.table_names(virtual=True))
    assert {"id", "project", "content"} <= set(walk.columns("memories"))
    assert ("memories", "memory_id") in walk.foreign_keys("memory_entities")


@pytest.mark.parametrize(
    "call",
    [
        lambda w: w.rows("memories; DROP TABLE memories", {}),
        lambda w: w.columns("no_such_table"),
        lambda w: w.has_rows("memories", {"project = project OR 1": 1}),
        lambda w: w.update("memories", {"[status]": "x"}, {"id": 1}),
        lambda w: w.rows("memories", {}, ["id DESC"]),
        lambda w: w.insert("memories", {"nope": 1}),
        lambda w: w.delete("memories", {}),
    ],
    ids=["table", "unknown table", "where", "set", "order", "insert", "delete all"],
)
def test_a_name_the_schema_lacks_is_refused_naming_it(empty_store, call):
    with pytest.raises(StoreError, match=r"no table|no column|names no rows"):
        call(empty_store.tables.walk)
    assert "memories" in empty_store.tables.walk.table_names()


def test_a_table_added_after_the_first_walk_is_seen(empty_store):
    walk = empty_store.tables.walk
    assert not walk.has_table("later")
    empty_store.db.execute("CREATE TABLE later (id INTEGER PRIMARY KEY, project TEXT)")
    assert walk.has_table("later")
    assert walk.columns("later") == ["id", "project"]


def test_insert_rows_is_one_transaction(empty_store):
    walk = empty_store.tables.walk
    empty_store.db.execute("CREATE TABLE pairs (id INTEGER PRIMARY KEY, project TEXT NOT NULL)")
    assert walk.insert_rows("pairs", ["id", "project"], [(1, "a"), (2, "b")]) == 2
    with pytest.raises(empty_store.db.conn.IntegrityError):
        walk.insert_rows("pairs", ["id", "project"], [(3, "c"), (4, None)])
    assert [row["id"] for row in walk.rows("pairs", {}, ["id"])] == [1, 2]  # 3 went back too
    assert walk.update("pairs", {"project": "z"}, {"project": "a"}) == 1
    assert sorted(walk.distinct("pairs", "project")) == ["b", "z"]
    assert walk.delete("pairs", {"id": 2}) == 1
    assert [dict(row) for row in walk.rows("pairs", {"project": "z"})] == [
        {"id": 1, "project": "z"}
    ]
