"""The consolidation pass: recompute strength and relation weights in bulk.

A periodic (typically nightly) pass, as the dreamer task ``consolidate``
(``plugins/consolidate_task.py``). It walks three phases in id order, one bounded
batch at a time, each batch one ``UPDATE`` that SQLite runs without handing
rows to Python:

1. **entities**: ``strength`` by the formula of ``strength.py``;
   pinned entities get ``inf``;
2. **relations**: ``weight_temporal = exp(−Δt / σ)``, σ from the relation
   type (a type no installed pack declares any more is left as it is and
   counted);
3. **memories** placed on the grid (``memory_cells``): the same formula with
   base strength 1, no outcomes, the memory's retrieval count and its cell's
   half-life (or its own, ``memory_cells.half_life_days``, which the Retain
   Job sets when schema_fit routing scales it) and emotional multiplier.
   Memories not placed yet are counted; the
   ``classify`` task places them.

Every batch is computed at the time the pass started (``as_of``), so a pass
split across runs still describes one moment. Memory use is bounded by the
batch size, not the store. The SQL uses SQLite's math functions (``pow``,
``log2``, ``exp``); where SQLite was built without them, Python functions of
the same names are registered on the connection. A property test checks that
the SQL and ``strength.py`` agree.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from plugin_sdk.grid.policy import grid
from plugin_sdk.store import driver

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

PHASES = ("entities", "relations", "memories")
INFINITY = "9e999"  # SQLite reads this literal as +inf

ENTITY_STRENGTH = f"""CASE WHEN e.pinned THEN {INFINITY} ELSE
    e.base_strength
    * pow(0.5, max(0.0, julianday(:stamp) - julianday(e.last_seen_at))
               / (e.half_life_days * (1 + 0.5 * ((e.positive_outcomes - e.negative_outcomes) * 1.0
                                                 / (e.positive_outcomes + e.negative_outcomes + 1)))))
    * (1 + 0.1 * log2(e.retrieval_count + 1))
    * e.emotional_multiplier END"""

UPDATE_ENTITIES = f"""UPDATE entities AS e SET strength = {ENTITY_STRENGTH}, strength_at = :stamp
    WHERE e.id > :after AND e.id <= :upto AND +e.project = :project"""

RELATION_WEIGHT = "exp(-max(0.0, julianday(:stamp) - julianday(r.last_seen_at)) / s.sigma_days)"

UPDATE_RELATIONS = f"""UPDATE relations AS r
    SET weight_temporal = {RELATION_WEIGHT}
    FROM temp.consolidate_sigma AS s
    WHERE r.id > :after AND r.id <= :upto AND +r.project = :project AND s.type = r.type"""

UPDATE_MEMORIES = f"""UPDATE memory_cells AS c SET strength = CASE WHEN m.pinned THEN {INFINITY} ELSE
        pow(0.5, max(0.0, julianday(:stamp) - julianday(m.last_seen_at)) / coalesce(c.half_life_days, g.half_life_days))
        * (1 + 0.1 * log2(m.retrieval_count + 1)) * g.emotional_multiplier END,
        strength_at = :stamp
    FROM memories AS m, temp.consolidate_cells AS g
    WHERE m.id = c.memory_id AND g.memory_type = c.memory_type AND g.referent = c.referent
      AND c.memory_id > :after AND c.memory_id <= :upto
      AND +m.project = :project AND +m.status = 'active'"""

# Every batch is an id range: ``+project`` keeps SQLite from choosing an index
# that starts with the project (and sorting the whole project for each batch).
_BATCH_END = {
    "entities": "SELECT max(id) FROM (SELECT id FROM entities WHERE +project = ? AND id > ? ORDER BY id LIMIT ?)",
    "relations": "SELECT max(id) FROM (SELECT id FROM relations WHERE +project = ? AND id > ? ORDER BY id LIMIT ?)",
    "memories": """SELECT max(memory_id) FROM (SELECT c.memory_id FROM memory_cells c
                   JOIN memories m ON m.id = c.memory_id
                   WHERE +m.project = ? AND c.memory_id > ? ORDER BY c.memory_id LIMIT ?)""",
}
_UPDATE = {"entities": UPDATE_ENTITIES, "relations": UPDATE_RELATIONS, "memories": UPDATE_MEMORIES}


def ensure_math(connection: driver.Connection) -> None:
    """Register ``pow``, ``log2`` and ``exp`` when SQLite was built without math functions."""
    try:
        connection.execute("SELECT pow(2, 1), log2(2), exp(0)").fetchone()
    except driver.OperationalError:
        connection.create_function("pow", 2, math.pow, deterministic=True)
        connection.create_function("log2", 1, math.log2, deterministic=True)
        connection.create_function("exp", 1, math.exp, deterministic=True)


def prepare(store: Store) -> None:
    """Load the grid's cells and σ into temp tables the batch updates join against."""
    ensure_math(store.db.conn)
    policy = grid(store)
    with store.atomic():
        for statement in (
            """CREATE TEMP TABLE IF NOT EXISTS consolidate_cells (memory_type TEXT, referent TEXT,
                   half_life_days REAL, emotional_multiplier REAL, PRIMARY KEY (memory_type, referent))""",
            "CREATE TEMP TABLE IF NOT EXISTS consolidate_sigma (type TEXT PRIMARY KEY, sigma_days REAL)",
            "DELETE FROM temp.consolidate_cells",
            "DELETE FROM temp.consolidate_sigma",
        ):
            store.db.execute(statement)
        store.db.conn.executemany(
            "INSERT INTO temp.consolidate_cells VALUES (?, ?, ?, ?)",
            [
                (*cell.split("."), values.half_life_days, values.emotional_multiplier)
                for cell, values in policy.cells.items()
            ],
        )
        store.db.conn.executemany(
            "INSERT INTO temp.consolidate_sigma VALUES (?, ?)",
            [(r.name, r.sigma_days) for r in policy.relations.values()],
        )


