"""The injector: the block a host puts in front of its model, within a token budget.

``inject(store, budget=4000)`` collects candidates (``injection_candidates``;
the built-in offers headers and standalone memories, not details), orders them
(``injection_rank``; the built-in puts pinned memories first, then directives,
then categories in the DB's priority order, then importance, then strength
from the last consolidation pass, with the documented tie-breaks), packs them greedily in that order, **skipping** what
does not fit rather than stopping, renders the chosen ones
(``injection_render``) and counts the rendered text once.

**The budget is a hard cap on the final text.** Packing estimates each
candidate's cost from its cached token count plus :data:`LINE_OVERHEAD`
(:data:`HEADER_OVERHEAD` more for a header, :data:`SECTION_OVERHEAD` for the
first of its category); if the exact count of the rendered text is still
over, the lowest-ranked chosen candidates are dropped until their estimates
cover the overshoot, and the text is rendered and counted again. If nothing fits, the text is empty and the
account says so (``note``).

**The account**: tokens used, ids shown, ids left out and why, and coverage:
the share of the project's active memories reachable from the text directly
or by one ``expand`` (a shown header reaches its details).

**Sessions and deltas.** ``inject(..., session=ID)`` records what the session
was shown and counts a retrieval for each shown memory (retrieval counts go up
only for what a model actually saw). ``delta(store, ID)`` then renders only
what changed since (new, updated, removed) in a small ``<memory-delta>`` block,
so a host can keep its cached prompt prefix; it gets :data:`DELTA_SHARE` of the
session's budget (at least :data:`DELTA_MIN` tokens). When the changes do not
fit, the delta says so and the host should inject afresh.

**Escaping.** The built-in renderer escapes ``&``, ``<`` and ``>`` in memory
text and indents every line after a memory's first (any line break counts:
``\r``, U+2028 and the rest), so no memory can close the block, forge a
delimiter or start a line that reads as a heading.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import MemsdkError, NotFound
from plugin_sdk.plugin.records import Ranked
from plugin_sdk.store.normalize import normalized_hash
from plugin_sdk.store.tokens import count_cached
from plugin_sdk.store.visibility import readable_sql

if TYPE_CHECKING:
    from plugin_sdk.plugin.records import Candidate
    from plugin_sdk.store.connection import Store

DEFAULT_BUDGET = 4000
LINE_OVERHEAD = 8
HEADER_OVERHEAD = 9
SECTION_OVERHEAD = 8
FRAME_OVERHEAD = 12
DELTA_SHARE = 0.1
DELTA_MIN = 200


@attrs.define
class Injection:
    """The injected text and its account."""

    text: str
    tokens: int
    budget: int
    shown: list[int]
    left_out: dict[int, str]
    candidates: int
    reachable: int = 0
    active: int = 0
    note: str = ""
    hashes: dict[int, str] = attrs.field(factory=dict, repr=False)
    recalled: list[int] = attrs.field(factory=list)

    @property
    def coverage(self) -> float:
        """Share of active memories reachable from the text directly or by one expand."""
        return self.reachable / self.active if self.active else 1.0

    def to_dict(self) -> dict[str, Any]:
        data = attrs.asdict(self)
        data.pop("hashes")
        return {**data, "coverage": self.coverage}


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
    ranked, offered = _ranked(store, project)
    chosen: list[Candidate] = []
    left_out: dict[int, str] = {}
    used, sections = FRAME_OVERHEAD, set()
    costs: list[int] = []
    cheapest = LINE_OVERHEAD + _least_tokens(ranked)
    examined = 0
    for candidate in ranked:
        examined += 1
        cost = _estimate(candidate, candidate.category not in sections)
        if used + cost > budget:
            left_out[candidate.memory_id] = "over budget"
        else:
            chosen.append(candidate)
            costs.append(cost)
            sections.add(candidate.category)
            used += cost
        if budget - used < cheapest:
            break  # not even the cheapest candidate fits any more
    for memory_id in _ids(ranked)[examined:]:
        left_out[memory_id] = "over budget"
    # What one expand of each chosen header shows: its count is rendered, and
    # the same ids make the coverage (read once, for the chosen headers only).
    members = _members(store, project, [c.memory_id for c in chosen if c.header])
    for candidate in chosen:
        if candidate.header:
            candidate.details = len(members.get(candidate.memory_id, ()))
    text, tokens = _render(store, chosen)
    while tokens > budget and chosen:
        # Drop the lowest-ranked chosen until their estimated cost covers the
        # overshoot, then render and count again (usually once).
        over = tokens - budget
        while chosen and over > 0:
            dropped = chosen.pop()
            over -= costs.pop()
            left_out[dropped.memory_id] = "over budget once rendered"
        text, tokens = _render(store, chosen)
    result = Injection(
        text=text,
        tokens=tokens,
        budget=budget,
        shown=[c.memory_id for c in chosen],
        left_out=left_out,
        candidates=offered,
        reachable=_reachable(chosen, members),
        active=_active_count(store, project),
        note="" if chosen else _nothing_fits(offered, budget),
        hashes={c.memory_id: c.content_hash for c in chosen},
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
    row = store.db.execute(
        "SELECT budget, shown FROM injections WHERE session_id = ? AND project = ?",
        [session, project],
    ).fetchone()
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


@attrs.define
class Expansion:
    """A header's details (or one memory), rendered within an optional budget."""

    text: str
    tokens: int
    shown: list[int]
    left_out: list[int]


