"""Chunking transcripts under a token budget: a hard cap, and nothing lost."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_sdk.store.tokens import default_counter
from plugin_sdk.transcripts import (
    MIN_BUDGET,
    Message,
    chunk_messages,
    render,
    split_text,
)

COUNTER = default_counter()


class WordCounter:
    """One token per whitespace-separated word, and one per role header: easy to reason about."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


def message(text: str, role: str = "user", conversation: str = "c", n: int = 0) -> Message:
    return Message(role, text, f"messages[{n}]", conversation)


def originals(chunks, messages):
    """Each original message's text, rebuilt from the pieces in the chunks."""
    rebuilt: dict[str, str] = {}
    for chunk in chunks:
        for piece in chunk.messages:
            key = piece.source.split(" (part ")[0]
            rebuilt[key] = rebuilt.get(key, "") + piece.text
    return [rebuilt[m.source] for m in messages]


def test_small_messages_share_chunks_up_to_the_budget():
    counter = WordCounter()
    messages = [message(f"w{i} " * 9 + f"w{i}", n=i) for i in range(10)]  # 11 tokens each
    chunks = chunk_messages(messages, counter, budget=MIN_BUDGET)
    assert [len(c.messages) for c in chunks] == [5, 5]
    assert all(c.tokens == counter.count(render(c.messages)) <= MIN_BUDGET for c in chunks)
    assert [c.number for c in chunks] == [1, 2]
    assert chunks[0].span == "messages[0] .. messages[4]"
    assert chunks[1].as_historian()[0] == {"role": "user", "content": messages[5].text}


def test_a_chunk_never_mixes_conversations_and_keeps_each_ones_order():
    messages = [
        message("main one", conversation="main", n=0),
        message("side one", conversation="side", n=1),
        message("main two", conversation="main", n=2),
        message("side two", conversation="side", n=3),
    ]
    chunks = chunk_messages(messages, COUNTER, budget=1000)
    assert [[m.text for m in c.messages] for c in chunks] == [
        ["main one", "main two"],
        ["side one", "side two"],
    ]
    assert [c.conversation for c in chunks] == ["main", "side"]


def test_a_message_over_the_budget_is_split_on_paragraphs_first():
    paragraphs = [
        f"Paragraph {i}: " + " ".join(f"word{i}x{j}" for j in range(30)) for i in range(6)
    ]
    text = "\n\n".join(paragraphs)
    chunks = chunk_messages([message(text)], WordCounter(), budget=70)
    pieces = [m for c in chunks for m in c.messages]
    assert len(pieces) == 3
    assert "".join(p.text for p in pieces) == text  # nothing truncated
    assert [p.source for p in pieces] == [f"messages[0] (part {i}/3)" for i in (1, 2, 3)]
    for piece in pieces[:-1]:
        assert piece.text.endswith("\n\n")  # cut at a paragraph boundary
    assert all(c.tokens <= 70 for c in chunks)


def test_a_single_huge_line_is_split_between_words_and_a_huge_word_inside_it():
    words = " ".join(f"tok{i}" for i in range(400))
    pieces = split_text(words, lambda piece: COUNTER.count(piece) <= 100)
    assert "".join(pieces) == words and len(pieces) > 1
    assert all(not piece.startswith(" ") for piece in pieces[1:])  # cut after a space
    blob = "x9Q" * 2000  # no boundary at all
    pieces = split_text(blob, lambda piece: COUNTER.count(piece) <= 100)
    assert "".join(pieces) == blob
    assert all(COUNTER.count(piece) <= 100 for piece in pieces)


def test_splitting_a_long_line_counts_a_few_times_per_piece_not_once_per_word():
    words = " ".join(f"w{i}" for i in range(20_000))
    counted: list[int] = []

    def fits(piece: str) -> bool:
        counted.append(len(piece))
        return len(piece.split()) <= 1000

    pieces = split_text(words, fits)
    assert "".join(pieces) == words
    assert [len(p.split()) for p in pieces] == [1000] * 20  # each as full as it can be
    # A galloping search: a few dozen counts per piece (it was one per word),
    # and never of much more than a piece's own length.
    assert len(counted) < 40 * len(pieces)
    assert sum(counted) < 40 * len(words)


def test_the_budget_has_a_floor():
    with pytest.raises(ValueError, match=f"at least {MIN_BUDGET} tokens"):
        chunk_messages([message("hi")], COUNTER, budget=MIN_BUDGET - 1)
    assert chunk_messages([], COUNTER) == []


texts = st.lists(
    st.one_of(
        st.text(min_size=0, max_size=40),
        st.sampled_from(["\n", "\n\n", " ", "ünïcødé ", "<|endoftext|>", "```py\nx = 1\n```"]),
        st.text(alphabet="abc xyz\n", min_size=50, max_size=600),
    ),
    min_size=1,
    max_size=12,
).map("".join)


@settings(max_examples=60, deadline=None)
@given(
    bodies=st.lists(st.tuples(texts, st.sampled_from(["a", "b"])), min_size=1, max_size=8),
    budget=st.integers(min_value=MIN_BUDGET, max_value=300),
)
def test_every_chunk_fits_and_nothing_is_lost(bodies, budget):
    messages = [
        message(text, role="assistant" if i % 2 else "user", conversation=conv, n=i)
        for i, (text, conv) in enumerate(bodies)
    ]
    chunks = chunk_messages(messages, COUNTER, budget=budget)
    for chunk in chunks:
        assert chunk.tokens == COUNTER.count(render(chunk.messages)) <= budget
        assert len({m.conversation for m in chunk.messages}) == 1
    assert originals(chunks, messages) == [m.text for m in messages]
    order = [m.source.split(" (part ")[0] for c in chunks for m in c.messages]
    first_seen = list(dict.fromkeys(m.conversation for m in messages))
    expected = [m.source for conv in first_seen for m in messages if m.conversation == conv]
    assert list(dict.fromkeys(order)) == expected
