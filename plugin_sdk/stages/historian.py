"""The historian: a transcript chunk in, memories out.

``run_historian(store, messages)``:

1. builds a bounded view of what the store already knows about the chunk
   (full-text hits for the chunk's salient words, then the headers of the
   groups those hits belong to, capped by a token budget; never the whole
   pool), so the model sees the composites a new fact may belong under;
2. asks the ``historian_prompt`` hook for the prompt (the built-in assembles it
   from the store's criteria);
3. asks the host's model (``model_complete``);
4. parses the reply (``historian_parse``; the built-in reads the tagged format
   of ``model/tagged.py``);
5. admits each fact (``historian_admit``): written through deduplication, or
   quarantined with a reason. A fact the model filed under a header of the
   view (``<facts … under="ID">``) joins that header's group (its sequence,
   else its theme), at the end. In one transaction.

Nothing is dropped silently. The parser reads the shapes models drift to
(tag-named blocks, fenced and headed lists, JSON; see ``model/tagged.py``). A
fact tagged with a category the store does not know is quarantined with its raw
text and appears in the report. A broken block is quarantined whole. Prose
outside any block is not stored: it is the report's ``ignored`` list, text the
chunk *lost*, which :meth:`HistorianReport.not_written` shows with the
quarantined pieces and the command line counts (``historian run`` exits
non-zero when a chunk lost text). A reply
with no block and no ``<no-facts/>`` raises :class:`HistorianReplyError`, after
the raw reply has been kept as a quarantined row whose id the error names.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import (
    ForgottenText,
    HistorianReplyError,
    InvalidMemory,
    InvalidTranscript,
    NoModel,
)
from plugin_sdk.model.tagged import OUTSIDE
from plugin_sdk.plugin.records import Malformed
from plugin_sdk.store.models import Memory
from plugin_sdk.store.search.when import utc_iso

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

VIEW_BUDGET_TOKENS = 800
VIEW_LIMIT = 12
_WORD = re.compile(r"[^\W_][\w.-]{3,}", re.UNICODE)


@attrs.define
class HistorianReport:
    """What one historian pass did."""

    written: list[int] = attrs.field(factory=list)
    folded: list[int] = attrs.field(factory=list)
    quarantined: list[dict[str, Any]] = attrs.field(factory=list)
    ignored: list[Malformed] = attrs.field(factory=list)
    #: facts refused because their text was forgotten (``memsdk forget``)
    refused: list[dict[str, Any]] = attrs.field(factory=list)
    view: list[int] = attrs.field(factory=list)
    placed: list[dict[str, int]] = attrs.field(factory=list)  # {"id", "under", "composite"}
    nothing_new: bool = False

    @property
    def lost_text(self) -> bool:
        """Whether some text of the reply was neither written nor quarantined."""
        return bool(self.ignored)

    def not_written(self) -> list[dict[str, Any]]:
        """Every piece of the reply that did not become an active memory, in reply order."""
        pieces = [{**entry, "kept": True} for entry in self.quarantined]
        pieces += [
            {"id": None, "category": "", "reason": p.reason, "line": p.line, "text": p.text}
            | {"kept": False}
            for p in self.ignored
        ]
        return sorted(pieces, key=lambda piece: piece["line"])

    def to_dict(self) -> dict[str, Any]:
        data = attrs.asdict(self)
        data["not_written"] = self.not_written()
        data["lost_text"] = self.lost_text
        return data


def run_historian(
    store: Store,
    messages: Sequence[dict[str, Any]],
    *,
    project: str | None = None,
    source: str = "historian",
) -> HistorianReport:
    """Turn one transcript chunk into memories; see the module docstring."""
    chunk = _check_messages(messages)
    occurred_at = _when(messages)
    hooks = store.plugins.hook
    view = bounded_view(store, chunk, project=project)
    prompt = hooks.historian_prompt(store=store, messages=chunk, view=view)
    reply = hooks.model_complete(prompt=prompt)
    if reply is None:
        raise NoModel(
            "the historian needs a model: register a plugin implementing model_complete "
            "(see docs/hooks.md)"
        )
    parsed = hooks.historian_parse(store=store, reply=reply)
    report = HistorianReport(view=[m.id for m in view], nothing_new=parsed.empty)
    if (
        not parsed.facts
        and not parsed.empty
        and not any(m.reason != OUTSIDE for m in parsed.malformed)
    ):
        if reply.strip():
            kept = store.memories.quarantine(
                reply,
                "",
                reason="historian reply with no <facts> block",
                project=project,
                source=source,
            )
            raise HistorianReplyError(
                "the model's reply has no facts in <facts> blocks and no <no-facts/>; "
                f"kept as quarantined memory {kept.id}"
            )
        raise HistorianReplyError("the model's reply is empty")
    with store.atomic():
        for fact in parsed.facts:
            try:
                _keep_fact(store, report, fact, project, source, view, occurred_at)
            except ForgottenText as error:
                report.refused.append(
                    {"category": fact.category, "line": fact.line, "forgotten": error.memory_id}
                )
        for piece in parsed.malformed:
            if piece.reason == OUTSIDE:
                report.ignored.append(piece)
                continue
            try:
                kept = store.memories.quarantine(
                    piece.text, "", reason=piece.reason, project=project, source=source
                )
            except ForgottenText as error:
                report.refused.append(
                    {"category": "", "line": piece.line, "forgotten": error.memory_id}
                )
                continue
            report.quarantined.append(
                {
                    "id": kept.id,
                    "category": "",
                    "reason": piece.reason,
                    "line": piece.line,
                    "text": piece.text,
                }
            )
    return report


def _place(
    store: Store, report: HistorianReport, memory_id: int, head: int, view: list[Memory]
) -> None:
    """Add a written fact to the group of a header the model was shown (else leave it alone)."""
    if head == memory_id or head not in {m.id for m in view}:
        return
    groups = [c for c in store.composites.by_head(head) if c.type in ("sequence", "theme")]
    if not groups:
        return
    group = min(groups, key=lambda c: (c.type != "sequence", c.id))
    if memory_id not in group.members:
        store.composites.add(group.id, memory_id)
    report.placed.append({"id": memory_id, "under": head, "composite": group.id})


def _keep_fact(
    store: Store,
    report: HistorianReport,
    fact: Any,
    project: str | None,
    source: str,
    view: list[Memory],
    occurred_at: str | None = None,
) -> None:
    """Write one parsed fact, or quarantine it as the admission says."""
    hooks = store.plugins.hook
    admission = hooks.historian_admit(store=store, fact=fact)
    if admission.action == "write":
        result = store.memories.write(
            fact.text,
            fact.category,
            project=project,
            source=source,
            importance=admission.importance,
            occurred_at=occurred_at,
        )
        (report.written if result.created else report.folded).append(result.id)
        if fact.under is not None:
            _place(store, report, result.id, fact.under, view)
    else:
        kept = store.memories.quarantine(
            fact.text,
            fact.category,
            reason=admission.reason,
            project=project,
            source=source,
        )
        report.quarantined.append(
            {
                "id": kept.id,
                "category": fact.category,
                "reason": admission.reason,
                "line": fact.line,
                "text": fact.text,
            }
        )


def bounded_view(
    store: Store,
    messages: Sequence[dict[str, str]],
    *,
    project: str | None = None,
    budget: int = VIEW_BUDGET_TOKENS,
    limit: int = VIEW_LIMIT,
) -> list[Memory]:
    """Existing memories relevant to a chunk: search hits and their groups' headers.

    At most ``budget`` tokens and ``limit`` memories: the hits first, then the
    heads of the sequence and theme composites the hits are members of.
    """
    words = Counter(
        word.lower() for message in messages for word in _WORD.findall(message["content"])
    )
    if not words:
        return []
    terms = [word for word, _ in words.most_common(24)]
    query = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    hits = store.memories.search(query, project=project, limit=limit * 2, raw=True)
    view: list[Memory] = []
    used = 0
    for hit in hits:
        cost = hit.memory.token_count or 0
        if used + cost > budget:
            continue
        view.append(hit.memory)
        used += cost
        if len(view) == limit:
            break
    shown = {m.id for m in view}
    for memory in list(view):
        for group in store.composites.by_member(memory.id):
            if group.type not in ("sequence", "theme") or group.head in shown:
                continue
            head = store.memories.get(group.head)
            cost = head.token_count or 0
            if head.status != "active" or used + cost > budget or len(view) >= limit + 4:
                continue
            view.append(head)
            shown.add(head.id)
            used += cost
    return view


def _when(messages: Sequence[dict[str, Any]]) -> str | None:
    """When the chunk happened: its latest message timestamp that reads as ISO 8601, if any."""
    found = []
    for message in messages:
        stamp = message.get("timestamp") if isinstance(message, dict) else None
        if isinstance(stamp, str):
            try:
                found.append(utc_iso(stamp))
            except InvalidMemory:
                continue
    return max((s for s in found if s), default=None)


def _check_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidTranscript("messages must be a list of {'role': ..., 'content': ...}")
    chunk = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InvalidTranscript(f"message {index} is {type(message).__name__}, not a mapping")
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str) or not isinstance(content, str):
            raise InvalidTranscript(f"message {index} needs string 'role' and 'content' fields")
        kept = {"role": role, "content": content}
        if isinstance(message.get("explicit"), str):
            kept["explicit"] = message["explicit"]  # the user asked outright to remember it
        chunk.append(kept)
    if not chunk:
        raise InvalidTranscript("messages is empty")
    return chunk
