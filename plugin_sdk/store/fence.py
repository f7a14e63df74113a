"""The schema fence: migrating under the write lock, and refusing a schema that drifted.

:func:`migrate` is how a store is brought up to date when it is opened. Any
number of processes may open (or ``memsdk init``) the same new file at once:
the one that finds migrations pending takes the write lock (``BEGIN
IMMEDIATE``), looks again inside the lock at what is pending, and applies it
in that one transaction together with the records and ``PRAGMA
user_version`` (the number of applied steps); the others wait for the lock and
then find nothing left to do. A kill mid-way leaves the file as it was.

:func:`differences` compares the file with what its migration records promise:
every table, index, trigger and view the applied steps create, each with the
SQL they create it with (compared after :func:`~plugin_sdk.store.schema.normalise`) (the expected set is
built once per process by running the steps on an empty in-memory database), no
record missing before a later one, and ``user_version`` equal to the number of
records. A store that differs is refused on opening with
:class:`~plugin_sdk.errors.SchemaMismatch` naming the difference;
``memsdk doctor`` reports the same list.
"""

from __future__ import annotations

import contextlib
import functools

from sqlite_utils import Database

from plugin_sdk.errors import SchemaMismatch, SchemaTooNew, StoreError
from plugin_sdk.store import driver
from plugin_sdk.store.migrate import apply as apply_pending
from plugin_sdk.store.migrations import KNOWN, migrations
from plugin_sdk.store.schema import normalise

# Objects SQLite makes on its own, which no migration names.
_INTERNAL = ("sqlite_stat", "sqlite_sequence")


@functools.cache
def expected_schema() -> dict[tuple[str, str], str | None]:
    """``(type, name) -> SQL`` of every table, index and trigger the known steps create."""
    db = Database(memory=True, execute_plugins=False)
    try:
        for migration in migrations.pending(db):
            migration.fn(db)  # no transaction: scripts go to SQLite whole, quickly
        migrations.ensure_migrations_table(db)
        return {
            (kind, name): sql
            for kind, name, sql in db.execute("SELECT type, name, sql FROM sqlite_master")
            if not name.startswith(_INTERNAL)
        }
    finally:
        db.close()


def expected_objects() -> frozenset[tuple[str, str]]:
    """``(type, name)`` of every table, index and trigger the known steps create."""
    return frozenset(expected_schema())


def _objects(db: Database) -> set[tuple[str, str]]:
    return {
        (kind, name)
        for kind, name in db.execute("SELECT type, name FROM sqlite_master")
        if not name.startswith(_INTERNAL)
    }


def missing_objects(db: Database) -> list[tuple[str, str]]:
    """Expected tables, indexes and triggers the file lacks (for a fully migrated store)."""
    return sorted(expected_objects() - _objects(db))


def changed_objects(db: Database) -> list[tuple[str, str]]:
    """Expected tables, indexes, triggers and views whose SQL in the file differs (normalised)."""
    have = {
        (kind, name): sql
        for kind, name, sql in db.execute("SELECT type, name, sql FROM sqlite_master")
        if sql is not None and not name.startswith(_INTERNAL)
    }
    return sorted(
        key
        for key, sql in expected_schema().items()
        if sql is not None and key in have and normalise(have[key]) != normalise(sql)
    )


def applied(db: Database) -> list[str]:
    """Names of the applied migration steps, in the order they were applied."""
    return [m.name for m in migrations.applied(db)]


def refuse_newer(db: Database, path: str) -> None:
    """Raise :class:`SchemaTooNew` for a store with steps this memsdk does not know."""
    unknown = [name for name in applied(db) if name not in KNOWN]
    if unknown:
        raise SchemaTooNew(
            f"store {path} was migrated by a newer memsdk "
            f"(unknown migrations: {', '.join(unknown)}); upgrade memsdk to open it"
        )


def user_version(db: Database) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def missing_records(names: list[str]) -> list[str]:
    """Known steps without a record although a later step has one."""
    known = [name for name in names if name in KNOWN]
    if not known:
        return []
    last = max(KNOWN.index(name) for name in known)
    return [name for name in KNOWN[:last] if name not in known]


def differences(db: Database) -> list[str]:
    """How the file differs from what its migration records promise (empty: it matches)."""
    names = applied(db)
    found: list[str] = []
    gaps = missing_records(names)
    if gaps:
        found.append(f"migration record missing: {', '.join(gaps)}")
    if names and names == KNOWN[: len(names)] and len(names) == len(KNOWN):
        for kind, name in missing_objects(db):
            found.append(f"{kind} missing: {name}")
        for kind, name in changed_objects(db):
            found.append(f"{kind} differs from its migration: {name}")
    version = user_version(db)
    if names and version not in (0, len(names)):
        found.append(f"user_version is {version} but {len(names)} migration steps are recorded")
    return found


def migrate(db: Database, path: str) -> None:
    """Apply pending steps under the write lock, then refuse a drifted schema."""
    if migrations.pending(db):
        _migrate_locked(db, path)
    elif user_version(db) == 0 and applied(db):
        # A store from before the fence: record its version, if the file is writable.
        with contextlib.suppress(StoreError):
            _migrate_locked(db, path)
    found = differences(db)
    if found:
        raise SchemaMismatch(
            f"store {path} does not match its migration records: {'; '.join(found)}. "
            "`memsdk doctor` reports every difference and `memsdk doctor --repair` rebuilds "
            "missing indexes and triggers; a missing table needs a backup"
        )


def _migrate_locked(db: Database, path: str) -> None:
    try:
        with db.atomic():  # BEGIN IMMEDIATE: one process migrates, the others wait
            refuse_newer(db, path)  # another process may have migrated meanwhile
            before = applied(db)
            if missing_records(before) or user_version(db) not in (0, len(before)):
                return  # a drifted store: the caller refuses it, naming the difference
            apply_pending(db)  # re-reads what is pending, inside the lock
            db.execute(f"PRAGMA user_version = {len(applied(db)):d}")
    except driver.Error as error:
        step = next(iter(migrations.pending(db)), None)
        where = f" (step {step.name})" if step is not None else ""
        raise StoreError(f"cannot migrate store {path}{where}: {error}") from error
