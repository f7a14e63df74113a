"""Group transcript messages into historian chunks under a token budget.

The budget is a hard cap on the chunk's transcript text as the built-in
historian prompt renders it (``[role]`` on a line, then the text; messages
separated by a blank line), counted with the store's token counter. The
historian's system prompt and its view of known memories come on top.

- Messages keep their order; a chunk holds messages of one conversation only
  (conversations in the order they first appear).
- A message larger than the budget is split into consecutive pieces on
  paragraph boundaries, else line boundaries, else between words, and only
  as a last resort inside a word. The pieces, joined, are the message's text
  exactly: nothing is truncated. Each piece's ``source`` says which part it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

import attrs

from plugin_sdk.model.prompts import message_header, transcript_text
from plugin_sdk.store.tokens import TokenCounter
from plugin_sdk.transcripts.model import Message

DEFAULT_BUDGET = 3000
MIN_BUDGET = 64
_SEPARATORS = (re.compile(r"(?<=\n\n)"), re.compile(r"(?<=\n)"), re.compile(r"(?<=\s)(?=\S)"))


@attrs.frozen
class Chunk:
    """Consecutive messages of one conversation, within the budget."""

    number: int  # 1-based
    messages: list[Message]
    tokens: int

    @property
    def conversation(self) -> str:
        return self.messages[0].conversation

    @property
    def span(self) -> str:
        """Where the chunk comes from: its first and last message's source."""
        first, last = self.messages[0].source, self.messages[-1].source
        return first if first == last else f"{first} .. {last}"

    def as_historian(self) -> list[dict[str, str]]:
        """The messages as :func:`plugin_sdk.stages.historian.run_historian` takes them."""
        return [message.as_historian() for message in self.messages]


def render(messages: Iterable[Message]) -> str:
    """The chunk text as the built-in historian prompt shows it."""
    return transcript_text([m.as_historian() for m in messages])


def chunk_messages(
    messages: Sequence[Message], counter: TokenCounter, budget: int = DEFAULT_BUDGET
) -> list[Chunk]:
    """Split ``messages`` into chunks of at most ``budget`` tokens; see the module docstring."""
    if budget < MIN_BUDGET:
        raise ValueError(f"the chunk budget must be at least {MIN_BUDGET} tokens, not {budget}")
    pieces = [piece for m in _by_conversation(messages) for piece in _fit(m, counter, budget)]
    costs = [counter.count(render([piece])) for piece in pieces]
    separator = counter.count("\n\n")
    chunks: list[Chunk] = []
    start = 0
    while start < len(pieces):
        end, estimate = start, 0
        conversation = pieces[start].conversation
        while end < len(pieces) and pieces[end].conversation == conversation:
            cost = costs[end] + (separator if end > start else 0)
            if end > start and estimate + cost > budget:
                break
            estimate += cost
            end += 1
        # The estimate adds per-message counts; the exact count of the joined
        # text can differ by a token here and there, and the cap is hard.
        tokens = counter.count(render(pieces[start:end]))
        while tokens > budget and end - start > 1:
            end -= 1
            tokens = counter.count(render(pieces[start:end]))
        chunks.append(Chunk(len(chunks) + 1, list(pieces[start:end]), tokens))
        start = end
    return chunks


def completed(chunks: Sequence[Chunk], messages: Sequence[Message]) -> list[list[Message]]:
    """For each chunk, the messages of ``messages`` it completes, in order.

    A message split into parts is complete with the chunk holding its last
    part (a part's source ends ``(part i/n)``).
    """
    ordered, at = _by_conversation(messages), 0
    out = []
    for chunk in chunks:
        done = []
        for piece in chunk.messages:
            whole = at < len(ordered) and (piece is ordered[at] or _last_part(piece.source))
            if whole:
                done.append(ordered[at])
                at += 1
        out.append(done)
    return out


def _last_part(source: str) -> bool:
    match = re.search(r" \(part (\d+)/(\d+)\)$", source)
    return match is not None and match[1] == match[2]


def split_text(text: str, fits: Callable[[str], bool]) -> list[str]:
    """Split ``text`` into pieces that each ``fits``, on the coarsest boundary that works.

    ``"".join(split_text(text, fits)) == text`` always holds.
    """
    return [text] if fits(text) else _split(text, fits, 0)


def _split(text: str, fits: Callable[[str], bool], level: int) -> list[str]:
    """Split ``text``, which does not fit, on the separators from ``level`` on."""
    if level == len(_SEPARATORS):
        return _pack(list(text), fits)  # characters: a piece has at least one
    units = [unit for unit in _SEPARATORS[level].split(text) if unit]
    if len(units) == 1:  # no such boundary in it
        return _split(text, fits, level + 1)
    return _pack(units, fits, lambda unit: _split(unit, fits, level + 1))


def _pack(
    units: list[str],
    fits: Callable[[str], bool],
    split: Callable[[str], list[str]] | None = None,
) -> list[str]:
    """Join consecutive units into pieces that fit; ``split`` breaks up a unit too big alone."""
    pieces: list[str] = []
    start = 0
    while start < len(units):
        if split is not None and not fits(units[start]):
            units[start : start + 1] = split(units[start])  # its pieces take its place
        end = _longest_run(units, start, fits)
        pieces.append("".join(units[start:end]))
        start = end
    return pieces


def _longest_run(units: list[str], start: int, fits: Callable[[str], bool]) -> int:
    """The largest ``end`` such that ``units[start:end]`` joined fits; at least ``start + 1``.

    Gallops (2, 4, 8, ... units) past what fits, then bisects: a few counts
    per piece, about its own size. (Counting the growing piece once per unit
    added made a 60,000-word line take most of a minute.)
    """
    low, probe = 1, 2
    available = len(units) - start
    while probe <= available and fits("".join(units[start : start + probe])):
        low, probe = probe, probe * 2
    high = min(probe - 1, available)
    while low < high:
        middle = (low + high + 1) // 2
        if fits("".join(units[start : start + middle])):
            low = middle
        else:
            high = middle - 1
    return start + low


def _fit(message: Message, counter: TokenCounter, budget: int) -> list[Message]:
    header = message_header(message.as_historian()) + "\n"
    texts = split_text(message.text, lambda piece: counter.count(header + piece) <= budget)
    if len(texts) == 1:
        return [message]
    return [
        attrs.evolve(message, text=text, source=f"{message.source} (part {i}/{len(texts)})")
        for i, text in enumerate(texts, 1)
    ]


def _by_conversation(messages: Sequence[Message]) -> list[Message]:
    order: dict[str, int] = {}
    for message in messages:
        order.setdefault(message.conversation, len(order))
    return sorted(messages, key=lambda m: order[m.conversation])  # stable: keeps message order
