"""Classify: importance (1..100), scope, shareable and the grid cell. Never the category.

The grid cell (memory type × referent, and the act of an interaction memory)
is decided by the ``classify_cell`` hook, see ``grid/cells.py``; it is skipped
when no installed pack has a grid.

``classify(store)`` asks the ``classify_memory`` hook about each active memory
of a project and writes the decisions in batches, one transaction each. Two
built-ins answer the hook (``plugins/classifier.py``): a model-backed classifier
when the host's model answers, else :func:`rule_importance` and friends here.

**The rule-based importance** is computed from pack data and the text, never
from category names:

- the category's rank among the store's active categories, by priority:
  the first gets 70, the last 40, evenly spaced;
- ``+10`` for an intent category (a directive outranks a fact of the same rank);
- ``+1`` per specific token (digits, paths, ``key=value``, identifiers with
  ``_ . : / =``), at most ``+8``;
- ``+4·log2(seen_count)``, at most ``+10`` (said again and again);
- ``-5`` for a text under six words;
- the category's **criteria text**: ``+5`` when the memory reads like one of
  its positive examples (word overlap of at least :data:`LIKE`), ``-10`` when
  it reads more like a negative example or an exclusion (a borderline fit);
- clamped to 1..100.

**Composite membership.** A detail inherits its header's scope and
shareable: a memory that is a member of a sequence or theme composite takes
them from the composite's head (:func:`header_of`), on the rule path and the
model path alike.

**Ties.** With 100 levels and thousands of memories, ties are unavoidable (in
a store scored by one default, hundreds of memories can share the value 50,
and then ties decide what is injected). Wherever memories are ordered by
importance, ties break by ``seen_count`` (more first), then ``last_seen_at``
(more recent first), then ``id`` (older first), a total order:
:data:`IMPORTANCE_ORDER` in SQL, :func:`by_importance` in Python.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import attrs

from plugin_sdk.grid.cells import decide, place
from plugin_sdk.grid.policy import has_grid
from plugin_sdk.plugin.records import CellDecision, Classification
from plugin_sdk.store.memories import ORDERS
from plugin_sdk.store.models import Memory

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

_SPECIFIC = re.compile(r"\S*(?:\d|[_/=:]|\w\.\w)\S*")
_WORD = re.compile(r"\w{3,}", re.UNICODE)
BATCH = 200
LIKE = 0.3  # word overlap (Jaccard) at which a memory reads like a criteria example


def rule_importance(memory: Memory, rank: int, count: int, kind: str, criteria_fit: int = 0) -> int:
    """The rule-based importance of a memory (see the module docstring)."""
    base = 70 if count <= 1 else 70 - round(30 * rank / (count - 1))
    score = base + (10 if kind == "intent" else 0)
    score += min(8, len(_SPECIFIC.findall(memory.content)))
    score += min(10, round(4 * math.log2(max(1, memory.seen_count))))
    if len(memory.content.split()) < 6:
        score -= 5
    score += criteria_fit
    return max(1, min(100, score))


def criteria_fit(store: Store, memory: Memory) -> int:
    """+5, 0 or -10: how the memory reads against its category's examples and exclusions."""
    if memory.category not in store.category_names():
        return 0
    category = store.category(memory.category)
    words = _words(memory.content)

    def best(field: str) -> float:
        values = category.value(field) if field in category.criteria else []
        return max((_overlap(words, _words(v)) for v in values or []), default=0.0)

    positive = best("positive_examples")
    negative = max(best("negative_examples"), best("exclusions"))
    if negative >= LIKE and negative > positive:
        return -10
    return 5 if positive >= LIKE else 0


def header_of(store: Store, memory: Memory) -> Memory | None:
    """The head of the first sequence (else theme) composite the memory is a detail of."""
    groups = [c for c in store.composites.by_member(memory.id) if c.type in ("sequence", "theme")]
    for group in sorted(groups, key=lambda c: (c.type != "sequence", c.id)):
        head = store.memories.get(group.head)
        if head.status == "active":
            return head
    return None


