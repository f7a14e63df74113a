"""The owner of session_meta, injections, dreamer_state, transcript_imports: every statement that touches them.

A session's surface hash (``session_meta``) and its last injection
(``injections``) are written in the caller's transaction; a dreamer task's
state row (``dreamer_state``) is written only by the lease's owner; the import
ledger (``transcript_imports``) counts the messages sent across imports. The
doctor opens a store file without a :class:`Store`, so its two statements are
functions of the database (:func:`dreamer_leases`, :func:`release_stale_lease`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlite_utils import Database

    from plugin_sdk.store.connection import Store


class SessionRows:
    """Statements on session_meta, injections, dreamer_state, transcript_imports; reached as ``store.tables.sessions``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # session_meta

    def record_surface(self, session_id: str, project: str, digest: str) -> None:
        """Record a session's surface hash (now; in the caller's transaction)."""
        now = self.store.now()
        self.db.execute(
            """INSERT INTO session_meta (session_id, project, system_prompt_hash, created_at, updated_at)
               VALUES (?, ?, ?, ?, ?)
               ON CONFLICT (session_id) DO UPDATE SET
                   system_prompt_hash = excluded.system_prompt_hash,
                   updated_at = excluded.updated_at""",
            [session_id, project, digest, now, now],
        )

    def surface(self, session_id: str) -> str | None:
        """The surface hash recorded for a session, or None."""
        row = self.db.execute(
            "SELECT system_prompt_hash FROM session_meta WHERE session_id = ?", [session_id]
        ).fetchone()
        return None if row is None else str(row[0])

    # injections

    def last_injection(self, session_id: str, project: str) -> tuple[int, str] | None:
        """A session's last injection: (budget, shown as JSON), or None."""
        row = self.db.execute(
            "SELECT budget, shown FROM injections WHERE session_id = ? AND project = ?",
            [session_id, project],
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def record_injection(
        self, session_id: str, project: str, budget: int, tokens: int, text_hash: str, shown: str
    ) -> None:
        """Record a session's injection (now), replacing its last one."""
        self.db.execute(
            """INSERT INTO injections (session_id, project, budget, tokens, text_hash, shown, created_at)
               VALUES (?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT (session_id, project) DO UPDATE SET budget = excluded.budget,
                   tokens = excluded.tokens, text_hash = excluded.text_hash,
                   shown = excluded.shown, created_at = excluded.created_at""",
            [session_id, project, budget, tokens, text_hash, shown, self.store.now()],
        )

    # dreamer_state

    def dreamer_states(self, project: str) -> list[dict[str, Any]]:
        """Every task's stored state in ``project``."""
        return list(self.db.query("SELECT * FROM dreamer_state WHERE project = ?", [project]))

    def dreamer_lease(self, task: str, project: str) -> tuple[Any, ...]:
        """A task's (lease_owner, lease_until, cursor, done), its row created first if new
        (inside the caller's transaction)."""
        self.db.execute(
            "INSERT OR IGNORE INTO dreamer_state (task, project) VALUES (?, ?)", [task, project]
        )
        return tuple(
            self.db.execute(
                "SELECT lease_owner, lease_until, cursor, done FROM dreamer_state WHERE task = ? AND project = ?",
                [task, project],
            ).fetchone()
        )

    def take_lease(self, task: str, project: str, owner: str, until: str, started_at: str) -> None:
        """Give ``owner`` the task's lease until ``until``: the task is running."""
        self.db.execute(
            """UPDATE dreamer_state SET lease_owner = ?, lease_until = ?, status = 'running',
               started_at = ?, last_error = NULL WHERE task = ? AND project = ?""",
            [owner, until, started_at, task, project],
        )

    def save_cursor(
        self, task: str, project: str, owner: str, cursor: str, handled: int, until: str
    ) -> bool:
        """Save the task's place and renew the lease; False when ``owner`` lost the lease."""
        updated = self.db.execute(
            """UPDATE dreamer_state SET cursor = ?, done = done + ?, updated_at = ?, lease_until = ?
               WHERE task = ? AND project = ? AND lease_owner = ?""",
            [cursor, handled, self.store.now(), until, task, project, owner],
        )
        return bool(updated.rowcount == 1)

    def finish_pass(self, task: str, project: str, owner: str) -> None:
        """A pass ended (now): the cursor starts over, the lease is let go."""
        self.db.execute(
            """UPDATE dreamer_state SET cursor = NULL, done = 0, passes = passes + 1,
               status = 'idle', finished_at = ?, lease_owner = NULL, lease_until = NULL
               WHERE task = ? AND project = ? AND lease_owner = ?""",
            [self.store.now(), task, project, owner],
        )

    def release(self, task: str, project: str, owner: str, status: str, error: str | None) -> None:
        """Let go of ``owner``'s lease, leaving the task ``status`` (and its error, redacted by the caller)."""
        self.db.execute(
            """UPDATE dreamer_state SET status = ?, last_error = ?, lease_owner = NULL,
               lease_until = NULL, updated_at = ? WHERE task = ? AND project = ? AND lease_owner = ?""",
            [status, error, self.store.now(), task, project, owner],
        )

    # transcript_imports

    def import_entry(self, path: str, project: str) -> tuple[Any, ...] | None:
        """How far ``path`` was imported: (format, offset_bytes, content_hash, last_key,
        cursors, messages, imported_at), or None."""
        row = self.db.execute(
            "SELECT format, offset_bytes, content_hash, last_key, cursors, messages, imported_at "
            "FROM transcript_imports WHERE path = ? AND project = ?",
            [path, project],
        ).fetchone()
        return None if row is None else tuple(row)

    def record_import(
        self,
        path: str,
        project: str,
        format: str,
        offset: int,
        last_key: str,
        content_hash: str,
        cursors: str,
        sent: int,
    ) -> None:
        """Save how far ``path`` was imported (now); ``sent`` more messages were sent."""
        self.db.execute(
            """INSERT INTO transcript_imports (path, project, format, offset_bytes, last_key,
                   content_hash, cursors, messages, imported_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT (path, project) DO UPDATE SET
                   format = excluded.format, offset_bytes = excluded.offset_bytes,
                   last_key = excluded.last_key, content_hash = excluded.content_hash,
                   cursors = excluded.cursors,
                   messages = transcript_imports.messages + excluded.messages,
                   imported_at = excluded.imported_at""",
            [
                path,
                project,
                format,
                offset,
                last_key,
                content_hash,
                cursors,
                sent,
                self.store.now(),
            ],
        )

    def imported_paths(self, project: str) -> list[str]:
        """Every path imported into ``project``, most recent first."""
        rows = self.db.execute(
            "SELECT path FROM transcript_imports WHERE project = ? ORDER BY imported_at DESC",
            [project],
        ).fetchall()
        return [path for (path,) in rows]


def dreamer_leases(db: Database) -> list[tuple[Any, ...]]:
    """Every task's (task, project, cursor, status, lease_owner, lease_until), in order."""
    return db.execute(
        """SELECT task, project, cursor, status, lease_owner, lease_until FROM dreamer_state
           ORDER BY task, project"""
    ).fetchall()


def release_stale_lease(db: Database, task: str, project: str, owner: str, until: str) -> None:
    """Let go of a lease that ended (unless it was renewed since): the task is idle."""
    db.execute(
        """UPDATE dreamer_state SET status = 'idle', lease_owner = NULL,
           lease_until = NULL WHERE task = ? AND project = ? AND lease_owner = ?
           AND lease_until = ?""",
        [task, project, owner, until],
    )
