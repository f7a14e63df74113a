"""The schema fence on PostgreSQL, and the invariants its triggers keep, as on SQLite.

A store with a migration record this memsdk does not know is refused before
anything is written; a missing table, index or trigger, or a missing record
before a later one, is named on opening and by ``memsdk doctor --db URL``.
The invariants SQLite keeps in triggers (closed category names, a head never
a member, the status rule, vectors dropped when the text changes) hold for
raw SQL on PostgreSQL with the same outcome: each step runs on a SQLite store
and a PostgreSQL store, and both must give the expected answer.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from plugin_sdk import Store, validate_pack
from plugin_sdk.cli import cli
from plugin_sdk.errors import SchemaMismatch, SchemaTooNew
from plugin_sdk.store import driver
from plugin_sdk.store.doctor import doctor
from plugin_sdk.store.migrations import KNOWN
from plugin_sdk.store.postgres import schema as pg_schema
from plugin_sdk.testing import StoreTemplates, drop_postgres_schemas, pack_document, postgres_schema

POSTGRES_URL = os.environ.get("MEMSDK_TEST_POSTGRES", "")
pytestmark = pytest.mark.skipif(
    not POSTGRES_URL, reason="PostgreSQL: set MEMSDK_TEST_POSTGRES to a database URL to run it"
)
RECORDS = "_memsdk_migrations"
LOG, OLD = "HARBOUR_LOG", "HARBOUR_OLD"
HARBOUR = validate_pack(
    pack_document("harbour", "1.0.0", {LOG: "content", OLD: "content"}), source="test"
)


@pytest.fixture
def pg_location() -> Iterator[Callable[[], str]]:
    """``pg_location()`` -> the URL of a new, empty schema (each dropped after the test)."""
    schemas: list[str] = []

    def location() -> str:
        url, schema = postgres_schema(POSTGRES_URL)
        schemas.append(schema)
        return url

    yield location
    drop_postgres_schemas(POSTGRES_URL, schemas)


@pytest.fixture
def migrated(pg_location: Callable[[], str]) -> str:
    """The URL of a PostgreSQL store, created and closed."""
    url = pg_location()
    Store(url, project="harbour").close()
    return url


def raw(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run ``sql`` on a connection of its own (autocommit), past the store's code."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


def state(url: str) -> dict[str, Any]:
    """What a refused open must not change: the records, the objects, every table's rows."""
    tables = [
        row[0]
        for row in raw(
            url, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"
        )
    ]
    return {
        "records": raw(url, f"SELECT id, name, applied_at FROM {RECORDS} ORDER BY id"),
        "objects": raw(
            url,
            "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() ORDER BY 1",
        ),
        "rows": {table: raw(url, f'SELECT count(*) FROM "{table}"')[0][0] for table in tables},
    }


def doctor_says(url: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["doctor", "--db", url])
    return result.exit_code, result.output


# The fence


def test_a_store_with_an_unknown_migration_is_refused_before_anything_is_written(migrated):
    # The newer memsdk's step, and one of ours left pending: opening must apply neither.
    raw(migrated, f"DELETE FROM {RECORDS} WHERE name = %s", (KNOWN[-1],))
    raw(
        migrated,
        f"INSERT INTO {RECORDS} (migration_set, name, applied_at) VALUES ('plugin_sdk', %s, 't')",
        ("m999_from_the_future",),
    )
    before = state(migrated)
    with pytest.raises(SchemaTooNew, match="unknown migrations: m999_from_the_future"):
        Store(migrated, project="harbour")
    assert state(migrated) == before
    code, output = doctor_says(migrated)
    assert code == 1 and "m999_from_the_future" in output, output


@pytest.mark.parametrize(
    ("kind", "name", "drop"),
    [
        ("table", "dreamer_state", "DROP TABLE dreamer_state CASCADE"),
        ("index", "memory_entities_latest", "DROP INDEX memory_entities_latest"),
        (
            "trigger",
            "composites_head_not_member",
            "DROP TRIGGER composites_head_not_member ON composites",
        ),
    ],
)
def test_a_missing_object_is_named_on_open_and_by_doctor(migrated, kind, name, drop):
    assert (kind, name) in pg_schema.expected_objects()
    raw(migrated, drop)
    with pytest.raises(SchemaMismatch, match=f"{kind} missing: {name}"):
        Store(migrated, project="harbour")
    report = doctor(migrated)
    assert not report.ok
    assert any(f"{kind} missing: {name}" in finding.detail for finding in report.findings)
    code, output = doctor_says(migrated)
    assert code == 1 and f"{kind} missing: {name}" in output, output


def test_a_missing_record_before_a_later_one_is_named_and_nothing_is_reapplied(migrated):
    gap = KNOWN[5]
    raw(migrated, f"DELETE FROM {RECORDS} WHERE name = %s", (gap,))
    before = state(migrated)
    with pytest.raises(SchemaMismatch, match=f"migration record missing: {gap}"):
        Store(migrated, project="harbour")
    assert state(migrated) == before  # the step was not run again over what it built
    code, output = doctor_says(migrated)
    assert code == 1 and f"migration record missing: {gap}" in output, output


# The invariants, by raw SQL, on both engines

