"""Writers that wait: every write transaction takes SQLite's write lock up front.

A deferred ``BEGIN`` takes no lock; the first write then has to upgrade a read
snapshot to a write lock, and when another connection committed in between,
SQLite answers ``database is locked`` at once (the busy timeout cannot help: the
snapshot is stale). So the store's outermost transactions begin with
``BEGIN IMMEDIATE``, which waits for the lock under the busy timeout before
anything is read. Around that ``BEGIN`` (and only there: a half-done body is
never repeated) a bounded retry with jitter rides out a writer that holds the
lock longer than one timeout.

:class:`StoreDatabase` is the ``sqlite_utils.Database`` the store uses: its
:meth:`~StoreDatabase.atomic` begins that way, so sqlite-utils' own writes
(``table.insert``, ``Migrations``) take the lock up front too, and its
connection begins implicit transactions (a lone ``UPDATE`` outside any block)
with ``IMMEDIATE`` as well.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlite_utils import Database

from plugin_sdk.errors import StoreBusy
from plugin_sdk.store import driver

#: How long SQLite itself waits for the write lock before answering "locked".
BUSY_TIMEOUT_MS = 5000
#: How many times ``BEGIN IMMEDIATE`` is tried before the store gives up.
BEGIN_ATTEMPTS = 6
_SQLITE_BUSY, _SQLITE_LOCKED = (
    5,
    6,
)  # primary result codes (extended codes keep them in the low byte)


def is_locked(error: BaseException) -> bool:
    """Whether ``error`` is SQLite's busy / locked answer (worth waiting out)."""
    if not isinstance(error, driver.OperationalError):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return True
    message = str(error)
    return "database is locked" in message or "database table is locked" in message


def begin(
    conn: driver.Connection, mode: str = "IMMEDIATE", *, attempts: int = BEGIN_ATTEMPTS
) -> None:
    """Begin a transaction that holds the write lock, waiting (bounded) for it.

    Raises :class:`~plugin_sdk.errors.StoreBusy` when another connection held
    the lock through every attempt.
    """
    for attempt in range(1, attempts + 1):
        try:
            conn.execute(f"BEGIN {mode} TRANSACTION")
            return
        except driver.OperationalError as error:
            if not is_locked(error):
                raise
            if attempt == attempts:
                raise StoreBusy(
                    f"the store is busy: another process held its write lock through "
                    f"{attempts} waits of {BUSY_TIMEOUT_MS / 1000:g} s; try again"
                ) from error
            # Jitter, so writers that timed out together do not all retry together.
            time.sleep(random.uniform(0.005, 0.05) * attempt)


def retrying(action: Callable[[], object], *, attempts: int = BEGIN_ATTEMPTS) -> None:
    """Run a one-statement ``action`` (a callable) that may meet a lock, with the same retry."""
    for attempt in range(1, attempts + 1):
        try:
            action()
            return
        except driver.OperationalError as error:
            if not is_locked(error) or attempt == attempts:
                raise
            time.sleep(random.uniform(0.005, 0.05) * attempt)


class StoreDatabase(Database):
    """``sqlite_utils.Database`` whose outermost transaction begins ``IMMEDIATE``.

    Nested blocks are savepoints, exactly as in sqlite-utils.
    """

    engine = "sqlite"

    def columns(self, table: str) -> list[str]:
        """The column names of ``table``, in order (generated columns left out)."""
        return [row[1] for row in self.execute(f"PRAGMA table_xinfo([{table}])") if row[6] == 0]

    def store_tables(self) -> list[str]:
        """The store's own tables, by name: not SQLite's, not virtual ones or their shadows."""
        rows = self.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        virtual = [name for name, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL")]
        return sorted(
            name
            for name, _sql in rows
            if name not in virtual and not any(name.startswith(f"{v}_") for v in virtual)
        )

    def foreign_keys(self, table: str) -> list[tuple[str, str]]:
        """``(column, referenced table)`` of each foreign key of ``table``."""
        return [(row[3], row[2]) for row in self.execute(f"PRAGMA foreign_key_list([{table}])")]

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[dict[str, Any]]:
        """The rows of a long read as the caller takes them: SQLite steps the statement."""
        return self.query(sql, params)

    @contextmanager
    def atomic(self, *, attempts: int = BEGIN_ATTEMPTS) -> Iterator[Database]:
        if self.conn.in_transaction:
            with super().atomic() as db:
                yield db
            return
        begin(self.conn, attempts=attempts)
        try:
            yield self
        except BaseException:
            self.rollback()
            raise
        try:
            self.conn.execute("COMMIT")
        except BaseException:
            self.rollback()
            raise


def open_database(path: str) -> StoreDatabase:
    """A :class:`StoreDatabase` on ``path`` with the busy timeout set.

    Python's implicit transactions (a write statement outside any block)
    begin ``IMMEDIATE`` too.
    """
    conn = driver.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level="IMMEDIATE")
    try:
        return StoreDatabase(conn, execute_plugins=False)
    except BaseException:
        conn.close()
        raise
