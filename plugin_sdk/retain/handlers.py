"""Retain handlers: consolidation logic indexed by (category, target namespace).

Plugins register handlers through the ``register_retain_handlers`` hook (a
``RetainHandler(name, namespace, handle, category=None)`` each). For each
observation the Retain Job picks one, looking at the observation's category
and its **target**, the first actor:

1. candidates are the handlers whose ``category`` is the observation's (or
   ``None``, any category) and whose ``namespace`` pattern matches the target
   (``grid.matches``: ``*`` one segment, a trailing ``*`` one or more);
2. the most specific pattern wins, by the grid's rule for namespace rules: the
   most literal segments, then the most segments; then a handler for this very
   category beats an any-category one; then the earliest registered;
3. when none matches, :func:`default_handle` runs.

Two handlers with the same category and pattern, or the same name, are an
error when the registry is read (at the start of a run), naming both.

A handler writes through the :class:`RetainContext` it is given, inside the
observation's transaction (an exception rolls back everything the observation
wrote and marks it ``failed``). The Retain Job itself has already resolved and
created the entities and recorded facts and conflicts; the handler writes the
memory and the relations. ``default_handle`` does exactly that, and a handler
may call it and then do more.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import MemsdkError
from plugin_sdk.grid.cells import rule_cell
from plugin_sdk.grid.policy import Grid, grid, matches
from plugin_sdk.plugin.records import ObservedRelation, RetainHandler
from plugin_sdk.store.models import WriteResult, split_cell
from plugin_sdk.store.normalize import normalized_hash
from plugin_sdk.store.writing import paused

if TYPE_CHECKING:
    from plugin_sdk.grid.entities import Entity
    from plugin_sdk.plugin.records import Observation
    from plugin_sdk.retain.deferred import Deferred
    from plugin_sdk.store.connection import Store


def default_handle(context: RetainContext) -> None:
    """The default: write the observation's memory, then its relations."""
    context.write_memory()
    context.write_relations()


DEFAULT = RetainHandler(name="default", namespace="*", handle=default_handle)


def registered_handlers(store: Store) -> list[RetainHandler]:
    """Handlers from every plugin, in registration order (duplicates are an error)."""
    found: list[RetainHandler] = []

    def register(handler: RetainHandler) -> None:
        if not isinstance(handler, RetainHandler):
            raise MemsdkError(
                f"register_retain_handlers: expected a RetainHandler, got {type(handler).__name__}"
            )
        for other in found:
            if other.name == handler.name:
                raise MemsdkError(f"retain handler {handler.name!r} is registered twice")
            if (other.category, other.namespace) == (handler.category, handler.namespace):
                raise MemsdkError(
                    f"retain handlers {other.name!r} and {handler.name!r} both handle "
                    f"category {handler.category or '(any)'} for namespace {handler.namespace!r}"
                )
        found.append(handler)

    store.plugins.hook.register_retain_handlers(register=register)
    return found


def specificity(handler: RetainHandler, position: int) -> tuple[int, int, int, int]:
    segments = handler.namespace.split(":")
    literal = sum(segment != "*" for segment in segments)
    return (literal, len(segments), int(handler.category is not None), -position)


def dispatch(handlers: list[RetainHandler], category: str, target: str) -> RetainHandler:
    """The handler for an observation of ``category`` about ``target`` (see the module doc)."""
    best: tuple[tuple[int, int, int, int], RetainHandler] | None = None
    for position, handler in enumerate(handlers):
        if handler.category not in (None, category) or not matches(handler.namespace, target):
            continue
        key = specificity(handler, position)
        if best is None or key > best[0]:
            best = (key, handler)
    return best[1] if best else DEFAULT


