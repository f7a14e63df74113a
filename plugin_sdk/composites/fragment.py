"""Fragmentation: a long memory becomes a header and its details.

``fragment(store, memory_id)`` splits the text (``split_memory`` hook), writes
each piece as a detail memory in the same category, writes a **header**: an
ordinary memory with high importance holding a short summary: from the host's
model when it answers; else the text's own title line when it opens with one
(a one-line preamble such as ``SOP: failover of ...``), which then heads the
details instead of being one; else the first line (`` (overview)`` is added
if that would equal a detail). It chains the details under it with a ``sequence`` composite, and
supersedes the original by the header. All in one transaction.

Nothing is lost: the composite keeps each piece's exact words and the
whitespace around it (``layout``), so :func:`reconstruct` gives back the
original text exactly, even when a piece folded into an existing memory with
other casing. A detail edited since contributes its current text, and a
member added later comes on a line of its own. Two pieces with the same
normalized text are kept as one detail (a composite holds a memory once). A
header is always a new memory: if its summary already exists in the category,
`` (from memory N)`` is added.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import attrs

from plugin_sdk.composites.composite import Composite
from plugin_sdk.errors import CompositeError
from plugin_sdk.plugin.records import Prompt
from plugin_sdk.store.normalize import normalized_hash

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

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
    """Split a memory of the store's project into a header and details; see the module docstring."""
    memory = store.memories.own(memory_id, doing="fragment")
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
    if _exists(store, memory.project, memory.category, summary):
        summary += f" (from memory {memory_id})"  # a header is always a new memory
    with store.atomic():
        header = store.memories.write(
            summary,
            memory.category,
            project=memory.project,
            importance=max(memory.importance, HEADER_IMPORTANCE),
            source=f"fragment:{memory_id}",
        )
        details = [
            _live_id(
                store,
                store.memories.write(
                    piece.strip(),
                    memory.category,
                    project=memory.project,
                    importance=memory.importance,
                    source=f"fragment:{memory_id}",
                ).id,
            )
            for piece in pieces
        ]
        layout = {
            "header": header.id,
            "head": None if head_piece is None else _entry(store, header.id, head_piece),
            "members": [_entry(store, d, piece) for d, piece in zip(details, pieces, strict=True)],
        }
        composite = store.composites.create("sequence", header.id, details, layout=layout)
        store.memories.fold(memory_id, header.id)
    return Fragmented(memory_id, header.id, details, composite.id, by)


def reconstruct(store: Store, header_id: int) -> str:
    """The text a header and its details stand for (see the module docstring)."""
    sequences = [c for c in store.composites.by_head(header_id) if c.type == "sequence"]
    if not sequences:
        raise CompositeError(f"memory {header_id} is not a header (it heads no sequence)")
    # After headers merge, one header can head several sequences: its own
    # (created with it) comes first.
    composite = min(sequences, key=lambda c: (_created_with(c) != header_id, c.id))
    layout = (
        composite.layout if isinstance(composite.layout, dict) else {"head": None, "members": []}
    )
    entries = {entry["id"]: entry for entry in layout["members"]}
    parts = []
    if layout["head"] is not None:
        parts.append(_piece(store, layout["head"]))
    for member in composite.members:
        entry = entries.get(member)
        if entry is None:  # added after fragmentation: on a line of its own
            parts.append(("\n" if parts else "") + store.memories.get(member).content)
        else:
            parts.append(_piece(store, entry))
    return "".join(parts)


def _created_with(composite: Composite) -> int | None:
    layout = composite.layout
    return layout.get("header") if isinstance(layout, dict) else None


def _entry(store: Store, memory_id: int, piece: str) -> dict[str, object]:
    """How a piece sits in the text: its exact words and the whitespace around them."""
    lead, trail = _edges(piece)
    memory = store.memories.get(memory_id)
    return {
        "id": memory_id,
        "lead": lead,
        "trail": trail,
        "text": piece.strip(),
        "hash": memory.normalized_hash,
    }


def _piece(store: Store, entry: dict[str, object]) -> str:
    """An entry's exact words while its memory is unchanged, else the memory's text."""
    memory = store.memories.get(int(str(entry["id"])))
    text = entry["text"] if memory.normalized_hash == entry["hash"] else memory.content
    return f"{entry['lead']}{text}{entry['trail']}"


def _exists(store: Store, project: str, category: str, text: str) -> bool:
    return store.tables.memories.has_hash(project, category, normalized_hash(text))


def _live_id(store: Store, memory_id: int) -> int:
    """Follow ``superseded_by`` to the memory that stands for a folded detail."""
    memory = store.memories.get(memory_id)
    while memory.status == "superseded" and memory.superseded_by is not None:
        memory = store.memories.get(memory.superseded_by)
    return memory.id


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
