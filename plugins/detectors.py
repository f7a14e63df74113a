"""Built-in detectors (``detect_patterns``): recurring patterns become proposals.

``retrieved_facts``: a content memory retrieved again and again (shown to a
model, expanded) is probably something the agent should follow, not look up.
A fact qualifies when it is active, its category is promotable, and its
retrieval count is at least ``RETRIEVED`` and at least ``STANDOUT`` times the
median of the project's retrieved content memories (a table of contents
injected every session retrieves everything in it alike; only what stands out
counts). It is proposed as a ``memory_entry`` write to an intent category:
the first by priority of the fact's own pack, else of the store.

``interaction_styles``: an actor entity whose active interaction memories
show a persistent style (``interaction_style``: one dominant illocutionary act, or a
pair such as directive plus expressive with one contact; the thresholds are
the pack's ``[grid.styles]``). Each style is proposed twice: as a
``memory_entry`` write that states it, to the intent category whose usual
grid cell is about another (then the self, then the agent), else the first
intent category by priority; and as an instructions-file note (``claude_md``)
surfacing the style to the agent (filed when a target repository is known).
"""

from __future__ import annotations

import math
import statistics

from plugin_sdk.plugin import (
    Category,
    ProposalDraft,
    Store,
    act_distribution,
    grid,
    has_grid,
    hookimpl,
    interaction_style,
    split_cell,
)

RETRIEVED = 5
STANDOUT = 2.0
LIMIT = 20
REFERENTS = ("other", "self", "agent")  # who a note about someone's style is about, best first
GLOSS = {
    "assertive": "statements of how things are",
    "directive": "instructions and requests",
    "commissive": "promises and commitments",
    "expressive": "feelings and reactions",
    "declarative": "decisions that change how things stand",
}


def retrieved_facts(store: Store, project: str) -> list[ProposalDraft]:
    categories = store.categories()
    intent = [c for c in categories if c.kind == "intent"]
    promotable = {c.name: c for c in categories if c.kind == "content" and c.promotable}
    if not intent or not promotable:
        return []
    counts = [
        m.retrieval_count
        for m in store.memories.iter(project=project, kind="content", min_retrievals=1)
    ]
    if not counts:
        return []
    median = statistics.median(counts)
    threshold = max(RETRIEVED, STANDOUT * median)
    found = store.memories.list(
        project=project,
        kind="content",
        category=list(promotable),
        min_retrievals=math.ceil(threshold),  # counts are whole: >= threshold is >= its ceiling
        order="retrievals",
        limit=LIMIT,
    )
    drafts = []
    for memory in found:
        pack = promotable[memory.category].pack
        target = min(intent, key=lambda c: (c.pack != pack, c.priority, c.name))
        if store.memories.find(memory.content, target.name, project=project) is not None:
            continue  # promoted already (in whatever status)
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


def interaction_styles(store: Store, project: str) -> list[ProposalDraft]:
    intent = [c for c in store.categories() if c.kind == "intent"]
    if not intent:
        return []
    cells = grid(store).category_cells if has_grid(store) else {}

    def rank(category: Category) -> tuple[int, int, str]:
        cell = cells.get(category.name)
        referent = split_cell(cell)[1] if cell else ""
        order = REFERENTS.index(referent) if referent in REFERENTS else len(REFERENTS)
        return order, category.priority, category.name

    target = min(intent, key=rank)
    thresholds = grid(store).styles if has_grid(store) else {}
    drafts = []
    for actor, counts in sorted(act_distribution(store, project=project).items()):
        total = sum(counts.values())
        found = interaction_style(counts, thresholds)
        if not found:
            continue
        if len(found) == 1:
            act = found[0]
            content = f"Interactions with {actor} are predominantly {act} ({GLOSS.get(act, act)})."
        else:
            content = (
                f"Interactions with {actor} are mostly {found[0]} and {found[1]} together "
                f"({GLOSS.get(found[0], found[0])} with {GLOSS.get(found[1], found[1])})."
            )
        known = store.memories.find(content, target.name, project=project)
        if known is not None and known.content == content:
            continue  # stated already (in whatever status)
        evidence = store.tables.entities.links.with_acts(project, actor, found, LIMIT)
        shares = " and ".join(f"{counts[a]} {a}" for a in found)
        rationale = (
            f"{shares} of {actor}'s {total} interactions: "
            "a persistent style worth knowing before the next one"
        )
        drafts.append(
            ProposalDraft(
                diff_type="memory_entry",
                rationale=rationale,
                evidence=evidence,
                diff={"action": "write", "category": target.name, "content": content},
                source="detector:interaction-style",
            )
        )
        drafts.append(
            ProposalDraft(
                diff_type="claude_md",
                rationale=rationale,
                evidence=evidence,
                diff={"note": content},
                source="detector:interaction-style",
            )
        )
    return drafts


@hookimpl
def detect_patterns(store: Store, project: str) -> list[ProposalDraft]:
    return retrieved_facts(store, project) + interaction_styles(store, project)
