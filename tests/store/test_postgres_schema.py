"""The PostgreSQL schema (``store/schema/postgres*.sql``) against SQLite's.

Each test loads ``postgres_compat.sql`` and ``postgres.sql`` into a fresh,
uniquely named PostgreSQL schema (dropped after) and compares with a freshly
migrated SQLite store: the same tables, columns, indexes, views and
triggers; the same outcome (error message or rows) of raw SQL that the
triggers guard; SQLite's answers from the compat functions.

Needs a server: ``MEMSDK_TEST_POSTGRES`` is a libpq URL, e.g.
``postgresql://memsdk@/memsdk?host=/tmp/pg``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_sdk.store.connection import Store

URL = os.environ.get("MEMSDK_TEST_POSTGRES", "")
pytestmark = pytest.mark.skipif(
    not URL, reason="MEMSDK_TEST_POSTGRES (a libpq URL of a PostgreSQL 15 server) is not set"
)

from plugin_sdk.store.postgres.schema import FILES, STEPS  # noqa: E402

SCHEMA = Path(__file__).parents[2] / "plugin_sdk" / "store" / "schema"
# Columns the PostgreSQL schema adds (an explicit rowid, the tsvector).
ADDED_COLUMNS = {"rowid", "search", "search_len"}
# The full-text index's corpus counts (postgres_search.sql): FTS5 keeps its own.
# And each word's count of live memories (postgres_terms.sql, m028), and
# each live memory's postings (postgres_postings.sql, m031).
POSTGRES_ONLY_TABLES = {"search_stats", "search_terms", "search_postings"}
POSTGRES_ONLY_TRIGGERS = {
    f"search_{kind}_{event}"
    for kind in ("stats", "terms", "postings")
    for event in ("insert", "delete", "update")
} | {"memories_search_words"}  # m029: search and search_len (no FTS5 triggers)
# SQLite objects PostgreSQL has no counterpart of (full text is memories.search).
FTS_TRIGGERS = {"memories_fts_insert", "memories_fts_delete", "memories_fts_update"}


def _load(conn: Any) -> str:
    name = f"pgschema_test_{uuid.uuid4().hex[:12]}"
    conn.execute(f'CREATE SCHEMA "{name}"')
    conn.execute(f'SET search_path = "{name}", public')
    for file in FILES:
        conn.execute((SCHEMA / file).read_text("utf-8"))
    for sql in STEPS.values():  # the steps landed after the baseline
        conn.execute(sql)
    return name


@pytest.fixture
def pg() -> Iterator[Any]:
    """An autocommit connection whose search_path starts with a freshly loaded schema."""
    psycopg = pytest.importorskip("psycopg")
    conn = psycopg.connect(URL, autocommit=True)
    name = _load(conn)
    try:
        yield conn
    finally:
        conn.execute(f'DROP SCHEMA "{name}" CASCADE')
        conn.close()


@pytest.fixture(scope="module")
def compat() -> Iterator[Any]:
    """One schema for the module's read-only function comparisons."""
    psycopg = pytest.importorskip("psycopg")
    conn = psycopg.connect(URL, autocommit=True)
    name = _load(conn)
    try:
        yield conn
    finally:
        conn.execute(f'DROP SCHEMA "{name}" CASCADE')
        conn.close()


@pytest.fixture
def lite() -> Iterator[sqlite3.Connection]:
    store = Store(":memory:")
    yield store.db.conn
    store.close()


def _sqlite_objects(db: sqlite3.Connection) -> dict[str, set[str]]:
    rows = db.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    virtual = {n for t, n, sql in rows if t == "table" and sql.upper().startswith("CREATE VIRTUAL")}
    shadow = {n for t, n, _ in rows if t == "table" and any(n.startswith(f"{v}_") for v in virtual)}
    found: dict[str, set[str]] = {"table": set(), "index": set(), "view": set(), "trigger": set()}
    for kind, name, _sql in rows:
        if name not in virtual | shadow:
            found[kind].add(name)
    return found


