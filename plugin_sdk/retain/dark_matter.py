"""Triage: dark matter waits for a person's decision, and conflicts stay visible.

An observation whose schema_fit was below the pack's ``dark_matter_below``
is retained provisionally (status ``dark``): its memory is ``pending`` (not
searched or injected) with its half-life scaled down, the entities it created
are provisional with the same factor, its facts are ``held``, its relations
wait in the observation, and nothing was strengthened.

- :func:`accept` (one transaction) makes it count: the memory becomes active
  (or, if it matched an existing memory, that memory is reinforced), the
  provisional entities it names become active, facts active, relations written, and the
  entities are strengthened and gather its impact, as a normal observation
  would have done. The half-lives stay as they were set: acceptance confirms
  the signal, it does not make it familiar.
- :func:`reject` (one transaction) keeps the record but takes it out: the
  pending memory is archived, facts rejected, the conflicts they made
  dismissed, and the observation no longer counts for schema_fit. Entities it
  created stay provisional (another observation may name them) and fade fast.

Either way the observation row keeps who decided what and when.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import MemsdkError, NotFound, WrongStatus
from plugin_sdk.retain.facts import open_conflicts_of
from plugin_sdk.retain.handlers import load_deferred
from plugin_sdk.retain.job import RetainJob
from plugin_sdk.retain.observations import StoredObservation, get, listing
from plugin_sdk.retain.strengthen import reinforce

if TYPE_CHECKING:
    from plugin_sdk.grid.entities import Entity
    from plugin_sdk.store.connection import Store


@attrs.frozen
class Conflict:
    id: int
    entity: str
    kind: str
    predicate: str
    fact_id: int
    value: str
    observation_id: str
    other_fact_id: int
    other_value: str
    other_observation_id: str
    status: str
    detail: str
    created_at: str

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def pending(store: Store, *, limit: int | None = 100) -> list[StoredObservation]:
    """Dark-matter observations waiting for triage, oldest first."""
    return listing(store, status="dark", limit=limit)


def accept(store: Store, observation_id: str) -> StoredObservation:
    """Accept a dark-matter observation (see the module docstring)."""
    now = store.now()
    with store.atomic():  # checked under the write lock: accepted once
        stored = _waiting(store, observation_id)
        observation = stored.observation
        if stored.memory_id is not None:
            status = store.memories.get(stored.memory_id).status
            if status == "pending":
                store.tables.memories.activate(stored.memory_id, now)
            else:
                store.tables.memories.seen_again(stored.memory_id, now)
        store.tables.entities.activate_observed(stored.project, observation_id, now)
        store.tables.observations.release_links(stored.project, observation_id)
        store.tables.facts.accept_held(stored.project, observation_id)
        deferred = store.tables.observations.deferred(stored.project, observation_id)
        for relation in load_deferred(deferred):
            store.relations.relate(relation.source, relation.target, relation.type)
        reinforce(
            store,
            observation,
            _entities(store, observation.names()),
            open_conflicts_of(store, stored.project, observation_id),
        )
        _decided(store, stored, "accepted", now, None)
    RetainJob(store).regenerate_due()
    return get(store, observation_id, project=stored.project)


def reject(store: Store, observation_id: str, *, reason: str = "") -> StoredObservation:
    """Reject a dark-matter observation (see the module docstring)."""
    now = store.now()
    with store.atomic():  # checked under the write lock: rejected once
        stored = _waiting(store, observation_id)
        if stored.memory_id is not None:
            store.tables.memories.archive_pending(stored.memory_id, now)
        store.tables.facts.reject_held(stored.project, observation_id, now)
        store.tables.observations.unlink(stored.project, observation_id)
        _decided(store, stored, "rejected", now, reason or None)
    return get(store, observation_id, project=stored.project)


def conflicts(
    store: Store, *, status: str | None = "open", entity: str | None = None
) -> list[Conflict]:
    """Recorded conflicts of the project (open ones by default), oldest first."""
    entity_id = store.entities.get(entity).id if entity is not None else None
    rows = store.tables.facts.conflicts(store.project, status, entity_id)
    return [Conflict(**row) for row in rows]


def _waiting(store: Store, observation_id: str) -> StoredObservation:
    stored = get(store, observation_id)
    if stored.status != "dark":
        raise WrongStatus(
            f"observation {observation_id!r} is {stored.status}, not waiting for review"
            + (f" ({stored.review} in review)" if stored.review else "")
        )
    return stored


def _entities(store: Store, names: list[str]) -> dict[str, Entity]:
    found = {}
    for name in names:
        try:
            found[name] = store.entities.get(name)
        except NotFound as error:
            raise MemsdkError(f"entity {name} of the observation is gone: {error}") from error
    return found


def _decided(
    store: Store, stored: StoredObservation, decision: str, now: str, reason: str | None
) -> None:
    decided = store.tables.observations.decide(
        stored.project,
        stored.id,
        "retained" if decision == "accepted" else "rejected",
        decision,
        now,
        reason,
    )
    if decided != 1:  # the transaction rolls back: nothing of this review stays
        raise WrongStatus(f"observation {stored.id!r} was reviewed meanwhile")


def triage_reason(stored: StoredObservation) -> str:
    """Why an observation is waiting for triage, for a person."""
    return (
        f"schema_fit {stored.schema_fit:.2f} is below the dark-matter threshold"
        if stored.schema_fit is not None
        else "waiting for review"
    )
