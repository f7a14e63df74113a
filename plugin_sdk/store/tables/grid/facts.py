"""The owner of facts, conflicts, memory_conflicts: every statement that touches them.

A fact is ``active``, or ``held`` while its observation waits for review
(``active`` once accepted, ``rejected`` otherwise). Two values of one
predicate on one entity make an open conflict (recorded once per pair);
rejecting the observation dismisses its open conflicts. Memory conflicts
pair two memories' differing values, open until resolved or dismissed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

_CONFLICTS = """SELECT c.id, e.name AS entity, c.kind, c.predicate, c.fact_id, a.object AS value,
                   a.observation_id, c.other_fact_id, b.object AS other_value,
                   b.observation_id AS other_observation_id, c.status, c.detail, c.created_at
            FROM conflicts c JOIN entities e ON e.id = c.entity_id
            JOIN facts a ON a.id = c.fact_id JOIN facts b ON b.id = c.other_fact_id"""


def _marks(ids: Sequence[Any]) -> str:
    return ", ".join("?" * len(ids))


class FactRows:
    """Statements on facts, conflicts, memory_conflicts; reached as ``store.tables.facts``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # Facts

    def other_values(self, entity_id: int, predicate: str, value: str) -> list[tuple[Any, ...]]:
        """(object_norm, newest id, first object) of the predicate's other live values."""
        return self.db.conn.execute(
            """SELECT object_norm, max(id), min(object) FROM facts
               WHERE entity_id = ? AND predicate = ? AND status IN ('active', 'held')
                 AND object_norm != ?
               GROUP BY object_norm ORDER BY object_norm""",
            [entity_id, predicate, value],
        ).fetchall()

    def insert(self, row: Sequence[Any]) -> int:
        """A new fact (project, entity_id, predicate, object, object_norm, observation_id,
        status, at, created_at); its id."""
        cursor = self.db.conn.execute(
            """INSERT INTO facts (project, entity_id, predicate, object, object_norm,
                   observation_id, status, at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            list(row),
        )
        return int(cursor.lastrowid or 0)

    def has_active(self, entity_id: int, predicate: str) -> bool:
        """Whether the entity has an active fact of ``predicate``."""
        row = self.db.conn.execute(
            "SELECT 1 FROM facts WHERE entity_id = ? AND predicate = ? AND status = 'active' LIMIT 1",
            [entity_id, predicate],
        ).fetchone()
        return row is not None

    def active(self, entity_ids: Sequence[int]) -> list[tuple[Any, ...]]:
        """(entity_id, predicate, object_norm, object, at, observation_id) of the entities'
        active facts, by entity then (at, id)."""
        return self.db.conn.execute(
            f"""SELECT entity_id, predicate, object_norm, object, at, observation_id FROM facts
                WHERE entity_id IN ({_marks(entity_ids)}) AND status = 'active'
                ORDER BY entity_id, at, id""",
            list(entity_ids),
        ).fetchall()

    def accept_held(self, project: str, observation_id: str) -> None:
        """An accepted observation's held facts become active."""
        self.db.execute(
            """UPDATE facts SET status = 'active' WHERE project = ? AND observation_id = ?
               AND status = 'held'""",
            [project, observation_id],
        )

    def reject_held(self, project: str, observation_id: str, now: str) -> None:
        """A rejected observation's open conflicts are dismissed and its held facts rejected."""
        self.db.execute(
            """UPDATE conflicts SET status = 'dismissed', resolved_at = ?,
                   resolution = 'observation rejected in review'
               WHERE status = 'open' AND (fact_id IN (SELECT id FROM facts WHERE project = ?
                   AND observation_id = ?) OR other_fact_id IN (SELECT id FROM facts
                   WHERE project = ? AND observation_id = ?))""",
            [now, project, observation_id, project, observation_id],
        )
        self.db.execute(
            """UPDATE facts SET status = 'rejected' WHERE project = ? AND observation_id = ?
               AND status = 'held'""",
            [project, observation_id],
        )

    def open_conflicts_of(self, project: str, observation_id: str) -> list[tuple[int, int]]:
        """(entity_id, count) of open conflicts made by the observation's facts."""
        return self.db.conn.execute(
            """SELECT c.entity_id, count(*) FROM facts f JOIN conflicts c ON c.fact_id = f.id
               WHERE f.project = ? AND f.observation_id = ? AND c.status = 'open'
               GROUP BY c.entity_id""",
            [project, observation_id],
        ).fetchall()

    def snapshot(self) -> list[tuple[Any, ...]]:
        """Every fact, clock-free (``retain/end_state.py``)."""
        return self.db.conn.execute(
            """SELECT id, entity_id, predicate, object, object_norm, observation_id, status
               FROM facts ORDER BY id"""
        ).fetchall()

    # Conflicts between facts

    def add_conflict(self, row: Sequence[Any]) -> int:
        """An open fact conflict (project, entity_id, predicate, fact_id, other_fact_id, pair,
        detail, created_at); 0 when the pair is recorded already."""
        return self.db.conn.execute(
            """INSERT OR IGNORE INTO conflicts (project, entity_id, kind, predicate, fact_id,
                   other_fact_id, pair, detail, created_at)
               VALUES (?, ?, 'fact', ?, ?, ?, ?, ?, ?)""",
            list(row),
        ).rowcount

    def conflicts(
        self, project: str, status: str | None, entity_id: int | None
    ) -> list[dict[str, Any]]:
        """The project's conflicts with both values, optionally of one status and entity."""
        where = ["c.project = ?"]
        params: list[Any] = [project]
        if status is not None:
            where.append("c.status = ?")
            params.append(status)
        if entity_id is not None:
            where.append("c.entity_id = ?")
            params.append(entity_id)
        return list(
            self.db.query(f"{_CONFLICTS} WHERE {' AND '.join(where)} ORDER BY c.id", params)
        )

    def open_conflicts(self, entity_ids: Sequence[int]) -> list[tuple[Any, ...]]:
        """(entity_id, id, predicate, object, observation_id, status, other object, other
        observation_id) of the entities' open conflicts (the truth digest)."""
        return self.db.conn.execute(
            f"""SELECT c.entity_id, c.id, c.predicate, a.object, a.observation_id, a.status,
                           b.object, b.observation_id
                    FROM conflicts c JOIN facts a ON a.id = c.fact_id
                    JOIN facts b ON b.id = c.other_fact_id
                    WHERE c.entity_id IN ({_marks(entity_ids)}) AND c.status = 'open'
                    ORDER BY c.entity_id, c.id""",
            list(entity_ids),
        ).fetchall()

    def conflicts_snapshot(self) -> list[tuple[Any, ...]]:
        """Every fact conflict, clock-free (``retain/end_state.py``)."""
        return self.db.conn.execute(
            """SELECT entity_id, kind, predicate, fact_id, other_fact_id, pair, detail,
                      status FROM conflicts ORDER BY id"""
        ).fetchall()

    # Conflicts between memories

    def add_memory_conflict(self, row: Sequence[Any]) -> bool:
        """An open memory conflict (project, memory_id, other_memory_id, pair, detail, source,
        created_at); False when it is open already."""
        cursor = self.db.execute(
            """INSERT OR IGNORE INTO memory_conflicts
                   (project, memory_id, other_memory_id, pair, detail, source, created_at)
               VALUES (?, ?, ?, ?, ?, ?, ?)""",
            list(row),
        )
        return bool(cursor.rowcount)

    def memory_conflicts(self, project: str, status: str | None) -> list[dict[str, Any]]:
        """The project's memory conflicts, optionally of one status, oldest first."""
        sql = "SELECT * FROM memory_conflicts WHERE project = ?"
        params: list[Any] = [project]
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        return list(self.db.query(sql + " ORDER BY id", params))

    def memory_conflict_status(self, conflict_id: int, project: str) -> str | None:
        """The memory conflict's status, or ``None`` when the project has no such conflict."""
        rows = list(
            self.db.query(
                "SELECT status FROM memory_conflicts WHERE id = ? AND project = ?",
                [conflict_id, project],
            )
        )
        return rows[0]["status"] if rows else None

    def close_memory_conflict(
        self, conflict_id: int, status: str, resolution: str | None, now: str
    ) -> None:
        """Resolve or dismiss a memory conflict."""
        self.db.execute(
            "UPDATE memory_conflicts SET status = ?, resolution = ?, resolved_at = ? WHERE id = ?",
            [status, resolution, now, conflict_id],
        )