def test_every_table_column_index_view_and_trigger_is_there(
    pg: Any, lite: sqlite3.Connection
) -> None:
    expected = _sqlite_objects(lite)
    schema = pg.execute("SELECT current_schema()").fetchone()[0]
    tables = {
        row[0]
        for row in pg.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s"
            " AND table_type = 'BASE TABLE'",
            [schema],
        )
    }
    assert tables == expected["table"] | POSTGRES_ONLY_TABLES
    for table in sorted(expected["table"]):
        sqlite_columns = [row[1] for row in lite.execute(f'PRAGMA table_xinfo("{table}")')]
        pg_columns = [
            row[0]
            for row in pg.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position",
                [schema, table],
            )
        ]
        assert [c for c in pg_columns if c not in ADDED_COLUMNS] == sqlite_columns, table
        assert [c for c in pg_columns if c in ADDED_COLUMNS] == pg_columns[len(sqlite_columns) :]
    indexes = {
        row[0]
        for row in pg.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s", [schema])
    }
    assert expected["index"] <= indexes
    views = {
        row[0]
        for row in pg.execute(
            "SELECT table_name FROM information_schema.views WHERE table_schema = %s", [schema]
        )
    }
    assert views == expected["view"]
    for view in sorted(views):
        sqlite_columns = [row[1] for row in lite.execute(f'PRAGMA table_info("{view}")')]
        pg_columns = [
            row[0]
            for row in pg.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position",
                [schema, view],
            )
        ]
        assert pg_columns == sqlite_columns, view
    triggers = {
        row[0]
        for row in pg.execute(
            "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND NOT t.tgisinternal",
            [schema],
        )
    }
    assert len(expected["trigger"]) == 30
    assert triggers == (expected["trigger"] - FTS_TRIGGERS) | POSTGRES_ONLY_TRIGGERS


