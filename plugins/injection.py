"""Built-in injection: a table of contents first, then the memories that fit.

Candidates are the active memories in active categories that the project may
read (its own, and other projects' shared ones: see
``plugin_sdk/store/visibility.py``), except the details of fragmented memories
(their header stands for them). A memory that
heads a ``sequence`` (a fragment header) or a ``theme`` (a group built by the
``map`` dreamer task) is shown with how many active memories one expand
shows (the injector counts them for the headers it shows; nothing is added
when none is).

The ranking is a total order in three tiers: pinned memories; then headers,
so the table of contents covers as much of the store as the budget allows
(taking turns across categories: every category's best header before any
category's second, so a large category cannot crowd out the rest); then
standalone memories, which fill what is left. Within a tier: directives
(intent) before facts, categories in the store's priority order, importance,
then the documented tie-breaks (seen count, last seen: recent first, id:
older first). Memory text is escaped (``indent_lines``) so no
memory can close or forge the block.

The candidates come from one SQL read (below); its rows use the row class of
the store's SQLite driver, ``plugin_sdk.store.driver``, hence the import.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plugin_sdk.plugin import Candidate, Ranked, Store, hookimpl, indent_lines, readable_sql
from plugin_sdk.store import driver

SECTIONS = (
    ("pinned", "Pinned"),
    ("intent", "Directives (follow these)"),
    ("content", "Known facts"),
)


@hookimpl(trylast=True)
def injection_candidates(store: Store, project: str) -> Sequence[Candidate]:
    counter = store.tokenizer
    priority = {c.name: c.priority for c in store.categories()}
    # Categories, composites and cells joined in one index-only read: no
    # facade covers it. Rows are driver.Row, which Ranked reads by name
    # (``memory_id``); this module reads its own rows by position, for speed.
    cursor = store.db.conn.cursor()
    cursor.row_factory = driver.Row
    rows = cursor.execute(_CANDIDATES, [counter.name, project]).fetchall()

    def make(row: driver.Row) -> Candidate:
        # Unpacked in the order of _CANDIDATES below (this module's own query).
        memory_id, category, kind, importance, tokens, seen, last_seen, pin, head, strength = row
        text = None
        if tokens is None:  # no count from this tokenizer cached: count the text once
            text = store.memories.get(memory_id).content
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
            last_seen,
            bool(pin),
            "",
            head or "",
            strength=-1.0 if strength is None else strength,
        )

    # Pinned rows and headers come first (SQL's order); only they are built
    # here, the rest when the injector reaches them.
    split = next((n for n, row in enumerate(rows) if not row[PINNED] and not row[HEAD]), len(rows))
    pinned = [make(row) for row in rows[:split] if row[PINNED]]
    headers = [make(row) for row in rows[:split] if not row[PINNED]]
    turns: dict[str, int] = {}
    for candidate in headers:  # headers take turns across categories
        candidate.turn = turns.get(candidate.category, 0)
        turns[candidate.category] = candidate.turn + 1
    order = {id(c): position for position, c in enumerate(headers)}
    headers.sort(key=lambda c: (c.turn, order[id(c)]))
    counts = [row[TOKENS] for row in rows if row[TOKENS] is not None]
    least = min(counts) if len(counts) == len(rows) and counts else -1
    return Ranked(pinned + headers, rows[split:], make, least)


TOKENS, PINNED, HEAD = 4, 7, 8  # positions in _CANDIDATES, read in bulk


# Read from the memories_inject covering index alone, never from the rows
# (the text inside them would make the read slow); in rank order but for the
# headers' turns. A token count from another tokenizer reads as NULL. Every
# column is named (AS), as the rows are read by name.
_CANDIDATES = f"""
SELECT m.id AS memory_id, m.category AS category, m.kind AS kind, m.importance AS importance,
       CASE WHEN m.tokenizer = ? THEN m.token_count END AS tokens,
       m.seen_count AS seen_count, m.last_seen_at AS last_seen_at, m.pinned AS pinned,
       (SELECT MIN(c.type) FROM composites c
        WHERE c.head_memory_id = m.id AND c.type IN ('sequence', 'theme')) AS head,
       g.strength AS strength
FROM memories m JOIN categories c ON c.name = m.category AND c.status = 'active'
LEFT JOIN memory_cells g ON g.memory_id = m.id
WHERE m.status = 'active' AND {readable_sql("m")}
  AND m.id NOT IN (SELECT d.member_memory_id FROM composite_members d
                   JOIN composites s ON s.id = d.composite_id
                   JOIN memories h ON h.id = s.head_memory_id
                   WHERE s.type = 'sequence' AND h.status = 'active')
ORDER BY m.pinned DESC, head IS NOT NULL DESC, m.kind != 'intent', c.priority, m.category,
         m.importance DESC, coalesce(g.strength, -1.0) DESC, m.seen_count DESC,
         m.last_seen_at DESC, m.id"""


@hookimpl(trylast=True)
def injection_rank(store: Store, candidates: Sequence[Candidate]) -> Sequence[Candidate]:
    # A total order: pinned, headers (the table of contents, taking turns
    # across categories), then standalone memories; within each, directives
    # before facts, category priority, importance, strength (as the last
    # consolidation pass left it; not yet computed ranks last), and the
    # documented tie-breaks: seen count, last seen (recent first), id (older first). One
    # sort: on input already in this order (the built-in candidates come
    # sorted by SQL) it takes linear time, and the built-in's own list
    # (Ranked) is already in it.
    if isinstance(candidates, Ranked):
        return candidates
    recency = {
        seen: rank
        for rank, seen in enumerate(sorted({c.last_seen_at for c in candidates}, reverse=True))
    }

    def key(c: Candidate) -> tuple[Any, ...]:
        tier = 0 if c.pinned else 1 if c.header else 2
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


@hookimpl(trylast=True)
def injection_render(store: Store, chosen: list[Candidate]) -> str:
    order = {name: index for index, name in enumerate(store.category_names())}
    sections: dict[str, dict[str, list[Candidate]]] = {key: {} for key, _ in SECTIONS}
    for candidate in chosen:
        key = "pinned" if candidate.pinned else candidate.kind
        sections[key].setdefault(candidate.category, []).append(candidate)
    lines = ["<memory>"]
    for key, title in SECTIONS:
        if not sections[key]:
            continue
        lines.append(f"# {title}")
        for name in sorted(sections[key], key=lambda n: (order.get(n, len(order)), n)):
            lines.append(f"## {name}")
            lines.extend(_line(candidate) for candidate in sections[key][name])
    lines.append("</memory>")
    return "\n".join(lines)


def _line(candidate: Candidate) -> str:
    text = indent_lines(candidate.content or "")
    if not candidate.details:
        pass  # every member archived or merged away: nothing to expand
    elif candidate.header == "sequence":
        text += f" ({candidate.details} details: expand {candidate.memory_id})"
    elif candidate.header == "theme":
        text += f" ({candidate.details} memories: expand {candidate.memory_id})"
    return f"- [{candidate.memory_id}] {text}"
