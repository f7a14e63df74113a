"""Recall: the block for *this* turn, the best memories for a query within a token budget.

``recall(store, query, budget=1500)`` searches (``store.memories.search``: the
plain-language parser, the ranking of ``docs/search.md``, the
``search_candidates`` and ``search_rank`` hooks) and packs the results,
best first, into a ``<memory-recall>`` block:

- each memory is one line, ``- [id] (date) CATEGORY: text`` (its category
  as the UserPromptSubmit hook's block shows it); the date is when it
  happened (``occurred_at``), printed when the store knows it;
- a header whose details matched comes with those details, indented under
  it (they are not repeated on their own);
- a hit inside a sequence brings its neighbours in the sequence, indented
  and marked ``(context)``, while the budget allows;
- an entity the query names (a memory it is linked to was found) brings the
  first line of its Compiled Truth.

**The budget is a hard cap** on the rendered text, counted exactly with the
store's tokenizer: units are packed greedily in rank order, skipping what
does not fit; the final text is counted and trimmed from the end until it
fits. The same store and query give byte-identical text. The account
(:class:`Recall`) lists the ids shown, why each was chosen, the entities
whose truth is shown, and the tokens used. A retrieval is counted for the
memories shown, and only for them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import MemsdkError
from plugin_sdk.model.boundary import contain
from plugin_sdk.store.search import episodes
from plugin_sdk.store.search.query import tokens
from plugin_sdk.store.search.ranking import settings
from plugin_sdk.store.tokens import additive, count_each, segments

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store
    from plugin_sdk.store.models import Memory, SearchHit

DEFAULT_BUDGET = 1500
OPEN, CLOSE = "<memory-recall>", "</memory-recall>"
TRUTH_CHARS = 300


@attrs.define
class Recall:
    """The recall block and its account."""

    text: str
    tokens: int
    budget: int
    shown: list[int]
    why: dict[int, list[str]]
    truths: list[str]
    left_out: list[int]

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.define
class _Unit:
    lines: list[str]
    ids: list[int]
    why: dict[int, list[str]]
    truth: str | None = None


def recall(
    store: Store,
    query: str,
    *,
    budget: int = DEFAULT_BUDGET,
    project: str | None = None,
    limit: int = 50,
    record: bool = True,
) -> Recall:
    """The recall block for ``query``; see the module docstring."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise MemsdkError(f"budget must be a whole number of at least 1 token, got {budget!r}")
    project = project or store.project
    if not isinstance(query, str) or not query.strip():
        return _empty(store, budget)
    hits = store.memories.search(query, project=project, limit=limit)
    conf = settings(store)  # one read of the settings for the floor and the context lines
    if max((hit.evidence for hit in hits), default=0.0) < float(conf["recall_floor"]):
        hits = []  # the store knows nothing the query asks about: no block
    units = _units(store, query, hits, project, int(conf["recall_context"]))
    chosen: list[_Unit] = []
    used, costs = _costs(store, units, record=record)
    seen: set[int] = set()
    left_out: list[int] = []
    for unit, cost in zip(units, costs, strict=True):
        fresh = [i for i in unit.ids if i not in seen]
        if unit.ids and not fresh:
            continue
        if used + cost > budget:
            left_out.extend(fresh)
            continue
        chosen.append(unit)
        seen.update(unit.ids)
        used += cost
    text, tokens = _render(store, chosen, used)
    while tokens > budget and chosen:
        left_out.extend(chosen.pop().ids)
        text, tokens = _render(store, chosen, None)
    shown = list(dict.fromkeys(i for unit in chosen for i in unit.ids))
    why: dict[int, list[str]] = {}
    for unit in chosen:
        for memory_id, reasons in unit.why.items():
            why.setdefault(memory_id, []).extend(
                r for r in reasons if r not in why.get(memory_id, [])
            )
    truths = [unit.truth for unit in chosen if unit.truth]
    if record and shown:
        store.memories.record_retrievals(shown)
    left = [i for i in dict.fromkeys(left_out) if i not in why]
    return Recall(text, tokens, budget, shown, why, truths, left)


def _empty(store: Store, budget: int) -> Recall:
    return Recall("", 0, budget, [], {}, [], [])


def _costs(store: Store, units: list[_Unit], *, record: bool) -> tuple[int, list[int]]:
    """The frame's cost in tokens, and each unit's (its lines, each with its line break).

    For an additive counter (the default) these are exact: each unit's text
    begins a line that holds text, so its segments are segments of the block
    and their counts, cached in the store, add up to the block's count; a
    query whose lines were counted before loads no tokenizer. Otherwise each
    line is counted on its own, plus one for its break: an estimate the final
    count corrects.
    """
    if not additive(store):
        count = store.tokenizer.count
        frame = count(f"{OPEN}\n{CLOSE}")
        return frame, [sum(count(line) + 1 for line in unit.lines) for unit in units]
    pieces = [segments("\n".join(unit.lines) + "\n") for unit in units]
    every = [f"{OPEN}\n", CLOSE, *(p for ps in pieces for p in ps)]
    known = count_each(store, every, record=record)
    return known[f"{OPEN}\n"] + known[CLOSE], [sum(known[p] for p in ps) for ps in pieces]


