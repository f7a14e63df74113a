"""Built-in injection: a table of contents first, then the memories that fit.

Candidates come from ``toc_rank``, the ranking the store keeps current with
triggers on every write (memories, composites, members, strengths), so an
injection reads the rows it shows plus a bounded overhead, never every
candidate. They are the memories the project may read: its own and other
projects' shared ones (``plugin_sdk/store/visibility.py``), merged in rank
order. The rows use the row class of the store's SQLite driver,
``plugin_sdk.store.driver``, hence the import. The ranking is a total order in four tiers:

0. pinned memories;
1. top-level headers: memories that head a ``sequence`` (a fragment header)
   or a ``theme`` (a group; the ``map`` dreamer task builds them in levels)
   and belong to no theme, taking turns across categories (every category's
   best header before any category's second, so a large category cannot
   crowd out the rest);
2. standalone memories: in no theme, so only the block itself reaches them;
3. memories inside a theme (one expand of its header already reaches them),
   which fill what is left.

Details of a sequence and theme headers inside another theme are not
candidates: the header above them stands for them. Within a tier: directives
(intent) before facts, categories in the store's priority order, importance,
strength from the last consolidation pass, then the documented tie-breaks
(seen count, last seen: recent first, id: older first).

The renderer writes one line per memory, ``- [ID] text``; a memory that heads
composites says what one expand of it shows inside its id bracket, where no
stored text can reach: ``- [ID: 9 details] ...``, ``- [ID: 12 groups, 480
memories] ...``, ``- [ID: 3 causes] ...``, ``- [ID: 4 alternatives] ...``.
Another project's shared head says only what that project may see: its
note counts the members the reader may read (``composites/groups.py``). The
opening tag advertises the expand budget the map is built for. Memory
text goes through the boundary (``entry``).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from typing import Any

from plugin_sdk.plugin import Candidate, CandidateRow, Ranked, Store, entry, hookimpl
from plugin_sdk.store import driver

SECTIONS = (
    ("pinned", "Pinned"),
    ("intent", "Directives (follow these)"),
    ("content", "Known facts"),
)
EXPAND_BUDGET = 2000  # the expand budget the block advertises; the map is built for it
OPEN_TAG = f'<memory expand-budget="{EXPAND_BUDGET}">'
CLOSE_TAG = "</memory>"


def category_order(store: Store) -> list[tuple[str, str, int]]:
    """Active categories as (name, kind, priority): directives first, then priority, name."""
    rows = store.tables.packs.active_priorities()
    return sorted(rows, key=lambda r: (r[1] != "intent", r[2], r[0]))


@hookimpl(trylast=True)
def injection_candidates(store: Store, project: str) -> Sequence[Candidate]:
    # The maintained ranking joined with the rows' text (store.tables.toc).
    # Rows are driver.Row (Ranked may read memory_id by name); this module
    # reads its own rows by position (toc.COLUMNS order), for speed.
    toc = store.tables.toc.reader()
    counter = store.tokenizer
    categories = category_order(store)
    priority = {name: prio for name, _, prio in categories}
    position = {name: index for index, (name, _, _) in enumerate(categories)}

    def make(row: driver.Row) -> Candidate:
        (memory_id, category, kind, importance, tokens, tokenizer) = row[:6]
        seen, last, strength, tier, head, note, text, digest = row[6:]
        if tokens is None or tokenizer != counter.name:  # no count from this tokenizer cached
            tokens = counter.count(text)
        return Candidate(
            memory_id,
            category,
            kind,
            priority[category],
            importance,
            text,
            tokens,
            seen,
            last,
            tier == 0,
            digest,
            head or "",
            strength=strength,
            tier=tier,
            annotation=note or "",
        )

    # Most stores share nothing across projects, and some tiers are empty:
    # one cheap probe each spares a query per category and tier.
    sharing = toc.any_shared(project)

    def tier(number: int) -> list[driver.Row]:
        rows = toc.tier(project, number)
        shared = sharing and toc.shared_tier(project, number)
        if shared:
            rows = sorted([*rows, *shared], key=lambda r: (r[1], *_rank_key(r)))
        return [row for row in rows if row[1] in position]

    pinned = sorted(tier(0), key=lambda r: position[r[1]])  # stable: rank order within a category
    headers = _taking_turns(tier(1), position)

    def rest() -> Iterator[CandidateRow]:
        sharing = toc.any_shared(project)  # read now, as the rows
        for number in (2, 3):
            if not sharing and not toc.any_in_tier(project, number):
                continue
            for name, _, _ in categories:
                own = toc.category_tier(project, number, name)
                if not sharing:
                    yield from own
                    continue
                shared = toc.shared_category_tier(project, number, name)
                first = next(shared, None)
                if first is None:  # the usual case: nothing shared from elsewhere
                    yield from own
                else:
                    yield from heapq.merge(own, [first], shared, key=_rank_key)

    def count() -> int:
        found = toc.category_counts(project)
        return sum(n for name, n in found if name in position)

    def ids() -> list[int]:
        return [row[0] for row in pinned + headers] + [row["memory_id"] for row in rest()]

    return Ranked([make(row) for row in pinned + headers], rest, make, count, ids)


# Timestamps share one ISO format, so flipping their digits reverses their
# order: the most recently seen first, as the SQL orders them.
_RECENT_FIRST = str.maketrans("0123456789", "9876543210")


def _rank_key(row: driver.Row) -> tuple[Any, ...]:
    """A row's place within its tier and category (the SQL ORDER BY, in Python)."""
    return (-row[3], -row[8], -row[6], row[7].translate(_RECENT_FIRST), row[0])


