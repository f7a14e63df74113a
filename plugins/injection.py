"""Built-in injection: active memories as candidates, ranked by value, rendered by category.

Details of a fragmented memory are not candidates: their header is, shown
marked ``[expand ID]``.

Rendering escapes ``&``, ``<`` and ``>`` in memory text (as ``&amp;``,
``&lt;``, ``&gt;``), so no memory can close or forge the ``<memory>`` block.
"""

from __future__ import annotations

from typing import Any

from plugin_sdk import hookimpl
from plugin_sdk.hooktypes import Candidate


@hookimpl(trylast=True)
def injection_candidates(store: Any, project: str) -> list[Candidate]:
    rows = store.db.query(
        """SELECT m.id, m.category, m.kind, m.importance, m.content, m.token_count,
                  m.tokenizer, m.seen_count, m.last_seen_at, c.priority,
                  (SELECT count(*) FROM composites s JOIN composite_members d ON d.composite_id = s.id
                   WHERE s.head_memory_id = m.id AND s.type = 'sequence') AS details
           FROM memories m JOIN categories c ON c.name = m.category AND c.status = 'active'
           WHERE m.project = ? AND m.status = 'active'
             AND m.id NOT IN (SELECT d.member_memory_id FROM composite_members d
                              JOIN composites s ON s.id = d.composite_id WHERE s.type = 'sequence')""",
        [project],
    )
    counter = store.tokenizer
    return [
        Candidate(
            memory_id=row["id"],
            category=row["category"],
            kind=row["kind"],
            priority=row["priority"],
            importance=row["importance"],
            content=row["content"] + (f" [expand {row['id']}]" if row["details"] else ""),
            token_count=row["token_count"]
            if row["tokenizer"] == counter.name and row["token_count"] is not None
            else counter.count(row["content"]),
            seen_count=row["seen_count"],
        )
        for row in rows
    ]


@hookimpl(trylast=True)
def injection_rank(store: Any, candidates: list[Candidate]) -> list[Candidate]:
    # Directives first, then category priority, then importance with the
    # documented tie-breaks (seen count, then id: older first). Total order.
    return sorted(
        candidates,
        key=lambda c: (
            c.kind != "intent",
            c.priority,
            c.category,
            -c.importance,
            -c.seen_count,
            c.memory_id,
        ),
    )


@hookimpl(trylast=True)
def injection_render(store: Any, chosen: list[Candidate]) -> str:
    order = {name: index for index, name in enumerate(store.category_names())}
    by_category: dict[str, list[Candidate]] = {}
    for candidate in chosen:
        by_category.setdefault(candidate.category, []).append(candidate)
    lines = ["<memory>"]
    for kind, title in (("intent", "Directives (follow these)"), ("content", "Known facts")):
        names = sorted(
            (n for n, cs in by_category.items() if cs[0].kind == kind),
            key=lambda n: order.get(n, 1 << 30),
        )
        if not names:
            continue
        lines.append(f"# {title}")
        for name in names:
            lines.append(f"## {name}")
            for candidate in by_category[name]:
                text = escape(candidate.content).replace("\n", "\n  ")
                lines.append(f"- [{candidate.memory_id}] {text}")
    lines.append("</memory>")
    return "\n".join(lines)


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
