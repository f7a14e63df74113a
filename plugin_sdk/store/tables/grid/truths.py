"""The owner of compiled_truths, truth_impacts: every statement that touches them.

An observation's impact on an entity gathers in ``truth_impacts`` (one
statement, :data:`IMPACT`, for the single and the batched job); a
regeneration resets it and writes a new ``compiled_truths`` version, the
previous one pointing to it by ``superseded_by``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

# (entity_id, project, impact, observations, updated_at): impacts and counts add up.
IMPACT = """INSERT INTO truth_impacts (entity_id, project, impact, observations, updated_at)
           VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (entity_id) DO UPDATE SET impact = impact + excluded.impact,
               observations = observations + excluded.observations,
               updated_at = excluded.updated_at"""

_SELECT = """SELECT t.id, t.entity_id, e.name AS entity, t.version, t.markdown, t.written_by,
                    t.impact, t.created_at, t.superseded_by
             FROM compiled_truths t JOIN entities e ON e.id = t.entity_id"""


class TruthRows:
    """Statements on compiled_truths, truth_impacts; reached as ``store.tables.truths``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # Compiled truths

    def insert(self, row: Sequence[Any]) -> int:
        """A new version (project, entity_id, version, markdown, written_by, impact,
        created_at); its id."""
        cursor = self.db.conn.execute(
            """INSERT INTO compiled_truths (project, entity_id, version, markdown, written_by,
                   impact, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)""",
            list(row),
        )
        return int(cursor.lastrowid or 0)

    def supersede(self, pairs: Iterable[tuple[int, int]]) -> None:
        """(new id, previous id): the previous version points to the new one."""
        self.db.conn.executemany("UPDATE compiled_truths SET superseded_by = ? WHERE id = ?", pairs)

    def by_id(self, truth_id: int) -> dict[str, Any] | None:
        """One version with its entity's name, or ``None``."""
        rows = self._rows(f"{_SELECT} WHERE t.id = ?", [truth_id])
        return rows[0] if rows else None

    def history(self, entity_id: int) -> list[dict[str, Any]]:
        """Every version of the entity's truth, oldest first."""
        return self._rows(f"""{_SELECT} WHERE t.entity_id = ? ORDER BY t.version""", [entity_id])

    def _rows(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        """Rows as dicts, straight from the connection (no savepoint per query)."""
        cursor = self.db.conn.execute(sql, params)
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    # Gathered impact

    def add_impact(self, entity_id: int, project: str, impact: float, now: str) -> None:
        """One observation's impact on an entity."""
        self.db.conn.execute(IMPACT, [entity_id, project, impact, 1, now])

    def add_impacts(self, rows: Iterable[Sequence[Any]]) -> None:
        """A batch's gathered impacts (:data:`IMPACT`'s parameters), one ``executemany``."""
        self.db.conn.executemany(IMPACT, rows)

    def reset_impacts(self, entity_ids: Iterable[int], now: str) -> None:
        """The entities' truths were regenerated: their gathered impact starts again."""
        self.db.conn.executemany(
            "UPDATE truth_impacts SET impact = 0, observations = 0, updated_at = ? "
            "WHERE entity_id = ?",
            [(now, entity_id) for entity_id in entity_ids],
        )

    def due(self, project: str, threshold: float) -> list[tuple[int, float]]:
        """(entity id, impact) of the entities whose gathered impact reached ``threshold``."""
        rows = self.db.conn.execute(
            """SELECT entity_id, impact FROM truth_impacts WHERE project = ? AND impact >= ?
               ORDER BY entity_id""",
            [project, threshold],
        ).fetchall()
        return [(int(entity_id), float(impact)) for entity_id, impact in rows]

    def impact(self, entity_id: int) -> float:
        """The entity's gathered impact (0 when none)."""
        row = self.db.conn.execute(
            "SELECT impact FROM truth_impacts WHERE entity_id = ?", [entity_id]
        ).fetchone()
        return float(row[0]) if row else 0.0

    def impacts_snapshot(self) -> list[tuple[Any, ...]]:
        """The gathered impacts, rounded (``retain/end_state.py``)."""
        return self.db.conn.execute(
            """SELECT entity_id, round(impact, 9), observations FROM truth_impacts
               WHERE impact > 0 ORDER BY entity_id"""
        ).fetchall()
