"""The sqlite-vec mirror: one model's vectors in a ``vec0`` table, for fast nearest-neighbour search.

``memory_vectors`` is the source of truth; ``memory_vectors_vec`` copies the
rows of one model (``vector_state.mirror_model``), keyed by memory id, when
the connection can load sqlite-vec. Triggers on ``memory_vectors`` (plain
SQL, so they run on every driver) list each memory whose row of the mirrored
model was added, changed or removed in ``vector_changes``; :func:`catch_up`
applies that list. So the mirror stays correct across drivers: a process
whose SQLite cannot load the extension writes and deletes vectors as usual,
and the next process that can applies what it missed.

A query never writes: it takes the mirror's neighbours minus the listed ids,
and scores the listed ids' current vectors itself (``index.py``).

Loading needs a driver with ``enable_load_extension`` (``pysqlite3``, or a
standard library built with it) and the ``sqlite-vec`` package:
``pip install sqlite-vec`` (in a memsdk checkout: ``pip install -e '.[vec]'``). Without either, nothing here is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plugin_sdk.store import driver

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

TABLE = "memory_vectors_vec"
#: sqlite-vec's largest ``k`` for one KNN query.
MAX_K = 4096


def load(connection: Any) -> tuple[str | None, str]:
    """Load sqlite-vec into ``connection``: ``(version, "")``, or ``(None, why not)``.

    ``None`` when the driver cannot load extensions, the package is missing,
    or loading fails; callers then scan ``memory_vectors`` instead.
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


def exists(store: Store) -> bool:
    row = store.db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [TABLE]
    ).fetchone()
    return row is not None


def mirrored(store: Store) -> tuple[str | None, int | None]:
    row = store.db.execute(
        "SELECT mirror_model, mirror_dim FROM vector_state WHERE id = 1"
    ).fetchone()
    return row[0], row[1]


def rebuild(store: Store, model: str, dim: int) -> int:
    """Mirror ``model`` from scratch (inside a transaction); how many rows it holds."""
    if exists(store):
        store.db.execute(f"DROP TABLE {TABLE}")
    store.db.execute(
        f"CREATE VIRTUAL TABLE {TABLE} USING vec0(embedding float[{int(dim)}] distance_metric=cosine)"
    )
    store.db.execute(
        f"""INSERT INTO {TABLE} (rowid, embedding)
            SELECT memory_id, vector FROM memory_vectors WHERE model = ? AND dim = ?""",
        [model, dim],
    )
    store.db.execute(
        "UPDATE vector_state SET mirror_model = ?, mirror_dim = ? WHERE id = 1", [model, dim]
    )
    store.db.execute("DELETE FROM vector_changes")
    return int(store.db.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])


def drop(store: Store) -> None:
    """Remove the mirror (inside a transaction; needs the extension loaded)."""
    if exists(store):
        store.db.execute(f"DROP TABLE {TABLE}")
    store.db.execute("UPDATE vector_state SET mirror_model = NULL, mirror_dim = NULL WHERE id = 1")
    store.db.execute("DELETE FROM vector_changes")


def catch_up(store: Store) -> int:
    """Apply ``vector_changes`` to the mirror (inside a transaction); how many ids it redid."""
    model, dim = mirrored(store)
    if model is None:
        return 0
    behind = int(store.db.execute("SELECT count(*) FROM vector_changes").fetchone()[0])
    if behind:
        store.db.execute(
            f"DELETE FROM {TABLE} WHERE rowid IN (SELECT memory_id FROM vector_changes)"
        )
        store.db.execute(
            f"""INSERT INTO {TABLE} (rowid, embedding)
                SELECT v.memory_id, v.vector FROM vector_changes c
                JOIN memory_vectors v ON v.memory_id = c.memory_id AND v.model = ? AND v.dim = ?""",
            [model, dim],
        )
        store.db.execute("DELETE FROM vector_changes")
    return behind


def neighbours(store: Store, blob: bytes, k: int) -> list[tuple[int, float]]:
    """The mirror's ``k`` nearest memory ids with their cosine similarity, best first."""
    rows = store.db.execute(
        f"SELECT rowid, distance FROM {TABLE} WHERE embedding MATCH ? AND k = ? ORDER BY distance",
        [blob, min(k, MAX_K)],
    ).fetchall()
    return [(int(memory_id), 1.0 - float(distance)) for memory_id, distance in rows]


def size(store: Store) -> int:
    return int(store.db.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])
