"""The injector: the block a host puts in front of its model, within a token budget.

``inject(store, budget=4000)`` collects candidates (``injection_candidates``;
the built-in reads them in rank order from the ranking the store keeps
current, ``toc_rank``), orders them (``injection_rank``), packs them greedily
in that order, **skipping** what does not fit rather than stopping, renders
the chosen ones (``injection_render``) and counts the rendered text once.

**Cost proportional to what is shown.** Candidates are read lazily: packing
stops once less than :data:`MIN_LINE` tokens are left, or after
:data:`MISS_LIMIT` candidates in a row that do not fit, so an injection
reads the rows it shows plus a bounded overhead, whatever the store's size.
The text's exact count comes from the count cache
(``plugin_sdk.store.tokens.count_cached``): the block's own count when it
was rendered before, else the sum of its lines' counts, so a block that
changed in one line tokenizes that line only.
The account (``candidates``, ``left_out``, ``active``, the coverage) is
computed on first access, from the store as it is then: a host that only
wants the text never pays for it.

**The budget is a hard cap on the final text.** Packing estimates each
line from the cached token count of its text plus its frame (the id, what
expanding it shows, a heading when it opens a section), close enough that a
block with more candidates than room uses at least 97% of a budget of 1,000
tokens or more. The rendered text is then counted exactly; if it is still
over, the lowest-ranked chosen candidates are dropped until their estimates
cover the overshoot, and it is rendered and counted again. If nothing fits,
the text is empty and the account says so (``note``).

**The account**: tokens used, ids shown, ids left out and why, and coverage
per depth: the share of the project's active memories reached by the text
directly, after one expand and after two (``coverage_by_depth``; an expand
of a memory shows the active members of every composite it heads).
``coverage`` is the share reached directly or by one expand.

**Sessions and deltas.** ``inject(..., session=ID)`` records what the session
was shown and counts a retrieval for each shown memory (retrieval counts go up
only for what a model actually saw). ``delta(store, ID)`` then renders only
what changed since (new, updated, removed) in a small ``<memory-delta>`` block,
so a host can keep its cached prompt prefix; it gets :data:`DELTA_SHARE` of the
session's budget (at least :data:`DELTA_MIN` tokens). When the changes do not
fit, the delta says so and the host should inject afresh.

**Stored text** reaches the block through the boundary
(``plugin_sdk.model.boundary``): exact, but unable to forge the block's
structure.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.composites.groups import notes, reach
from plugin_sdk.errors import MemsdkError, NotFound
from plugin_sdk.model import prompts
from plugin_sdk.model.boundary import entry
from plugin_sdk.plugin.records import Ranked
from plugin_sdk.stages.expand import Expansion, expand
from plugin_sdk.store.normalize import normalized_hash
from plugin_sdk.store.tokens import count_cached

if TYPE_CHECKING:
    from plugin_sdk.plugin.records import Candidate
    from plugin_sdk.store.connection import Store

__all__ = ["DEFAULT_BUDGET", "Delta", "Expansion", "Injection", "delta", "expand", "inject"]

DEFAULT_BUDGET = 4000
FRAME_OVERHEAD = 11  # the opening and closing tags
KIND_OVERHEAD = 5  # a section heading (# Pinned, # Directives (follow these), # Known facts)
SECTION_OVERHEAD = 5  # a category heading (## NAME), when not counted exactly
LINE_OVERHEAD = 4  # "- [", "]" and the line break, besides the id's digits
MIN_LINE = LINE_OVERHEAD + 3  # less than this left: nothing more can fit
MISS_LIMIT = 64  # candidates in a row that do not fit before packing stops
REFILL = 0.98  # a full block under this share of its budget is packed once more
SHRINK_TRIES = 3  # a block over its budget once rendered is packed again this often, smaller
DELTA_SHARE = 0.1
DELTA_MIN = 200
DEPTH = 2  # expands the account's coverage looks through


@attrs.define
class Injection:
    """The injected text and its account (computed when first read; see the module docstring)."""

    text: str
    tokens: int
    budget: int
    shown: list[int]
    note: str = ""
    hashes: dict[int, str] = attrs.field(factory=dict, repr=False)
    skipped: dict[int, str] = attrs.field(factory=dict, repr=False)
    source: _Account | None = attrs.field(default=None, repr=False, eq=False)
    recalled: list[int] = attrs.field(factory=list)

    @property
    def left_out(self) -> dict[int, str]:
        """Every candidate not shown, with the reason (read candidates, then the unread)."""
        return self.source.left_out() if self.source else dict(self.skipped)

    @property
    def candidates(self) -> int:
        return self.source.candidates() if self.source else len(self.shown) + len(self.skipped)

    @property
    def active(self) -> int:
        return self.source.reached()[0] if self.source else 0

    @property
    def reached_by_depth(self) -> list[int]:
        """Active memories reached with at most 0, 1, 2 expands."""
        return self.source.reached()[1] if self.source else []

    @property
    def reachable(self) -> int:
        """Active memories shown or one expand away."""
        reached = self.reached_by_depth
        return reached[1] if len(reached) > 1 else 0

    @property
    def coverage(self) -> float:
        """Share of active memories reachable from the text directly or by one expand."""
        return self.reachable / self.active if self.active else 1.0

    @property
    def coverage_by_depth(self) -> list[float]:
        """Share of active memories reached with at most 0, 1, 2 expands."""
        if not self.active:
            return [1.0] * (DEPTH + 1)
        return [n / self.active for n in self.reached_by_depth]

    def settle(self) -> Injection:
        """Read the whole account now (on this thread), so it needs the store no more."""
        if self.source is not None:
            self.source.left_out()
            self.source.reached()
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "tokens": self.tokens,
            "budget": self.budget,
            "shown": self.shown,
            "left_out": self.left_out,
            "candidates": self.candidates,
            "reachable": self.reachable,
            "active": self.active,
            "note": self.note,
            "coverage": self.coverage,
            "coverage_by_depth": self.coverage_by_depth,
            "reached_by_depth": self.reached_by_depth,
            "recalled": self.recalled,
        }


class _Account:
    """What the account reads from the store, each part once and only when asked."""

    def __init__(
        self,
        store: Store,
        project: str,
        ranked: Sequence[Candidate],
        examined: int,
        shown: list[int],
        skipped: dict[int, str],
    ) -> None:
        self.store, self.project, self.ranked = store, project, ranked
        self.examined, self.shown, self.skipped = examined, shown, skipped
        self._left_out: dict[int, str] | None = None
        self._count: int | None = None
        self._reached: tuple[int, list[int]] | None = None

    def _open(self) -> None:
        if self.store.closed:
            raise MemsdkError(
                "the injection's account is read from its store when first asked for: "
                "read it (or call settle()) before the store is closed"
            )

    def left_out(self) -> dict[int, str]:
        if self._left_out is None:
            if isinstance(self.ranked, Ranked):  # a plugin's list is in memory
                self._open()
            ranked = self.ranked
            ids = ranked.ids() if isinstance(ranked, Ranked) else [c.memory_id for c in ranked]
            left_out = dict(self.skipped)
            for memory_id in ids[self.examined :]:
                left_out.setdefault(memory_id, "over budget")
            for memory_id in self.shown:
                left_out.pop(memory_id, None)
            self._left_out, self._count = left_out, len(ids)
        return self._left_out

    def candidates(self) -> int:
        if self._count is None:
            if isinstance(self.ranked, Ranked):
                self._open()
            self._count = len(self.ranked)
        return self._count

    def reached(self) -> tuple[int, list[int]]:
        if self._reached is None:
            self._open()
            levels = reach(self.store, self.project, self.shown, DEPTH)
            self._reached = (_active_count(self.store, self.project), [len(x) for x in levels])
        return self._reached


def inject(
    store: Store,
    *,
    project: str | None = None,
    budget: int = DEFAULT_BUDGET,
    session: str | None = None,
    message: str | None = None,
    recall_budget: int | None = None,
) -> Injection:
    """Build the injection block for a project; see the module docstring.

    With ``message`` (the user's current message), a recall block for it
    (``stages/recall.py``) follows the table of contents, taking
    ``recall_budget`` tokens (default: a quarter of ``budget``, at most
    1500) out of the same hard cap; ``recalled`` lists what it shows.
    """
    if budget < 1:
        raise MemsdkError(f"budget must be at least 1 token, got {budget}")
    if message is not None and message.strip():
        return _with_recall(store, project, budget, session, message, recall_budget)
    project = project or store.project
    ranked = _ranked(store, project)
    packer = _Packer(store, budget, project)
    examined = packer.pack(ranked)
    text, tokens = _render(store, packer.chosen)
    if _worth_refilling(packer, tokens):
        # The estimates ran high: pack again for a budget larger by what they
        # overshot, and keep that block if it fits (one more count).
        again = _ranked(store, project)
        second = _Packer(store, budget + packer.used - tokens, project)
        examined_again = second.pack(again)
        text_again, tokens_again = _render(store, second.chosen)
        if tokens < tokens_again <= budget:
            ranked, packer, examined = again, second, examined_again
            text, tokens = text_again, tokens_again
    if tokens > budget:
        ranked, packer, examined, text, tokens = _shrink(
            store, project, budget, (ranked, packer, examined, text, tokens)
        )
    chosen, skipped = packer.chosen, packer.skipped
    while tokens > budget and chosen:
        # Drop the lowest-ranked chosen until their estimated cost covers the
        # overshoot, then render and count again (rarely needed).
        over = tokens - budget
        while chosen and over > 0:
            dropped = chosen.pop()
            over -= packer.costs.pop()
            skipped[dropped.memory_id] = "over budget once rendered"
        text, tokens = _render(store, chosen)
    shown = [c.memory_id for c in chosen]
    result = Injection(
        text=text,
        tokens=tokens,
        budget=budget,
        shown=shown,
        note="" if chosen else _nothing_fits(len(ranked), budget),
        hashes={c.memory_id: c.content_hash for c in chosen},
        skipped=skipped,
        source=_Account(store, project, ranked, examined, shown, skipped),
    )
    if session is not None:
        _record(store, session, project, result)
        store.memories.record_retrievals(result.shown)
    return result


def _with_recall(
    store: Store,
    project: str | None,
    budget: int,
    session: str | None,
    message: str,
    recall_budget: int | None,
) -> Injection:
    from plugin_sdk.stages.recall import recall

    share = min(1500, budget // 4) if recall_budget is None else recall_budget
    share = max(0, min(share, budget - 1))
    toc = inject(store, project=project, budget=budget - share, session=session)
    if share < 1:
        return toc
    room = budget - toc.tokens - (1 if toc.text else 0)
    while room > 0:
        found = recall(store, message, budget=room, project=project, record=False)
        text = "\n".join(part for part in (toc.text, found.text) if part)
        tokens = store.tokenizer.count(text)
        if tokens <= budget:
            if session is not None:
                store.memories.record_retrievals(found.shown)
            return attrs.evolve(toc, text=text, tokens=tokens, recalled=found.shown)
        room -= tokens - budget
    return toc


def _shrink(
    store: Store, project: str, budget: int, first: tuple[Any, _Packer, int, str, int]
) -> tuple[Any, _Packer, int, str, int]:
    """A block over its budget once rendered, packed again for less (the first that fits).

    The estimates ran low by ``tokens - packer.used``: pack for the budget
    less that (at most :data:`SHRINK_TRIES` times, each smaller), so cheaper
    lines further down fill the room a dropped line would leave; what the
    first packing chose and this one leaves out was "over budget once
    rendered". When none fits, the first packing stands (``inject`` then
    drops lines).
    """
    target, (_, packer, _, _, tokens) = budget, first
    for _ in range(SHRINK_TRIES):
        target = max(1, min(target - 1, budget - (tokens - packer.used)))
        ranked = _ranked(store, project)
        packer = _Packer(store, target)
        examined = packer.pack(ranked)
        text, tokens = _render(store, packer.chosen)
        if tokens <= budget:
            chosen_first = {c.memory_id for c in first[1].chosen}
            for memory_id in chosen_first - {c.memory_id for c in packer.chosen}:
                packer.skipped[memory_id] = "over budget once rendered"
            return ranked, packer, examined, text, tokens
    return first


def _worth_refilling(packer: _Packer, tokens: int) -> bool:
    """Whether the block is under :data:`REFILL` and something left out may fit its real room."""
    room = packer.budget - tokens
    if not packer.full or tokens >= REFILL * packer.budget:
        return False
    return packer.smallest_skip <= room or room >= packer.least


class _Packer:
    """Greedy packing by estimated cost, in rank order, skipping what does not fit."""

    def __init__(self, store: Store, budget: int, project: str | None = None) -> None:
        self.store = store
        self.project = project or store.project
        self.budget = budget
        self.used = FRAME_OVERHEAD
        self.chosen: list[Candidate] = []
        self.costs: list[int] = []
        self.skipped: dict[int, str] = {}
        self.sections: set[tuple[str, str]] = set()
        self.full = False  # something was left out for want of room
        self.smallest_skip = float("inf")  # the cheapest estimate left out
        self.least = MIN_LINE  # less room than this: packing stopped

    def pack(self, ranked: Sequence[Candidate]) -> int:
        """Choose candidates; return how many were read."""
        examined = misses = 0
        if isinstance(ranked, Ranked) and ranked.min_tokens >= 0:
            self.least = max(self.least, ranked.min_tokens + LINE_OVERHEAD)
        for candidate in ranked:
            examined += 1
            # A line costs at least its text and the line's frame: a
            # candidate over budget by that much, and no cheaper than the
            # cheapest left out, is a miss without its full estimate.
            least = candidate.token_count + LINE_OVERHEAD
            if self.used + least > self.budget and least >= self.smallest_skip:
                self.skipped[candidate.memory_id] = "over budget"
                self.full = True
                misses += 1
                if misses >= MISS_LIMIT:
                    break
                continue
            cost = self._estimate(candidate)
            if self.used + cost > self.budget:
                self.skipped[candidate.memory_id] = "over budget"
                self.full = True
                self.smallest_skip = min(self.smallest_skip, cost)
                misses += 1
                if misses >= MISS_LIMIT:
                    break
            else:
                self.chosen.append(candidate)
                self.costs.append(cost)
                self.sections.add(_section(candidate))
                self.used += cost
                misses = 0
            if self.budget - self.used < self.least:
                self.full = True
                break
        if not isinstance(ranked, Ranked):
            self._annotate_others()
        return examined

    def _annotate_others(self) -> None:
        # Candidates from a plugin come without annotations: read them for
        # the chosen; one that no longer fits drops the lowest-ranked.
        found_notes = notes(
            self.store, [c.memory_id for c in self.chosen if not c.annotation], self.project
        )
        for index, candidate in enumerate(self.chosen):
            found = found_notes.get(candidate.memory_id)
            if found is not None and not candidate.annotation:
                candidate.header, candidate.annotation = found
                extra = self._note_cost(candidate.annotation)
                self.costs[index] += extra
                self.used += extra
        while self.used > self.budget and self.chosen:
            dropped = self.chosen.pop()
            self.used -= self.costs.pop()
            self.skipped[dropped.memory_id] = "over budget"

    def _estimate(self, candidate: Candidate) -> int:
        cost = candidate.token_count + LINE_OVERHEAD + (len(str(candidate.memory_id)) + 2) // 3
        text = candidate.content
        if text:
            # The line break after a line ending in punctuation joins its
            # last token; each further line adds its indent; a first word of
            # letters takes the space before it, a number does not.
            cost += text.count("\n") - (not (text[-1].isalnum() or text[-1].isspace()))
            cost += text[0].isdigit()
        if candidate.annotation:
            cost += self._note_cost(candidate.annotation)
        section = _section(candidate)
        if section not in self.sections:
            cost += self._count(f"## {candidate.category}\n")
            if not any(kind == section[0] for kind, _ in self.sections):
                cost += KIND_OVERHEAD
        return cost

    def _note_cost(self, note: str) -> int:
        return self._count(": " + note)

    def _count(self, text: str) -> int:
        """Tokens of a short frame string (a heading, an annotation), estimated.

        No tokenizer: a warm injection whose block was counted before loads
        none (its exact count is cached in the store). Words and runs of
        punctuation are a token each, numbers one per three digits, a space
        before a number one more; close to tiktoken's pieces for these strings.
        """
        cost = _FRAME_COSTS.get(text)
        if cost is None:
            if len(_FRAME_COSTS) >= 4096:
                _FRAME_COSTS.clear()
            cost = _FRAME_COSTS[text] = len(_PIECES.findall(text))
        return cost


_PIECES = re.compile(r" ?[A-Za-z]+|\d{1,3}| (?=\d)|[^\sA-Za-z\d]+|\n")
_FRAME_COSTS: dict[str, int] = {}  # frame strings repeat (headings, "12 groups, 480 memories")


def _section(candidate: Candidate) -> tuple[str, str]:
    return ("pinned" if candidate.pinned else candidate.kind, candidate.category)


@attrs.define
class Delta:
    """What changed for a session since its last injection."""

    text: str
    tokens: int
    budget: int
    new: list[int]
    updated: list[int]
    removed: list[int]
    fits: bool

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def delta(
    store: Store, session: str, *, project: str | None = None, budget: int | None = None
) -> Delta:
    """Render what changed since the session's last injection or delta, and record it."""
    project = project or store.project
    row = store.tables.sessions.last_injection(session, project)
    if row is None:
        raise NotFound(f"no injection recorded for session {session!r}; inject with session= first")
    before: dict[str, str] = json.loads(row[1])
    now = inject(store, project=project, budget=row[0])
    after = {str(k): v for k, v in now.hashes.items()}
    new = sorted(int(k) for k in after.keys() - before.keys())
    removed = sorted(int(k) for k in before.keys() - after.keys())
    updated = sorted(int(k) for k in after.keys() & before.keys() if after[k] != before[k])
    limit = budget if budget is not None else max(DELTA_MIN, int(row[0] * DELTA_SHARE))
    text = _render_delta(store, new, updated, removed)
    tokens = store.tokenizer.count(text)
    fits = tokens <= limit
    if not fits:
        text = (
            f"<memory-delta>\n{len(new)} new, {len(updated)} updated and {len(removed)} removed "
            "memories: too many changes for a delta; the memory block should be refreshed.\n"
            "</memory-delta>"
        )
        tokens = store.tokenizer.count(text)
    if not (new or updated or removed):
        text, tokens = "", 0
    _record(store, session, project, now)
    if fits:  # only what a model actually saw counts as retrieved
        store.memories.record_retrievals([*new, *updated])
    return Delta(text, tokens, limit, new, updated, removed, fits)


