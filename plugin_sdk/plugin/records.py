"""Records that travel through the stage hooks (see ``hookspecs.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, overload

import attrs

if TYPE_CHECKING:
    from plugin_sdk.stages.dreamer import TaskContext
    from plugin_sdk.store.connection import Store


@attrs.frozen
class Prompt:
    """What a stage asks the host's model.

    ``purpose`` names the stage step (``historian``, ``classify``, ``curate``,
    ``retrospective``, ...), so one model hook can route or log per purpose.
    ``messages`` are chat messages (``{"role": ..., "content": ...}``) that
    follow the system prompt.
    """

    purpose: str
    system: str
    messages: list[dict[str, str]]


@attrs.frozen
class Embeddings:
    """An embedder's answer that names its model (the ``model_embed`` hook).

    ``model`` identifies the embedding model (and whatever else changes its
    vectors, such as a dimension option): the store keeps it beside each
    vector, searches only vectors of the model answering now, and re-embeds
    when it changes. A plain list of vectors is also a valid answer; see
    ``plugin_sdk/vectors/embed.py`` for the id it is given.
    """

    model: str
    vectors: list[list[float]]


@attrs.frozen
class Fact:
    """One fact the historian's model reported, before admission."""

    category: str
    text: str
    line: int  # 1-based line of the reply where the fact starts
    under: int | None = None  # the header (a composite head shown to the model) it belongs under


@attrs.frozen
class Malformed:
    """A piece of a model reply that could not be parsed."""

    text: str
    reason: str
    line: int


@attrs.frozen
class ParsedReply:
    """A historian reply: facts in reply order, and what could not be parsed."""

    facts: list[Fact]
    malformed: list[Malformed]
    empty: bool  # the model said explicitly that there is nothing to remember


@attrs.frozen
class Admission:
    """How a fact enters the store: ``write`` it, or ``quarantine`` it with a reason."""

    action: str  # "write" | "quarantine"
    reason: str = ""
    importance: int = 50


@attrs.frozen
class Classification:
    """What classify decides for a memory; it never includes a category."""

    importance: int  # 1..100
    scope: str
    shareable: bool
    signal: str  # which rule or model decided, for the record


@attrs.frozen
class CellDecision:
    """Where classify places a memory or entity on the grid; never a category."""

    memory_type: str  # episodic | semantic | procedural
    referent: str  # self | agent | other | object | abstract
    act: str | None  # illocutionary act of an interaction memory, else None
    signal: str  # which rule or model decided, for the record

    @property
    def cell(self) -> str:
        return f"{self.memory_type}.{self.referent}"


@attrs.define(slots=True)
class Candidate:
    """A memory the injector may show (mutable only for speed: treat it as read-only)."""

    memory_id: int
    category: str
    kind: str
    priority: int
    importance: int
    content: str | None  # None: the injector loads it for the candidates it shows
    token_count: int
    seen_count: int = 1
    last_seen_at: str = ""
    pinned: bool = False
    content_hash: str = ""
    header: str = ""  # the first composite type the memory heads ("sequence", ...), else ""
    details: int = 0  # how many active memories one expand of this header shows
    turn: int = 0  # a header's rank among its category's headers (0 = its best)
    strength: float = -1.0  # from the last consolidation pass; -1.0 when never computed
    tier: int = -1  # the built-in ranking's tier (0 pinned .. 3 inside a theme); -1 unknown
    annotation: str = ""  # what one expand shows ("9 details"); the injector fills it in


class CandidateRow(Protocol):
    """A raw row :class:`Ranked` can hold: it carries the memory id under the name ``memory_id``.

    A row (the driver's ``Row``) of a query that selects ``... AS memory_id`` is one; so
    is a ``dict``.
    """

    def __getitem__(self, key: str, /) -> Any: ...


