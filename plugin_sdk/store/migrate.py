"""Applying the store's migrations without sqlite-utils' slow script splitter.

sqlite-utils' ``Migrations.apply`` runs each step inside ``db.atomic()``. There
``db.executescript`` cannot hand the script to SQLite (Python's
``executescript`` commits an open transaction first), so it cuts the script
into statements one character at a time, asking SQLite after each character
whether a statement is complete: most of the time it takes to open a new store.

:func:`apply` does the same work and writes the same records. Each pending step
runs in one transaction together with its row in ``_sqlite_migrations`` (the
table sqlite-utils creates, created by sqlite-utils' own code), so a crash
mid-step leaves the store at the step before. The only difference is how a
script is cut: :func:`statements` asks SQLite only at each semicolon, which is
the only place a statement can end, and so yields the same statements.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

from sqlite_utils import Database

from plugin_sdk.store import driver
from plugin_sdk.store.migrations import migrations


def statements(script: str) -> Iterator[str]:
    """The statements of ``script``, exactly as sqlite-utils' splitter yields them."""
    start = 0
    end = script.find(";")
    while end != -1:
        statement = script[start : end + 1].strip()
        if driver.complete_statement(statement):
            yield statement
            start = end + 1
        end = script.find(";", end + 1)
    rest = script[start:].strip()
    if rest:
        yield rest


class _StepDatabase(Database):
    """The store's connection as a migration step sees it: scripts are cut by :func:`statements`."""

    def executescript(self, sql: str) -> driver.Cursor:
        if not self.conn.in_transaction:
            return super().executescript(sql)
        cursor = self.conn.cursor()
        for statement in statements(sql):
            cursor.execute(statement)
        return cursor


def apply(db: Database) -> None:
    """Apply the pending migrations of ``db``, each in its own transaction with its record."""
    migrations.ensure_migrations_table(db)
    pending = migrations.pending(db)
    if not pending:
        return
    # The same connection, with its pragmas already set (none are re-run here).
    steps = _StepDatabase(db.conn, recursive_triggers=False, execute_plugins=False)
    for migration in pending:
        if not migration.transactional:  # as sqlite-utils does; step() never registers one
            migration.fn(db)
            _record(db, migration.name)
            continue
        with db.atomic():
            migration.fn(steps)
            _record(db, migration.name)


def _record(db: Database, name: str) -> None:
    # The row sqlite-utils' Migrations._record_applied inserts, value for value.
    db.execute(
        f"INSERT INTO [{migrations.migrations_table}] (migration_set, name, applied_at) "
        "VALUES (?, ?, ?)",
        [migrations.name, name, str(datetime.now(timezone.utc))],
    )