def inherit_from_header(store: Store, memory: Memory, decision: Classification) -> Classification:
    """A detail takes its header's scope and shareable (see the module docstring)."""
    header = header_of(store, memory)
    if header is None:
        return decision
    return attrs.evolve(
        decision,
        scope=header.scope,
        shareable=header.shareable,
        signal=f"{decision.signal}; scope from header {header.id}",
    )


def rule_classification(store: Store, memory: Memory) -> Classification:
    """Importance by :func:`rule_importance` with the criteria text; scope from a header."""
    names = store.category_names()
    rank = names.index(memory.category) if memory.category in names else len(names) - 1
    importance = rule_importance(memory, rank, len(names), memory.kind, criteria_fit(store, memory))
    decision = Classification(importance, memory.scope, memory.shareable, "rules")
    return inherit_from_header(store, memory, decision)


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)}


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


IMPORTANCE_ORDER = ORDERS["importance"]


def by_importance(memories: Iterable[Memory]) -> list[Memory]:
    """Memories in :data:`IMPORTANCE_ORDER` (see the module docstring)."""
    ordered = sorted(memories, key=lambda m: m.id)
    return sorted(ordered, key=lambda m: (m.importance, m.seen_count, m.last_seen_at), reverse=True)


@attrs.define
class ClassifyReport:
    classified: int = 0
    changed: int = 0
    placed: int = 0  # memories whose grid cell (or act) was set or changed
    signals: dict[str, int] = attrs.field(factory=dict)


def classify(
    store: Store, *, project: str | None = None, ids: list[int] | None = None
) -> ClassifyReport:
    """Classify active memories of a project (or the given ids) and store the results.

    Memories are read, decided and written :data:`BATCH` at a time, one
    transaction per batch.
    """
    report = ClassifyReport()
    if ids is not None:
        for start in range(0, len(ids), BATCH):
            batch = [store.memories.get(memory_id) for memory_id in ids[start : start + BATCH]]
            write_batch(store, decide_batch(store, batch), report)
        return report
    after = 0
    while batch := store.memories.list(project=project, after_id=after, limit=BATCH):
        write_batch(store, decide_batch(store, batch), report)
        after = batch[-1].id
    return report


@attrs.frozen
class Decisions:
    """What classify decided for a batch of memories, before anything is written."""

    ratings: list[tuple[Memory, Classification]]
    cells: list[tuple[int, CellDecision]]  # empty when no installed pack has a grid


def decide_batch(store: Store, memories: Sequence[Memory]) -> Decisions:
    """Ask the ``classify_memory`` and ``classify_cell`` hooks about each memory.

    Writes nothing: call it outside a transaction (the hooks may call the
    host's model), then store the result with :func:`write_batch`.
    """
    hook = store.plugins.hook.classify_memory
    ratings = [(m, hook(store=store, memory=m)) for m in memories]
    cells = [(m.id, decide(store, m)) for m in memories] if has_grid(store) else []
    return Decisions(ratings, cells)


def write_batch(
    store: Store, decisions: Decisions, report: ClassifyReport | None = None
) -> ClassifyReport:
    """Store a batch's decisions in one transaction (a savepoint inside an open one)."""
    report = report if report is not None else ClassifyReport()
    with store.atomic():
        report.placed += place(store, decisions.cells)
        for memory, decision in decisions.ratings:
            report.classified += 1
            report.signals[decision.signal] = report.signals.get(decision.signal, 0) + 1
            if apply(store, memory, decision):
                report.changed += 1
    return report


def apply(store: Store, memory: Memory, decision: Classification) -> bool:
    """Write a classification (inside a transaction); True if anything changed."""
    new = (int(decision.importance), decision.scope, bool(decision.shareable))
    if new == (memory.importance, memory.scope, memory.shareable):
        return False
    store.memories.update(memory.id, importance=new[0], scope=new[1], shareable=new[2])
    return True
