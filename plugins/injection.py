"""Built-in injection: headers and standalone memories, ranked by value, rendered by section.

Details of a fragmented memory are not candidates: their header is, shown with
its number of details and the id to expand. Pinned memories come first, in a
section of their own; then directives (intent categories); then facts, by
category in the store's priority order. Memory text is escaped
(``plugin_sdk.inject.escape``) so no memory can close or forge the block.
"""

from __future__ import annotations

from typing import Any

from plugin_sdk import hookimpl
from plugin_sdk.hooktypes import Candidate
from plugin_sdk.inject import escape

SECTIONS = (
    ("pinned", "Pinned"),
    ("intent", "Directives (follow these)"),
    ("content", "Known facts"),
)


@hookimpl(trylast=True)
def injection_candidates(store: Any, project: str) -> list[Candidate]:
    rows = store.db.execute(
        """SELECT m.id, m.category, m.kind, m.importance, m.content, m.token_count, m.tokenizer,
                  m.seen_count, m.last_seen_at, m.pinned, m.normalized_hash, c.priority,
                  (SELECT count(*) FROM composites s JOIN composite_members d ON d.composite_id = s.id
                   WHERE s.head_memory_id = m.id AND s.type = 'sequence') AS details
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
            details=row[12],
        )
        for row in rows
    ]


@hookimpl(trylast=True)
def injection_rank(store: Any, candidates: list[Candidate]) -> list[Candidate]:
    # A total order: pinned, directives, category priority, importance, then the
    # documented tie-breaks (seen count, last seen: recent first, id: older first).
    ranked = sorted(candidates, key=lambda c: c.memory_id)
    ranked.sort(key=lambda c: c.last_seen_at, reverse=True)
    ranked.sort(
        key=lambda c: (
            not c.pinned,
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
    text = escape(candidate.content).replace("\n", "\n  ")
    if candidate.details:
        text += f" ({candidate.details} details: expand {candidate.memory_id})"
    return f"- [{candidate.memory_id}] {text}"
