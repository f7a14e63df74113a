"""Entities: durable graph nodes named ``namespace:slug``, placed on the grid.

``store.entities`` adds, finds and lists them, links memories to them (as
actors or subjects) and records what reinforces them. An entity's defaults
come from the grid (``policy.py``), most specific first:

- **cell**: given, else the matching namespace rule's, else the ``classify_cell``
  hook's decision on the name (rules from pack cues, or the host's model);
- **half-life**: given, else the namespace rule's, else the cell's default;
- **pinned**: given, else the namespace rule's (pinned never decays);
- **emotional multiplier**: the emotion table's value for its tag, else the
  cell's default.

**Time.** Strength decays from ``last_seen_at``: when the entity was created or
last seen again (:meth:`Entities.seen`). A retrieval adds to the retrieval boost
without resetting the clock, and an outcome moves the reward factor; neither
makes an old entity young. See ``strength.py`` for the formulas.
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import DuplicateEntity, MemsdkError, NotFound
from plugin_sdk.grid.policy import (
    check_name,
    check_pattern,
    grid,
    matches,
    pattern_sql,
    type_and_subtype,
)
from plugin_sdk.grid.strength import days_between, strength
from plugin_sdk.store.limits import check_id
from plugin_sdk.store.models import split_cell

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

ROLES = ("actor", "subject")
STATUSES = ("active", "provisional", "archived")


@attrs.frozen
class Entity:
    id: int
    project: str
    name: str
    type: str
    subtype: str | None
    memory_type: str
    referent: str
    status: str
    base_strength: float
    pinned: bool
    positive_outcomes: int
    negative_outcomes: int
    retrieval_count: int
    emotional_tag: str | None
    half_life_days: float
    emotional_multiplier: float
    strength: float | None  # as the last consolidation pass computed it
    strength_at: str | None
    cell_signal: str
    truth_id: int | None
    created_at: str
    updated_at: str
    last_seen_at: str
    last_retrieved_at: str | None

    @property
    def cell(self) -> str:
        return f"{self.memory_type}.{self.referent}"

    @property
    def namespace(self) -> str:
        return self.name.rsplit(":", 1)[0]

    @property
    def slug(self) -> str:
        return self.name.rsplit(":", 1)[1]

    def strength_now(self, now: str) -> float:
        """Strength at ``now`` by the formulas of ``strength.py`` (``inf`` if pinned)."""
        return strength(
            base_strength=self.base_strength,
            days=days_between(self.last_seen_at, now),
            half_life_days=self.half_life_days,
            positive=self.positive_outcomes,
            negative=self.negative_outcomes,
            retrieval_count=self.retrieval_count,
            emotional_multiplier=self.emotional_multiplier,
            pinned=self.pinned,
        )

    def to_dict(self) -> dict[str, Any]:
        data = attrs.asdict(self)
        data["cell"] = self.cell
        if self.pinned:
            data["strength"] = "pinned"
        return data


def _entity(row: dict[str, Any]) -> Entity:
    row = dict(row)
    row["pinned"] = bool(row["pinned"])
    return Entity(**row)


_PINNED = [field.name for field in attrs.fields(Entity)].index("pinned")


def from_row(row: tuple[Any, ...]) -> Entity:
    """An entity from its row by position (the owner's ``COLUMNS``: no dict per row)."""
    values = list(row)
    values[_PINNED] = bool(values[_PINNED])
    return Entity(*values)


class Entities:
    """Entity operations on one store; reached as ``store.entities``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.rows = store.tables.entities

    def add(
        self,
        name: str,
        *,
        cell: str | None = None,
        half_life_days: float | None = None,
        pinned: bool | None = None,
        emotional_tag: str | None = None,
        base_strength: float = 1.0,
        status: str = "active",
        project: str | None = None,
    ) -> Entity:
        """Create an entity; :class:`DuplicateEntity` if the name is taken."""
        project = project or self.store.project
        check_name(name)
        if (found := self._find(name, project)) is not None:
            raise DuplicateEntity(
                f"entity {name!r} already exists in project {project!r}"
                + (
                    f" (as {found.name!r}: names compare case-insensitively)"
                    if found.name != name
                    else ""
                )
            )
        if status not in STATUSES:
            raise MemsdkError(f"unknown entity status {status!r}; use one of {', '.join(STATUSES)}")
        if not base_strength > 0:
            raise MemsdkError(f"base strength must be above 0, not {base_strength!r}")
        if half_life_days is not None and not half_life_days > 0:
            raise MemsdkError(f"half-life must be above 0 days, not {half_life_days!r}")
        policy = grid(self.store)
        rule = policy.rule_for(name)
        signal = "given"
        if cell is None and rule is not None and rule.cell is not None:
            cell, signal = rule.cell, f"namespace {rule.pattern}"
        if cell is None:
            decision = self.store.plugins.hook.classify_cell(
                store=self.store, text=name.replace(":", " "), category=None, interaction=False
            )
            cell, signal = decision.cell, decision.signal
        memory_type, referent = split_cell(cell)
        if half_life_days is None:
            half_life_days = (
                rule.half_life_days
                if rule is not None and rule.half_life_days is not None
                else policy.cells[cell].half_life_days
            )
        if pinned is None:
            pinned = bool(rule and rule.pinned)
        kind, subtype = type_and_subtype(name)
        now = self.store.now()
        with self.store.atomic():
            row = self.rows.insert(
                project,
                name,
                kind=kind,
                subtype=subtype,
                memory_type=memory_type,
                referent=referent,
                status=status,
                base_strength=base_strength,
                pinned=pinned,
                emotional_tag=emotional_tag,
                half_life_days=half_life_days,
                emotional_multiplier=policy.multiplier(cell, emotional_tag),
                cell_signal=signal,
                now=now,
            )
        return from_row(row)

    def ensure(self, name: str, *, project: str | None = None, **defaults: Any) -> Entity:
        """The entity with this name, created with ``defaults`` if it does not exist."""
        found = self._find(check_name(name), project or self.store.project)
        return found if found is not None else self.add(name, project=project, **defaults)

    def get(self, key: int | str, *, project: str | None = None) -> Entity:
        """An entity by id or name; :class:`NotFound` names close matches.

        A name is looked up in ``project`` (default: the store's). An id is
        unique in the store; with ``project`` given, an id of another project
        is not found either.
        """
        if isinstance(key, int) or (isinstance(key, str) and key.isdigit()):
            entity_id = check_id(int(key), "entity")
            row = self.rows.by_id(entity_id)
            if row is not None and (project is None or row["project"] == project):
                return _entity(row)
            where = f" in project {project!r}" if project else ""
            raise NotFound(f"no entity with id {key}{where}")
        project = project or self.store.project
        found = self._find(key, project)
        if found is None:
            raise NotFound(
                f"no entity named {key!r} in project {project!r}{self._near(key, project)}"
            )
        return found

    def _near(self, name: str, project: str) -> str:
        """Up to five names of the project sharing the longest prefix with ``name``."""
        segments = name.split(":")
        for size in range(len(segments) - 1, 0, -1):
            prefix = ":".join(segments[:size]) + ":"
            near = self.rows.names_with_prefix(project, prefix)
            if near:
                return f"; close: {', '.join(near)}"
        return ""

    def list(
        self,
        *,
        cell: str | None = None,
        pattern: str | None = None,
        status: str | None = None,
        project: str | None = None,
        limit: int | None = 100,
    ) -> list[Entity]:
        """Entities of a project, by name; filtered by cell and namespace pattern."""
        conditions: builtins.list[tuple[str, builtins.list[Any]]] = []
        if cell is not None:
            memory_type, referent = split_cell(cell)
            conditions.append(("memory_type = ? AND referent = ?", [memory_type, referent]))
        if status is not None:
            conditions.append(("status = ?", [status]))
        if pattern is not None:
            condition, extra = pattern_sql(check_pattern(pattern))
            conditions.append((condition, list(extra)))
        found_rows = self.rows.matching(
            project or self.store.project, conditions, limit if pattern is None else None
        )
        rows = (_entity(row) for row in found_rows)
        found = (e for e in rows if pattern is None or matches(pattern, e.name))
        return list(itertools.islice(found, limit))

    def link(
        self, memory_id: int, names: Iterable[str], *, role: str = "actor"
    ) -> builtins.list[Entity]:
        """Link a memory of the store's project to entities (created with their defaults if new)."""
        if role not in ROLES:
            raise MemsdkError(f"unknown role {role!r}; use one of {', '.join(ROLES)}")
        memory = self.store.memories.own(memory_id, doing="link")
        with self.store.atomic():
            linked = [self.ensure(name, project=memory.project) for name in names]
            self.rows.links.insert_many([(memory_id, entity.id, role) for entity in linked])
        return linked

    def of_memory(self, memory_id: int) -> builtins.list[tuple[str, Entity]]:
        """(role, entity) pairs a memory (one the store's project may read) links to."""
        self.store.memories.get(memory_id)
        return [(row.pop("role"), _entity(row)) for row in self.rows.links.of_memory(memory_id)]

    def memories_of(self, key: int | str, *, role: str | None = None) -> builtins.list[int]:
        """Ids of the memories linked to an entity."""
        return self.rows.links.memory_ids(self.get(key).id, role)

    def seen(self, key: int | str) -> Entity:
        """The entity was seen again: its decay clock restarts now."""
        with self.store.atomic():
            entity = self.get(key)
            self.rows.seen([entity.id], self.store.now())
        return self.get(entity.id)

    def retrieved(self, key: int | str) -> Entity:
        """The entity was retrieved: the retrieval boost grows (the clock does not restart)."""
        with self.store.atomic():
            entity = self.get(key)
            self.rows.retrieved(entity.id, self.store.now())
        return self.get(entity.id)

    def outcome(self, key: int | str, *, positive: bool) -> Entity:
        """Record a good or bad outcome; the reward factor lengthens or shortens the half-life."""
        with self.store.atomic():
            entity = self.get(key)
            self.rows.add_outcomes([entity.id], positive=positive, now=self.store.now())
        return self.get(entity.id)

    def update(
        self,
        key: int | str,
        *,
        pinned: bool | None = None,
        emotional_tag: str | None = None,
        status: str | None = None,
        cell: str | None = None,
        half_life_days: float | None = None,
        project: str | None = None,
    ) -> Entity:
        """Change what a person may change; ``None`` keeps a field as it is.

        The emotional multiplier follows the tag and the cell. Moving to
        another cell takes that cell's half-life, unless ``half_life_days`` is
        given or the name's namespace rule sets one.
        """
        if status is not None and status not in STATUSES:
            raise MemsdkError(f"unknown entity status {status!r}; use one of {', '.join(STATUSES)}")
        if half_life_days is not None and not half_life_days > 0:
            raise MemsdkError(f"half-life must be above 0 days, not {half_life_days!r}")
        policy = grid(self.store)
        with self.store.atomic():  # read and write in one transaction: no lost update
            entity = self.get(key, project=project)
            new_cell = cell or entity.cell
            memory_type, referent = split_cell(new_cell)
            tag = emotional_tag if emotional_tag is not None else entity.emotional_tag
            if half_life_days is None and cell is not None and cell != entity.cell:
                rule = policy.rule_for(entity.name)
                half_life_days = (
                    rule.half_life_days
                    if rule is not None and rule.half_life_days is not None
                    else policy.cells[new_cell].half_life_days
                )
            self.rows.update(
                entity.id,
                pinned=entity.pinned if pinned is None else pinned,
                emotional_tag=tag,
                emotional_multiplier=policy.multiplier(new_cell, tag),
                status=status or entity.status,
                memory_type=memory_type,
                referent=referent,
                cell_signal="given" if cell else entity.cell_signal,
                half_life_days=entity.half_life_days if half_life_days is None else half_life_days,
                now=self.store.now(),
            )
        return self.get(entity.id)

    def count(self, *, project: str | None = None) -> int:
        return self.rows.count(project or self.store.project)

    def _find(self, name: str, project: str) -> Entity | None:
        row = self.rows.by_name(project, name)
        return _entity(row) if row is not None else None
