"""Fragmentation: a long memory becomes a header and its details (the seed's Proposal 3).

``fragment(store, memory_id)`` splits the text (``split_memory`` hook), writes
each piece as a detail memory in the same category, writes a **header**: an
ordinary memory with high importance holding a short summary: from the host's
model when it answers; else the text's own title line when it opens with one
(a one-line preamble such as ``SOP: failover of ...``), which then heads the
details instead of being one; else the first line (`` (overview)`` is added
if that would equal a detail). It chains the details under it with a ``sequence`` composite, and
supersedes the original by the header. All in one transaction.

Nothing is lost: the composite keeps the whitespace around each piece
(``layout``), so :func:`reconstruct` gives back the original text exactly
until a detail is edited (then it gives the current text). Two pieces with the
same normalized text are kept as one detail (a composite holds a memory once).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import attrs

from .composites import CompositeError
from .hooktypes import Prompt
from .normalize import normalized_hash

if TYPE_CHECKING:
    from .store import Store

HEADER_IMPORTANCE = 80
SUMMARY_CHARS = 160
_STEP = re.compile(r"\d{1,3}[.)]\s")


@attrs.frozen
class Fragmented:
    original: int
    header: int
    details: list[int]
    composite: int
    summary_by: str  # "model", "title line" or "first line"


def fragment(store: Store, memory_id: int) -> Fragmented:
    """Split a memory into a header and details; see the module docstring."""
    memory = store.memories.get(memory_id)
    if memory.status != "active":
        raise CompositeError(
            f"memory {memory_id} is {memory.status}; only active memories are fragmented"
        )
    if any(c.type == "sequence" for c in store.composites.by_head(memory_id)):
        raise CompositeError(f"memory {memory_id} already heads a sequence; it is a header")
    pieces = store.plugins.hook.split_memory(store=store, memory=memory)
    if pieces is not None and "".join(pieces) != memory.content:
        raise CompositeError("the split_memory hook returned pieces that do not add up to the text")
    pieces = _distinct(pieces or [])
    if len(pieces) < 2:
        raise CompositeError(
            f"memory {memory_id} has no numbered steps, settings or paragraphs to split"
        )
    summary, by = _model_summary(store, memory.content), "model"
    head_piece = None
    if summary is None and _is_title(pieces[0]):
        head_piece, pieces = pieces[0], pieces[1:]  # the text's own title line heads it
        summary, by = head_piece.strip(), "title line"
    elif summary is None:
        summary, by = _first_line(memory.content), "first line"
    if normalized_hash(summary) in {normalized_hash(piece) for piece in pieces}:
        summary += " (overview)"  # a header never equals one of its own details
    layout = {
        "head": _edges(head_piece) if head_piece is not None else None,
        "members": [_edges(piece) for piece in pieces],
    }
    with store.atomic():
        header = store.memories.write(
            summary,
            memory.category,
            project=memory.project,
            importance=max(memory.importance, HEADER_IMPORTANCE),
            source=f"fragment:{memory_id}",
        )
        details = [
            store.memories.write(
                piece.strip(),
                memory.category,
                project=memory.project,
                importance=memory.importance,
                source=f"fragment:{memory_id}",
            ).id
            for piece in pieces
        ]
        composite = store.composites.create("sequence", header.id, details, layout=layout)
        store.memories.fold(memory_id, header.id)
    return Fragmented(memory_id, header.id, details, composite.id, by)


def reconstruct(store: Store, header_id: int) -> str:
    """The text a header and its details stand for (see the module docstring)."""
    sequences = [c for c in store.composites.by_head(header_id) if c.type == "sequence"]
    if not sequences:
        raise CompositeError(f"memory {header_id} is not a header (it heads no sequence)")
    composite = sequences[0]
    texts = [store.memories.get(member).content for member in composite.members]
    layout = composite.layout
    if not isinstance(layout, dict) or len(layout.get("members", [])) != len(texts):
        return "\n".join(texts)  # members were added or removed since: no exact layout
    head = ""
    if layout["head"] is not None:
        lead, trail = layout["head"]
        head = lead + store.memories.get(header_id).content + trail
    pairs = zip(layout["members"], texts, strict=True)
    return head + "".join(lead + text + trail for (lead, trail), text in pairs)


def _distinct(pieces: list[str]) -> list[str]:
    kept: list[str] = []
    seen: set[str] = set()
    for piece in pieces:
        digest = normalized_hash(piece) if piece.strip() else None
        if kept and (digest is None or digest in seen):
            kept[-1] += piece  # blank, or a repeat: stays with the piece before it
            continue
        kept.append(piece)
        if digest:
            seen.add(digest)
    if kept and not kept[0].strip() and len(kept) > 1:
        kept[1] = kept[0] + kept[1]
        kept.pop(0)
    return kept


def _edges(piece: str) -> tuple[str, str]:
    core = piece.strip()
    lead = piece[: len(piece) - len(piece.lstrip())]
    trail = piece[len(lead) + len(core) :]
    return lead, trail


def _is_title(piece: str) -> bool:
    """A one-line preamble that names the whole (not a step or a setting)."""
    line = piece.strip()
    return (
        0 < len(line) <= 2 * SUMMARY_CHARS
        and "\n" not in line
        and "=" not in line
        and not _STEP.match(line)
    )


def _model_summary(store: Store, text: str) -> str | None:
    prompt = Prompt(
        "summarize",
        "Write a one-line summary (at most 25 words) of this memory for a table of contents. "
        "Name what it is about; no preamble.",
        [{"role": "user", "content": text}],
    )
    reply = store.plugins.hook.model_complete(prompt=prompt)
    if reply and reply.strip():
        return " ".join(reply.split())[:SUMMARY_CHARS]
    return None


def _first_line(text: str) -> str:
    first = next(line.strip() for line in text.splitlines() if line.strip())
    if len(first) > SUMMARY_CHARS:
        first = first[: SUMMARY_CHARS - 1].rstrip() + "…"
    return first
