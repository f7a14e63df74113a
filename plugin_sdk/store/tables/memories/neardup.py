"""The owner of neardup_bands, neardup_dirty: curate's candidate index.

Rows are integers only (bucket hashes, ids, word counts): no stored text.
Triggers on ``memories`` (m026) queue every written or changed memory in
``neardup_dirty``; ``store/search/neardup.py`` computes the bands of what is
queued and calls :meth:`NeardupRows.replace`. A forget drops the rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class NeardupRows:
    """Statements on neardup_bands, neardup_dirty; reached as ``store.tables.neardup``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    def dirty(self, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` queued memories, oldest first: id, project, category,
        status and content (None for a memory that no longer exists)."""
        return list(
            self.db.query(
                """SELECT d.memory_id AS id, m.project, m.category, m.status, m.content
                   FROM neardup_dirty d LEFT JOIN memories m ON m.id = d.memory_id
                   ORDER BY d.memory_id LIMIT ?""",
                [limit],
            )
        )

    def replace(self, done: Sequence[int], bands: Iterable[tuple[int, int, int]]) -> None:
        """Drop the bands of ``done``, insert ``(bucket, memory_id, size)`` rows, and
        take ``done`` off the queue (inside a transaction)."""
        self.drop(done)
        self.db.conn.executemany(
            "INSERT OR IGNORE INTO neardup_bands (bucket, memory_id, size) VALUES (?, ?, ?)",
            bands,
        )
        self.db.conn.executemany(
            "DELETE FROM neardup_dirty WHERE memory_id = ?", [(i,) for i in done]
        )

    def drop(self, memory_ids: Sequence[int]) -> None:
        """Remove the bands of ``memory_ids`` (a forget, or before recomputing them)."""
        self.db.conn.executemany(
            "DELETE FROM neardup_bands WHERE memory_id = ?", [(i,) for i in memory_ids]
        )

    def pairs(
        self, memory_ids: Sequence[int], p: int, q: int, shared: int
    ) -> list[tuple[int, int]]:
        """``(memory_id, other_id)`` for each of ``memory_ids`` and each other memory
        sharing ``shared`` or more of its buckets whose word count can reach a Jaccard
        similarity of ``p / q`` with its own (``size * p / q <= other <= size * q / p``,
        in integers: exact), by memory id then other id."""
        return [
            (row[0], row[1])
            for row in self.db.execute(
                """SELECT a.memory_id, b.memory_id FROM neardup_bands a
                   JOIN neardup_bands b ON b.bucket = a.bucket
                   WHERE a.memory_id IN (SELECT value FROM json_each(?))
                     AND b.memory_id <> a.memory_id
                     AND b.size * ? >= a.size * ? AND b.size * ? <= a.size * ?
                   GROUP BY a.memory_id, b.memory_id HAVING count(*) >= ?
                   ORDER BY 1, 2""",
                [json.dumps(list(memory_ids)), q, p, p, q, shared],
            )
        ]

    def memories(self, memory_ids: Sequence[int]) -> list[dict[str, Any]]:
        """The memory rows of ``memory_ids`` (a read, for the exact check), by id."""
        return list(
            self.db.query(
                "SELECT * FROM memories WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
                [json.dumps(list(memory_ids))],
            )
        )

    def texts(self, memory_ids: Sequence[int]) -> list[tuple[int, str]]:
        """``(id, content)`` of ``memory_ids`` (the light read before the exact check), by id."""
        return [
            (row[0], row[1] or "")
            for row in self.db.execute(
                "SELECT id, content FROM memories WHERE id IN (SELECT value FROM json_each(?)) "
                "ORDER BY id",
                [json.dumps(list(memory_ids))],
            )
        ]

    def queued(self) -> int:
        """How many memories wait for their bands."""
        return int(self.db.execute("SELECT count(*) FROM neardup_dirty").fetchone()[0])