def expand(store: Store, memory_id: int, *, budget: int | None = None) -> Expansion:
    """A header's details (or a theme's members) in order, within ``budget`` tokens.

    A memory that heads nothing expands to itself. Only what the store's
    project may read is shown: the memory itself must be readable (else
    :class:`NotFound`), and a member that is not is left out.

    Details are taken in sequence order while they fit; the rest are listed
    in ``left_out``. Each detail shown counts one retrieval.
    """
    memory = store.memories.get(memory_id)
    groups = sorted(
        (c for c in store.composites.by_head(memory_id) if c.type in ("sequence", "theme")),
        key=lambda c: (c.type != "sequence", c.id),
    )
    if memory.status != "active" and not groups:
        raise NotFound(f"memory {memory_id} is {memory.status}; nothing to expand")
    ids = groups[0].members if groups else [memory_id]
    if groups:  # archived or superseded members are not part of what a header stands for
        ids = _readable_active(store, ids)
    lines = [f'<memory-details of="{memory_id}">']
    shown: list[int] = []
    left: list[int] = []
    for member in ids:
        detail = store.memories.get(member)
        line = f"- [{detail.id}] " + indent_lines(detail.content)
        candidate = "\n".join([*lines, line, "</memory-details>"])
        if budget is not None and (left or store.tokenizer.count(candidate) > budget):
            left.append(member)
            continue
        lines.append(line)
        shown.append(member)
    text = "\n".join([*lines, "</memory-details>"]) if shown else ""
    store.memories.record_retrievals(shown)
    return Expansion(text, store.tokenizer.count(text), shown, left)


def _readable_active(store: Store, ids: list[int]) -> list[int]:
    """The active memories among ``ids`` that the store's project may read, in order."""
    found: set[int] = set()
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        found.update(
            row[0]
            for row in store.db.execute(
                f"""SELECT m.id FROM memories m WHERE m.status = 'active'
                    AND m.id IN ({",".join("?" * len(part))}) AND {readable_sql("m")}""",
                [*part, store.project],
            )
        )
    return [memory_id for memory_id in ids if memory_id in found]


def _least_tokens(ranked: Sequence[Candidate]) -> int:
    """A lower bound of every candidate's token count (0 when unknown)."""
    if isinstance(ranked, Ranked):
        return max(ranked.min_tokens, 0)
    return max(min((c.token_count for c in ranked), default=0), 0)


def _ids(ranked: Sequence[Candidate]) -> list[int]:
    return ranked.ids() if isinstance(ranked, Ranked) else [c.memory_id for c in ranked]


def _reachable(chosen: list[Candidate], members: dict[int, list[int]]) -> int:
    """Active memories shown, or one expand away from a shown header."""
    ids = {c.memory_id for c in chosen}
    for candidate in chosen:
        ids.update(members.get(candidate.memory_id, ()))
    return len(ids)


