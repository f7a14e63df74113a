"""The schema on PostgreSQL: created whole, recorded step by step, fenced as on SQLite.

A new PostgreSQL store gets the schema every migration up to
:data:`BASELINE` builds, as one text (``schema/postgres_compat.sql``, then
``schema/postgres.sql``: the same tables, columns, indexes, views and, as
PL/pgSQL triggers, the same invariants as ``schema/schema.sql``; then
``schema/postgres_search.sql``, the full-text index), and one
record per step in ``_memsdk_migrations``, with the same names as on SQLite.
A step landed after the baseline has its PostgreSQL form in :data:`STEPS`;
``tests/store/test_postgres_schema.py`` fails for a known step that has
neither. The fence is SQLite's: a store with a step this memsdk does not know
is refused (:class:`~plugin_sdk.errors.SchemaTooNew`), and one that lacks an
object its records promise, or a record before a later one
(:class:`~plugin_sdk.errors.SchemaMismatch`). Migrating takes a session
advisory lock, so many processes opening one new database migrate it once.

pgvector is used when ``CREATE EXTENSION vector`` succeeds when the store is
created (or the extension is there already): the vector mirror is then a
pgvector table with an HNSW index (``postgres/vectors.py``); else vectors
are scanned exactly, as on SQLite without sqlite-vec.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime, timezone
from importlib import resources

from plugin_sdk.errors import SchemaMismatch, SchemaTooNew, StoreError
from plugin_sdk.store import driver
from plugin_sdk.store.migrations import KNOWN
from plugin_sdk.store.postgres.database import Database

#: The steps ``schema/postgres.sql`` stands for, in order.
BASELINE = KNOWN[: KNOWN.index("m026_neardup_index") + 1]
#: PostgreSQL forms of the steps landed after the baseline: name -> SQL.
STEPS: dict[str, str] = {
    "m027_memories_in_id_order": (
        "CREATE INDEX memories_project_status_id ON memories (project, status, id);"
    ),
    "m029_postgres_write_path": """
-- search and search_len from one pass of memsdk_words, by a row trigger. As
-- generated columns each was its own pass over the text (two regular
-- expressions a row), and PostgreSQL recomputed both on every UPDATE of a row
-- (memories has BEFORE UPDATE row triggers), a fold's seen_count included.
-- The trigger sets them on INSERT and on an UPDATE of content (or of them),
-- so a raw INSERT is indexed as before and a direct write to them is undone.
ALTER TABLE memories ALTER COLUMN search DROP EXPRESSION;
ALTER TABLE memories ALTER COLUMN search_len DROP EXPRESSION;
CREATE FUNCTION memories_search_words() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    words text := memsdk_words(NEW.content);
BEGIN
    NEW.search := to_tsvector('memsdk', words);
    -- The runs of letters and digits (memsdk_word_count): words holds them
    -- one space apart, with a space first or last when the text had other
    -- characters there.
    NEW.search_len := CASE WHEN words = '' THEN 0 ELSE
        length(words) - length(replace(words, ' ', '')) + 1
        - (left(words, 1) = ' ')::integer - (right(words, 1) = ' ')::integer END;
    RETURN NEW;
END $$;
CREATE TRIGGER memories_search_words BEFORE INSERT OR UPDATE OF content, search, search_len
    ON memories FOR EACH ROW EXECUTE FUNCTION memories_search_words();
