"""The owner of proposals, proposal_events, proposal_applications: every statement that touches them.

The status transitions are claims: each is a conditional ``UPDATE`` that
succeeds (returns True) only from the statuses it names, so two steps at once
cannot both happen (the queue, ``proposals/queue.py``, decides which step
allows which statuses). Every write stamps ``updated_at`` (or ``at``) with
the store's clock. What a recording of a memory entry's apply runs is
:class:`~plugin_sdk.store.tables.queues.undo_log.UndoLog`, reached as ``.undo``.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

from plugin_sdk.store.tables.queues.undo_log import UndoLog

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store
    from plugin_sdk.store.postgres.undo_log import PgUndoLog


class ProposalRows:
    """Statements on proposals, proposal_events, proposal_applications; reached as ``store.tables.proposals``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # Project-wide (host/projects.py, host/portable.py)

    def delete_project_history(self, project: str) -> dict[str, int]:
        """Delete the events and applications of the project's proposals (the proposals go
        with the project's rows); rows per table."""
        owned = "SELECT id FROM proposals WHERE project = ?"
        return {
            "proposal_events": self.db.execute(
                f"DELETE FROM proposal_events WHERE proposal_id IN ({owned})", [project]
            ).rowcount,
            "proposal_applications": self.db.execute(
                f"DELETE FROM proposal_applications WHERE proposal_id IN ({owned})", [project]
            ).rowcount,
        }

    def export_events(self, project: str) -> Iterator[dict[str, Any]]:
        """The history of ``project``'s proposals, by id."""
        return self.db.query(
            "SELECT e.* FROM proposal_events e JOIN proposals p ON p.id = e.proposal_id "
            "WHERE p.project = ? ORDER BY e.id",
            [project],
        )

    def export_applications(self, project: str) -> Iterator[dict[str, Any]]:
        """What applying ``project``'s proposals changed (their undo records), by proposal."""
        return self.db.query(
            "SELECT a.* FROM proposal_applications a JOIN proposals p ON p.id = a.proposal_id "
            "WHERE p.project = ? ORDER BY a.proposal_id",
            [project],
        )

    @cached_property
    def undo(self) -> UndoLog | PgUndoLog:
        """The statements that record and revert what an apply changes (per engine)."""
        if self.store.engine == "postgresql":
            from plugin_sdk.store.postgres.undo_log import PgUndoLog

            return PgUndoLog(self.store)
        return UndoLog(self.store)

    # proposals

    def insert(
        self,
        *,
        project: str,
        diff_type: str,
        rationale: str,
        evidence: str,
        diff: str,
        digest: str,
        source: str,
    ) -> int | None:
        """File a pending proposal (JSON texts as given); its id, or None if an identical
        one is pending already (the unique index on pending proposals)."""
        now = self.store.now()
        cursor = self.db.execute(
            """INSERT INTO proposals (project, diff_type, rationale, evidence, diff, diff_hash,
                   source, created_at, updated_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT DO NOTHING""",
            [project, diff_type, rationale, evidence, diff, digest, source, now, now],
        )
        if not cursor.rowcount:
            return None
        return cast(int, cursor.lastrowid)

    def of_project(self, project: str, status: str | None = None) -> list[dict[str, Any]]:
        """A project's proposals (of one status, or all), oldest first."""
        sql = "SELECT * FROM proposals WHERE project = ?"
        params: list[Any] = [project]
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        return list(self.db.query(sql + " ORDER BY id", params))

    def by_id(self, proposal_id: int, project: str) -> dict[str, Any] | None:
        """One proposal of ``project``, or None."""
        rows = list(
            self.db.query(
                "SELECT * FROM proposals WHERE id = ? AND project = ?", [proposal_id, project]
            )
        )
        return rows[0] if rows else None

    def decided(self, project: str, diff_type: str, digest: str) -> tuple[int, str] | None:
        """The newest rejected or applied proposal with this diff: ``(id, status)``, or None."""
        row = self.db.execute(
            """SELECT id, status FROM proposals WHERE project = ? AND diff_type = ? AND diff_hash = ?
               AND status IN ('rejected', 'applied') ORDER BY id DESC LIMIT 1""",
            [project, diff_type, digest],
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def pending_twin(
        self, project: str, diff_type: str, digest: str, proposal_id: int
    ) -> int | None:
        """Another pending proposal with this diff, or None."""
        row = self.db.execute(
            """SELECT id FROM proposals WHERE project = ? AND diff_type = ? AND diff_hash = ?
               AND status = 'pending' AND id != ?""",
            [project, diff_type, digest, proposal_id],
        ).fetchone()
        return None if row is None else int(row[0])

    def set_diff(self, proposal_id: int, diff: str, digest: str, rationale: str) -> None:
        """Replace a proposal's diff (canonical JSON) and rationale."""
        self.db.execute(
            "UPDATE proposals SET diff = ?, diff_hash = ?, rationale = ?, updated_at = ? WHERE id = ?",
            [diff, digest, rationale, self.store.now(), proposal_id],
        )

    # status transitions

    def claim(self, proposal_id: int, statuses: tuple[str, ...], status: str | None) -> bool:
        """Move a proposal in one of ``statuses`` to ``status`` (None: keep it, taking only
        the write lock), clearing its error; whether it was in one of them."""
        marks = ", ".join("?" * len(statuses))
        if status is None:
            cursor = self.db.execute(
                f"UPDATE proposals SET status = status WHERE id = ? AND status IN ({marks})",
                [proposal_id, *statuses],
            )
        else:
            cursor = self.db.execute(
                f"""UPDATE proposals SET status = ?, error = NULL, updated_at = ?
                    WHERE id = ? AND status IN ({marks})""",
                [status, self.store.now(), proposal_id, *statuses],
            )
        return cursor.rowcount == 1

    def claim_approval(self, proposal_id: int, stale: str) -> bool:
        """Mark a pending or failed proposal ``approved`` (or one approved before ``stale``,
        an ISO time); whether it was taken."""
        cursor = self.db.execute(
            """UPDATE proposals SET status = 'approved', error = NULL, updated_at = ?
               WHERE id = ? AND (status IN ('pending', 'failed')
                                 OR (status = 'approved' AND updated_at < ?))""",
            [self.store.now(), proposal_id, stale],
        )
        return cursor.rowcount == 1

    def settle(
        self, proposal_id: int, claim: int, status: str, *, error: str | None = None
    ) -> bool:
        """Set the status if the approval event ``claim`` still holds the proposal; whether it did."""
        cursor = self.db.execute(
            """UPDATE proposals SET status = ?, error = ?, updated_at = ?
               WHERE id = ? AND status = 'approved' AND ? = (SELECT max(id) FROM proposal_events
                   WHERE proposal_id = proposals.id AND event = 'approved')""",
            [status, error, self.store.now(), proposal_id, claim],
        )
        return cursor.rowcount == 1

    def fail(self, proposal_id: int, reason: str) -> None:
        """Mark a pending, approved or failed proposal ``failed`` with ``reason``."""
        self.db.execute(
            """UPDATE proposals SET status = 'failed', error = ?, updated_at = ?
               WHERE id = ? AND status IN ('pending', 'approved', 'failed')""",
            [reason, self.store.now(), proposal_id],
        )

    def set_status(self, proposal_id: int, status: str, *, error: str | None = None) -> None:
        """Set a proposal's status and error, whatever it was."""
        self.db.execute(
            "UPDATE proposals SET status = ?, error = ?, updated_at = ? WHERE id = ?",
            [status, error, self.store.now(), proposal_id],
        )

    # proposal_events

    def add_event(self, proposal_id: int, event: str, actor: str, detail: str) -> int:
        """Add one row (``detail`` canonical JSON) to a proposal's history; its id."""
        cursor = self.db.execute(
            "INSERT INTO proposal_events (proposal_id, event, actor, detail, at) VALUES (?, ?, ?, ?, ?)",
            [proposal_id, event, actor, detail, self.store.now()],
        )
        return cast(int, cursor.lastrowid)

    def events(self, proposal_id: int) -> list[dict[str, Any]]:
        """A proposal's history rows, oldest first."""
        return list(
            self.db.query(
                "SELECT * FROM proposal_events WHERE proposal_id = ? ORDER BY id", [proposal_id]
            )
        )

    def delete_event(self, event_id: int) -> None:
        self.db.execute("DELETE FROM proposal_events WHERE id = ?", [event_id])

    # proposal_applications

    def application(self, proposal_id: int) -> dict[str, Any] | None:
        """The row of what a proposal applied (JSON texts as stored), or None."""
        rows = list(
            self.db.query(
                "SELECT * FROM proposal_applications WHERE proposal_id = ?", [proposal_id]
            )
        )
        return rows[0] if rows else None

    def add_application(self, proposal_id: int, target: str, result: str, undo: str) -> bool:
        """Record an application (JSON texts); False if a live one (not undone) exists."""
        cursor = self.db.execute(
            """INSERT INTO proposal_applications (proposal_id, target, result, undo, applied_at)
               VALUES (?, ?, ?, ?, ?)
               ON CONFLICT (proposal_id) DO UPDATE SET target = excluded.target,
                   result = excluded.result, undo = excluded.undo,
                   applied_at = excluded.applied_at, undone_at = NULL
               WHERE proposal_applications.undone_at IS NOT NULL""",
            [proposal_id, target, result, undo, self.store.now()],
        )
        return cursor.rowcount == 1

    def mark_undone(self, proposal_id: int) -> None:
        """Stamp an application undone now."""
        self.db.execute(
            "UPDATE proposal_applications SET undone_at = ? WHERE proposal_id = ?",
            [self.store.now(), proposal_id],
        )

    def unmark_undone(self, proposal_id: int) -> None:
        """An undo that did not happen: the application is live again."""
        self.db.execute(
            "UPDATE proposal_applications SET undone_at = NULL WHERE proposal_id = ?",
            [proposal_id],
        )