def _members(store: Store, project: str, heads: list[int]) -> dict[int, list[int]]:
    """Active, readable members of what each head's expand shows (its sequence, else its theme)."""
    found: dict[int, dict[str, list[int]]] = {}
    for start in range(0, len(heads), 500):
        part = heads[start : start + 500]
        for head, kind, member in store.db.execute(
            f"""SELECT c.head_memory_id, c.type, d.member_memory_id FROM composites c
                JOIN composite_members d ON d.composite_id = c.id
                JOIN memories m ON m.id = d.member_memory_id AND m.status = 'active'
                WHERE c.type IN ('sequence', 'theme') AND {readable_sql("m")}
                  AND c.head_memory_id IN ({",".join("?" * len(part))})
                ORDER BY c.id, d.position""",
            [project, *part],
        ).fetchall():
            found.setdefault(head, {}).setdefault(kind, []).append(member)
    return {head: kinds.get("sequence") or kinds.get("theme", []) for head, kinds in found.items()}


def _estimate(candidate: Candidate, new_section: bool) -> int:
    """Tokens a candidate's line will take: its cached count plus the line's frame."""
    cost = candidate.token_count + LINE_OVERHEAD
    if candidate.header:
        cost += HEADER_OVERHEAD
    if new_section:
        cost += SECTION_OVERHEAD
    return cost


def _ranked(store: Store, project: str) -> tuple[list[Candidate], int]:
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
    return hooks.injection_rank(store=store, candidates=candidates), len(candidates)


def _render(store: Store, chosen: list[Candidate]) -> tuple[str, int]:
    _load_text(store, chosen)
    text = store.plugins.hook.injection_render(store=store, chosen=chosen) if chosen else ""
    return text, count_cached(store, text)  # exact; a block seen before loads no tokenizer


def escape(text: str) -> str:
    """Memory text made safe inside the memory blocks: ``&``, ``<``, ``>`` as entities."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def indent_lines(text: str) -> str:
    """Escaped text whose every line after the first is indented by four spaces.

    Any line break (``\\r``, U+2028, ...) counts, so a memory can never start
    a line of its own that reads as a heading or a delimiter (in Markdown,
    four spaces make a code line, never a heading).
    """
    return "\n    ".join(escape(text).splitlines()) or ""


def _load_text(store: Store, chosen: list[Candidate]) -> None:
    """Fill in the text and hash of candidates offered without them (one query per 500)."""
    missing = [c for c in chosen if c.content is None or not c.content_hash]
    for start in range(0, len(missing), 500):
        part = missing[start : start + 500]
        rows = store.db.execute(
            f"SELECT id, content, normalized_hash FROM memories WHERE id IN ({','.join('?' * len(part))})",
            [c.memory_id for c in part],
        ).fetchall()
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
                text = indent_lines(store.memories.get(memory_id).content)
                lines.append(f"- [{memory_id}] {text}")
    if removed:
        lines.append("No longer current: " + ", ".join(f"[{memory_id}]" for memory_id in removed))
    lines.append("</memory-delta>")
    return "\n".join(lines)


def _record(store: Store, session: str, project: str, result: Injection) -> None:
    shown = json.dumps({str(k): v for k, v in result.hashes.items()}, sort_keys=True)
    digest = hashlib.sha256(result.text.encode("utf-8")).hexdigest()
    now = store.now()
    store.record(  # after the read, never failing it (see Store.record)
        lambda: store.db.execute(
            """INSERT INTO injections (session_id, project, budget, tokens, text_hash, shown, created_at)
               VALUES (?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT (session_id, project) DO UPDATE SET budget = excluded.budget,
                   tokens = excluded.tokens, text_hash = excluded.text_hash,
                   shown = excluded.shown, created_at = excluded.created_at""",
            [session, project, result.budget, result.tokens, digest, shown, now],
        ),
        what=f"session {session!r}'s injection",
    )


def _active_count(store: Store, project: str) -> int:
    return int(
        store.db.execute(
            f"""SELECT count(*) FROM memories m JOIN categories c
               ON c.name = m.category AND c.status = 'active'
               WHERE m.status = 'active' AND {readable_sql("m")}""",
            [project],
        ).fetchone()[0]
    )


def _nothing_fits(offered: int, budget: int) -> str:
    if not offered:
        return "no memories to inject"
    return f"nothing fits in {budget} tokens: every one of {offered} candidates is left out"