def _ranked(store: Store, project: str) -> Sequence[Candidate]:
    hooks = store.plugins.hook
    batches = [batch for batch in hooks.injection_candidates(store=store, project=project) if batch]
    if len(batches) == 1:
        candidates = batches[0]  # one source: passed on as it is (it may come ranked)
    else:
        offered: dict[int, Candidate] = {}
        for batch in batches:
            for candidate in batch:
                offered.setdefault(candidate.memory_id, candidate)
        candidates = list(offered.values())
    return hooks.injection_rank(store=store, candidates=candidates)


def _render(store: Store, chosen: list[Candidate]) -> tuple[str, int]:
    _load_text(store, chosen)
    text = store.plugins.hook.injection_render(store=store, chosen=chosen) if chosen else ""
    return text, count_cached(store, text)  # exact; a block seen before loads no tokenizer


def _load_text(store: Store, chosen: Iterable[Candidate]) -> None:
    """Fill in the text and hash of candidates offered without them (one query per 500)."""
    missing = [c for c in chosen if c.content is None or not c.content_hash]
    for start in range(0, len(missing), 500):
        part = missing[start : start + 500]
        rows = store.tables.memories.texts_and_hashes([c.memory_id for c in part])
        found = {row[0]: row for row in rows}
        for candidate in part:
            row = found.get(candidate.memory_id)
            if row is None:  # a plugin's own candidate, not a stored memory
                if candidate.content is None:
                    raise MemsdkError(
                        f"injection candidate {candidate.memory_id} has no text and no stored memory"
                    )
                candidate.content_hash = candidate.content_hash or normalized_hash(
                    candidate.content
                )
                continue
            if candidate.content is None:
                candidate.content = row[1]
            candidate.content_hash = candidate.content_hash or row[2]


