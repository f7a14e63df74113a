"""Group titles people can read: a member's leading clause, never a list of frequent words."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_sdk import Store
from plugin_sdk.cli import cli
from plugin_sdk.composites.labels import terms
from plugin_sdk.composites.mapping import MAP_SOURCE
from plugin_sdk.composites.titles import CUT, MAX_CHARS, MAX_WORDS, is_word_list, lead, title
from plugin_sdk.stages.inject import inject
from plugin_sdk.stages.recall import recall


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Alert DiskUsageHigh: warning at 80% (ticket), critical at 92% (page).",
            "Alert DiskUsageHigh",
        ),
        (
            "2026-08-19 SEV2: kafka-2 filled its data disk. ISR shrank.",
            "kafka-2 filled its data disk",
        ),
        (
            "INCIDENT 2026-07-22 (SEV1): Postgres primary loss and manual failover.",
            "Postgres primary loss and manual failover",
        ),
        (
            "Never run VACUUM FULL on prod tables. Use pg_repack for bloat.",
            "Never run VACUUM FULL on prod tables",
        ),
        ("- Staging may be broken; never page for staging.", "Staging may be broken"),
        ("never, prod, staging", "never"),
        (
            "LimitRange in namespace apps: default requests cpu 100m / memory 256Mi",
            "LimitRange in namespace apps",
        ),
    ],
)
def test_lead_is_the_leading_clause(text, expected):
    assert lead(text) == expected


def test_a_long_clause_is_cut_at_a_word_and_says_so():
    text = "Customer data may only go to external LLM providers if the tenant has opted in to it"
    cut = lead(text)
    assert cut.endswith(CUT) and text.startswith(cut[: -len(CUT)])
    assert len(cut) <= MAX_CHARS and len(cut.split()) <= MAX_WORDS
    assert not cut[: -len(CUT)].endswith((" if", " the", " to"))


def test_the_title_is_the_central_members_clause_and_avoids_taken_ones():
    texts = [
        "Kafka brokers keep seven days of retention on every topic.",
        "Kafka consumer lag pages on-call above 10k messages.",
        "The office plant needs water on Fridays.",
    ]
    members = [(terms(t), t) for t in texts]
    df = {t: 1 for words, _ in members for t in words}
    df["kafka"] = 2
    first = title(members, df, 10)
    assert first in {lead(texts[0]), lead(texts[1])}
    second = title(members, df, 10, taken={first})
    assert second != first and second in {lead(t) for t in texts}


def test_a_model_still_writes_the_header_when_there_is_one():
    # covered end to end in test_toc.py::test_header_text_is_refreshed_from_a_model_when_...;
    # here: without a model the title stands (no comma list of terms).
    assert not is_word_list(title([({"a1"}, "Postgres, Redis, Kafka")], {}, 1))


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC0123456789-_`", min_size=1, max_size=14)
_TEXT = st.lists(
    st.one_of(_WORD, st.sampled_from([",", ".", ";", ":", " - ", "(", ")", "\n", "e.g."])),
    min_size=1,
    max_size=40,
).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=8))
def test_titles_are_bounded_phrases_made_of_member_words(texts):
    members = [(terms(t), t) for t in texts]
    df = {t: sum(t in words for words, _ in members) for words, _ in members for t in words}
    got = title(members, df, len(members))
    if not any(t.strip() for t in texts):
        assert got == ""
        return
    assert got
    assert not is_word_list(got)
    assert len(got) <= MAX_CHARS and len(got.removesuffix(CUT).split()) <= MAX_WORDS
    for word in got.removesuffix(CUT).split():
        bare = word.replace("`", "")
        assert any(bare in t.replace("`", "") for t in texts), word


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    db = tmp_path_factory.mktemp("demo") / "demo.db"
    result = CliRunner().invoke(cli, ["demo", "--db", str(db)], env={"MEMSDK_LOAD_PLUGINS": ""})
    assert result.exit_code == 0, result.output
    with Store(db, project="demo") as store:
        yield store


def _headers(store: Store) -> list[tuple[int, str, str]]:
    return store.db.execute(
        "SELECT id, category, content FROM memories WHERE source = ? AND status = 'active'",
        [MAP_SOURCE],
    ).fetchall()


def test_demo_store_labels_are_phrases_from_their_members(demo):
    headers = _headers(demo)
    assert len(headers) >= 5
    for head, _, text in headers:
        assert not is_word_list(text) and len(text.split()) >= 2, text
        assert len(text) <= MAX_CHARS
        members = [
            demo.memories.get(m).content for c in demo.composites.by_head(head) for m in c.members
        ]
        assert any(
            text.removesuffix(CUT) in " ".join(re.sub(r"\([^()]*\)", "", m).split())
            for m in members
        )


def test_demo_labels_show_in_the_table_of_contents_search_and_recall(demo):
    head, _, text = _headers(demo)[0]
    assert f"] {text}" in inject(demo).text
    words = " ".join(text.removesuffix(CUT).split()[:4])
    assert head in [hit.memory.id for hit in demo.memories.search(words, limit=50)]
    block = recall(demo, text.removesuffix(CUT), record=False)
    assert text in block.text
    assert not re.search(r"\b\w+, \w+, \w+$", block.text, re.M)  # no bare three-word lists