def _render(store: Store, chosen: list[_Unit], counted: int | None) -> tuple[str, int]:
    """The block's text and its exact count (``counted`` when the costs already are exact)."""
    if not chosen:
        return "", 0
    text = "\n".join([OPEN, *(line for unit in chosen for line in unit.lines), CLOSE])
    if counted is None or not additive(store):
        return text, store.tokenizer.count(text)
    return text, counted


def _line(memory: Memory, prefix: str = "- ", note: str = "") -> str:
    date = f"({memory.occurred_at[:10]}) " if memory.occurred_at else ""
    return f"{prefix}[{memory.id}] {date}{note}{memory.category}: {contain(memory.content)}"


def _units(
    store: Store, query: str, hits: list[SearchHit], project: str, context: int
) -> list[_Unit]:
    """Hits grouped for the block, in rank order: header with its matching details,
    a sequence hit with its neighbours, an entity's truth line before its first memory."""
    ids = {hit.memory.id for hit in hits}
    words = set(tokens(query))
    heads = _heads(store, sorted(ids))
    grouped_under = {d: h for h, details in heads.items() if h in ids for d in details if d in ids}
    neighbours = _sequence_neighbours(store, sorted(ids))
    for hit in hits[:context]:  # the best hits bring the turns written beside them
        for other, _ in episodes.neighbours(store, {hit.memory.id}, reach=1).get(hit.memory.id, []):
            if other not in ids and all(m.id != other for m in neighbours.get(hit.memory.id, [])):
                neighbours.setdefault(hit.memory.id, []).append(store.memories.get(other))
    units: list[_Unit] = []
    truths_done: set[int] = set()
    for hit in hits:
        memory = hit.memory
        if memory.id in grouped_under:
            continue
        named = any(reason == "names an entity of the query" for reason in hit.why)
        for entity_id, line in _truths(store, memory.id, words, project) if named else []:
            if entity_id not in truths_done:
                truths_done.add(entity_id)
                units.append(_Unit([line], [], {}, truth=line))
        unit = _Unit([_line(memory)], [memory.id], {memory.id: list(hit.why) or ["matched"]})
        for detail in heads.get(memory.id, []):
            if detail in ids:
                found = next(h for h in hits if h.memory.id == detail)
                unit.lines.append(_line(found.memory, prefix="  - "))
                unit.ids.append(detail)
                unit.why[detail] = [*found.why, f"detail of [{memory.id}]"]
        units.append(unit)
        for member in unit.ids:
            for neighbour in neighbours.get(member, []):
                if neighbour.id not in ids:
                    units.append(
                        _Unit(
                            [_line(neighbour, prefix="  - ", note="(context) ")],
                            [neighbour.id],
                            {neighbour.id: [f"next to [{member}] in a sequence"]},
                        )
                    )
    return units


def _heads(store: Store, ids: list[int]) -> dict[int, list[int]]:
    """For each of ``ids`` heading a sequence or theme: its members among ``ids``, in order."""
    found: dict[int, list[int]] = {}
    if not ids:
        return found
    for head, member in store.tables.composites.heads_among(ids):
        found.setdefault(head, []).append(member)
    return found


def _sequence_neighbours(store: Store, ids: list[int]) -> dict[int, list[Memory]]:
    """For each of ``ids`` in a sequence: its live neighbours there (one position away)."""
    pairs = store.tables.composites.sequence_neighbours(json.dumps(ids))
    found: dict[int, list[Memory]] = {}
    for member, neighbour in pairs:
        found.setdefault(member, []).append(store.memories.get(neighbour))
    return found


def _truths(store: Store, memory_id: int, words: set[str], project: str) -> list[tuple[int, str]]:
    """First lines of the Compiled Truths of the entities the query names and this memory links."""
    lines = []
    for entity_id, name, markdown in store.tables.entities.links.truths(project, memory_id):
        slug = tokens(name.rsplit(":", 1)[-1])
        if not slug or not set(slug) <= words:
            continue
        body = [line.strip(" -#") for line in markdown.splitlines() if line.strip()]
        summary = "; ".join(part for part in body[1:] if part)[:TRUTH_CHARS] or name
        lines.append((entity_id, f"- {name} (compiled truth): {contain(summary)}"))
    return lines
