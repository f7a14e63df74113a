"""The reads over memories that the areas make: by hash, by id, counts, the map's units.

Part of the owner of memories (``memories.py``; reached as
``store.tables.memories``). An ``ids`` argument longer than ``CHUNK`` is the
caller's to split; ``readable_sql`` is the cross-project wall.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from plugin_sdk.store.visibility import readable_sql

if TYPE_CHECKING:
    from plugin_sdk.store.locking import StoreDatabase

# A category's (or every category's, ``where`` empty) active memories the map
# places: ``(id, category, content, tokens, active details)``, by id. Details
# of an active sequence are left out (their header stands for them).
_UNITS = """
SELECT m.id, m.category, m.content, coalesce(m.token_count, 0),
       (SELECT count(*) FROM composites s JOIN composite_members d ON d.composite_id = s.id
        JOIN memories x ON x.id = d.member_memory_id AND x.status = 'active'
        WHERE s.head_memory_id = m.id AND s.type = 'sequence')
FROM memories m
WHERE m.project = ? AND m.status = 'active' AND m.source != ? {where}
  AND NOT EXISTS (SELECT 1 FROM composite_members d JOIN composites s ON s.id = d.composite_id
                  JOIN memories h ON h.id = s.head_memory_id
                  WHERE d.member_memory_id = m.id AND s.type = 'sequence' AND h.status = 'active')
