"""What a Retain Job run leaves behind, to compare two runs on the same input.

The batched job and the per-observation reference path (``job.py``) must end
in the same state; ``tests/retain/test_retain_batched.py`` and
``bench/bench_retain.py`` compare them with :func:`end_state`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


def end_state(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """What a Retain Job run leaves behind, clock-free, to compare two runs on the same input.

    Memories, entities, relations, facts, conflicts, the links between them,
    the observations' outcomes and the gathered truth impacts; times and
    strengths (which depend on the clock) are left out, and so are Compiled
    Truth versions (a batched run may write fewer).
    """
    found = {"memories": store.tables.memories.end_state()}
    entities = store.tables.entities
    found["facts"] = store.tables.facts.snapshot()
    found["conflicts"] = store.tables.facts.conflicts_snapshot()
    found["truth_impacts"] = store.tables.truths.impacts_snapshot()
    found["entity_observations"] = store.tables.observations.links_snapshot()
    found["observations"] = store.tables.observations.snapshot()
    found["memory_cells"] = store.tables.cells.snapshot()
    found["memory_entities"] = entities.links.snapshot()
    found["entities"] = entities.snapshot()
    found["relations"] = store.tables.relations.snapshot()
    return found
