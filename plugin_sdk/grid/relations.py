"""Relations: typed, weighted edges between entities.

``store.relations.relate(source, target, type)`` adds an edge or, when the
same edge exists, counts the new evidence and restarts its clock. The type must
be one the store's ``[graph]`` tables declare, each with its σ in days; the
consolidation pass keeps ``weight_temporal = exp(−Δt / σ)`` current (Δt from
the edge's ``last_seen_at``), and :meth:`Relation.effective_weight` is
``weight × weight_temporal``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import MemsdkError
from plugin_sdk.grid.policy import grid
from plugin_sdk.grid.strength import days_between, weight_temporal

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


@attrs.frozen
class Relation:
    id: int
    project: str
    source: str
    target: str
    type: str
    weight: float
    weight_temporal: float
    evidence_count: int
    created_at: str
    updated_at: str
    last_seen_at: str

    @property
    def effective_weight(self) -> float:
        return self.weight * self.weight_temporal

    def to_dict(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "effective_weight": self.effective_weight}


class Relations:
    """Relation operations on one store; reached as ``store.relations``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    def relate(
        self,
        source: int | str,
        target: int | str,
        type: str,
        *,
        weight: float | None = None,
        project: str | None = None,
    ) -> Relation:
        """Add an edge, or count new evidence for an existing one (its clock restarts).

        ``weight`` defaults to 1.0 for a new edge and leaves an existing edge's
        weight as it is. Both entities must be of one project (``project``,
        when given, is checked too).
        """
        grid(self.store).relation(type)  # a clear error for a type no pack declares
        if weight is not None and not weight > 0:
            raise MemsdkError(f"relation weight must be above 0, not {weight!r}")
        head = self.store.entities.get(source, project=project)
        tail = self.store.entities.get(target, project=project or head.project)
        if head.id == tail.id:
            raise MemsdkError(f"an entity cannot relate to itself ({head.name})")
        now = self.store.now()
        with self.store.atomic():
            self.store.tables.relations.relate(
                head.project,
                head.id,
                tail.id,
                type,
                weight=1.0 if weight is None else weight,
                given=weight is not None,
                now=now,
            )
        return self.between(head.id, tail.id, type)

    def between(self, source: int | str, target: int | str, type: str) -> Relation:
        head = self.store.entities.get(source)
        tail = self.store.entities.get(target)
        found = [
            Relation(**row) for row in self.store.tables.relations.between(head.id, tail.id, type)
        ]
        if not found:
            raise MemsdkError(f"no {type} relation from {head.name} to {tail.name}")
        return found[0]

    def of(self, entity: int | str) -> list[Relation]:
        """Every edge from or to an entity, strongest first."""
        node = self.store.entities.get(entity)
        found = [Relation(**row) for row in self.store.tables.relations.touching(node.id)]
        return sorted(found, key=lambda r: (-r.effective_weight, r.id))

    def weight_now(self, relation: Relation) -> float:
        """``exp(−Δt / σ)`` at the store's clock, for the relation's type."""
        sigma = grid(self.store).relation(relation.type).sigma_days
        return weight_temporal(days_between(relation.last_seen_at, self.store.now()), sigma)
