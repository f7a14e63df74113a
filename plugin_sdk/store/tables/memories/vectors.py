"""The owner of memory_vectors, vector_state, vector_changes and the sqlite-vec mirror.

``memory_vectors`` is the source of truth; ``memory_vectors_vec`` (:data:`MIRROR`,
a ``vec0`` table created at run time when sqlite-vec loads) copies the rows
of one model (``vector_state.mirror_model``). Triggers on ``memory_vectors``
(migration ``m014_vectors``) list each memory whose row of the mirrored model
changed in ``vector_changes``; :meth:`VectorRows.catch_up` applies that list.
The rules written here: storing vectors records their model as the newest
(:meth:`VectorRows.put`), and a rebuilt or dropped mirror has nothing behind.
The vectors area (``plugin_sdk/vectors/index.py``, ``store.vectors``) decides
when each runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from plugin_sdk.store import driver
from plugin_sdk.store.visibility import readable_sql

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

MIRROR = "memory_vectors_vec"
#: sqlite-vec's largest ``k`` for one KNN query.
MAX_K = 4096
_CHUNK = 500

_UPSERT = """
INSERT INTO memory_vectors (model, memory_id, dim, vector, content_hash, embedded_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (model, memory_id) DO UPDATE SET
    dim = excluded.dim, vector = excluded.vector,
    content_hash = excluded.content_hash, embedded_at = excluded.embedded_at
"""


def load_sqlite_vec(connection: Any) -> tuple[str | None, str]:
    """Load sqlite-vec into ``connection``: ``(version, "")``, or ``(None, why not)``.

    ``None`` when the driver cannot load extensions, the package is missing,
    or loading fails; the vectors are then scanned instead.
    """
    if not driver.can_load_extensions():
        return None, f"the {driver.name} driver cannot load SQLite extensions"
    try:
        import sqlite_vec
    except ImportError:
        return (
            None,
            "the sqlite-vec package is not installed (pip install sqlite-vec; in a memsdk checkout: pip install -e '.[vec]')",
        )
    try:
        connection.enable_load_extension(True)
        try:
            sqlite_vec.load(connection)
        finally:
            connection.enable_load_extension(False)
        return str(connection.execute("SELECT vec_version()").fetchone()[0]), ""
    except (driver.Error, AttributeError, OSError) as error:
        return None, f"sqlite-vec did not load: {error}"


class VectorRows:
    """Statements on memory_vectors, vector_state, vector_changes; reached as ``store.tables.vectors``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    def load_extension(self) -> tuple[str | None, str]:
        """Load sqlite-vec into this store's connection (see :func:`load_sqlite_vec`)."""
        return load_sqlite_vec(self.db.conn)

    # memory_vectors

    def put(self, model: str, rows: Sequence[tuple[Any, ...]]) -> None:
        """Upsert ``(model, memory_id, dim, vector, content_hash, embedded_at)`` rows in one
        batch, and record ``model`` as the newest (inside a transaction)."""
        self.db.conn.executemany(_UPSERT, rows)
        self.db.execute("UPDATE vector_state SET model = ? WHERE id = 1", [model])

    def delete_for(self, memory_ids: Sequence[int]) -> int:
        """Delete every vector of these memories (inside a transaction); how many rows went."""
        removed = 0
        for start in range(0, len(memory_ids), _CHUNK):
            chunk = list(memory_ids[start : start + _CHUNK])
            marks = ", ".join("?" * len(chunk))
            removed += self.db.execute(
                f"DELETE FROM memory_vectors WHERE memory_id IN ({marks})", chunk
            ).rowcount
        return removed

    def prune(self, model: str, dim: int, project: str) -> int:
        """Delete the project's vectors of other models, and every vector of a memory that
        is not active (inside a transaction); how many rows went."""
        removed = self.db.execute(
            """DELETE FROM memory_vectors WHERE (model != ? OR dim != ?) AND memory_id IN
               (SELECT id FROM memories WHERE project = ?)""",
            [model, dim, project],
        ).rowcount
        removed += self.db.execute(
            """DELETE FROM memory_vectors WHERE memory_id IN
               (SELECT id FROM memories WHERE status != 'active')"""
        ).rowcount
        return removed

    def has_any(self) -> bool:
        return self.db.execute("SELECT 1 FROM memory_vectors LIMIT 1").fetchone() is not None

    def newest(self) -> tuple[str, int] | None:
        """``(model, dim)`` of the newest model's latest vector, or None."""
        row = self.db.execute(
            "SELECT model, dim FROM memory_vectors WHERE model = "
            "(SELECT model FROM vector_state WHERE id = 1) ORDER BY memory_id DESC LIMIT 1"
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def readable(self, model: str, dim: int, project: str) -> Iterator[tuple[int, bytes]]:
        """``(memory_id, vector)`` of every active memory readable from ``project``, streamed."""
        sql = f"""SELECT v.memory_id, v.vector FROM memory_vectors v
                  JOIN memories m ON m.id = v.memory_id
                  WHERE v.model = ? AND v.dim = ? AND m.status = 'active' AND {readable_sql("m")}"""
        return self.db.execute(sql, [model, dim, project])

    def of_memories(
        self, model: str, dim: int, memory_ids: Sequence[int]
    ) -> list[tuple[int, bytes]]:
        """``(memory_id, vector)`` of these memories' ``model`` vectors."""
        rows: list[tuple[int, bytes]] = []
        for start in range(0, len(memory_ids), _CHUNK):
            chunk = memory_ids[start : start + _CHUNK]
            marks = ", ".join("?" * len(chunk))
            rows += self.db.execute(
                f"""SELECT memory_id, vector FROM memory_vectors
                    WHERE model = ? AND dim = ? AND memory_id IN ({marks})""",
                [model, dim, *chunk],
            ).fetchall()
        return rows

    def ids_of(self, model: str, dim: int) -> set[int]:
        """The memory ids with a vector of ``model``."""
        return {
            row[0]
            for row in self.db.execute(
                "SELECT memory_id FROM memory_vectors WHERE model = ? AND dim = ?", [model, dim]
            )
        }

    def per_model(self) -> dict[str, dict[str, int]]:
        """``{model: {"dim": n, "vectors": n}}``."""
        return {
            row[0]: {"dim": row[1], "vectors": row[2]}
            for row in self.db.execute(
                "SELECT model, dim, count(*) FROM memory_vectors GROUP BY model, dim ORDER BY model"
            )
        }

    def with_memories(self) -> Iterable[tuple[int, str, str, str, str]]:
        """``(memory_id, model, content_hash, content, status)`` of every vector."""
        return self.db.execute(
            """SELECT v.memory_id, v.model, v.content_hash, m.content, m.status
               FROM memory_vectors v JOIN memories m ON m.id = v.memory_id"""
        )

    # vector_state

    def state(self) -> tuple[str | None, str | None, bool]:
        """``(model, mirror_model, embed_on_write)``."""
        row = self.db.execute(
            "SELECT model, mirror_model, embed_on_write FROM vector_state WHERE id = 1"
        ).fetchone()
        return row[0], row[1], bool(row[2])

    def model(self) -> str | None:
        """The model the newest vectors were written with."""
        return self.db.execute("SELECT model FROM vector_state WHERE id = 1").fetchone()[0]

    def embed_on_write(self) -> bool:
        row = self.db.execute("SELECT embed_on_write FROM vector_state WHERE id = 1").fetchone()
        return bool(row[0])

    def set_embed_on_write(self, value: bool) -> None:
        self.db.execute(
            "UPDATE vector_state SET embed_on_write = ? WHERE id = 1", [int(bool(value))]
        )

    def mirrored(self) -> tuple[str | None, int | None]:
        """``(model, dim)`` the mirror holds, or ``(None, None)``."""
        row = self.db.execute(
            "SELECT mirror_model, mirror_dim FROM vector_state WHERE id = 1"
        ).fetchone()
        return row[0], row[1]

    # vector_changes and the mirror (the extension loaded)

    def behind(self) -> set[int]:
        """The memory ids whose mirrored vector changed since the mirror last caught up."""
        return {row[0] for row in self.db.execute("SELECT memory_id FROM vector_changes")}

    def count_behind(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM vector_changes").fetchone()[0])

    def mirror_exists(self) -> bool:
        row = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [MIRROR]
        ).fetchone()
        return row is not None

    def rebuild_mirror(self, model: str, dim: int) -> int:
        """Mirror ``model`` from scratch (inside a transaction); how many rows it holds."""
        if self.mirror_exists():
            self.db.execute(f"DROP TABLE {MIRROR}")
        self.db.execute(
            f"CREATE VIRTUAL TABLE {MIRROR} USING vec0(embedding float[{int(dim)}] distance_metric=cosine)"
        )
        self.db.execute(
            f"""INSERT INTO {MIRROR} (rowid, embedding)
                SELECT memory_id, vector FROM memory_vectors WHERE model = ? AND dim = ?""",
            [model, dim],
        )
        self.db.execute(
            "UPDATE vector_state SET mirror_model = ?, mirror_dim = ? WHERE id = 1", [model, dim]
        )
        self.db.execute("DELETE FROM vector_changes")
        return self.mirror_size()

    def drop_mirror(self) -> None:
        """Remove the mirror (inside a transaction)."""
        if self.mirror_exists():
            self.db.execute(f"DROP TABLE {MIRROR}")
        self.db.execute(
            "UPDATE vector_state SET mirror_model = NULL, mirror_dim = NULL WHERE id = 1"
        )
        self.db.execute("DELETE FROM vector_changes")

    def catch_up(self) -> int:
        """Apply ``vector_changes`` to the mirror (inside a transaction); how many ids it redid."""
        model, dim = self.mirrored()
        if model is None:
            return 0
        behind = self.count_behind()
        if behind:
            self.db.execute(
                f"DELETE FROM {MIRROR} WHERE rowid IN (SELECT memory_id FROM vector_changes)"
            )
            self.db.execute(
                f"""INSERT INTO {MIRROR} (rowid, embedding)
                    SELECT v.memory_id, v.vector FROM vector_changes c
                    JOIN memory_vectors v ON v.memory_id = c.memory_id AND v.model = ? AND v.dim = ?""",
                [model, dim],
            )
            self.db.execute("DELETE FROM vector_changes")
        return behind

    def neighbours(self, blob: bytes, k: int) -> list[tuple[int, float]]:
        """The mirror's ``k`` nearest memory ids with their cosine similarity, best first."""
        rows = self.db.execute(
            f"SELECT rowid, distance FROM {MIRROR} WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            [blob, min(k, MAX_K)],
        ).fetchall()
        return [(int(memory_id), 1.0 - float(distance)) for memory_id, distance in rows]

    def mirrored_ids(self) -> set[int]:
        return {row[0] for row in self.db.execute(f"SELECT rowid FROM {MIRROR}")}

    def mirror_size(self) -> int:
        return int(self.db.execute(f"SELECT count(*) FROM {MIRROR}").fetchone()[0])
