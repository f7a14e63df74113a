"""Token counts that add up over segments, and the count cache that relies on it.

For tiktoken's cl100k encodings the count of a text is the sum of the counts
of its segments (the text cut after every line break followed by a
non-whitespace character): checked here over all of Unicode, over the line
breaks and whitespace that could make a pre-tokenizer piece cross a line,
and over the injector's own line shapes (headings, item lines with
continuation indent and annotations, the tags). ``count_cached`` sums
segment counts only for a counter that declares itself additive.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_sdk_plugins.injection import CLOSE_TAG, OPEN_TAG, SECTIONS

from plugin_sdk import Store
from plugin_sdk.model.boundary import entry
from plugin_sdk.store import tokens
from plugin_sdk.store.tokens import count_cached, default_counter, forget_counts, segments

# Characters around a line break that a pre-tokenizer could glue to it.
AWKWARD = [
    "\n",
    "\n\n",
    "\r\n",
    "\r",
    " ",
    "  ",
    "\t",
    "\u00a0",
    "\u3000",
    "\u2028",
    "\u2029",
    "\x85",
    "\x0b",
    "\x0c",
    "'s",
    "'S",
    "'ll",
    "123456",
    ".\n",
    "!!\n",
    "-",
    "#",
    "<",
    "</",
    "[",
    "]",
    "\u200d",
    "\U0001f469\u200d\U0001f4bb",
    "\u0645\u0631\u062d\u0628\u0627",
    "\u4e2d\u6587",
    "e\u0301",
]
UNICODE = st.characters(blacklist_categories=("Cs",))
ENCODING = tiktoken.get_encoding(tokens.OFFLINE_ENCODING)
TEXT = st.lists(st.one_of(UNICODE, st.sampled_from(AWKWARD)), max_size=60).map("".join)
WORDS = st.lists(
    st.one_of(st.sampled_from(AWKWARD), st.text(UNICODE, min_size=1, max_size=8)),
    min_size=1,
    max_size=12,
).map("".join)


@pytest.fixture(autouse=True)
def _no_memo() -> None:
    tokens.clear_memo()  # each test starts as a new process would


def _tiktoken(text: str) -> int:
    """tiktoken's own count (the default counter may take its ASCII fast path)."""
    return len(ENCODING.encode_ordinary(text))


def _sum_of_segments(text: str) -> int:
    return sum(_tiktoken(part) for part in segments(text))


def test_the_default_counter_says_it_is_additive() -> None:
    assert default_counter().additive is True
    assert tokens.TiktokenCounter("o200k_base").additive is False  # not checked: whole texts


@given(TEXT)
@settings(max_examples=400, deadline=None)
def test_any_text_counts_as_the_sum_of_its_segments(text: str) -> None:
    parts = segments(text)
    assert "".join(parts) == text
    assert all(part.endswith("\n") for part in parts[:-1])
    assert _tiktoken(text) == _sum_of_segments(text)


@st.composite
def blocks(draw: st.DrawFn) -> str:
    """A block as the injector writes it: tag, headings, item lines, closing tag."""
    lines = [OPEN_TAG]
    for _ in range(draw(st.integers(1, 3))):
        lines.append(f"# {draw(st.sampled_from([title for _, title in SECTIONS]))}")
        for _ in range(draw(st.integers(1, 2))):
            name = draw(st.sampled_from(["OPS_RULES", "ENV_STATE", "Ünïcode_Καλά", "運用"]))
            lines.append(f"## {name}")
            for _ in range(draw(st.integers(1, 4))):
                note = draw(
                    st.sampled_from(["", "9 details", "12 groups, 480 memories", "3 causes"])
                )
                memory_id = draw(st.integers(1, 10**7))
                lines.append(entry(memory_id, draw(WORDS), note))
    lines.append(CLOSE_TAG)
    return "\n".join(lines)


@given(blocks())
@settings(max_examples=150, deadline=None)
def test_an_injected_block_counts_as_the_sum_of_its_lines(block: str) -> None:
    assert _tiktoken(block) == _sum_of_segments(block)


@given(blocks(), st.data())
@settings(max_examples=40, deadline=None)
def test_count_cached_is_exact_for_a_changed_block(
    tmp_path_factory: object, block: str, data: st.DataObject
) -> None:
    path = tmp_path_factory.mktemp("counts") / "m.db"  # type: ignore[attr-defined]
    with Store(path, project="p") as store:
        assert count_cached(store, block) == default_counter().count(block)
        lines = block.split("\n")
        index = data.draw(st.integers(1, len(lines) - 2))
        lines[index] = entry(data.draw(st.integers(1, 999)), data.draw(WORDS))
        changed = "\n".join(lines)
        assert count_cached(store, changed) == default_counter().count(changed)
        tokens.clear_memo()  # as a new process: the segments come from the store
        forget_counts(store, [changed])
        assert count_cached(store, changed) == default_counter().count(changed)