@attrs.define
class RetainContext:
    """What a handler sees and writes through.

    ``entities`` maps every name the observation uses to its entity (created by
    now). ``route`` is ``dark``, ``normal`` or ``fast``; ``held`` is true on the
    dark route, where the memory is written ``pending`` and relations wait for
    review. ``duplicate_of`` is the memory the content dedup pass found (never
    set on the fast route, which skips the pass). ``half_life_factor`` scales
    the half-life of what the observation creates.
    """

    store: Store
    observation: Observation
    entities: dict[str, Entity]
    schema_fit: float
    route: str
    half_life_factor: float
    duplicate_of: int | None = None
    grid: Grid | None = None
    lean: bool = False  # the batched job: write relations straight, not through the helpers
    kinds: Mapping[str, str] | None = None  # the batched job: read once per batch
    # The batched job with the default handler: the memory inserted with the insert
    # triggers paused and indexed, and its cell written, at the batch's end (deferred.py).
    batch_rows: Deferred | None = None
    counted: tuple[str, int] | None = None  # a text the job has counted the tokens of
    memory_id: int | None = None
    memory_created: bool = False
    # The batched job: the new memory's (id, normalized hash, token count, status), for
    # the dedup pass's kept windows (None: read it from the store).
    memory_row: tuple[int, str, int, str] | None = None
    half_life_days: float | None = None
    deferred: list[ObservedRelation] = attrs.field(factory=list)

    @property
    def held(self) -> bool:
        return self.route == "dark"

    def write_memory(
        self, text: str | None = None, *, category: str | None = None, importance: int = 50
    ) -> int:
        """Write the observation's memory (default: its text and category); its id.

        Deduplicated as every write is; when the dedup pass found a duplicate,
        that memory is reinforced instead (unless held). The memory is linked
        to the actors and fact subjects, and placed on the grid with its
        half-life scaled by the route.
        """
        store, o = self.store, self.observation
        text = (text or o.text).strip()
        category = category or o.category
        memory_id = self.duplicate_of
        if memory_id is None and self.held:
            memory_id = self._existing(text, category)
        if memory_id is not None:
            if not self.held:
                store.tables.memories.seen_again(memory_id, store.now())
        else:
            result = self._write(text, category, importance)
            memory_id = result.id
            self.memory_created = result.created
            if self.batch_rows is not None:  # inserted with its final status
                if result.created and not self.held:
                    self.batch_rows.fed(memory_id)
                elif not result.created and result.status == "pending" and not self.held:
                    store.tables.memories.activate(memory_id, store.now())
            elif result.created and self.held:
                store.tables.memories.hold(memory_id)
            elif result.status == "pending" and not self.held:
                store.tables.memories.activate(memory_id, store.now())
        self.memory_id = memory_id
        links = [(memory_id, self.entities[name].id, "actor") for name in o.actors]
        links += [
            (memory_id, self.entities[fact.subject].id, "subject")
            for fact in o.facts
            if fact.subject not in o.actors
        ]
        if self.batch_rows is not None:
            self.batch_rows.link_memory(links)
        else:
            store.tables.entities.links.insert_many(links)
        self._place(memory_id, text, category, placed=not self.memory_created or not self.lean)
        return memory_id

    def _write(self, text: str, category: str, importance: int) -> WriteResult:
        o = self.observation
        source = f"observation:{o.id}"
        if self.kinds is None:
            return self.store.memories.write(
                text, category, importance=importance, source=source, occurred_at=o.timestamp
            )
        # The batched job: what ``memories.write`` does, inside the observation's own
        # savepoint already (``store.savepoint``: should the observation fail, the
        # ``memory_written`` event goes with its writes).
        if self.batch_rows is not None:
            tokens = (
                self.counted[1]
                if self.counted and self.counted[0] == text
                else self.store.tokenizer.count(text)
            )
            status = "pending" if self.held else "active"
            result = paused.upsert(
                self.store,
                self.kinds,
                text,
                category,
                status=status,
                importance=importance,
                source=source,
                occurred_at=o.timestamp,
                token_count=tokens,
                forgotten=self.batch_rows.forgotten,
            )
            if result.created:
                self.memory_row = (result.id, normalized_hash(text), tokens, status)
            self.batch_rows.written(result)  # reported with the batch's
            return result
        result = self.store.memories.write_here(
            self.kinds,
            text,
            category,
            importance=importance,
            source=source,
            occurred_at=o.timestamp,
        )
        self.store.memories.announce([result])
        return result

    def relate(self, source: str, target: str, type: str, *, weight: float = 1.0) -> None:
        """Add an edge (or evidence for it); held until review on the dark route."""
        if self.held:
            self.deferred.append(ObservedRelation(source, type, target))
            return
        head, tail = self._entity(source), self._entity(target)
        if not self.lean or head.project != tail.project or head.id == tail.id or not weight > 0:
            self.store.relations.relate(head.id, tail.id, type, weight=weight)
            return
        # What relations.relate writes, inside the observation's savepoint already.
        (self.grid or grid(self.store)).relation(type)  # a clear error for an unknown type
        now = self.store.now()
        self.store.tables.relations.relate(
            head.project, head.id, tail.id, type, weight=weight, given=True, now=now
        )

    def write_relations(self) -> None:
        """Write every relation of the payload (see :meth:`relate`)."""
        for relation in self.observation.relations:
            self.relate(relation.source, relation.target, relation.type)

    def _entity(self, name: str) -> Entity:
        if name not in self.entities:
            self.entities[name] = self.store.entities.ensure(name, status="provisional")
        return self.entities[name]

    def _existing(self, text: str, category: str) -> int | None:
        return self.store.tables.memories.id_by_hash(
            self.store.project, category, normalized_hash(text)
        )

    def _place(self, memory_id: int, text: str, category: str, *, placed: bool = True) -> None:
        store = self.store
        row: tuple[Any, ...] | None = None
        if placed:  # a memory created just now has no cell yet
            staged = self.batch_rows.cell(memory_id) if self.batch_rows is not None else None
            row = (
                (staged[1], staged[2], staged[5])
                if staged is not None
                else store.tables.cells.half_life_of(memory_id)
            )
        policy = self.grid or grid(store)
        if row is not None:
            cell = f"{row[0]}.{row[1]}"
            self.half_life_days = row[2] or policy.cells[cell].half_life_days
            return
        # The pack's rules (no model call inside the transaction); the classify
        # dreamer task may refine the cell later and keeps this half-life.
        decision = rule_cell(policy, text, category, True)
        split_cell(decision.cell)
        base = policy.cells[decision.cell].half_life_days
        own = None if self.half_life_factor == 1.0 else base * self.half_life_factor
        values = (
            memory_id,
            decision.memory_type,
            decision.referent,
            decision.act,
            f"{decision.signal} (retain)",
            own,
        )
        if self.batch_rows is not None:
            self.batch_rows.place(values)
        else:
            store.tables.cells.insert(values)
        self.half_life_days = own or base

    def deferred_json(self) -> str | None:
        if not self.deferred:
            return None
        return json.dumps([[r.source, r.type, r.target] for r in self.deferred])


def load_deferred(text: str | None) -> list[ObservedRelation]:
    return [ObservedRelation(*item) for item in json.loads(text or "[]")]


def describe(handler: RetainHandler) -> dict[str, Any]:
    return {"name": handler.name, "category": handler.category, "namespace": handler.namespace}
