"""Fragmentation: a long memory becomes a header and details chained by a sequence
composite, and reconstructs exactly."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plugin_sdk_plugins.splitter import split_text

from plugin_sdk import Pack, Store, hookimpl
from plugin_sdk.composites.fragment import HEADER_IMPORTANCE, SUMMARY_CHARS, fragment, reconstruct
from plugin_sdk.errors import CompositeError
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager

PROJECT = "frag-test"
CAT = "RESEARCH"
CONFIG = "CONFIG_VALUES"
INTENT = "OPS_RULES"
TABLES = (
    "memories",
    "composites",
    "composite_members",
    "composite_events",
    "reference_sets",
    "proposals",
)
SHORT = SUMMARY_CHARS + len(" (overview)")

SOP = """Failover SOP for the primary database
1. Announce the failover in #ops and freeze deploys.
2. Promote the replica:   pg_ctl promote -D /var/lib/pg
3. Point the app at the new primary (edit DATABASE_URL).

4. Verify writes, then unfreeze deploys."""

DOSSIER = """# billing service configuration
billing.url = https://billing.internal:8443
billing.timeout_seconds = 30
billing.retries=5
  billing.currency   =   EUR
feature/invoices[v2] = on"""

PARAGRAPHS = """Why we pinned the tokenizer.

The cache key includes the token count, and a tokenizer upgrade silently
changed counts for CJK text, which invalidated every cached prompt.

  We pinned tiktoken and count offline;   an upgrade is now a migration.