# Raw SQL run on both engines, step by step; each step's outcome (its rows,
# or the error's message) must be the same. `?` placeholders.
SETUP = [
    "INSERT INTO packs (name, version, description, content_hash, source, document,"
    " installed_at, updated_at) VALUES ('pgtest', '1', 'd', 'h', 's', '{}', 't', 't')",
    "INSERT INTO categories (name, pack, kind, priority, created_at, updated_at)"
    " VALUES ('pgtest-notes', 'pgtest', 'content', 1, 't', 't'),"
    " ('pgtest-old', 'pgtest', 'content', 2, 't', 't')",
    "UPDATE categories SET status = 'retired' WHERE name = 'pgtest-old'",
]
NEW_MEMORY = (
    "INSERT INTO memories (project, kind, category, normalized_hash, content, status,"
    " created_at, updated_at, last_seen_at) VALUES ('proj', 'content', ?, ?, ?, ?, 't', 't', 't')"
)
SCENARIOS = {
    "closed category names": [
        (NEW_MEMORY, ["pgtest-nope", "h1", "one", "active"]),
        (NEW_MEMORY, ["pgtest-old", "h1", "one", "active"]),
        (NEW_MEMORY, ["pgtest-old", "h1", "one", "quarantined"]),
        (NEW_MEMORY, ["pgtest-notes", "h2", "two", "active"]),
        ("UPDATE memories SET category = 'pgtest-old' WHERE normalized_hash = 'h2'", []),
        # not the ids: a PostgreSQL sequence spends an id on a refused insert
        ("SELECT normalized_hash, category, status FROM memories ORDER BY 1", []),
    ],
    "status rule": [
        (NEW_MEMORY, ["pgtest-old", "h1", "one", "quarantined"]),
        ("UPDATE memories SET status = 'active' WHERE id = 1", []),
        ("UPDATE memories SET status = 'archived' WHERE id = 1", []),
        ("UPDATE categories SET status = 'active' WHERE name = 'pgtest-old'", []),
        ("UPDATE memories SET status = 'pending' WHERE id = 1", []),
        ("SELECT id, status FROM memories ORDER BY id", []),
    ],
    "head never a member": [
        (NEW_MEMORY, ["pgtest-notes", "h1", "head", "active"]),
        (NEW_MEMORY, ["pgtest-notes", "h2", "member a", "active"]),
        (NEW_MEMORY, ["pgtest-notes", "h3", "member b", "active"]),
        (
            "INSERT INTO composites (type, head_memory_id, created_at, updated_at)"
            " VALUES ('sequence', 1, 't', 't')",
            [],
        ),
        ("INSERT INTO composite_members VALUES (1, 1, 0)", []),
        ("INSERT INTO composite_members VALUES (1, 2, 0), (1, 3, 1)", []),
        ("UPDATE composites SET head_memory_id = 2 WHERE id = 1", []),
        ("UPDATE composite_members SET member_memory_id = 1 WHERE member_memory_id = 3", []),
        ("SELECT composite_id, member_memory_id, position FROM composite_members ORDER BY 2", []),
    ],
    "table of contents kept by triggers": [
        (NEW_MEMORY, ["pgtest-notes", "h1", "head", "active"]),
        (NEW_MEMORY, ["pgtest-notes", "h2", "member a", "active"]),
        (NEW_MEMORY, ["pgtest-notes", "h3", "member b", "active"]),
        (
            "INSERT INTO composites (type, head_memory_id, created_at, updated_at)"
            " VALUES ('theme', 1, 't', 't')",
            [],
        ),
        ("INSERT INTO composite_members VALUES (1, 2, 0), (1, 3, 1)", []),
        ("SELECT memory_id, tier, head, note, shared, strength FROM toc_rank ORDER BY 1", []),
        ('UPDATE composites SET layout = \'{"map": {"groups": 2, "memories": 5}}\'', []),
        ("SELECT memory_id, note FROM toc_rank ORDER BY 1", []),
        ('UPDATE composites SET layout = \'{"map": {"memories": 1}}\'', []),
        ("SELECT memory_id, note FROM toc_rank ORDER BY 1", []),
        ("UPDATE memories SET status = 'archived' WHERE id = 1", []),
        ("SELECT memory_id, tier, head, note FROM toc_rank ORDER BY 1", []),
        (
            "INSERT INTO memory_cells (memory_id, memory_type, referent, signal, strength)"
            " VALUES (2, 'semantic', 'self', 's', 0.5)",
            [],
        ),
        ("UPDATE memories SET pinned = 1, scope = 'global', shareable = 1 WHERE id = 3", []),
        ("SELECT memory_id, tier, strength, shared FROM toc_rank ORDER BY 1", []),
        ("DELETE FROM composites", []),
        ("SELECT memory_id, tier, head, note FROM toc_rank ORDER BY 1", []),
    ],
    "vectors deleted when the text changes": [
        (NEW_MEMORY, ["pgtest-notes", "h1", "one", "active"]),
        (NEW_MEMORY, ["pgtest-notes", "h2", "two", "active"]),
        ("UPDATE vector_state SET mirror_model = 'm' WHERE id = 1", []),
        (
            "INSERT INTO memory_vectors (model, memory_id, dim, vector, content_hash, embedded_at)"
            " VALUES ('m', 1, 1, ?, 'c', 't'), ('m', 2, 1, ?, 'c', 't'), ('other', 2, 1, ?, 'c', 't')",
            [b"\x00\x00\x80?", b"\x00\x00\x80?", b"\x00\x00\x80?"],
        ),
        (
            "INSERT INTO memory_vectors (model, memory_id, dim, vector, content_hash, embedded_at)"
            " VALUES ('m', 1, 2, ?, 'c', 't')",
            [b"\x00\x00\x80?"],
        ),
        ("SELECT memory_id FROM vector_changes ORDER BY 1", []),
        ("DELETE FROM vector_changes", []),
        ("UPDATE memories SET importance = 60, content = content WHERE id = 1", []),
        ("UPDATE memories SET content = 'two, edited' WHERE id = 2", []),
        ("SELECT model, memory_id FROM memory_vectors ORDER BY 1, 2", []),
        ("SELECT memory_id FROM vector_changes ORDER BY 1", []),
        ("UPDATE memories SET status = 'archived' WHERE id = 1", []),
        ("SELECT model, memory_id FROM memory_vectors ORDER BY 1, 2", []),
    ],
    "near-duplicate queue": [
        (NEW_MEMORY, ["pgtest-notes", "h1", "one", "active"]),
        (NEW_MEMORY, ["pgtest-notes", "h2", "two", "active"]),
        ("SELECT memory_id FROM neardup_dirty ORDER BY 1", []),
        ("DELETE FROM neardup_dirty", []),
        ("INSERT INTO neardup_bands VALUES (7, 1, 1), (7, 2, 1), (9, 2, 1)", []),
        ("UPDATE memories SET importance = 70 WHERE id = 1", []),
        ("SELECT memory_id FROM neardup_dirty ORDER BY 1", []),
        ("UPDATE memories SET content = 'two again' WHERE id = 2", []),
        ("SELECT memory_id FROM neardup_dirty ORDER BY 1", []),
        ("DELETE FROM memories WHERE id = 2", []),
        ("SELECT bucket, memory_id FROM neardup_bands ORDER BY 1, 2", []),
        ("SELECT memory_id FROM neardup_dirty ORDER BY 1", []),
    ],
    "checks and keys": [
        (NEW_MEMORY, ["pgtest-notes", "h1", "one", "active"]),
        (NEW_MEMORY, ["pgtest-notes", "h1", "one again", "active"]),
        ("UPDATE memories SET importance = 101 WHERE id = 1", []),
        ("INSERT INTO memory_entities VALUES (1, 99, 'actor')", []),
        ("INSERT INTO vector_state (id) VALUES (2)", []),
        ("SELECT count(*) FROM memories", []),
    ],
}


