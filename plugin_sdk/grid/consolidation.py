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

from typing import TYPE_CHECKING

from plugin_sdk.grid.policy import grid
from plugin_sdk.store.tables.grid.cells import ensure_math

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

PHASES = ("entities", "relations", "memories")


def prepare(store: Store) -> None:
    """Load the grid's cells and σ into temp tables the batch updates join against."""
    ensure_math(store.db.conn)
    policy = grid(store)
    with store.atomic():
        store.tables.cells.load_grid(
            (*cell.split("."), values.half_life_days, values.emotional_multiplier)
            for cell, values in policy.cells.items()
        )
        store.tables.relations.load_sigma((r.name, r.sigma_days) for r in policy.relations.values())


def batch(
    store: Store, phase: str, *, project: str, after: int, size: int, as_of: str
) -> tuple[int, int]:
    """Update one batch of a phase after id ``after``: (last id walked, rows updated).

    The last id is ``after`` when the phase has nothing left.
    """
    if phase == "entities":
        return store.tables.entities.consolidate(project, after=after, size=size, stamp=as_of)
    if phase == "relations":
        return store.tables.relations.consolidate(project, after=after, size=size, stamp=as_of)
    if phase == "memories":
        return store.tables.cells.consolidate(project, after=after, size=size, stamp=as_of)
    raise KeyError(phase)


def counts(store: Store, *, project: str | None = None) -> dict[str, int]:
    """Rows each phase walks, and what it cannot handle (for progress and the report)."""
    project = project or store.project
    return {
        "entities": store.tables.entities.count(project),
        "relations": store.tables.relations.count(project),
        "memories": store.tables.cells.count_active(project),
        "memories_unplaced": store.tables.memories.count_unplaced(project),
    }


def unknown_relation_types(store: Store, *, project: str | None = None) -> dict[str, int]:
    """Relations whose type no installed pack declares (left untouched by the pass)."""
    known = set(grid(store).relations)
    found = store.tables.relations.type_counts(project or store.project)
    return {type: n for type, n in found.items() if type not in known}