def batch(
    store: Store, phase: str, *, project: str, after: int, size: int, as_of: str
) -> tuple[int, int]:
    """Update one batch of a phase after id ``after``: (last id walked, rows updated).

    The last id is ``after`` when the phase has nothing left.
    """
    row = store.db.execute(_BATCH_END[phase], [project, after, size]).fetchone()
    if row[0] is None:
        return after, 0
    params: dict[str, Any] = {
        "stamp": as_of,
        "project": project,
        "after": after,
        "upto": row[0],
    }
    return int(row[0]), store.db.execute(_UPDATE[phase], params).rowcount


def counts(store: Store, *, project: str | None = None) -> dict[str, int]:
    """Rows each phase walks, and what it cannot handle (for progress and the report)."""
    project = project or store.project
    one = lambda sql: int(store.db.execute(sql, [project]).fetchone()[0])  # noqa: E731
    return {
        "entities": one("SELECT count(*) FROM entities WHERE project = ?"),
        "relations": one("SELECT count(*) FROM relations WHERE project = ?"),
        "memories": one(
            """SELECT count(*) FROM memory_cells c JOIN memories m ON m.id = c.memory_id
               WHERE m.project = ? AND m.status = 'active'"""
        ),
        "memories_unplaced": one(
            """SELECT count(*) FROM memories m WHERE m.project = ? AND m.status = 'active'
               AND NOT EXISTS (SELECT 1 FROM memory_cells c WHERE c.memory_id = m.id)"""
        ),
    }


def unknown_relation_types(store: Store, *, project: str | None = None) -> dict[str, int]:
    """Relations whose type no installed pack declares (left untouched by the pass)."""
    known = set(grid(store).relations)
    rows = store.db.query(
        "SELECT type, count(*) AS n FROM relations WHERE project = ? GROUP BY type ORDER BY type",
        [project or store.project],
    )
    return {row["type"]: row["n"] for row in rows if row["type"] not in known}
