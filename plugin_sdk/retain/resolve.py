"""Step 1 of the Retain Job: entity names to entities, looked up once per batch.

:class:`Resolver` answers "which entity is this name?" for the job. At the
start of a batch it reads every name the batch's observations use in one
query (:meth:`Resolver.prefetch`); afterwards a name is answered from memory.
The batched job also creates entities through it (:meth:`Resolver.create`:
the row ``store.entities.add`` writes, in two statements instead of three
savepoints' worth).
Every change the job makes to an entity (created, made active, tagged) goes
through the resolver or is handed back to it (:meth:`Resolver.changed`), so
what it answers is what the store holds; anything else that may have changed
entities (a failed observation rolled back, a plugin's handler) empties it
(:meth:`Resolver.forget`) and names are read again on demand.

Names compare as the store compares them: case-insensitively for ASCII
letters (SQLite's ``NOCASE``), so the cache is keyed the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from plugin_sdk.errors import DuplicateEntity
from plugin_sdk.grid.entities import Entity, from_row
from plugin_sdk.grid.policy import check_name, grid, type_and_subtype
from plugin_sdk.store.models import split_cell

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

CHUNK = 500  # names per lookup query


def fold(name: str) -> bytes:
    """The key two names share when SQLite's NOCASE calls them equal (ASCII case only)."""
    return name.encode("utf-8").lower()


class Resolver:
    """The entities of one project by name, read once per batch (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.project = store.project
        self._known: dict[bytes, Entity | None] = {}

    def prefetch(self, names: Iterable[str]) -> None:
        """Read the entities of ``names`` (one query per :data:`CHUNK` names)."""
        wanted = {fold(name): name for name in names}
        for key in self._known:
            wanted.pop(key, None)
        todo = list(wanted.values())
        rows = self.store.tables.entities
        for start in range(0, len(todo), CHUNK):
            chunk = todo[start : start + CHUNK]
            for name in chunk:
                self._known[fold(name)] = None
            for row in rows.by_names(self.project, chunk):
                entity = from_row(row)
                self._known[fold(entity.name)] = entity

    def find(self, name: str) -> Entity | None:
        """The entity named ``name``, or ``None``."""
        key = fold(name)
        if key not in self._known:
            self.prefetch([name])
        return self._known[key]

    def changed(self, entity: Entity) -> Entity:
        """Remember an entity as it is now (after the job changed it); returns it."""
        self._known[fold(entity.name)] = entity
        return entity

    def create(self, name: str, *, status: str, factor: float = 1.0) -> Entity:
        """What ``store.entities.add(name, status=status)`` creates (then the half-life times
        ``factor`` unless pinned), inside the caller's transaction, remembered.

        The name must have been looked up (:meth:`find`): a name the resolver knows
        (another spelling the observation created a moment ago) is a
        :class:`DuplicateEntity`, worded as ``add`` words it.
        """
        store = self.store
        check_name(name)
        found = self.find(name)
        if found is not None:
            raise DuplicateEntity(
                f"entity {name!r} already exists in project {self.project!r}"
                + (
                    f" (as {found.name!r}: names compare case-insensitively)"
                    if found.name != name
                    else ""
                )
            )
        policy = grid(store)
        rule = policy.rule_for(name)
        if rule is not None and rule.cell is not None:
            cell, signal = rule.cell, f"namespace {rule.pattern}"
        else:
            decision = store.plugins.hook.classify_cell(
                store=store, text=name.replace(":", " "), category=None, interaction=False
            )
            cell, signal = decision.cell, decision.signal
        memory_type, referent = split_cell(cell)
        half_life = (
            rule.half_life_days
            if rule is not None and rule.half_life_days is not None
            else policy.cells[cell].half_life_days
        )
        pinned = bool(rule and rule.pinned)
        if factor != 1.0 and not pinned:
            half_life *= factor
        kind, subtype = type_and_subtype(name)
        now = store.now()
        entity = from_row(
            store.tables.entities.insert(
                self.project,
                name,
                kind=kind,
                subtype=subtype,
                memory_type=memory_type,
                referent=referent,
                status=status,
                base_strength=1.0,
                pinned=pinned,
                emotional_tag=None,
                half_life_days=half_life,
                emotional_multiplier=policy.multiplier(cell, None),
                cell_signal=signal,
                now=now,
            )
        )
        self._known[fold(name)] = entity
        return entity

    def forget(self) -> None:
        """Drop everything remembered (the store may have changed behind the resolver)."""
        self._known.clear()
