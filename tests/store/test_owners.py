"""Every table has one owner: its writes live in one module of the store layer.

The owner of each table is named in ``plugin_sdk/store/schema.sql``. This test
reads every SQL string in the package (``sqlscan.py``) and fails when a table
is written from a module other than its owner, or when SQL appears outside the
store layer: there are none of either (from 325 SQL strings outside the store
layer when issue 26 began).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from plugin_sdk.store import schema
from tests.store.sqlscan import statements, writes

ROOT = Path(__file__).resolve().parents[2]
STORE = "plugin_sdk/store/"
# Modules that build the schema itself: their statements are the schema.
SCHEMA_BUILDERS = {"plugin_sdk/store/migrations.py", "plugin_sdk/store/migrate.py"}
# SQL run against a database that is not the store: llm's own logs.db, read
# by the transcript importer (it never touches a memsdk table).
FOREIGN = {
    "plugin_sdk/transcripts/llm_db.py",
    "plugin_sdk/transcripts/llm_responses.py",
    "plugin_sdk/transcripts/llm_threads.py",
}
# The PostgreSQL engine's form of an owner, where its SQL must differ: the same
# owner, on the other engine (store/postgres/<x>.py stands beside store/tables/<group>/<x>.py).
ENGINE_FORMS = {
    "plugin_sdk/store/postgres/memories.py": "plugin_sdk/store/tables/memories/memories.py",
    "plugin_sdk/store/postgres/vectors.py": "plugin_sdk/store/tables/memories/vectors.py",
    "plugin_sdk/store/postgres/undo_log.py": "plugin_sdk/store/tables/queues/undo_log.py",
}
# Names a statement writes that are not store tables (temporary tables).
NOT_TABLES = {"temp", "OR", "memsdk_undo_old_"}


def _modules() -> list[Path]:
    return sorted(
        [*ROOT.joinpath("plugin_sdk").rglob("*.py"), *ROOT.joinpath("plugins").rglob("*.py")]
    )


def _scan() -> tuple[Counter[str], Counter[tuple[str, str]]]:
    owners = {s.name: s.owner for s in schema.written() if s.type == "table"}
    outside: Counter[str] = Counter()
    not_owner: Counter[tuple[str, str]] = Counter()
    for path in _modules():
        for found in statements(path, ROOT):
            if found.path in SCHEMA_BUILDERS or found.path in FOREIGN:
                continue
            if not found.path.startswith(STORE):
                outside[found.path] += 1
            for table in writes(found.sql) - NOT_TABLES:
                if owners.get(table) != ENGINE_FORMS.get(found.path, found.path):
                    not_owner[(table, found.path)] += 1
    return outside, not_owner


def test_no_sql_outside_the_store_layer():
    outside, _ = _scan()
    assert not outside, f"SQL outside plugin_sdk/store/ (move it to the table's owner): {outside}"


def test_every_table_is_written_only_by_its_owner():
    _, not_owner = _scan()
    assert not not_owner, f"tables written outside their owner (table, module): {not_owner}"


def test_every_written_table_has_an_owner_in_the_schema():
    owners = {s.name for s in schema.written() if s.type == "table"}
    _, not_owner = _scan()
    unknown = {table for table, _ in not_owner} - owners
    assert not unknown, f"statements write tables schema.sql does not have: {unknown}"


def test_the_scanner_finds_sql_and_its_writes(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        'X = "INSERT INTO memories (a) VALUES (?)"\n'
        'def f(t):\n    """Update the docs from the table."""\n'
        '    return f"UPDATE entities SET a = {t} WHERE id = ?"\n'
        'Y = "Select a category from the list"\n'
    )
    found = list(statements(module, tmp_path))
    assert [writes(f.sql) for f in found] == [{"memories"}, {"entities"}]