def _outcome_sqlite(db: sqlite3.Connection, sql: str, params: list[Any]) -> tuple[str, Any]:
    try:
        rows = db.execute(sql, params).fetchall()
    except sqlite3.Error as error:
        return "error", _kind(str(error))
    return "rows", [tuple(_plain(v) for v in row) for row in rows]


def _outcome_pg(conn: Any, sql: str, params: list[Any]) -> tuple[str, Any]:
    import psycopg

    try:
        cursor = conn.execute(sql.replace("?", "%s"), params)
        rows = cursor.fetchall() if cursor.description else []
    except psycopg.Error as error:
        message = error.diag.message_primary or str(error)
        if message.startswith("memsdk:"):
            assert error.sqlstate == "P0001", message
        return "error", _kind(message)
    return "rows", [tuple(_plain(v) for v in row) for row in rows]


def _kind(message: str) -> str:
    """The trigger's message as it is; a constraint's error by its kind (engines word them differently)."""
    if message.startswith("memsdk:"):
        return message
    lowered = message.lower()
    for kind in ("unique", "check", "foreign key"):
        if kind in lowered:
            return kind
    return message


def _plain(value: Any) -> Any:
    return (
        float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    )


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_triggers_and_constraints_behave_as_on_sqlite(
    scenario: str, pg: Any, lite: sqlite3.Connection
) -> None:
    for sql in SETUP:
        assert _outcome_sqlite(lite, sql, [])[0] == "rows"
        assert _outcome_pg(pg, sql, [])[0] == "rows"
    outcomes = []
    for sql, params in SCENARIOS[scenario]:
        on_sqlite = _outcome_sqlite(lite, sql, params)
        assert _outcome_pg(pg, sql, params) == on_sqlite, sql
        outcomes.append(on_sqlite[0])
    # Each scenario exercises a refusal or a change a trigger made.
    assert "error" in outcomes or scenario in {
        "table of contents kept by triggers",
        "vectors deleted when the text changes",
        "near-duplicate queue",
    }


def test_identity_follows_explicit_ids_after_reset(pg: Any) -> None:
    for sql in SETUP:
        pg.execute(sql)
    pg.execute(
        NEW_MEMORY.replace("(project", "(id, project")
        .replace("VALUES (", "VALUES (41, ")
        .replace("?", "%s"),
        ["pgtest-notes", "h1", "one", "active"],
    )
    assert pg.execute("SELECT memsdk_reset_sequences()").fetchone()[0] > 20
    pg.execute(NEW_MEMORY.replace("?", "%s"), ["pgtest-notes", "h2", "two", "active"])
    assert [r[0] for r in pg.execute("SELECT id FROM memories ORDER BY id")] == [41, 42]


