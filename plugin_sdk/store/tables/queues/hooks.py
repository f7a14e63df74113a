"""The owner of hook_queue, hook_runs and hook_notices: the statements a host's hooks run.

The lean hook entry point runs before every prompt, so these statements run
on a plain standard-library ``sqlite3`` connection (no sqlite-utils import);
they are functions of that connection (or of a store's ``db.conn``) rather
than methods of a store. Each write is its own transaction.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3


def now() -> str:
    """The time stamp of a queue row or a run: UTC, to the millisecond."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def has_queue(conn: sqlite3.Connection) -> bool:
    """Whether the store behind ``conn`` has the hook tables (it is migrated otherwise)."""
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'hook_queue'").fetchone() is not None
    )


def enqueue(conn: sqlite3.Connection, project: str, session: str, event: str, files: str) -> int:
    """Queue ``files`` (a JSON list of paths and sizes) for the historian; the row's id."""
    with conn:
        cursor = conn.execute(
            "INSERT INTO hook_queue (project, session_id, event, files, queued_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (project, session, event, files, now()),
        )
    return int(cursor.lastrowid or 0)


def pending(conn: sqlite3.Connection, project: str) -> list[sqlite3.Row | tuple[Any, ...]]:
    """Queued rows of ``project`` not done yet, oldest first: (id, files, attempts)."""
    return conn.execute(
        "SELECT id, files, attempts FROM hook_queue WHERE project = ? AND done_at IS NULL "
        "ORDER BY id",
        (project,),
    ).fetchall()


def queued_count(conn: sqlite3.Connection, project: str) -> int:
    """How many of ``project``'s queued rows are not done yet."""
    return int(
        conn.execute(
            "SELECT count(*) FROM hook_queue WHERE project = ? AND done_at IS NULL",
            (project,),
        ).fetchone()[0]
    )


def mark_failed(conn: sqlite3.Connection, queue_id: int, error: str) -> None:
    """Count one more attempt at a queued row, and its error (the row stays queued)."""
    with conn:
        conn.execute(
            "UPDATE hook_queue SET attempts = attempts + 1, last_error = ? WHERE id = ?",
            (error, queue_id),
        )


def mark_done(conn: sqlite3.Connection, queue_id: int, summary: str) -> None:
    """Mark a queued row read (now), counting the attempt, with the historian's summary."""
    with conn:
        conn.execute(
            "UPDATE hook_queue SET done_at = ?, attempts = attempts + 1, summary = ? WHERE id = ?",
            (now(), summary, queue_id),
        )


def record_run(conn: sqlite3.Connection, project: str, event: str, error: str | None) -> None:
    """Note that ``event``'s hook ran for ``project`` (and its error, if it failed)."""
    at = now()
    with conn:
        conn.execute(
            "INSERT INTO hook_runs (project, event, runs, last_run_at, last_ok_at, last_error, "
            "last_error_at) VALUES (?, ?, 1, ?, ?, ?, ?) ON CONFLICT (project, event) DO UPDATE "
            "SET runs = runs + 1, last_run_at = excluded.last_run_at, "
            "last_ok_at = coalesce(excluded.last_ok_at, last_ok_at), "
            "last_error = coalesce(excluded.last_error, last_error), "
            "last_error_at = coalesce(excluded.last_error_at, last_error_at)",
            (project, event, at, None if error else at, error, at if error else None),
        )


def runs(conn: sqlite3.Connection, project: str) -> list[tuple[Any, ...]]:
    """``project``'s hook runs by event: (event, runs, last_run_at, last_error, last_error_at)."""
    return conn.execute(
        "SELECT event, runs, last_run_at, last_error, last_error_at FROM hook_runs "
        "WHERE project = ? ORDER BY event",
        (project,),
    ).fetchall()


def first_notice(conn: sqlite3.Connection, session: str, project: str, notice: str) -> bool:
    """Whether ``notice`` is new to ``session`` (it is then recorded: said once per session)."""
    with conn:
        cursor = conn.execute(
            "INSERT OR IGNORE INTO hook_notices (session_id, project, notice, at) "
            "VALUES (?, ?, ?, ?)",
            (session, project, notice, now()),
        )
    return cursor.rowcount == 1