class Ranked(Sequence[Candidate]):
    """Candidates already in the built-in rank order, read and made only when reached.

    ``first`` are made up front; ``rest()`` yields raw rows (in rank order,
    read lazily from the store) that ``make`` turns into candidates, so an
    injection that fills its budget early never reads the rest. ``count()``
    (kept as ``counter``) gives how many there are in all, for the account
    only; ``ids()`` every id in order (by a lighter read when given, else
    each row's ``memory_id`` read by name). ``len``, indexing and
    :meth:`ids` read everything: the injector itself only iterates.

    The older form still works: ``Ranked(first, rows, make, min_tokens)``
    with a list of rows and the smallest token count among all candidates
    (-1 when unknown), which lets the injector stop once nothing can fit.
    """

    def __init__(
        self,
        first: list[Candidate],
        rest: Callable[[], Iterator[CandidateRow]] | Sequence[CandidateRow],
        make: Callable[[Any], Candidate],
        count: Callable[[], int] | int = -1,
        ids: Callable[[], list[int]] | None = None,
    ) -> None:
        self.first = first
        self.make = make
        self._ids = ids
        self.min_tokens = -1  # the smallest token count of all, when the offer knows it
        if callable(rest):
            self.rest = rest
        else:  # a list of rows, as before: its length is known
            rows = rest
            self.rest = lambda: iter(rows)
        if callable(count):
            self.counter = count
        else:  # the older form passed the smallest token count instead
            self.min_tokens = count
            self.counter = lambda: len(first) + len(rows)

    def __len__(self) -> int:
        return self.counter()

    def __bool__(self) -> bool:
        return True  # an offer, even if empty: telling would mean counting

    def __iter__(self) -> Iterator[Candidate]:
        yield from self.first
        for row in self.rest():
            yield self.make(row)

    @overload
    def __getitem__(self, index: int) -> Candidate: ...

    @overload
    def __getitem__(self, index: slice) -> list[Candidate]: ...

    def __getitem__(self, index: int | slice) -> Candidate | list[Candidate]:
        return list(self)[index]

    def ids(self) -> list[int]:
        """Every candidate's id, in rank order (reads them all)."""
        if self._ids is not None:
            return self._ids()
        return [c.memory_id for c in self.first] + [row["memory_id"] for row in self.rest()]


@attrs.frozen
class DreamerTask:
    """A unit of background maintenance, registered by a plugin.

    ``run(context)`` does one bounded batch of work and returns how many items
    it handled; it reads and saves its place through ``context.cursor`` and
    ``context.save(cursor, done)``, which commits the cursor in the same
    transaction as the batch's writes. It returns 0 when nothing is left.
    """

    name: str
    description: str
    run: Callable[[TaskContext], int]
    schedule: str = "daily"  # a hint for hosts: "hourly", "daily", "weekly", "manual"
    batch_size: int = 50
    total: Callable[[Store], int] | None = None  # how many items a full pass covers


@attrs.frozen
class ObservedFact:
    """An attribute claim of an observation: ``subject``'s ``predicate`` is ``object``."""

    subject: str  # an entity name
    predicate: str
    object: str


@attrs.frozen
class ObservedRelation:
    """A typed edge an observation asserts between two entities."""

    source: str
    type: str
    target: str


@attrs.frozen(eq=False)
class Observation:
    """One observation (``schemas/observation.schema.json``), as the Retain Job reads it.

    ``topic`` is normalized (case-folded, single spaces); ``payload`` is the
    ``payload_typed`` object as received, with any extra keys a handler reads.
    ``target`` (the first actor) is the entity handlers dispatch on.
    """

    id: str
    source: str
    timestamp: str
    category: str
    actors: tuple[str, ...]
    topic: str
    sentiment: str
    text: str
    facts: tuple[ObservedFact, ...] = ()
    relations: tuple[ObservedRelation, ...] = ()
    source_ref: str | None = None
    correlation: str | None = None
    payload: dict[str, Any] = attrs.field(factory=dict)

    @property
    def target(self) -> str:
        return self.actors[0]

    def names(self) -> list[str]:
        """Every entity the observation names: actors, fact subjects, relation ends (in order)."""
        found = [*self.actors]
        found += [fact.subject for fact in self.facts]
        for relation in self.relations:
            found += [relation.source, relation.target]
        return list(dict.fromkeys(found))


@attrs.frozen
class RetainHandler:
    """Consolidation logic for observations of a category about a class of entities.

    ``category`` is a category name, or ``None`` for any category; ``namespace``
    is a namespace pattern (``plugin_sdk/grid/policy.py``: ``*`` one segment, a
    trailing ``*`` one or more) matched against the observation's target
    entity. ``handle(context)`` gets a ``plugin_sdk.retain.handlers.RetainContext``
    and writes through it, inside the observation's transaction. See ``docs/retain.md`` for dispatch.
    """

    name: str
    namespace: str
    handle: Callable[[Any], None]
    category: str | None = None