Revisit when the cache key drops token counts."""


@pytest.fixture
def open_ops(new_store: Callable[..., Store], ops_pack: Pack) -> Callable[..., Store]:
    """``open_ops(name, *plugins)`` -> a new store with the ops pack and those plugins."""

    def open_(name: str, *plugins: tuple[str, object]) -> Store:
        return new_store(
            ops_pack, name=name, project=PROJECT, plugins=fresh_plugin_manager(*plugins)
        )

    return open_


@pytest.fixture
def fs(open_ops: Callable[..., Store]) -> Store:
    return open_ops("f.db")


def dump(store: Store) -> dict[str, list[tuple]]:
    return {
        t: [tuple(r) for r in store.db.execute(f"SELECT * FROM {t} ORDER BY rowid")] for t in TABLES
    }


def counts(store: Store) -> dict[str, int]:
    return {t: store.db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


def write(store: Store, text: str, category: str = CAT, **kw) -> int:
    result = store.memories.write(text, category, **kw)
    assert result.created
    return result.id


def check_fragmented(store: Store, original_id: int, text: str, category: str = CAT):
    """Everything the docs promise of one fragmentation."""
    original_before = store.memories.get(original_id)
    done = fragment(store, original_id)
    assert done.original == original_id
    header = store.memories.get(done.header)
    assert header.status == "active"
    assert header.category == category and header.project == PROJECT
    assert header.kind == original_before.kind
    assert header.importance >= HEADER_IMPORTANCE
    assert header.importance >= original_before.importance
    assert 0 < len(header.content) <= SHORT and "\n" not in header.content
    assert len(done.details) >= 2 or done.summary_by == "title line"
    assert len(set(done.details)) == len(done.details)
    assert done.header not in done.details and original_id not in done.details
    for detail_id in done.details:
        detail = store.memories.get(detail_id)
        assert detail.category == category and detail.project == PROJECT
        assert detail.status == "active"
        assert detail.content and detail.content in text
    composite = store.composites.get(done.composite)
    assert composite.type == "sequence"
    assert composite.head == done.header
    assert composite.members == done.details
    original = store.memories.get(original_id)
    assert original.status == "superseded"
    assert original.superseded_by == done.header
    assert original.content == text  # the original row is kept, only superseded
    assert original_id in header.merged_from
    assert reconstruct(store, done.header) == text
    return done


# The three shapes


def test_fragment_a_numbered_sop(fs):
    original = write(fs, SOP, importance=60)
    done = check_fragmented(fs, original, SOP)
    contents = [fs.memories.get(d).content for d in done.details]
    steps = [c for c in contents if c[:2] in ("1.", "2.", "3.", "4.")]
    assert [s[:2] for s in steps] == ["1.", "2.", "3.", "4."]
    assert "pg_ctl promote -D /var/lib/pg" in steps[1]
    assert fs.memories.get(done.header).content.startswith("Failover SOP")
    assert fs.memories.get(done.header).importance == HEADER_IMPORTANCE
    assert all(fs.memories.get(d).importance == 60 for d in done.details)


def test_fragment_a_config_dossier(fs):
    original = write(fs, DOSSIER, CONFIG)
    done = check_fragmented(fs, original, DOSSIER, CONFIG)
    contents = [fs.memories.get(d).content for d in done.details]
    for key in (
        "billing.url",
        "billing.timeout_seconds",
        "billing.retries",
        "billing.currency",
        "feature/invoices[v2]",
    ):
        assert sum(c.count(key) for c in contents) == 1, key
        (holder,) = [c for c in contents if key in c]
        assert holder.startswith(key)  # one setting per detail


def test_fragment_paragraphs(fs):
    original = write(fs, PARAGRAPHS)
    done = check_fragmented(fs, original, PARAGRAPHS)
    joined = " ".join(fs.memories.get(d).content for d in done.details)
    assert "We pinned tiktoken" in joined and "Revisit when" in joined


def test_fragment_an_intent_memory_keeps_its_kind(fs):
    text = "1. Never deploy on Fridays.\n2. Never skip the canary."
    original = write(fs, text, INTENT)
    done = check_fragmented(fs, original, text, INTENT)
    assert fs.memories.get(done.header).kind == "intent"
    assert done.summary_by == "first line"
    assert fs.memories.get(done.header).content.startswith("1. Never deploy on Fridays")


def test_a_long_first_line_makes_a_short_summary(fs):
    text = "1. " + "very long step " * 40 + "\n2. short step"
    done = check_fragmented(fs, write(fs, text), text)
    header = fs.memories.get(done.header).content
    assert len(header) <= SHORT
    assert header.startswith("1. very long step")


def test_summary_by_is_first_line_or_title_without_a_model(fs):
    done = fragment(fs, write(fs, SOP))
    assert done.summary_by in ("first line", "title line")
    done = fragment(fs, write(fs, "1. one thing\n2. another thing"))
    assert done.summary_by == "first line"


def test_summary_by_the_model_when_it_answers(open_ops):
    model = ScriptedModel(["Failover of the primary database:\n  four   steps."])
    s = open_ops("m.db", ("scripted-model", model))
    try:
        original = write(s, SOP)
        done = fragment(s, original)
        assert done.summary_by == "model"
        header = s.memories.get(done.header).content
        assert header.startswith("Failover of the primary database: four steps.")
        assert [p.purpose for p in model.prompts] == ["summarize"]
        assert SOP in model.prompts[0].messages[-1]["content"]
        assert reconstruct(s, done.header) == SOP
        assert s.memories.get(original).superseded_by == done.header
    finally:
        s.close()


def test_a_long_model_summary_is_cut_short(open_ops):
    model = ScriptedModel(["word " * 200])
    s = open_ops("m.db", ("scripted-model", model))
    try:
        done = fragment(s, write(s, SOP))
        assert done.summary_by == "model"
        assert len(s.memories.get(done.header).content) <= SHORT
        assert reconstruct(s, done.header) == SOP
    finally:
        s.close()


def test_a_blank_model_reply_falls_back(open_ops):
    model = ScriptedModel(["   \n "])
    s = open_ops("m.db", ("scripted-model", model))
    try:
        done = fragment(s, write(s, "1. one thing\n2. another thing"))
        assert done.summary_by == "first line"
        assert len(model.prompts) == 1
    finally:
        s.close()


# Refusals: nothing written


@pytest.mark.parametrize(
    "text",
    [
        "A single line with nothing to split.",
        "One paragraph\nwrapped over\nthree lines.",
        "1. only one step",
        "key = value",
        "1. same step\n1. SAME step.",  # a repeat is kept with its twin: one piece
    ],
)
def test_text_without_parts_is_refused_and_nothing_written(fs, text):
    original = write(fs, text)
    before = dump(fs)
    with pytest.raises(CompositeError, match=str(original)):
        fragment(fs, original)
    assert dump(fs) == before


def test_fragmenting_a_header_again_is_refused(fs):
    done = fragment(fs, write(fs, SOP))
    before = counts(fs)
    snapshot = dump(fs)
    with pytest.raises(CompositeError, match="header"):
        fragment(fs, done.header)
    with pytest.raises(CompositeError, match="superseded"):
        fragment(fs, done.original)
    assert counts(fs) == before and dump(fs) == snapshot


def test_fragmenting_an_archived_memory_is_refused(fs):
    original = write(fs, SOP)
    fs.memories.archive(original)
    before = dump(fs)
    with pytest.raises(CompositeError, match="archived"):
        fragment(fs, original)
    assert dump(fs) == before


def test_fragment_is_one_transaction(fs, monkeypatch):
    original = write(fs, SOP)
    before = dump(fs)

    def boom(*args, **kwargs):
        raise RuntimeError("composite create failed")

    monkeypatch.setattr(fs.composites, "create", boom)
    with pytest.raises(RuntimeError, match="composite create failed"):
        fragment(fs, original)
    assert dump(fs) == before


# The split_memory hook


class SemicolonSplitter:
    def __init__(self) -> None:
        self.calls: list[int] = []

    @hookimpl
    def split_memory(self, store, memory):
        self.calls.append(memory.id)
        text = memory.content
        cuts = [i + 1 for i, ch in enumerate(text) if ch == ";"]
        cuts = [0, *cuts, len(text)]
        return [text[a:b] for a, b in itertools.pairwise(cuts) if text[a:b]]


class BadSplitter:
    def __init__(self, pieces) -> None:
        self.pieces = pieces

    @hookimpl
    def split_memory(self, store, memory):
        return self.pieces


class PassingSplitter:
    @hookimpl
    def split_memory(self, store, memory):
        return None


def test_a_plugin_splitter_overrides_the_built_in(open_ops):
    plugin = SemicolonSplitter()
    s = open_ops("p.db", ("semicolons", plugin))
    try:
        # Numbered steps: the built-in would cut at "1." and "2."; the plugin wins.
        text = "1. alpha; beta;\n2. gamma; delta"
        original = write(s, text)
        done = fragment(s, original)
        assert plugin.calls == [original]
        contents = [s.memories.get(d).content for d in done.details]
        assert any(c == "beta;" for c in contents)
        assert any(c == "delta" for c in contents)
        assert reconstruct(s, done.header) == text
        # Text the built-in cannot split at all.
        plain = "red; green; blue"
        done = fragment(s, write(s, plain))
        assert reconstruct(s, done.header) == plain
    finally:
        s.close()


def test_a_plugin_returning_none_leaves_it_to_the_built_in(open_ops):
    s = open_ops("p.db", ("passing", PassingSplitter()))
    try:
        done = fragment(s, write(s, SOP))
        assert reconstruct(s, done.header) == SOP
        assert len(done.details) >= 4
    finally:
        s.close()


@pytest.mark.parametrize(
    "pieces",
    [
        ["1. one\n", "2. two and more"],  # text is missing
        ["1. one\n", "2. two", "3. three"],  # text added
        ["2. two", "1. one\n"],  # reordered
        ["1. one", "2. two"],  # the newline lost
    ],
)
def test_a_splitter_whose_pieces_do_not_add_up_is_refused(open_ops, pieces):
    s = open_ops("b.db", ("bad", BadSplitter(pieces)))
    try:
        original = write(s, "1. one\n2. two")
        before = dump(s)
        with pytest.raises(CompositeError, match="do not add up"):
            fragment(s, original)
        assert dump(s) == before
    finally:
        s.close()


def test_a_splitter_returning_one_piece_is_refused(open_ops):
    s = open_ops("b.db", ("one", BadSplitter(["1. one\n2. two"])))
    try:
        original = write(s, "1. one\n2. two")
        before = dump(s)
        with pytest.raises(CompositeError):
            fragment(s, original)
        assert dump(s) == before
    finally:
        s.close()


# Lifecycle around the original


def test_the_original_s_composites_follow_it_to_the_header(fs):
    original = write(fs, SOP)
    theme_head = write(fs, "Database operations")
    other = write(fs, "a related note")
    theme = fs.composites.create("theme", theme_head, [other, original])
    led = fs.composites.create("cause", original, [other])
    done = fragment(fs, original)
    assert fs.composites.get(theme.id).members == [other, done.header]
    assert fs.composites.get(led.id).head == done.header
    assert {c.id for c in fs.composites.by_head(done.header)} == {led.id, done.composite}
    assert reconstruct(fs, done.header) == SOP


def test_reconstruct_after_a_detail_leaves_keeps_the_title_line(fs):
    """``reconstruct``: the text a header and its details stand for; once the
    members change it is the current text, and a title-line header is part of it."""
    text = "Deploy runbook\n1. build it\n2. test it\n3. ship it"
    done = fragment(fs, write(fs, text))
    assert done.summary_by == "title line"
    fs.composites.remove(done.composite, done.details[-1])
    current = reconstruct(fs, done.header)
    assert current.splitlines()[0] == "Deploy runbook"
    assert "3. ship it" not in current and "2. test it" in current


def test_reconstruct_of_a_memory_that_is_no_header(fs):
    plain = write(fs, "not a header")
    with pytest.raises(CompositeError, match=str(plain)):
        reconstruct(fs, plain)


def test_reconstruct_is_exact_even_when_a_piece_matches_an_older_memory(fs):
    """Nothing is lost: the original text comes back exactly, whatever else the
    category holds (here an older memory whose normalized text equals one
    paragraph, but written in other case and punctuation)."""
    write(fs, "deploy on tuesdays")
    text = "Release notes\n\nDeploy on Tuesdays.\n\nTag every release."
    done = fragment(fs, write(fs, text))
    assert reconstruct(fs, done.header) == text


def test_two_sops_with_the_same_title_reconstruct_separately(fs):
    first = "Deploy SOP\n1. build it\n2. ship it"
    second = "Deploy SOP\n1. test it\n2. tag it"
    one = fragment(fs, write(fs, first))
    two = fragment(fs, write(fs, second))
    assert reconstruct(fs, one.header) == first
    assert reconstruct(fs, two.header) == second


# Properties

WORDS = st.sampled_from(
    ["alpha", "beta", "gamma", "delta", "Deploy", "restart", "cache", "x", "42", "ÄÖ", "naïve"]
)
SPACE = st.sampled_from([" ", "  ", "\t", " \t "])
EOL = st.sampled_from(["\n", " \n", "\t\n", "\n\n", "\n \n", "\n\n\n"])
PARA_BREAK = st.sampled_from(["\n\n", "\n \n", "\n\t\n\n", "\n\n\n  ", "  \n\n"])
LEAD = st.sampled_from(["", "\n", "\n\n", " \n\t\n", "   "])


@st.composite
def bodies(draw, n_min=2, n_max=6):
    n = draw(st.integers(n_min, n_max))
    out = []
    for i in range(n):
        words = draw(st.lists(WORDS, min_size=1, max_size=4))
        sep = draw(SPACE)
        out.append(sep.join([*words, f"w{i}"]))  # w{i} keeps items distinct
    return out


@st.composite
def step_texts(draw):
    items = draw(bodies())
    marker = draw(st.sampled_from([".", ")"]))
    lines = []
    for number, body in enumerate(items, start=1):
        indent = draw(st.sampled_from(["", " ", "\t", "  "]))
        lines.append(f"{indent}{number}{marker}{draw(SPACE)}{body}{draw(EOL)}")
    if draw(st.booleans()):  # repeated steps, maybe in other case
        for _ in range(draw(st.integers(1, 2))):
            index = draw(st.integers(0, len(lines) - 1))
            repeat = lines[index]
            if draw(st.booleans()):
                repeat = repeat.upper()
            lines.insert(draw(st.integers(index + 1, len(lines))), repeat)
    preamble = draw(
        st.sampled_from(
            ["", "Runbook\n", "Runbook: restart the cache\n\n", "Notes:\n  see below\n"]
        )
    )
    return draw(LEAD) + preamble + "".join(lines) + draw(st.sampled_from(["", "\n", "  \n\n"]))


@st.composite
def config_texts(draw):
    keys = draw(
        st.lists(
            st.from_regex(r"[a-z][a-z0-9_.\-/]{0,8}", fullmatch=True),
            min_size=2,
            max_size=6,
            unique=True,
        )
    )
    lines = []
    for key in keys:
        value = draw(st.from_regex(r"[A-Za-z0-9:/._\-]{1,10}", fullmatch=True))
        lines.append(
            f"{draw(st.sampled_from(['', ' ', '  ']))}{key}{draw(st.sampled_from(['', ' ', '  ']))}="
            f"{draw(st.sampled_from(['', ' ', '   ']))}{value}{draw(EOL)}"
        )
    preamble = draw(st.sampled_from(["", "# settings\n", "[service]\n\n"]))
    return draw(LEAD) + preamble + "".join(lines)


@st.composite
def paragraph_texts(draw):
    paras = []
    for body in draw(bodies()):
        wrapped = body.replace("w", "\nw", 1) if draw(st.booleans()) else body
        paras.append(wrapped)
    if draw(st.booleans()):
        paras.insert(draw(st.integers(1, len(paras))), paras[0])  # a repeated paragraph
    text = ""
    for para in paras[:-1]:
        text += para + draw(PARA_BREAK)
    return draw(LEAD) + text + paras[-1] + draw(st.sampled_from(["", "\n", " \n\n"]))


TEXTS = st.one_of(step_texts(), config_texts(), paragraph_texts())


@pytest.mark.slow
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(TEXTS)
def test_reconstruct_gives_back_the_original_exactly(memsdk_templates, ops_pack, raw):
    """Texts of steps, settings or paragraphs, with odd whitespace, repeats and
    leading blank lines: the header and details give back the memory's text
    exactly. (A write strips the ends, so the memory's text is ``raw.strip()``.)"""
    with tempfile.TemporaryDirectory() as directory:
        s = memsdk_templates.open(
            Path(directory) / "h.db", ops_pack, project=PROJECT, plugins=fresh_plugin_manager()
        )
        try:
            original = s.memories.write(raw, CAT).id
            text = s.memories.get(original).content
            assert text == raw.strip()
            done = fragment(s, original)
            assert reconstruct(s, done.header) == text
            assert s.memories.get(original).superseded_by == done.header
            header = s.memories.get(done.header)
            assert header.importance >= HEADER_IMPORTANCE and header.category == CAT
            assert s.composites.get(done.composite).members == done.details
        finally:
            s.close()


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.one_of(TEXTS, st.text(alphabet=st.sampled_from("ab1.)= \t\n-#"), max_size=80)))
def test_the_built_in_splitter_cuts_without_losing_a_character(text):
    pieces = split_text(text)
    if pieces is not None:
        assert "".join(pieces) == text
        assert all(pieces)
