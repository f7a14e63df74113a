"""Built-in detectors (``detect_patterns``): recurring patterns become proposals.

``retrieved_facts``: a content memory retrieved again and again (shown to a
model, expanded) is probably something the agent should follow, not look up.
A fact qualifies when it is active, its category is promotable, and its
retrieval count is at least ``RETRIEVED`` and at least ``STANDOUT`` times the
median of the project's retrieved content memories (a table of contents
injected every session retrieves everything in it alike; only what stands out
counts). It is proposed as a ``memory_entry`` write to an intent category:
the first by priority of the fact's own pack, else of the store.
"""

from __future__ import annotations

import statistics
from typing import Any

from plugin_sdk import hookimpl
from plugin_sdk.proposals import ProposalDraft

RETRIEVED = 5
STANDOUT = 2.0
LIMIT = 20


def retrieved_facts(store: Any, project: str) -> list[ProposalDraft]:
    categories = store.categories()
    intent = [c for c in categories if c.kind == "intent"]
    promotable = {c.name: c for c in categories if c.kind == "content" and c.promotable}
    if not intent or not promotable:
        return []
    counts = [
        row[0]
        for row in store.db.execute(
            """SELECT retrieval_count FROM memories WHERE project = ? AND status = 'active'
               AND kind = 'content' AND retrieval_count > 0""",
            [project],
        ).fetchall()
    ]
    if not counts:
        return []
    median = statistics.median(counts)
    threshold = max(RETRIEVED, STANDOUT * median)
    marks = ", ".join("?" * len(promotable))
    rows = store.db.execute(
        f"""SELECT id FROM memories WHERE project = ? AND status = 'active' AND kind = 'content'
            AND retrieval_count >= ? AND category IN ({marks})
            ORDER BY retrieval_count DESC, id LIMIT ?""",
        [project, threshold, *promotable, LIMIT],
    ).fetchall()
    drafts = []
    for (memory_id,) in rows:
        memory = store.memories.get(memory_id)
        pack = promotable[memory.category].pack
        target = min(intent, key=lambda c: (c.pack != pack, c.priority, c.name))
        promoted = store.db.execute(
            "SELECT 1 FROM memories WHERE project = ? AND category = ? AND normalized_hash = ?",
            [project, target.name, memory.normalized_hash],
        ).fetchone()
        if promoted:
            continue
        drafts.append(
            ProposalDraft(
                diff_type="memory_entry",
                rationale=(
                    f"memory {memory.id} ({memory.category}) was retrieved "
                    f"{memory.retrieval_count} times (the project's median is {median:g}); "
                    f"a fact used this often may be a standing rule for {target.name}"
                ),
                evidence=[memory.id],
                diff={"action": "write", "category": target.name, "content": memory.content},
                source="detector:retrieved-facts",
            )
        )
    return drafts


@hookimpl
def detect_patterns(store: Any, project: str) -> list[ProposalDraft]:
    return retrieved_facts(store, project)