class WordCounter:
    """Counts words; additive over segments when told so. Records what it was given."""

    def __init__(self, name: str, *, additive: bool) -> None:
        self.name = name
        self.additive = additive
        self.given: list[str] = []

    def count(self, text: str) -> int:
        self.given.append(text)
        return len(text.split())


BLOCK = "<memory>\n## A\n- [1] one two\n- [2] three\n    four\n</memory>"


def test_a_changed_line_is_the_only_one_counted(tmp_path: Path) -> None:
    counter = WordCounter("words-additive", additive=True)
    with Store(tmp_path / "m.db", project="p", tokenizer=counter) as store:
        assert count_cached(store, BLOCK) == 12
        assert counter.given == segments(BLOCK)  # each line once, never the whole
        counter.given.clear()
        assert count_cached(store, BLOCK) == 12  # the whole's count, from the store
        changed = BLOCK.replace("- [1] one two", "- [1] one two three")
        assert count_cached(store, changed) == 13
        assert counter.given == ["- [1] one two three\n"]
    tokens.clear_memo()
    counter = WordCounter("words-additive", additive=True)
    with Store(tmp_path / "m.db", project="p", tokenizer=counter) as store:
        again = changed.replace("- [2] three", "- [2] three and")
        assert count_cached(store, again) == 14  # a new process: other lines from the store
        assert counter.given == ["- [2] three and\n"]  # an indented line is a segment of its own


def test_a_counter_that_is_not_additive_counts_the_whole_text(tmp_path: Path) -> None:
    counter = WordCounter("words-whole", additive=False)
    with Store(tmp_path / "m.db", project="p", tokenizer=counter) as store:
        assert count_cached(store, BLOCK) == 12
        assert counter.given == [BLOCK]


def test_a_count_on_a_read_only_store_is_exact_and_not_fatal(tmp_path: Path) -> None:
    # query_only makes every write fail as on a read-only file (tests may run as root).
    with Store(tmp_path / "m.db", project="p") as store:
        store.db.execute("PRAGMA query_only = 1")
        assert count_cached(store, BLOCK) == default_counter().count(BLOCK)
        assert count_cached(store, BLOCK) == default_counter().count(BLOCK)
        store.db.execute("PRAGMA query_only = 0")
        assert store.db.execute("SELECT count(*) FROM token_counts").fetchone()[0] == 0


@pytest.mark.parametrize("synchronous", ["normal", "full", "extra"])
def test_a_recorded_count_leaves_the_connection_as_it_was(tmp_path: Path, synchronous: str) -> None:
    with Store(tmp_path / "m.db", project="p", synchronous=synchronous) as store:
        before = store.db.execute("PRAGMA synchronous").fetchone()[0]
        count_cached(store, BLOCK + " more")
        assert store.db.execute("PRAGMA synchronous").fetchone()[0] == before
        forget_counts(store, [BLOCK + " more"])
        assert store.db.execute("PRAGMA synchronous").fetchone()[0] == before
        hashes = store.db.execute("SELECT count(*) FROM token_counts").fetchone()[0]
        assert hashes == len(segments(BLOCK))


def test_the_cache_keeps_the_latest_counts_only(tmp_path: Path, monkeypatch: object) -> None:
    monkeypatch.setattr(tokens, "CACHED_COUNTS", 5)  # type: ignore[attr-defined]
    counter = WordCounter("words-small", additive=False)
    with Store(tmp_path / "m.db", project="p", tokenizer=counter) as store:
        for n in range(12):
            count_cached(store, f"text number {n}")
        kept = store.db.execute("SELECT count(*) FROM token_counts").fetchone()[0]
        assert kept <= 5
        counter.given.clear()
        assert count_cached(store, "text number 11") == 3
        assert counter.given == []  # the latest is kept


def test_a_count_whose_record_fails_is_still_returned(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db", project="p") as store:
        store.db.execute(
            "CREATE TRIGGER no_counts BEFORE INSERT ON token_counts "
            "BEGIN SELECT RAISE(ABORT, 'no room'); END"
        )
        assert count_cached(store, BLOCK) == default_counter().count(BLOCK)
        assert store.db.execute("SELECT count(*) FROM token_counts").fetchone()[0] == 0
        assert not store.db.conn.in_transaction


def test_forgetting_counts_commits_and_leaves_no_transaction_open(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db", project="p") as store:
        assert count_cached(store, BLOCK) > 0
        forget_counts(store, [BLOCK])
        assert not store.db.conn.in_transaction
        forget_counts(store)
        assert not store.db.conn.in_transaction
        assert store.db.execute("SELECT count(*) FROM token_counts").fetchone()[0] == 0
