"""The injector: the block a host puts in front of its model, within a token budget.

``inject(store, budget=4000)`` collects candidates (``injection_candidates``),
orders them (``injection_rank``), packs them greedily in that order, skipping
what does not fit rather than stopping, renders the chosen ones
(``injection_render``) and counts the rendered text once. The budget is a hard
cap on that final text: while it is over, the lowest-ranked chosen candidate
is dropped and the text rendered again. If nothing fits, the text is empty and
``left_out`` says why.

Packing estimates each candidate's cost from its cached token count plus
:data:`LINE_OVERHEAD` (and :data:`SECTION_OVERHEAD` for the first of its
category); the final count is exact.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from .errors import MemsdkError

if TYPE_CHECKING:
    from .hooktypes import Candidate
    from .store import Store

DEFAULT_BUDGET = 4000
LINE_OVERHEAD = 6
SECTION_OVERHEAD = 8
FRAME_OVERHEAD = 12


@attrs.define
class Injection:
    """The injected text and its account."""

    text: str
    tokens: int
    budget: int
    shown: list[int]
    left_out: dict[int, str]
    candidates: int

    @property
    def coverage(self) -> float:
        """Share of candidates shown."""
        return len(self.shown) / self.candidates if self.candidates else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "coverage": self.coverage}


def inject(store: Store, *, project: str | None = None, budget: int = DEFAULT_BUDGET) -> Injection:
    """Build the injection block for a project; see the module docstring."""
    if budget < 1:
        raise MemsdkError(f"budget must be at least 1 token, got {budget}")
    hooks = store.plugins.hook
    project = project or store.project
    offered: dict[int, Candidate] = {}
    for batch in hooks.injection_candidates(store=store, project=project):
        for candidate in batch or []:
            offered.setdefault(candidate.memory_id, candidate)
    ranked = hooks.injection_rank(store=store, candidates=list(offered.values()))
    chosen: list[Candidate] = []
    left_out: dict[int, str] = {}
    used, sections = FRAME_OVERHEAD, set()
    for candidate in ranked:
        cost = candidate.token_count + LINE_OVERHEAD
        if candidate.category not in sections:
            cost += SECTION_OVERHEAD
        if used + cost > budget:
            left_out[candidate.memory_id] = "over budget"
            continue
        chosen.append(candidate)
        sections.add(candidate.category)
        used += cost
    text = hooks.injection_render(store=store, chosen=chosen) if chosen else ""
    tokens = store.tokenizer.count(text)
    while tokens > budget and chosen:
        dropped = chosen.pop()
        left_out[dropped.memory_id] = "over budget once rendered"
        text = hooks.injection_render(store=store, chosen=chosen) if chosen else ""
        tokens = store.tokenizer.count(text)
    return Injection(
        text=text,
        tokens=tokens,
        budget=budget,
        shown=[c.memory_id for c in chosen],
        left_out=left_out,
        candidates=len(offered),
    )
