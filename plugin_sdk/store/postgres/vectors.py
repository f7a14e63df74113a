"""Vectors on PostgreSQL: pgvector as the mirror, the same source of truth.

``memory_vectors`` (the vectors as float32 bytes) stays the source of truth
on both engines. Where sqlite-vec mirrors one model into a ``vec0`` table,
PostgreSQL mirrors it into ``memory_vectors_vec``, a table of pgvector's
``vector(dim)`` type with an HNSW index for cosine distance, made when the
mirror is rebuilt (``CREATE EXTENSION vector`` must have succeeded: the
store tries it when it is created). The ``vector_changes`` triggers and the
catching up are the same. Without pgvector, vectors are scanned exactly, as
on SQLite without sqlite-vec.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable

from plugin_sdk.store.tables.memories.vectors import MAX_K, MIRROR, VectorRows


def floats_text(blob: bytes) -> str:
    """A float32 little-endian vector as pgvector's text form, ``[x,y,…]``."""
    values = array("f")
    values.frombytes(blob)
    if sys.byteorder != "little":
        values.byteswap()
    return "[" + ",".join(repr(value) for value in values) + "]"


class PgVectorRows(VectorRows):
    """:class:`VectorRows` with the mirror in pgvector (``store.tables.vectors`` on PostgreSQL)."""

    def load_extension(self) -> tuple[str | None, str]:
        row = self.db.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
        if row is None:
            return None, "the pgvector extension is not installed in this database"
        return f"pgvector {row[0]}", ""

    def mirror_exists(self) -> bool:
        row = self.db.execute("SELECT to_regclass(?)", [MIRROR]).fetchone()
        return row is not None and row[0] is not None

    def _fill(self, rows: Iterable[tuple[int, bytes]]) -> None:
        self.db.conn.executemany(
            f"INSERT INTO {MIRROR} (rowid, embedding) VALUES (?, CAST(? AS vector))",
            [(memory_id, floats_text(blob)) for memory_id, blob in rows],
        )

    def rebuild_mirror(self, model: str, dim: int) -> int:
        if self.mirror_exists():
            self.db.execute(f"DROP TABLE {MIRROR}")
        self.db.execute(
            f"CREATE TABLE {MIRROR} (rowid BIGINT PRIMARY KEY, embedding vector({int(dim)}) NOT NULL)"
        )
        self._fill(
            self.db.execute(
                "SELECT memory_id, vector FROM memory_vectors WHERE model = ? AND dim = ?",
                [model, dim],
            ).fetchall()
        )
        self.db.execute(
            f"CREATE INDEX {MIRROR}_hnsw ON {MIRROR} USING hnsw (embedding vector_cosine_ops)"
        )
        self.db.execute(
            "UPDATE vector_state SET mirror_model = ?, mirror_dim = ? WHERE id = 1", [model, dim]
        )
        self.db.execute("DELETE FROM vector_changes")
        return self.mirror_size()

    def catch_up(self) -> int:
        model, dim = self.mirrored()
        if model is None:
            return 0
        behind = self.count_behind()
        if behind:
            self.db.execute(
                f"DELETE FROM {MIRROR} WHERE rowid IN (SELECT memory_id FROM vector_changes)"
            )
            self._fill(
                self.db.execute(
                    """SELECT v.memory_id, v.vector FROM vector_changes c
                       JOIN memory_vectors v ON v.memory_id = c.memory_id
                       AND v.model = ? AND v.dim = ?""",
                    [model, dim],
                ).fetchall()
            )
            self.db.execute("DELETE FROM vector_changes")
        return behind

    def neighbours(self, blob: bytes, k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest by cosine (HNSW: approximate, as sqlite-vec's is exact)."""
        limit = min(k, MAX_K)
        # HNSW returns at most ef_search rows: at least as many as asked for.
        self.db.execute(f"SET hnsw.ef_search = {max(40, min(limit, 1000)):d}")
        rows = self.db.execute(
            f"SELECT rowid, embedding <=> CAST(? AS vector) AS distance FROM {MIRROR} "
            "ORDER BY distance LIMIT ?",
            [floats_text(blob), limit],
        ).fetchall()
        return [(int(memory_id), 1.0 - float(distance)) for memory_id, distance in rows]
