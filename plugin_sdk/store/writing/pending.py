"""What a read records, kept when it cannot be written yet: the ``read_records`` table.

A read records a little (a session's injection that ``delta`` needs,
retrieval counts, token counts) in a short transaction after it answers
(:meth:`Store.record <plugin_sdk.store.connection.Store.record>`). That
transaction waits for the write lock like any write (the same bounded
retry). When it still cannot write (a writer held the lock through every
wait, a snapshot went stale, the disk is full, the file is read-only), the
read still answers and the record is kept here, in this connection's memory,
and written first thing in the connection's next successful write
transaction (each in a savepoint: one that fails is counted and dropped, not
the write). At most :data:`MAX_PENDING` are kept; past that the oldest is
dropped and counted. A store closed with records still pending tries once
more, then counts them as dropped in the log.

``read_records`` (one row per kind of record, ``what``) counts how many
were written late (``deferred``) and how many were lost (``dropped``);
``memsdk doctor`` reports both.
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import Callable

from plugin_sdk.store import driver

log = logging.getLogger("memsdk")

MAX_PENDING = 1000


class Pending:
    """One connection's records not yet written, and the counts not yet stored."""

    def __init__(self) -> None:
        self.writes: deque[tuple[str, Callable[[], object]]] = deque()
        self.deferred: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self.writes)

    def keep(self, what: str, write: Callable[[], object]) -> None:
        if len(self.writes) >= MAX_PENDING:
            lost, _ = self.writes.popleft()
            self.dropped[_kind(lost)] += 1
        self.writes.append((what, write))

    def flush(self, conn: driver.Connection, now: str) -> Callable[[], None]:
        """Write what is kept, inside the caller's open transaction.

        Returns how to put it all back, for when that transaction rolls back
        (and puts it back itself when a write here fails the transaction).
        """
        taken, deferred, dropped = list(self.writes), Counter(self.deferred), Counter(self.dropped)
        self.writes.clear()

        def restore() -> None:
            self.writes.extendleft(reversed(taken))
            self.deferred, self.dropped = Counter(deferred), Counter(dropped)

        try:
            self._write(conn, taken, now)
        except BaseException:
            restore()
            raise
        return restore

    def _write(
        self, conn: driver.Connection, taken: list[tuple[str, Callable[[], object]]], now: str
    ) -> None:
        for what, write in taken:
            conn.execute("SAVEPOINT memsdk_pending")
            try:
                write()
            except driver.Error as error:
                if not conn.in_transaction or isinstance(error, driver.OperationalError):
                    # A full disk or a lost lock: SQLite may have ended the
                    # transaction. The caller's transaction fails; all is kept.
                    raise
                conn.execute("ROLLBACK TO memsdk_pending")
                self.dropped[_kind(what)] += 1
                log.warning("memsdk: %s dropped: %s", what, error)
            else:
                self.deferred[_kind(what)] += 1
            conn.execute("RELEASE memsdk_pending")
        for what in set(self.deferred) | set(self.dropped):
            conn.execute(
                """INSERT INTO read_records (what, deferred, dropped, updated_at)
                   VALUES (?, ?, ?, ?)
                   ON CONFLICT (what) DO UPDATE SET deferred = deferred + excluded.deferred,
                       dropped = dropped + excluded.dropped, updated_at = excluded.updated_at""",
                [what, self.deferred[what], self.dropped[what], now],
            )
        self.deferred.clear()
        self.dropped.clear()


def counts(conn: driver.Connection) -> list[tuple[str, int, int]]:
    """``(what, deferred, dropped)`` per kind of record, as stored."""
    return [
        (str(what), int(deferred), int(dropped))
        for what, deferred, dropped in conn.execute(
            "SELECT what, deferred, dropped FROM read_records ORDER BY what"
        )
    ]


def _kind(what: str) -> str:
    """The kind of a record (``session 'x''s injection`` -> ``session injection``)."""
    if what.startswith("session "):
        return "session injection"
    return what