-- The TOC refresh after an update: once a statement, for the rows whose
-- ranked columns changed (the row trigger ran the ranking once a row: 3.6 ms
-- each for a batch's folds). AFTER row triggers run at the statement's end,
-- so each row's refresh read the same final state this one reads.
CREATE OR REPLACE FUNCTION toc_memory_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[] := ARRAY(
        SELECT n.id FROM new_rows n LEFT JOIN old_rows o ON o.id = n.id
        WHERE o.id IS NULL
           OR (n.status, n.pinned, n.importance, n.seen_count, n.last_seen_at, n.token_count,
               n.tokenizer, n.category, n.kind, n.project, n.scope, n.shareable)
              IS DISTINCT FROM
              (o.status, o.pinned, o.importance, o.seen_count, o.last_seen_at, o.token_count,
               o.tokenizer, o.category, o.kind, o.project, o.scope, o.shareable));
BEGIN
    IF cardinality(ids) > 0 THEN
        PERFORM memsdk_toc_refresh(ids);
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER toc_memory_update ON memories;
CREATE TRIGGER toc_memory_update AFTER UPDATE ON memories
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION toc_memory_update();
""",
}
RECORDS = "_memsdk_migrations"
#: The schema text, in the order it is loaded.
FILES = ("postgres_compat.sql", "postgres.sql", "postgres_search.sql", "postgres_undo.sql")
_MIGRATE_LOCK = "hashtext('memsdk-migrate:' || current_schema())"
_OBJECT = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:UNIQUE\s+)?(TABLE|INDEX|VIEW|TRIGGER)\s+"
    r"(?:IF\s+NOT\s+EXISTS\s+)?\"?(\w+)\"?",
    re.IGNORECASE | re.MULTILINE,
)


@functools.cache
def text(name: str) -> str:
    """One of the schema files in ``plugin_sdk/store/schema/``."""
    return resources.files("plugin_sdk.store.schema").joinpath(name).read_text("utf-8")


STEPS["m028_search_terms"] = text("postgres_terms.sql")  # the step's text is a file of its own
STEPS["m030_toc_triggers_per_statement"] = text("postgres_toc_statements.sql")
STEPS["m031_search_postings"] = text("postgres_postings.sql")


@functools.cache
def expected_objects() -> frozenset[tuple[str, str]]:
    """``(type, name)`` of every table, index, view and trigger the schema text creates."""
    return frozenset(
        (kind.lower(), name) for file in FILES for kind, name in _OBJECT.findall(text(file))
    )


def _has_records(db: Database) -> bool:
    row = db.execute("SELECT to_regclass(?)", [f"{_schema(db)}.{RECORDS}"]).fetchone()
    return row is not None and row[0] is not None


def _schema(db: Database) -> str:
    return str(db.execute("SELECT current_schema()").fetchone()[0])


def applied(db: Database) -> list[str]:
    """Names of the applied steps, in the order they were applied."""
    if not _has_records(db):
        return []
    return [name for (name,) in db.execute(f"SELECT name FROM {RECORDS} ORDER BY id")]


def refuse_newer(db: Database, path: str) -> None:
    unknown = [name for name in applied(db) if name not in KNOWN]
    if unknown:
        raise SchemaTooNew(
            f"store {path} was migrated by a newer memsdk "
            f"(unknown migrations: {', '.join(unknown)}); upgrade memsdk to open it"
        )


def pending(db: Database) -> list[str]:
    done = set(applied(db))
    return [name for name in KNOWN if name not in done]


def migrate(db: Database, path: str) -> None:
    """Create or bring up to date the schema, once, under the migration lock; then fence it."""
    if pending(db):
        _migrate_locked(db, path)
    found = differences(db)
    if found:
        raise SchemaMismatch(
            f"store {path} does not match its migration records: {'; '.join(found)}. "
            "`memsdk doctor` reports every difference; a missing table needs a backup"
        )


def _migrate_locked(db: Database, path: str) -> None:
    raw = db.conn.raw
    raw.execute(f"SELECT pg_advisory_lock({_MIGRATE_LOCK})")
    try:
        refuse_newer(db, path)  # another process may have migrated meanwhile
        if missing_records(applied(db)):
            return  # a drifted store: the caller refuses it, naming the difference
        todo = pending(db)
        if not todo:
            return
        with db.atomic():
            if not applied(db):
                for file in FILES:
                    db.executescript(text(file))
                db.execute(
                    f"CREATE TABLE {RECORDS} (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
                    "migration_set TEXT NOT NULL, name TEXT NOT NULL UNIQUE, applied_at TEXT NOT NULL, "
                    "rowid BIGINT GENERATED ALWAYS AS (id) STORED)"
                )
                for name in BASELINE:
                    _record(db, name)
                todo = [name for name in todo if name not in BASELINE]
            for name in todo:
                if name not in STEPS:
                    raise StoreError(f"migration {name} has no PostgreSQL form")
                db.executescript(STEPS[name])
                _record(db, name)
        _try_vector(db)
    except driver.Error as error:
        raise StoreError(f"cannot migrate store {path}: {error}") from error
    finally:
        raw.execute(f"SELECT pg_advisory_unlock({_MIGRATE_LOCK})")


def _try_vector(db: Database) -> None:
    """``CREATE EXTENSION vector`` when it is not there (allowed to fail: then vectors are scanned)."""
    if db.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    try:
        db.execute("CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public")
    except driver.Error:
        return


def _record(db: Database, name: str) -> None:
    db.execute(
        f"INSERT INTO {RECORDS} (migration_set, name, applied_at) VALUES (?, ?, ?)",
        ["plugin_sdk", name, str(datetime.now(timezone.utc))],
    )


def missing_records(names: list[str]) -> list[str]:
    known = [name for name in names if name in KNOWN]
    if not known:
        return []
    last = max(KNOWN.index(name) for name in known)
    return [name for name in KNOWN[:last] if name not in known]


def _objects(db: Database) -> set[tuple[str, str]]:
    rows = db.execute(
        "SELECT 'table', tablename FROM pg_tables WHERE schemaname = current_schema() "
        "UNION ALL SELECT 'view', viewname FROM pg_views WHERE schemaname = current_schema() "
        "UNION ALL SELECT 'index', indexname FROM pg_indexes WHERE schemaname = current_schema() "
        "UNION ALL SELECT 'trigger', t.tgname FROM pg_trigger t "
        "JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND NOT t.tgisinternal"
    )
    return {(kind, name) for kind, name in rows}


def differences(db: Database) -> list[str]:
    """How the database differs from what its migration records promise (empty: it matches)."""
    names = applied(db)
    found: list[str] = []
    gaps = missing_records(names)
    if gaps:
        found.append(f"migration record missing: {', '.join(gaps)}")
    if names and names == KNOWN:
        for kind, name in sorted(expected_objects() - _objects(db)):
            found.append(f"{kind} missing: {name}")
    return found