ORDER BY m.id"""


class MemoryReads:
    """Reads whose primary table is memories."""

    db: StoreDatabase

    # By text: the ``(project, category, normalized_hash)`` key

    def id_by_hash(self, project: str, category: str, digest: str) -> int | None:
        """The memory of ``project`` in ``category`` with this normalized hash, any status."""
        row = self.db.conn.execute(
            "SELECT id FROM memories WHERE project = ? AND category = ? AND normalized_hash = ?",
            [project, category, digest],
        ).fetchone()
        return int(row[0]) if row else None

    def has_hash(self, project: str, category: str, digest: str) -> bool:
        """Whether ``project`` holds a memory in ``category`` with this normalized hash."""
        row = self.db.execute(
            "SELECT 1 FROM memories WHERE project = ? AND category = ? AND normalized_hash = ?",
            [project, category, digest],
        ).fetchone()
        return row is not None

    def source_by_hash(
        self, project: str, category: str, digest: str
    ) -> tuple[int, str | None, str] | None:
        """``(id, source, status)`` of the memory with this key, or None."""
        row = self.db.execute(
            """SELECT id, source, status FROM memories
               WHERE project = ? AND category = ? AND normalized_hash = ?""",
            [project, category, digest],
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def seen_by_hash(self, project: str, category: Any, digest: str) -> dict[str, Any] | None:
        """``{id, status, seen_count}`` of the memory with this key, or None."""
        rows = list(
            self.db.query(
                """SELECT id, status, seen_count FROM memories
                   WHERE project = ? AND category = ? AND normalized_hash = ?""",
                [project, category, digest],
            )
        )
        return rows[0] if rows else None

    # By id

    def visibility(self, memory_id: int) -> tuple[str, str, int] | None:
        """``(project, scope, shareable)`` of a memory, or None."""
        row = self.db.execute(
            "SELECT project, scope, shareable FROM memories WHERE id = ?", [memory_id]
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def content(self, memory_id: int) -> str:
        """A memory's text (it must exist)."""
        (text,) = self.db.conn.execute(
            "SELECT content FROM memories WHERE id = ?", [memory_id]
        ).fetchone()
        return str(text)

    def dedup_row(self, memory_id: int) -> tuple[int, str, int | None, str] | None:
        """``(id, normalized_hash, token_count, status)`` of a memory, or None."""
        row = self.db.conn.execute(
            "SELECT id, normalized_hash, token_count, status FROM memories WHERE id = ?",
            [memory_id],
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2], row[3])

    def texts(self, ids: Sequence[int]) -> dict[int, str]:
        """id -> text of those of ``ids`` that exist, any status."""
        return dict(
            self.db.execute(
                f"SELECT id, content FROM memories WHERE id IN ({','.join('?' * len(ids))})",
                list(ids),
            ).fetchall()
        )

    def texts_and_hashes(self, ids: Sequence[int]) -> list[tuple[int, str, str]]:
        """``(id, content, normalized_hash)`` of those of ``ids`` that exist."""
        return self.db.execute(
            f"SELECT id, content, normalized_hash FROM memories WHERE id IN ({','.join('?' * len(ids))})",
            list(ids),
        ).fetchall()

    def active_texts(self, ids: Sequence[int]) -> dict[int, str]:
        """id -> text of the active ones among ``ids``."""
        marks = ", ".join("?" * len(ids))
        sql = f"SELECT id, content FROM memories WHERE status = 'active' AND id IN ({marks})"
        return dict(self.db.execute(sql, list(ids)).fetchall())

    def readable_active_ids(self, ids: Sequence[int], project: str) -> list[int]:
        """The active ones among ``ids`` that ``project`` may read (no order)."""
        return [
            row[0]
            for row in self.db.execute(
                f"""SELECT m.id FROM memories m WHERE m.status = 'active' AND {readable_sql("m")}
                    AND m.id IN ({",".join("?" * len(ids))})""",
                [project, *ids],
            )
        ]

    def in_category(self, category: str) -> list[dict[str, Any]]:
        """Every memory of ``category`` (all projects, any status), by id."""
        return list(
            self.db.query("SELECT * FROM memories WHERE category = ? ORDER BY id", [category])
        )

    def recent(
        self, project: str, statuses: Sequence[str], since: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """``project``'s memories in ``statuses`` changed at or after ``since`` (None: any time),
        most recently changed first, at most ``limit``."""
        after = "AND updated_at >= ?" if since else ""
        return list(
            self.db.query(
                f"""SELECT * FROM memories WHERE project = ?
                    AND status IN ({", ".join("?" * len(statuses))})
                    {after} ORDER BY updated_at DESC, id DESC LIMIT ?""",
                [project, *statuses, *([since] if since else []), limit],
            )
        )

    # Counts

    def readable_active_count(self, project: str) -> int:
        """Active memories of active categories that ``project`` may read."""
        return int(
            self.db.execute(
                f"""SELECT count(*) FROM memories m JOIN categories c
                   ON c.name = m.category AND c.status = 'active'
                   WHERE m.status = 'active' AND {readable_sql("m")}""",
                [project],
            ).fetchone()[0]
        )

    def pinned_cost(self, project: str, line: int) -> int:
        """The tokens of ``project``'s active pinned memories plus ``line`` for each."""
        return int(
            self.db.execute(
                """SELECT coalesce(sum(token_count), 0) + ? * count(*) FROM memories
                   WHERE project = ? AND status = 'active' AND pinned = 1""",
                [line, project],
            ).fetchone()[0]
        )

    def active_tokens_by_category(self, project: str) -> dict[str, int | None]:
        """Category -> summed token count of ``project``'s active memories."""
        return {
            row["category"]: row["tokens"]
            for row in self.db.query(
                """SELECT category, sum(token_count) AS tokens FROM memories
                   WHERE project = ? AND status = 'active' GROUP BY category""",
                [project],
            )
        }

    def count_unplaced(self, project: str) -> int:
        """Active memories of ``project`` in no grid cell."""
        return int(
            self.db.execute(
                """SELECT count(*) FROM memories m WHERE m.project = ? AND m.status = 'active'
                   AND NOT EXISTS (SELECT 1 FROM memory_cells c WHERE c.memory_id = m.id)""",
                [project],
            ).fetchone()[0]
        )

    # Vectors: what is still to embed

    def unembedded_text(self, memory_id: int) -> str | None:
        """The text of an active memory with no vector of the newest model, else None."""
        row = self.db.execute(
            """SELECT m.content FROM memories m WHERE m.id = ? AND m.status = 'active'
               AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id
                   AND v.model = (SELECT model FROM vector_state WHERE id = 1))""",
            [memory_id],
        ).fetchone()
        return None if row is None else str(row[0])

    def unembedded(
        self, model: str | None, dim: int | None, project: str, after: int, limit: int
    ) -> list[tuple[int, str]]:
        """Active memories of ``project`` after id ``after`` with no ``model``/``dim`` vector, by id."""
        sql = """SELECT m.id, m.content FROM memories m
                 WHERE m.project = ? AND m.status = 'active' AND m.id > ?
                   AND NOT EXISTS (SELECT 1 FROM memory_vectors v
                                   WHERE v.model = ? AND v.dim = ? AND v.memory_id = m.id)
                 ORDER BY m.id LIMIT ?"""
        return [
            (row[0], row[1])
            for row in self.db.execute(sql, [project, after, model, dim, limit]).fetchall()
        ]

    def count_unembedded(self, project: str) -> int:
        """Active memories of ``project`` without a vector of the newest model."""
        row = self.db.execute(
            """SELECT count(*) FROM memories m WHERE m.project = ? AND m.status = 'active'
               AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id
                   AND v.model = (SELECT model FROM vector_state WHERE id = 1))""",
            [project],
        ).fetchone()
        return int(row[0])

    # The map (composites/mapping.py)

    def map_units(
        self, project: str, source: str, category: str | None = None
    ) -> list[tuple[int, str, str, int, int]]:
        """``(id, category, content, tokens, active details)`` of the active memories the map
        places (not from ``source``, not a detail of an active sequence), of ``category``
        or every category, by id."""
        if category is None:
            return self.db.execute(_UNITS.format(where=""), [project, source]).fetchall()
        return self.db.execute(
            _UNITS.format(where="AND m.category = ?"), [project, source, category]
        ).fetchall()

    # A Retain Job's outcome (retain/end_state.py)

    def end_state(self) -> list[tuple[Any, ...]]:
        """Every memory's ``(id, content, category, status, seen_count, normalized_hash)``, by id."""
        return self.db.conn.execute(
            """SELECT id, content, category, status, seen_count, normalized_hash
               FROM memories ORDER BY id"""
        ).fetchall()