REFUSED = "memsdk: category is not an active category of this store"
NOT_HEAD = "memsdk: a composite head cannot be its own member"
OK: list[tuple[Any, ...]] = []
MEMORY = (
    "INSERT INTO memories (project, kind, category, normalized_hash, content, status,"
    " created_at, updated_at, last_seen_at) VALUES ('harbour', 'content', ?, ?, ?, ?, 't', 't', 't')"
)
ID = "(SELECT id FROM memories WHERE normalized_hash = '{}')"
SCENARIOS: dict[str, list[tuple[str, list[Any], Any]]] = {
    "closed category names": [
        (MEMORY, ["NOT_A_CATEGORY", "h1", "one", "active"], REFUSED),
        (MEMORY, [OLD, "h1", "one", "active"], REFUSED),  # retired
        (MEMORY, [OLD, "h1", "one", "quarantined"], OK),  # kept aside, as an import does
        (MEMORY, [LOG, "h2", "two", "active"], OK),
        (f"UPDATE memories SET category = '{OLD}' WHERE normalized_hash = 'h2'", [], REFUSED),
        ("UPDATE memories SET category = 'NOPE' WHERE normalized_hash = 'h2'", [], REFUSED),
        (
            "SELECT normalized_hash, category, status FROM memories ORDER BY 1",
            [],
            [("h1", OLD, "quarantined"), ("h2", LOG, "active")],
        ),
    ],
    "status rule": [
        (MEMORY, [OLD, "h1", "one", "quarantined"], OK),
        ("UPDATE memories SET status = 'active' WHERE normalized_hash = 'h1'", [], REFUSED),
        ("UPDATE memories SET status = 'pending' WHERE normalized_hash = 'h1'", [], REFUSED),
        ("UPDATE memories SET status = 'archived' WHERE normalized_hash = 'h1'", [], OK),
        (f"UPDATE categories SET status = 'active' WHERE name = '{OLD}'", [], OK),
        ("UPDATE memories SET status = 'active' WHERE normalized_hash = 'h1'", [], OK),
        ("SELECT normalized_hash, status FROM memories", [], [("h1", "active")]),
    ],
    "head never a member": [
        (MEMORY, [LOG, "h1", "head", "active"], OK),
        (MEMORY, [LOG, "h2", "member a", "active"], OK),
        (MEMORY, [LOG, "h3", "member b", "active"], OK),
        (
            "INSERT INTO composites (type, head_memory_id, created_at, updated_at)"
            f" VALUES ('sequence', {ID.format('h1')}, 't', 't')",
            [],
            OK,
        ),
        (
            "INSERT INTO composite_members SELECT id, head_memory_id, 0 FROM composites",
            [],
            NOT_HEAD,
        ),
        (
            "INSERT INTO composite_members SELECT c.id, m.id, m.id FROM composites c, memories m"
            " WHERE m.normalized_hash IN ('h2', 'h3')",
            [],
            OK,
        ),
        (f"UPDATE composites SET head_memory_id = {ID.format('h2')}", [], NOT_HEAD),
        (
            f"UPDATE composite_members SET member_memory_id = {ID.format('h1')}"
            f" WHERE member_memory_id = {ID.format('h3')}",
            [],
            NOT_HEAD,
        ),
        (
            "SELECT h.normalized_hash, m.normalized_hash FROM composites c"
            " JOIN memories h ON h.id = c.head_memory_id"
            " JOIN composite_members cm ON cm.composite_id = c.id"
            " JOIN memories m ON m.id = cm.member_memory_id ORDER BY 2",
            [],
            [("h1", "h2"), ("h1", "h3")],
        ),
    ],
    "vectors deleted when the text changes": [
        (MEMORY, [LOG, "h1", "one", "active"], OK),
        (MEMORY, [LOG, "h2", "two", "active"], OK),
        (MEMORY, [LOG, "h3", "three", "active"], OK),
        (
            "INSERT INTO memory_vectors (model, memory_id, dim, vector, content_hash, embedded_at)"
            " SELECT 'm', id, 1, ?, 'c', 't' FROM memories",
            [b"\x00\x00\x80?"],
            OK,
        ),
        ("UPDATE memories SET importance = 60 WHERE normalized_hash = 'h1'", [], OK),
        ("UPDATE memories SET content = content WHERE normalized_hash = 'h1'", [], OK),
        ("UPDATE memories SET content = 'two, edited' WHERE normalized_hash = 'h2'", [], OK),
        ("UPDATE memories SET status = 'archived' WHERE normalized_hash = 'h3'", [], OK),
        (
            "SELECT m.normalized_hash FROM memory_vectors v JOIN memories m ON m.id = v.memory_id",
            [],
            [("h1",)],
        ),
    ],
}


def outcome(store: Store, sql: str, params: list[Any]) -> Any:
    """The rows a statement gave, or its error's message (a trigger's is the same on both)."""
    try:
        return [tuple(row) for row in store.db.execute(sql, params).fetchall()]
    except driver.IntegrityError as error:
        return str(error)


@pytest.fixture
def both_engines(
    tmp_path, memsdk_templates: StoreTemplates, pg_location: Callable[[], str]
) -> Iterator[dict[str, Store]]:
    """A SQLite store and a PostgreSQL store, each with the harbour pack, its OLD category retired."""
    stores = {
        "sqlite": memsdk_templates.open(tmp_path / "fence.db", HARBOUR, project="harbour"),
        "postgresql": Store(pg_location(), project="harbour"),
    }
    stores["postgresql"].packs.install(HARBOUR)
    for store in stores.values():
        store.db.execute("UPDATE categories SET status = 'retired' WHERE name = ?", [OLD])
    yield stores
    for store in stores.values():
        store.close()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_raw_sql_meets_the_same_invariants_on_both_engines(scenario, both_engines):
    for sql, params, expected in SCENARIOS[scenario]:
        seen = {engine: outcome(store, sql, params) for engine, store in both_engines.items()}
        assert seen == {"sqlite": expected, "postgresql": expected}, sql