def _taking_turns(rows: list[driver.Row], position: dict[str, int]) -> list[driver.Row]:
    """Rows of each category in rank order, merged: every category's first, then seconds..."""
    turn: dict[str, int] = {}
    keyed = []
    for index, row in enumerate(rows):
        n = turn.get(row[1], 0)
        turn[row[1]] = n + 1
        keyed.append((n, position[row[1]], index, row))
    return [entry[3] for entry in sorted(keyed)]


@hookimpl(trylast=True)
def injection_rank(store: Store, candidates: Sequence[Candidate]) -> Sequence[Candidate]:
    # The built-in's own list (Ranked) is already in rank order. Any other
    # list gets the same total order: tier, a header's turn, directives
    # before facts, category priority, importance, strength, and the
    # documented tie-breaks: seen count, last seen (recent first), id (older first).
    if isinstance(candidates, Ranked):
        return candidates
    recency = {
        seen: rank
        for rank, seen in enumerate(sorted({c.last_seen_at for c in candidates}, reverse=True))
    }
    turns: dict[str, int] = {}
    for c in sorted(candidates, key=lambda c: (c.category, -c.importance, c.memory_id)):
        if _tier(c) == 1:
            c.turn = turns.get(c.category, 0)
            turns[c.category] = c.turn + 1

    def key(c: Candidate) -> tuple[Any, ...]:
        tier = _tier(c)
        return (
            tier,
            c.turn if tier == 1 else 0,
            c.kind != "intent",
            c.priority,
            c.category,
            -c.importance,
            -c.strength,
            -c.seen_count,
            recency[c.last_seen_at],
            c.memory_id,
        )

    return sorted(candidates, key=key)


def _tier(candidate: Candidate) -> int:
    if candidate.pinned:
        return 0
    if candidate.tier >= 0:
        return candidate.tier
    return 1 if candidate.header in ("sequence", "theme") else 2


@hookimpl(trylast=True)
def injection_render(store: Store, chosen: list[Candidate]) -> str:
    return "\n".join(render_lines(store, chosen))


def render_lines(store: Store, chosen: list[Candidate]) -> list[str]:
    """The block as lines: the frame, section and category headings, one entry per candidate."""
    sections: dict[str, dict[str, list[Candidate]]] = {key: {} for key, _ in SECTIONS}
    order: dict[str, tuple[bool, int, str]] = {}
    for candidate in chosen:
        key = "pinned" if candidate.pinned else candidate.kind
        sections[key].setdefault(candidate.category, []).append(candidate)
        order.setdefault(
            candidate.category,
            (candidate.kind != "intent", candidate.priority, candidate.category),
        )
    lines = [OPEN_TAG]
    for key, title in SECTIONS:
        if not sections[key]:
            continue
        lines.append(f"# {title}")
        for name in sorted(sections[key], key=order.__getitem__):
            lines.append(f"## {name}")
            lines.extend(
                entry(c.memory_id, c.content or "", c.annotation) for c in sections[key][name]
            )
    lines.append(CLOSE_TAG)
    return lines