def test_search_column_holds_the_text_as_the_query_parser_cuts_it_stemmed(pg: Any) -> None:
    for sql in SETUP:
        pg.execute(sql)
    pg.execute(
        NEW_MEMORY.replace("?", "%s"),
        ["pgtest-notes", "h1", "Deploying db.example.com v3.14 runs", "active"],
    )
    pg.execute(
        NEW_MEMORY.replace("?", "%s"), ["pgtest-notes", "h2", "example archived", "archived"]
    )

    def found(words: str) -> list[int]:
        rows = pg.execute(
            "SELECT id FROM memories WHERE status = 'active' "
            "AND search @@ plainto_tsquery('memsdk', %s) ORDER BY id",
            [words],
        )
        return [row[0] for row in rows]

    assert found("example") == [1]  # db.example.com is three tokens, as FTS5 cuts it
    assert found("deploy run") == [1]  # stemmed on both sides, as FTS5's porter
    assert found("14") == [1]
    row = pg.execute("SELECT search_len FROM memories WHERE id = 1").fetchone()
    assert row[0] == 7  # deploying db example com v3 14 runs
    stats = pg.execute("SELECT rows, total_len FROM search_stats").fetchone()
    assert stats == (1, 7)  # the live rows only
    pg.execute("UPDATE memories SET status = 'archived' WHERE id = 1")
    assert pg.execute("SELECT rows, total_len FROM search_stats").fetchone() == (0, 0)


TRICKY_TEXTS = [
    "",
    "...",
    " lead and trail ",
    "x",
    "a--b..c  d",
    "1.2.3 eu-west-1 web-01.prod:8080 http://x.y/z a@b.com",
    "Straße café naïve 東京 ünïcode—dash",
    "tab\there\nnew line\r\n",
]


def _index_columns(pg: Any) -> list[tuple[Any, ...]]:
    return pg.execute(
        "SELECT search = to_tsvector('memsdk', memsdk_words(content)),"
        " search_len = memsdk_word_count(content) FROM memories ORDER BY id"
    ).fetchall()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=60), min_size=1, max_size=5))
def test_search_columns_are_the_texts_words_however_the_row_is_written(texts: list[str]) -> None:
    """m029's trigger sets search and search_len as the generated columns computed them."""
    psycopg = pytest.importorskip("psycopg")
    conn = psycopg.connect(URL, autocommit=True)
    name = _load(conn)
    try:
        for sql in SETUP:
            conn.execute(sql)
        texts = [t.replace("\x00", "") for t in texts] + TRICKY_TEXTS
        for i, text in enumerate(texts):
            conn.execute(NEW_MEMORY.replace("?", "%s"), ["pgtest-notes", f"h{i}", text, "active"])
        assert _index_columns(conn) == [(True, True)] * len(texts)
        conn.execute("UPDATE memories SET content = content || ' appended-words 42'")
        conn.execute("UPDATE memories SET search = NULL, search_len = -1 WHERE id % 2 = 0")
        conn.execute("UPDATE memories SET seen_count = seen_count + 1")
        assert _index_columns(conn) == [(True, True)] * len(texts)
        stats = conn.execute("SELECT rows, total_len FROM search_stats").fetchone()
        assert (
            stats
            == conn.execute(
                "SELECT count(*), sum(memsdk_word_count(content)) FROM memories"
            ).fetchone()
        )
    finally:
        conn.execute(f'DROP SCHEMA "{name}" CASCADE')
        conn.close()


def test_toc_follows_a_many_row_update_and_skips_unranked_columns(pg: Any) -> None:
    for sql in SETUP:
        pg.execute(sql)
    for i in range(3):
        pg.execute(NEW_MEMORY.replace("?", "%s"), ["pgtest-notes", f"h{i}", f"text {i}", "active"])
    pg.execute("UPDATE memories SET seen_count = seen_count + id, importance = 90 WHERE id < 3")
    toc = "SELECT memory_id, seen_count, importance FROM toc_rank ORDER BY 1"
    assert pg.execute(toc).fetchall() == [(1, 2, 90), (2, 3, 90), (3, 1, 50)]
    pg.execute("UPDATE memories SET status = 'archived' WHERE id = 2")
    assert [row[0] for row in pg.execute(toc)] == [1, 3]
    # A change the ranking does not read leaves toc_rank as it is (nothing refreshed).
    pg.execute("UPDATE toc_rank SET importance = 7 WHERE memory_id = 1")
    pg.execute("UPDATE memories SET retrieval_count = 5, importance = importance WHERE id = 1")
    assert pg.execute(toc).fetchall()[0] == (1, 2, 7)


