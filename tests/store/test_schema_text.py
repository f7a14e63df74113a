"""The schema as one text: ``plugin_sdk/store/schema.sql`` equals a freshly migrated store."""

from __future__ import annotations

from pathlib import Path

import pytest

from plugin_sdk import Store
from plugin_sdk.errors import SchemaMismatch
from plugin_sdk.store import fence, schema
from plugin_sdk.store.doctor import doctor
from plugin_sdk.store.tables.composites import toc

ROOT = Path(__file__).resolve().parents[2]


def test_schema_file_equals_a_freshly_migrated_store_statement_by_statement():
    written = schema.written()
    fresh = schema.fresh()
    assert [(s.type, s.name) for s in written] == [(s.type, s.name) for s in fresh], (
        "schema.sql lists other objects than the migrations build: "
        "run `python -m plugin_sdk.store.schema write`"
    )
    for mine, theirs in zip(written, fresh, strict=False):
        assert schema.normalise(mine.sql) == schema.normalise(theirs.sql), (
            f"{mine.type} {mine.name} in schema.sql differs from the migrations"
        )


def test_every_table_names_an_owner_module_and_a_purpose():
    for statement in schema.written():
        if statement.type != "table":
            continue
        assert statement.owner, f"table {statement.name} has no '-- owner:' line in schema.sql"
        assert statement.owner.startswith("plugin_sdk/store/"), statement.owner
        assert statement.purpose, f"table {statement.name} says nothing of what it holds"


def test_docs_store_md_lists_every_table_as_the_schema_says():
    docs = (ROOT / "docs" / "store.md").read_text(encoding="utf-8")
    assert schema.docs_text(docs, schema.written()) == docs, (
        "docs/store.md's table list is stale: run `python -m plugin_sdk.store.schema docs`"
    )


def test_normalise_ignores_layout_and_comments_but_not_meaning():
    a = "CREATE TABLE t (\n  a INT, -- the a\n  b TEXT /* b */\n);"
    assert schema.normalise(a) == schema.normalise("CREATE TABLE t (a INT,b TEXT)")
    assert schema.normalise(a) != schema.normalise("CREATE TABLE t (a INT, c TEXT)")
    assert schema.normalise("SELECT '--  x'") == "SELECT '--  x'"


def test_the_read_path_runs_the_annotation_sql_the_view_was_made_with():
    # A change to toc.py's SQL without a migration replacing the view fails here.
    view = next(s for s in schema.fresh() if s.name == "toc_rank_source")
    body = schema.normalise(view.sql)
    assert schema.normalise(toc.HEAD_SQL.format(head="m.id")) in body
    assert schema.normalise(toc.NOTE_SQL.format(head="m.id")) in body


def test_fence_refuses_an_object_whose_sql_changed(tmp_path):
    path = tmp_path / "s.db"
    Store(path, project="p").close()
    import sqlite3

    raw = sqlite3.connect(path)
    raw.execute("DROP INDEX memories_project_status")
    raw.execute("CREATE INDEX memories_project_status ON memories (project)")
    raw.commit()
    raw.close()
    with pytest.raises(
        SchemaMismatch, match="index differs from its migration: memories_project_status"
    ):
        Store(path, project="p")
    report = doctor(path, repair=True)
    assert any("differs" in f.detail and f.repaired for f in report.findings)
    Store(path, project="p").close()  # repaired: opens again
    assert fence.changed_objects is not None