def _render_delta(store: Store, new: list[int], updated: list[int], removed: list[int]) -> str:
    lines = ["<memory-delta>"]
    for title, ids in (("New", new), ("Updated", updated)):
        if ids:
            lines.append(f"{title}:")
            for memory_id in ids:
                lines.append(entry(memory_id, store.memories.get(memory_id).content))
    if removed:
        lines.append("No longer current: " + ", ".join(f"[{memory_id}]" for memory_id in removed))
    lines.append("</memory-delta>")
    return "\n".join(lines)


def _record(store: Store, session: str, project: str, result: Injection) -> None:
    shown = json.dumps({str(k): v for k, v in result.hashes.items()}, sort_keys=True)
    digest = hashlib.sha256(result.text.encode("utf-8")).hexdigest()
    prompt = prompts.surface_hash(store)  # what is_stale compares with later

    def write() -> None:
        store.tables.sessions.record_injection(
            session, project, result.budget, result.tokens, digest, shown
        )
        prompts.write_session(store, session, project, prompt)

    # after the read, never failing it (see Store.record)
    store.record(write, what=f"session {session!r}'s injection")


def _active_count(store: Store, project: str) -> int:
    return store.tables.memories.readable_active_count(project)


def _nothing_fits(offered: int, budget: int) -> str:
    if not offered:
        return "no memories to inject"
    return f"nothing fits in {budget} tokens: every one of {offered} candidates is left out"