# The compat functions: SQLite's answer for each expression.
EXPRESSIONS = [
    "julianday('2026-12-02T12:28:05.123456+00:00')",
    "julianday('2026-12-02 12:28:05.5-03:30')",
    "julianday('2026-02-31')",
    "julianday('2026-01-01T')",
    "julianday('12:00')",
    "julianday('24:00')",
    "julianday('2026-1-01')",
    "julianday('2026-01-01Z')",
    "julianday('2026-01-01 10:00+15:00')",
    "julianday('2460000.5')",
    "julianday('-5')",
    "julianday('2026-13-01')",
    "julianday('2026-01-01 10:00:00.')",
    "max(1, 2.5)",
    "max(1, NULL)",
    "min(3, 2, 1)",
    "max(0.0, julianday('2026-01-02') - julianday('2026-01-01'))",
    "min(5, max(7, 1), 6)",
    "json_extract('{\"a\": {\"b\": 5}}', '$.a.b')",
    "json_extract('{\"a\": \"x y\"}', '$.a')",
    "json_extract('{\"a\": [1, 2, 3]}', '$.a[1]')",
    "json_extract('{\"a\": [1, 2, 3]}', '$.a[#-1]')",
    "json_extract('{\"a\": [1, 2, 3]}', '$.a[5]')",
    'json_extract(\'{"a": true, "b": false, "c": null}\', \'$.a\')',
    'json_extract(\'{"a": true, "b": false, "c": null}\', \'$.b\')',
    'json_extract(\'{"a": true, "b": false, "c": null}\', \'$.c\')',
    "json_extract('{\"a.b\": 1}', '$.\"a.b\"')",
    "json_extract('[1, 2]', '$.a')",
    "json_extract('{\"0\": 1}', '$[0]')",
    'json_extract(\'{"payload_typed": {"text": "hi"}}\', \'$.payload_typed.text\')',
    "json_extract(NULL, '$.a')",
    "json_array(1, 2, 3)",
    "json_array('a', 'b\"c')",
    "hex('proj é')",
    "instr('hello', 'l')",
    "instr('hello', 'z')",
    "instr('hello', '')",
    "glob('a*c', 'abbbc')",
    "glob('a?c', 'abbc')",
    "glob('[a-c]x*', 'bxy')",
    "glob('[^a-c]x', 'bx')",
    "glob('a.c', 'abc')",
    "glob('A*', 'abc')",
    "typeof('x')",
    "datetime('2026-12-02T12:28:05.123456+00:00')",
    "datetime('2026-01-31', '+1 month')",
    "datetime('2026-03-01 10:00', '-1 day', '+1.5 hours')",
    "datetime('2026-05-17 10:20:30', 'start of month')",
    "datetime('2026-05-17 10:20:30', 'start of year', '+2 years')",
    "strftime('%Y-%m-%dT%H:%M:%f %j %s %w %%', '2026-12-02T12:28:05.123456+00:00')",
    "'Abc' = 'aBC' COLLATE NOCASE",
    "round(CAST('0.1234567891234' AS float8), 9)",
    "round(CAST('-2.5' AS float8), 0)",
]
AGGREGATES = [
    "SELECT group_concat(x) FROM (SELECT 'a' AS x UNION ALL SELECT NULL UNION ALL SELECT 'b') AS t",
    "SELECT group_concat(x, '; ') FROM (SELECT 'a' AS x UNION ALL SELECT 'b') AS t",
    "SELECT group_concat(x) FROM (SELECT 'a' AS x) AS t WHERE x = 'z'",
    "SELECT total(x) FROM (SELECT 1.5 AS x UNION ALL SELECT NULL UNION ALL SELECT 2) AS t",
    "SELECT total(x) FROM (SELECT 1.5 AS x) AS t WHERE x > 9",
    "SELECT key, value, type, atom FROM json_each('[1, 2.5, \"x\", null, true, false]')",
    'SELECT key, value, type FROM json_each(\'{"z": 1, "a": "b"}\')',
    "SELECT key, value, type, atom FROM json_each('7')",
]


