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
    counter = store.tokenizer
    rows = db.execute(
        """SELECT m.id, m.category, m.kind, m.importance,
                  CASE WHEN m.tokenizer = ? AND m.token_count IS NOT NULL THEN NULL ELSE m.content END,
                  m.token_count, m.seen_count, m.last_seen_at, m.pinned, m.normalized_hash, c.priority
           FROM memories m JOIN categories c ON c.name = m.category AND c.status = 'active'
           WHERE m.project = ? AND m.status = 'active'
             AND m.id NOT IN (SELECT d.member_memory_id FROM composite_members d
                              JOIN composites s ON s.id = d.composite_id WHERE s.type = 'sequence')
           ORDER BY m.pinned DESC,
                    m.id IN (SELECT head_memory_id FROM composites
                             WHERE type IN ('sequence', 'theme')) DESC,
                    m.kind != 'intent', c.priority, m.category, m.importance DESC,
                    m.seen_count DESC, m.last_seen_at DESC, m.id""",
        [counter.name, project],
    ).fetchall()
    candidates = []
    for row in rows:
        head = kinds.get(row[0], "")
        # Text is read only where the cached count is missing or from another
        # tokenizer; the injector loads the text of the candidates it shows.
        count = row[5] if row[4] is None else counter.count(row[4])
        candidates.append(
            Candidate(
                row[0],
                row[1],
                row[2],
                row[10],
                row[3],
                row[4],
                count,
                row[6],
                row[7],
                bool(row[8]),
                row[9],
                head,
                tuple(reaches[row[0]]) if head else (),
            )
        )
    return candidates


@hookimpl(trylast=True)
def injection_rank(store: Any, candidates: list[Candidate]) -> list[Candidate]:
    # A total order: pinned, headers (the table of contents), then standalone
    # memories; within each, directives before facts, category priority,
    # importance, and the documented tie-breaks: seen count, last seen (recent
    # first), id (older first). One sort: on input already in this order (the
    # built-in candidates come sorted by SQL) it takes linear time.
    recency = {
        seen: rank
        for rank, seen in enumerate(sorted({c.last_seen_at for c in candidates}, reverse=True))
    }

    def key(c: Candidate) -> tuple[Any, ...]:
        tier = 0 if c.pinned else 1 if c.header else 2
        return (
            tier,
            c.kind != "intent",
            c.priority,
            c.category,
            -c.importance,
            -c.seen_count,
            recency[c.last_seen_at],
            c.memory_id,
        )

    return sorted(candidates, key=key)


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
    text = indent_lines(candidate.content or "")
    if candidate.header == "sequence":
        text += f" ({candidate.details} details: expand {candidate.memory_id})"
    elif candidate.header == "theme":
        text += f" ({candidate.details} memories: expand {candidate.memory_id})"
    return f"- [{candidate.memory_id}] {text}"
