"""schema_fit: how well an observation matches patterns already in the graph (0..1).

The ``schema_fit`` hook decides (firstresult); the built-in answer
(``plugins/schema_fit.py``) is :func:`measure`, a weighted mean of four parts, each
in 0..1, computed before the observation writes anything:

================  ======  ====================================================
part              weight  value
================  ======  ====================================================
``actors``        0.20    mean over actors: 1 for an active entity, 0.5 for a
                          provisional one, 0 for an archived or unknown one
``namespaces``    0.35    share of actors whose name a namespace rule of the
                          grid matches: the taxonomy can classify them
``topic``         0.25    mean over actors: 1 when the entity already has a
                          retained observation on this topic, 0.5 when only on
                          this category, else 0
``structure``     0.20    mean over the payload's facts and relations: a fact
                          scores 1 when its subject already has a fact with
                          that predicate; a relation 1 when the same edge
                          exists, 0.5 when an edge of its type touches either
                          end, else 0
================  ======  ====================================================

A part that does not apply (``structure`` for an observation with no facts
and no relations) is left out and the other weights are rescaled, so such an
observation is neither rewarded nor punished for it. The result is rounded to
six decimals and clamped to 0..1. Dark-matter observations waiting for triage
do not count as known patterns until a person accepts them.

Why these weights: dark matter is *novel, unclassified* signal, something the
taxonomy cannot place yet, so the taxonomy weighs most. With the built-in
packs' thresholds (0.3, 0.7), a first observation of an entity the namespace
rules classify takes the normal path (0.35 to 0.44), a first observation of
actors no rule covers is dark matter (0), a known entity on a new topic stays
normal (0.69), and a known entity on a familiar topic is fast-tracked (1.0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from plugin_sdk.grid.policy import grid

if TYPE_CHECKING:
    from plugin_sdk.grid.entities import Entity
    from plugin_sdk.plugin.records import Observation
    from plugin_sdk.store.connection import Store

WEIGHTS = {"actors": 0.20, "namespaces": 0.35, "topic": 0.25, "structure": 0.20}
STATUS_SCORE = {"active": 1.0, "provisional": 0.5, "archived": 0.0}


def measure(
    store: Store,
    observation: Observation,
    entities: Mapping[str, Entity | None],
    topics: Topics | None = None,
) -> float:
    """The built-in schema_fit (see the module docstring).

    ``topics``: the batched Retain Job's answers for the topic part, kept per
    batch (:class:`Topics`); without it the store is asked each time.
    """
    return combine(components(store, observation, entities, topics))


def combine(parts: Mapping[str, float | None]) -> float:
    """The weighted mean of the parts that apply, clamped to 0..1."""
    present = [(WEIGHTS[name], value) for name, value in parts.items() if value is not None]
    if not present:
        return 0.0
    total = sum([weight for weight, _ in present])
    value = sum([weight * part for weight, part in present]) / total
    # Rounded, so a value on a threshold lands on it rather than a float's width off.
    return min(1.0, max(0.0, round(value, 6)))


def components(
    store: Store,
    observation: Observation,
    entities: Mapping[str, Entity | None],
    topics: Topics | None = None,
) -> dict[str, float | None]:
    """Each part's value (``None`` for a part that does not apply)."""
    if topics is None:  # (not ``topics or``: an empty one, falsy, is still the batch's)
        topics = Topics(store)
    actors = [entities.get(name) for name in observation.actors]
    policy = grid(store)
    parts: dict[str, float | None] = {
        "actors": _mean([STATUS_SCORE.get(e.status, 0.0) if e else 0.0 for e in actors]),
        "namespaces": _mean(
            [1.0 if policy.rule_for(name) is not None else 0.0 for name in observation.actors]
        ),
        "topic": _mean(
            [
                topics.score(e.id, observation.topic, observation.category) if e else 0.0
                for e in actors
            ]
        ),
    }
    scores = [
        _fact(store, entities.get(fact.subject), fact.predicate) for fact in observation.facts
    ]
    scores += [
        _relation(store, entities.get(r.source), entities.get(r.target), r.type)
        for r in observation.relations
    ]
    parts["structure"] = _mean(scores) if scores else None
    return parts


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


class Topics:
    """The topic part's lookups: has an entity a retained observation on this topic, category?

    Answers are kept for as long as the object lives: the batched Retain Job
    keeps one from batch to batch while nothing else writes (``job.py``) and
    tells it about the links its observations add as they commit (:meth:`add`),
    which the batch writes only at its end; a fresh one (the default) asks the
    store.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._known: dict[tuple[int, str, str], bool] = {}

    def score(self, entity_id: int, topic: str, category: str) -> float:
        """1 for a known topic, 0.5 for a known category only, else 0."""
        if self._has(entity_id, "topic", topic):
            return 1.0
        if self._has(entity_id, "category", category):
            return 0.5
        return 0.0

    def __len__(self) -> int:
        return len(self._known)

    def add(self, entity_id: int, topic: str, category: str) -> None:
        """A retained (not held) observation on ``topic`` in ``category`` names the entity."""
        self._known[(entity_id, "topic", topic)] = True
        self._known[(entity_id, "category", category)] = True

    def _has(self, entity_id: int, column: str, value: str) -> bool:
        key = (entity_id, column, value)
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = self.store.tables.observations.linked(
                entity_id, column, value
            )
        return found


def _fact(store: Store, subject: Entity | None, predicate: str) -> float:
    if subject is None:
        return 0.0
    return 1.0 if store.tables.facts.has_active(subject.id, predicate) else 0.0


def _relation(store: Store, source: Entity | None, target: Entity | None, type: str) -> float:
    rows = store.tables.relations
    if (
        source is not None
        and target is not None
        and rows.exists(source.project, source.id, target.id, type)
    ):
        return 1.0
    for end in (source, target):
        if end is None:
            continue
        if rows.touches(end.project, end.id, type):
            return 0.5
    return 0.0
