"""The owner of relations: every statement that touches them.

An edge is written once per (project, source, target, type): new evidence for
it counts one more and restarts its clock (:meth:`RelationRows.relate`, the
grid's and the Retain Job's one statement). Edges are read with their ends'
names.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

WEIGHT = "exp(-max(0.0, julianday(:stamp) - julianday(r.last_seen_at)) / s.sigma_days)"

# The consolidation pass: σ by type from ``temp.consolidate_sigma`` (:meth:`RelationRows.load_sigma`);
# ``+project``: each batch seeks by id.
BATCH_END = "SELECT max(id) FROM (SELECT id FROM relations WHERE +project = ? AND id > ? ORDER BY id LIMIT ?)"
CONSOLIDATE = f"""UPDATE relations AS r
    SET weight_temporal = {WEIGHT}
    FROM temp.consolidate_sigma AS s
    WHERE r.id > :after AND r.id <= :upto AND +r.project = :project AND s.type = r.type"""

_RELATE = """INSERT INTO relations (project, source_id, target_id, type, weight,
       created_at, updated_at, last_seen_at)
   VALUES (:project, :source, :target, :type, :weight, :now, :now, :now)
   ON CONFLICT (project, source_id, target_id, type) DO UPDATE SET
       evidence_count = evidence_count + 1,
       weight = CASE WHEN :given = 1 THEN excluded.weight ELSE weight END,
       weight_temporal = 1.0, updated_at = excluded.updated_at,
       last_seen_at = excluded.last_seen_at"""

_SELECT = """SELECT r.id, r.project, s.name AS source, t.name AS target, r.type, r.weight,
       r.weight_temporal, r.evidence_count, r.created_at, r.updated_at, r.last_seen_at
    FROM relations r JOIN entities s ON s.id = r.source_id
    JOIN entities t ON t.id = r.target_id"""


def _marks(ids: Sequence[int]) -> str:
    return ", ".join("?" * len(ids))


class RelationRows:
    """Statements on relations; reached as ``store.tables.relations``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # Project-wide (host/projects.py, host/portable.py)

    def export_rows(self, project: str) -> Iterator[dict[str, Any]]:
        """Every relation of ``project``, by id."""
        return self.db.stream("SELECT * FROM relations WHERE project = ? ORDER BY id", [project])

    def relate(
        self,
        project: str,
        source_id: int,
        target_id: int,
        type: str,
        *,
        weight: float,
        given: bool,
        now: str,
    ) -> None:
        """Add an edge, or one more evidence for it (its clock restarts); an existing
        edge takes ``weight`` only when it was ``given``."""
        self.db.conn.execute(
            _RELATE,
            {
                "project": project,
                "source": source_id,
                "target": target_id,
                "type": type,
                "weight": weight,
                "given": given,
                "now": now,
            },
        )

    def between(self, source_id: int, target_id: int, type: str) -> list[dict[str, Any]]:
        """The edge of ``type`` from source to target (none or one), with its ends' names."""
        return list(
            self.db.query(
                f"{_SELECT} WHERE r.source_id = ? AND r.target_id = ? AND r.type = ? ORDER BY r.id",
                [source_id, target_id, type],
            )
        )

    def touching(self, entity_id: int) -> list[dict[str, Any]]:
        """Every edge from or to an entity, by id, with its ends' names."""
        return list(
            self.db.query(
                f"{_SELECT} WHERE (r.source_id = ? OR r.target_id = ?) ORDER BY r.id",
                [entity_id, entity_id],
            )
        )

    def exists(self, project: str, source_id: int, target_id: int, type: str) -> bool:
        """Whether the project has this very edge."""
        row = self.db.conn.execute(
            """SELECT 1 FROM relations WHERE project = ? AND source_id = ? AND target_id = ?
               AND type = ?""",
            [project, source_id, target_id, type],
        ).fetchone()
        return row is not None

    def touches(self, project: str, entity_id: int, type: str) -> bool:
        """Whether an edge of ``type`` leaves (in the project) or reaches an entity."""
        row = self.db.conn.execute(
            """SELECT 1 FROM relations WHERE (project = ? AND source_id = ? AND type = ?)
               OR (target_id = ? AND type = ?) LIMIT 1""",
            [project, entity_id, type, entity_id, type],
        ).fetchone()
        return row is not None

    def outgoing(self, project: str, ids: Sequence[int]) -> list[tuple[int, str, str, int]]:
        """(source id, type, target name, evidence) of the project's edges from ``ids``."""
        return self.db.conn.execute(
            f"""SELECT r.source_id, r.type, e.name, r.evidence_count
                FROM relations r JOIN entities e ON e.id = r.target_id
                WHERE r.project = ? AND r.source_id IN ({_marks(ids)})""",
            [project, *ids],
        ).fetchall()

    def incoming(self, ids: Sequence[int]) -> list[tuple[int, str, str, int]]:
        """(target id, type, source name, evidence) of the edges to ``ids``."""
        return self.db.conn.execute(
            f"""SELECT r.target_id, r.type, e.name, r.evidence_count
                FROM relations r JOIN entities e ON e.id = r.source_id
                WHERE r.target_id IN ({_marks(ids)})""",
            list(ids),
        ).fetchall()

    def count(self, project: str) -> int:
        row = self.db.execute("SELECT count(*) FROM relations WHERE project = ?", [project])
        return int(row.fetchone()[0])

    def type_counts(self, project: str) -> dict[str, int]:
        """Edges of the project per type, by type."""
        rows = self.db.query(
            "SELECT type, count(*) AS n FROM relations WHERE project = ? GROUP BY type ORDER BY type",
            [project],
        )
        return {row["type"]: row["n"] for row in rows}

    def snapshot(self) -> list[tuple[Any, ...]]:
        """Every edge, clock-free (``retain/end_state.py``)."""
        return self.db.conn.execute(
            """SELECT source_id, target_id, type, weight, evidence_count
               FROM relations ORDER BY 1, 2, 3"""
        ).fetchall()

    def load_sigma(self, sigmas: Iterable[tuple[str, float]]) -> None:
        """The grid's (type, σ days) in ``temp.consolidate_sigma``, for :meth:`consolidate`."""
        self.db.execute(
            "CREATE TEMP TABLE IF NOT EXISTS consolidate_sigma (type TEXT PRIMARY KEY, sigma_days REAL)"
        )
        self.db.execute("DELETE FROM temp.consolidate_sigma")
        self.db.conn.executemany("INSERT INTO temp.consolidate_sigma VALUES (?, ?)", sigmas)

    def consolidate(self, project: str, *, after: int, size: int, stamp: str) -> tuple[int, int]:
        """One batch of the consolidation pass after id ``after``: (last id, rows updated)."""
        upto = self.db.execute(BATCH_END, [project, after, size]).fetchone()[0]
        if upto is None:
            return after, 0
        params = {"stamp": stamp, "project": project, "after": after, "upto": upto}
        return int(upto), self.db.execute(CONSOLIDATE, params).rowcount
