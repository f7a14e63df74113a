"""What a Retain Job run leaves behind, to compare two runs on the same input.

The batched job and the per-observation reference path (``job.py``) must end
in the same state; ``tests/test_retain_batched.py`` and
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
    queries = {
        "facts": """SELECT id, entity_id, predicate, object, object_norm, observation_id, status
                    FROM facts ORDER BY id""",
        "conflicts": """SELECT entity_id, kind, predicate, fact_id, other_fact_id, pair, detail,
                               status FROM conflicts ORDER BY id""",
        "entity_observations": """SELECT entity_id, observation_id, role, category, topic,
                                         created, held FROM entity_observations ORDER BY 1, 2""",
        "observations": """SELECT id, status, schema_fit, route, handler, memory_id, duplicate,
                                  half_life_days, deferred, error FROM observations ORDER BY id""",
        "truth_impacts": """SELECT entity_id, round(impact, 9), observations FROM truth_impacts
                            WHERE impact > 0 ORDER BY entity_id""",
    }
    found = {"memories": store.tables.memories.end_state()}
    found.update({name: store.db.conn.execute(sql).fetchall() for name, sql in queries.items()})
    entities = store.tables.entities
    found["memory_cells"] = store.tables.cells.snapshot()
    found["memory_entities"] = entities.links.snapshot()
    found["entities"] = entities.snapshot()
    found["relations"] = store.tables.relations.snapshot()
    return found
