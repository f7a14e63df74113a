"""Built-in injection: a table of contents first, then the memories that fit.

Candidates are the project's active memories in active categories, except the
details of fragmented memories (their header stands for them). A memory that
heads a ``sequence`` (a fragment header) or a ``theme`` (a group built by the
``map`` dreamer task) is shown with how many memories one expand reaches.

The ranking is a total order in three tiers: pinned memories; then headers,
so the table of contents covers as much of the store as the budget allows;
then standalone memories, which fill what is left. Within a tier: directives
(intent) before facts, categories in the store's priority order, importance,
then the documented tie-breaks (seen count, last seen: recent first, id:
older first). Memory text is escaped (``plugin_sdk.inject.indent_lines``) so no
memory can close or forge the block.
"""

from __future__ import annotations

from typing import Any

from plugin_sdk import hookimpl
from plugin_sdk.hooktypes import Candidate
from plugin_sdk.inject import indent_lines

SECTIONS = (
    ("pinned", "Pinned"),
    ("intent", "Directives (follow these)"),
    ("content", "Known facts"),
)


@hookimpl(trylast=True)
def injection_candidates(store: Any, project: str) -> list[Candidate]:
    db = store.db
    reaches: dict[int, list[int]] = {}
    kinds: dict[int, str] = {}
    for head, kind, member in db.execute(
        """SELECT c.head_memory_id, c.type, d.member_memory_id
           FROM composites c JOIN composite_members d ON d.composite_id = c.id
           JOIN memories m ON m.id = c.head_memory_id
           WHERE m.project = ? AND c.type IN ('sequence', 'theme') ORDER BY c.id, d.position""",
        [project],
    ).fetchall():
        reaches.setdefault(head, []).append(member)
        kinds.setdefault(head, kind)
    rows = db.execute(
        """SELECT m.id, m.category, m.kind, m.importance, m.content, m.token_count, m.tokenizer,
                  m.seen_count, m.last_seen_at, m.pinned, m.normalized_hash, c.priority
           FROM memories m JOIN categories c ON c.name = m.category AND c.status = 'active'
           WHERE m.project = ? AND m.status = 'active'
             AND m.id NOT IN (SELECT d.member_memory_id FROM composite_members d
                              JOIN composites s ON s.id = d.composite_id WHERE s.type = 'sequence')""",
        [project],
    ).fetchall()
    counter = store.tokenizer
    return [
        Candidate(
            memory_id=row[0],
            category=row[1],
            kind=row[2],
            importance=row[3],
            content=row[4],
            token_count=row[5]
            if row[6] == counter.name and row[5] is not None
            else counter.count(row[4]),
            seen_count=row[7],
            last_seen_at=row[8],
            pinned=bool(row[9]),
            content_hash=row[10],
            priority=row[11],
            header=kinds.get(row[0], ""),
            reaches=tuple(reaches.get(row[0], ())),
        )
        for row in rows
    ]


@hookimpl(trylast=True)
def injection_rank(store: Any, candidates: list[Candidate]) -> list[Candidate]:
    ranked = sorted(candidates, key=lambda c: c.memory_id)
    ranked.sort(key=lambda c: c.last_seen_at, reverse=True)
    ranked.sort(
        key=lambda c: (
            0 if c.pinned else 1 if c.header else 2,
            c.kind != "intent",
            c.priority,
            c.category,
            -c.importance,
            -c.seen_count,
        )
    )
    return ranked


@hookimpl(trylast=True)
def injection_render(store: Any, chosen: list[Candidate]) -> str:
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
    text = indent_lines(candidate.content)
    if candidate.header == "sequence":
        text += f" ({candidate.details} details: expand {candidate.memory_id})"
    elif candidate.header == "theme":
        text += f" ({candidate.details} memories: expand {candidate.memory_id})"
    return f"- [{candidate.memory_id}] {text}"