def _same(sqlite_value: Any, pg_value: Any) -> bool:
    """Equal, with PostgreSQL's text for SQLite's numbers where the function returns text."""
    if isinstance(pg_value, bool):
        pg_value = int(pg_value)
    if isinstance(sqlite_value, (int, float)) and isinstance(pg_value, str):
        return str(sqlite_value) == pg_value
    if isinstance(sqlite_value, (int, float)) and pg_value is not None:
        return float(sqlite_value) == float(pg_value)
    return bool(sqlite_value == pg_value)


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_compat_function_gives_sqlites_answer(expression: str, compat: Any) -> None:
    expected = sqlite3.connect(":memory:").execute(f"SELECT {expression}").fetchone()[0]
    got = compat.execute(f"SELECT {expression}").fetchone()[0]
    assert _same(expected, got), (expected, got)


@pytest.mark.parametrize("query", AGGREGATES)
def test_compat_aggregates_and_json_each_give_sqlites_rows(query: str, compat: Any) -> None:
    expected = sqlite3.connect(":memory:").execute(query).fetchall()
    got = compat.execute(query).fetchall()
    assert len(got) == len(expected)
    for want, have in zip(expected, got, strict=True):
        assert all(_same(w, h) for w, h in zip(want, have, strict=True)), (want, have)


def _both(compat: Any, expression: str, params: list[Any]) -> tuple[Any, Any]:
    expected = sqlite3.connect(":memory:").execute(f"SELECT {expression}", params).fetchone()[0]
    got = compat.execute(f"SELECT {expression}".replace("?", "%s"), params).fetchone()[0]
    return expected, got


stamps = st.datetimes(
    min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 30), timezones=st.just(None)
)
offsets = st.integers(min_value=-14 * 60 + 1, max_value=14 * 60 - 1).map(
    lambda minutes: dt.timezone(dt.timedelta(minutes=minutes))
)


@settings(max_examples=150, deadline=None)
@given(
    stamp=stamps,
    zone=st.none() | offsets,
    spec=st.sampled_from(["microseconds", "milliseconds", "seconds", "minutes"]),
    sep=st.sampled_from(["T", " "]),
)
def test_julianday_is_sqlites(
    compat: Any, stamp: dt.datetime, zone: Any, spec: str, sep: str
) -> None:
    text = (stamp.replace(tzinfo=zone) if zone else stamp).isoformat(sep=sep, timespec=spec)
    expected, got = _both(compat, "julianday(?)", [text])
    assert expected == got, text


numbers = st.none() | st.integers(min_value=-(2**40), max_value=2**40)


@settings(max_examples=150, deadline=None)
@given(values=st.lists(numbers, min_size=2, max_size=5), which=st.sampled_from(["max", "min"]))
def test_scalar_max_min_are_sqlites(compat: Any, values: list[int | None], which: str) -> None:
    args = ", ".join("NULL" if v is None else str(v) for v in values)
    expected, got = _both(compat, f"{which}({args})", [])
    assert expected == got


# PostgreSQL's text holds no NUL character (SQLite's does).
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-1000, 1000)
    | st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=8)
)
documents = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text("abc_", min_size=1, max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(
    document=st.dictionaries(st.text("abc_", min_size=1, max_size=3), documents, min_size=1),
    data=st.data(),
)
def test_json_extract_is_sqlites_for_scalars(
    compat: Any, document: dict[str, Any], data: Any
) -> None:
    key = data.draw(st.sampled_from(sorted(document)))
    path, target = f"$.{key}", document[key]
    if isinstance(target, list) and target:
        index = data.draw(st.integers(0, len(target)))
        path += f"[{index}]"
        target = target[index] if index < len(target) else None
    expected, got = _both(compat, "json_extract(?, ?)", [json.dumps(document), path])
    if isinstance(target, (list, dict)):
        # containers: the same JSON, written with other spacing and key order
        assert json.loads(expected) == json.loads(got) == target
    else:
        assert _same(expected, got), (document, path, expected, got)
