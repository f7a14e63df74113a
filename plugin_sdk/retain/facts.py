"""Step 4 of the Retain Job: an observation's facts, and the conflicts they make.

Each fact is stored (``held`` on the dark route, else ``active``); a fact
whose subject already has a different value (normalized) for the same
predicate, among its active and held facts, is recorded as a conflict with
each such value (the newest fact of that value); both facts are kept. A
conflict of the same pair of values on the same subject and predicate is
recorded once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from plugin_sdk.store.normalize import normalize

if TYPE_CHECKING:
    from plugin_sdk.grid.entities import Entity
    from plugin_sdk.plugin.records import Observation
    from plugin_sdk.store.connection import Store


def record_facts(
    store: Store, observation: Observation, entities: Mapping[str, Entity], held: bool
) -> dict[int, int]:
    """Store the observation's facts and the conflicts they make; new conflicts per entity."""
    new_conflicts: dict[int, int] = {}
    if not observation.facts:
        return new_conflicts
    rows = store.tables.facts
    now = store.now()
    for fact in observation.facts:
        subject = entities[fact.subject]
        value = normalize(fact.object)
        others = rows.other_values(subject.id, fact.predicate, value)
        fact_id = rows.insert(
            (
                subject.project,
                subject.id,
                fact.predicate,
                fact.object,
                value,
                observation.id,
                "held" if held else "active",
                observation.timestamp,
                now,
            )
        )
        for other_value, other_id, other_object in others:
            inserted = rows.add_conflict(
                (
                    subject.project,
                    subject.id,
                    fact.predicate,
                    fact_id,
                    other_id,
                    json.dumps(sorted([value, other_value]), ensure_ascii=False),
                    f"{subject.name} {fact.predicate}: {other_object!r} (fact {other_id}) "
                    f"vs {fact.object!r} (observation {observation.id})",
                    now,
                )
            )
            if inserted:
                new_conflicts[subject.id] = new_conflicts.get(subject.id, 0) + inserted
    return new_conflicts


def open_conflicts_of(store: Store, project: str, observation_id: str) -> dict[int, int]:
    """Open conflicts made by an observation's facts, per entity (for an accepted one)."""
    rows = store.tables.facts.open_conflicts_of(project, observation_id)
    return {int(entity_id): int(n) for entity_id, n in rows}
