"""The default counter's ASCII fast path: cl100k's pre-tokenizer in ``re`` and a memo of pieces.

Its counts must be tiktoken's exactly, for any ASCII text: checked over all
of ASCII (control characters, the whitespace Rust's ``\\s`` knows and Python's
differs on, contractions in either case, digit runs, trailing whitespace),
and over text built from the pieces most likely to split differently. The
memo must stay bounded, and a tiktoken whose pattern is not the one the path
was written from must not take it.
"""

from __future__ import annotations

import sys

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_sdk.store import tokens
from plugin_sdk.store.tokens import TiktokenCounter

ENCODING = tiktoken.get_encoding(tokens.OFFLINE_ENCODING)
# Python 3.10's re has no possessive quantifiers: tiktoken counts everything there.
needs_fast_path = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="the ASCII fast path needs Python 3.11's re"
)
ASCII = st.characters(max_codepoint=127)
PIECES = [
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x1f",
    "\x7f",
    "\x00",
    "'s",
    "'S",
    "'ll",
    "'LL",
    "'Re",
    "'ve",
    "'d",
    "'m",
    "'t",
    "'",
    "''",
    "1",
    "12",
    "1234567",
    "don",
    "word",
    "Word",
    "x",
    ".",
    "...",
    "!?",
    "-->",
    "<|endoftext|>",
    "#",
    "`",
    "\\",
    "$",
]
TEXT = st.lists(st.one_of(ASCII, st.sampled_from(PIECES)), max_size=50).map("".join)


def _tiktoken(text: str) -> int:
    return len(ENCODING.encode_ordinary(text))


@needs_fast_path
def test_the_default_counter_takes_the_fast_path() -> None:
    assert tokens.default_counter().fast_ascii is True


@given(st.text(ASCII, max_size=80))
@settings(max_examples=1500, deadline=None)
def test_any_ascii_text_counts_as_tiktoken_counts_it(text: str) -> None:
    assert TiktokenCounter().count(text) == _tiktoken(text)


@given(TEXT)
@settings(max_examples=1500, deadline=None)
def test_awkward_pieces_count_as_tiktoken_counts_them(text: str) -> None:
    assert tokens.default_counter().count(text) == _tiktoken(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "   \n",
        "a  \n  b",
        "trailing spaces   ",
        "trailing newline\n",
        "two\n\n",
        "I'LL say it's 12345 o'clock\r\n",
        "vertical\x0btab and\x0cform feed",
        "sep\x1cchars\x1f here",
        "<|endoftext|> is text",
        "## OPS_RULES\n- [m12] keep the build green (3 details)\n",
    ],
)
def test_known_awkward_texts(text: str) -> None:
    assert tokens.default_counter().count(text) == _tiktoken(text)


@needs_fast_path
def test_non_ascii_text_is_counted_by_tiktoken_itself() -> None:
    counter = TiktokenCounter()
    assert counter.count("café 運用 naïve") == _tiktoken("café 運用 naïve")
    assert counter._pieces is not None and not counter._pieces  # nothing memoized


@needs_fast_path
def test_the_memo_of_pieces_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "MEMO_PIECES", 16)
    counter = TiktokenCounter()
    text = " ".join(f"w{i}x" for i in range(200))
    assert counter.count(text) == _tiktoken(text)
    assert counter._pieces is not None and 0 < len(counter._pieces) <= 16
    assert counter.count(text) == _tiktoken(text)


@needs_fast_path
def test_a_long_piece_is_counted_not_kept() -> None:
    counter = TiktokenCounter()
    text = "=" * 5000 + " x" + " " * 3000 + "y"
    assert counter.count(text) == _tiktoken(text)
    assert counter._pieces is not None
    assert max(map(len, counter._pieces)) <= tokens.LONGEST_PIECE


def test_another_pattern_does_not_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "CL100K_PATTERN", r"\S+|\s+")
    counter = TiktokenCounter()
    assert counter.fast_ascii is False
    assert counter.count("it's 12345 words") == _tiktoken("it's 12345 words")
