"""Fragmentation: a long memory becomes a header and its details (the seed's Proposal 3).

``fragment(store, memory_id)`` splits the text (``split_memory`` hook), writes
each piece as a detail memory in the same category, writes a **header**: an
ordinary memory with high importance holding a short summary (from the host's
model when it answers, else the first line of the text and the number of
parts), chains the details under it with a ``sequence`` composite, and
supersedes the original by the header. All in one transaction.

Nothing is lost: the composite keeps the whitespace around each piece
(``layout``), so :func:`reconstruct` gives back the original text exactly
until a detail is edited (then it gives the current text). Two pieces with the
same normalized text are kept as one detail (a composite holds a memory once).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from .composites import CompositeError
from .hooktypes import Prompt
from .normalize import normalized_hash

if TYPE_CHECKING:
    from .store import Store

HEADER_IMPORTANCE = 80
SUMMARY_CHARS = 160


@attrs.frozen
class Fragmented:
    original: int
    header: int
    details: list[int]
    composite: int
    summary_by: str  # "model" or "first line"


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
    summary, by = _summary(store, memory.content, len(pieces))
    layout = [_edges(piece) for piece in pieces]
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
    if not layout or len(layout) != len(texts):
        return "\n".join(texts)
    return "".join(lead + text + trail for (lead, trail), text in zip(layout, texts, strict=True))


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


def _summary(store: Store, text: str, parts: int) -> tuple[str, str]:
    prompt = Prompt(
        "summarize",
        "Write a one-line summary (at most 25 words) of this memory for a table of contents. "
        "Name what it is about; no preamble.",
        [{"role": "user", "content": text}],
    )
    reply = store.plugins.hook.model_complete(prompt=prompt)
    if reply and reply.strip():
        line = " ".join(reply.split())[:SUMMARY_CHARS]
        return f"{line} ({parts} parts)", "model"
    first = next(line.strip() for line in text.splitlines() if line.strip())
    if len(first) > SUMMARY_CHARS:
        first = first[: SUMMARY_CHARS - 1].rstrip() + "…"
    return f"{first} ({parts} parts)", "first line"
