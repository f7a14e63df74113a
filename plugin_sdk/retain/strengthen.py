"""Step 6 of the Retain Job: links, seen again, emotional tag, strength and impact.

:func:`link_observation` records which entities an observation is about;
:func:`reinforce` does step 6 for one observation at once (the reference path
and a dark-matter acceptance). The batched job uses :func:`gather` instead:
it tags at once (what a later observation of the batch compares with), but
collects the entities seen and the impacts in a :class:`Gathered`, which the
job adds to the batch's when the observation commits, and writes once per
batch (:func:`flush`): each entity touched once, each impact added once.

``impact = m × (1 + facts about it + relations touching it) + its new
conflicts`` per entity, where ``m`` is the grid's multiplier for the
observation's sentiment (:func:`impacts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.grid.policy import Grid, grid
from plugin_sdk.retain.truth import add_impact

if TYPE_CHECKING:
    from plugin_sdk.grid.entities import Entity
    from plugin_sdk.plugin.records import Observation
    from plugin_sdk.retain.resolve import Resolver
    from plugin_sdk.store.connection import Store


@attrs.define
class Gathered:
    """Entities seen and impacts (entity id -> project, impact, observations), not yet stored."""

    seen: set[int] = attrs.field(factory=set)
    impacts: dict[int, tuple[str, float, int]] = attrs.field(factory=dict)

    def add(self, other: Gathered) -> None:
        self.seen |= other.seen
        for entity_id, (project, impact, count) in other.impacts.items():
            _, total, seen = self.impacts.get(entity_id, (project, 0.0, 0))
            self.impacts[entity_id] = (project, total + impact, seen + count)


def link_observation(
    store: Store,
    observation: Observation,
    entities: Mapping[str, Entity],
    created: set[str],
    held: bool,
) -> None:
    """Record which entities the observation is about (and which it created)."""
    store.tables.observations.link_many(observation_links(observation, entities, created, held))


def observation_links(
    observation: Observation, entities: Mapping[str, Entity], created: set[str], held: bool
) -> list[tuple[Any, ...]]:
    """The rows :func:`link_observation` writes (``ObservationRows.link_many``'s)."""
    actors = set(observation.actors)
    return [
        (
            entity.id,
            entity.project,
            observation.id,
            "actor" if name in actors else "subject",
            observation.category,
            observation.topic,
            observation.timestamp,
            int(name in created),
            int(held),
        )
        for name, entity in entities.items()
    ]


def impacts(
    policy: Grid,
    observation: Observation,
    entities: Mapping[str, Entity],
    conflicts: Mapping[int, int],
) -> dict[int, float]:
    """Each entity's impact from one observation (see the module docstring)."""
    multiplier = policy.emotions.get(observation.sentiment, 1.0)
    by_name = dict.fromkeys(entities, 0)
    for fact in observation.facts:
        by_name[fact.subject] += 1
    for relation in observation.relations:
        by_name[relation.source] += 1
        by_name[relation.target] += 1
    result = {entities[name].id: multiplier * (1 + n) for name, n in by_name.items()}
    for entity_id, n in conflicts.items():
        result[entity_id] = result.get(entity_id, 0.0) + n
    return result


def reinforce(
    store: Store,
    observation: Observation,
    entities: Mapping[str, Entity],
    conflicts: Mapping[int, int],
    policy: Grid | None = None,
) -> None:
    """Step 6 for one observation, stored at once: seen, tag, strength now, impact."""
    policy = policy or grid(store)
    now = store.now()
    ids = sorted({entity.id for entity in entities.values()})
    rows = store.tables.entities
    rows.seen(ids, now)
    for entity in _retagged(policy, observation, entities):
        store.entities.update(entity.id, emotional_tag=observation.sentiment)
    rows.set_strength(ids, now)
    by_id = {entity.id: entity for entity in entities.values()}
    for entity_id, impact in impacts(policy, observation, entities, conflicts).items():
        add_impact(store, by_id[entity_id], impact)


def gather(
    store: Store,
    observation: Observation,
    entities: Mapping[str, Entity],
    conflicts: Mapping[int, int],
    policy: Grid,
    resolver: Resolver,
) -> Gathered:
    """Step 6 for the batched job: the tag now, the rest gathered (see the module docstring)."""
    found = Gathered(seen={entity.id for entity in entities.values()})
    for entity in _retagged(policy, observation, entities):
        multiplier = policy.multiplier(entity.cell, observation.sentiment)
        store.tables.entities.set_tag(entity.id, observation.sentiment, multiplier, store.now())
        resolver.changed(
            attrs.evolve(
                entity, emotional_tag=observation.sentiment, emotional_multiplier=multiplier
            )
        )
    projects = {entity.id: entity.project for entity in entities.values()}
    for entity_id, impact in impacts(policy, observation, entities, conflicts).items():
        found.impacts[entity_id] = (projects[entity_id], impact, 1)
    return found


def _retagged(
    policy: Grid, observation: Observation, entities: Mapping[str, Entity]
) -> list[Entity]:
    """The entities whose emotional tag the observation's sentiment outweighs."""
    weight = policy.emotions.get(observation.sentiment)
    if weight is None:
        return []
    return [
        entity
        for entity in entities.values()
        if weight > entity.emotional_multiplier and entity.emotional_tag != observation.sentiment
    ]


def flush(store: Store, gathered: Gathered) -> None:
    """Store a batch's gathered step 6: entities seen (strength now) and impacts."""
    now = store.now()
    rows = store.tables.entities
    ids = sorted(gathered.seen)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        rows.seen(chunk, now)
        rows.set_strength(chunk, now)
    store.tables.truths.add_impacts(
        [
            (entity_id, project, impact, seen, now)
            for entity_id, (project, impact, seen) in sorted(gathered.impacts.items())
        ],
    )
