"""Issue 17: curate never merges near-duplicates whose values differ; it records a conflict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_sdk_plugins.curate import SIMILARITY, similarity

from plugin_sdk import Dreamer, Store, validate_pack
from plugin_sdk.cli import cli
from plugin_sdk.retain import polarity
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager, pack_document

PACK = pack_document("ops", "1.0.0", {"OPS_RULES": "intent", "CONFIG_VALUES": "content"})
LINE = "The primary database in eu-west sets max_connections to {} in postgresql.conf"


def open_store(path: Path | str, *plugins) -> Store:
    store = Store(path, project="ops", plugins=fresh_plugin_manager(*plugins))
    store.packs.install(validate_pack(PACK, source="ops"))
    return store


def conflicts(store: Store) -> list[tuple[int, int, str]]:
    return [
        (row["memory_id"], row["other_memory_id"], row["status"])
        for row in store.db.query("SELECT * FROM memory_conflicts ORDER BY id")
    ]


def test_curate_keeps_differing_numbers_apart_and_records_the_conflict(tmp_path):
    with open_store(tmp_path / "c.db") as store:
        old = store.memories.write(LINE.format(400), "CONFIG_VALUES").id
        new = store.memories.write(LINE.format(600), "CONFIG_VALUES").id
        Dreamer(store).run("curate")
        for ident in (old, new):
            memory = store.memories.get(ident)
            assert (memory.status, memory.superseded_by, memory.merged_from) == ("active", None, [])
        assert conflicts(store) == [(old, new, "open")]
        Dreamer(store).run("curate")  # a second pass does not record it twice
        assert len(conflicts(store)) == 1


def test_equal_values_still_merge(tmp_path):
    with open_store(tmp_path / "c.db") as store:
        short = store.memories.write(LINE.format(400), "CONFIG_VALUES").id
        long = store.memories.write(LINE.format(400) + " today", "CONFIG_VALUES").id
        Dreamer(store).run("curate")
        assert store.memories.get(short).superseded_by == long
        assert conflicts(store) == []


def test_a_model_cannot_merge_differing_values_either(tmp_path):
    model = ScriptedModel(["max_connections is 400 (merged)"] * 4)
    with open_store(tmp_path / "c.db", ("scripted-model", model)) as store:
        a = store.memories.write(LINE.format(400), "CONFIG_VALUES").id
        b = store.memories.write(LINE.format(600), "CONFIG_VALUES").id
        Dreamer(store).run("curate")
        assert [store.memories.get(i).status for i in (a, b)] == ["active", "active"]
        assert len(conflicts(store)) == 1


def test_triage_conflicts_lists_memory_conflicts(tmp_path):
    db = tmp_path / "c.db"
    with open_store(db) as store:
        store.memories.write(LINE.format(400), "CONFIG_VALUES")
        store.memories.write(LINE.format(600), "CONFIG_VALUES")
        Dreamer(store).run("curate")
    args = ["review", "conflicts", "--db", str(db), "--project", "ops"]
    runner = CliRunner()
    result = runner.invoke(cli, args, obj={"plugins": fresh_plugin_manager()})
    assert result.exit_code == 0, result.output
    assert "memories 1 and 2: 400 vs 600" in result.output
    listed = json.loads(
        runner.invoke(cli, [*args, "--json"], obj={"plugins": fresh_plugin_manager()}).output
    )
    assert [(c["kind"], c["values"], c["other_values"]) for c in listed] == [
        ("memory", ["400"], ["600"])
    ]


# Property: near-duplicates that differ only in a value are never merged.

SUBJECTS = ["max_connections", "the api gateway port", "the node version", "the backup host"]
value_kinds = st.one_of(
    st.integers(min_value=0, max_value=10**6).map(str),
    st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30)).map(
        lambda v: "v{}.{}.{}".format(*v)
    ),
    st.from_regex(r"db-[a-z]{1,6}\.internal\.example", fullmatch=True),
    st.dates().map(lambda d: d.isoformat()),
)


@settings(
    max_examples=20,
    deadline=None,
)
@given(
    subject=st.sampled_from(SUBJECTS),
    pair=st.tuples(value_kinds, value_kinds).filter(lambda p: p[0].casefold() != p[1].casefold()),
    suffix=st.sampled_from(["", " today", " since the last release"]),
)
def test_near_duplicates_with_differing_values_are_never_merged(subject, pair, suffix):
    text = "In the eu-west production cluster {} is set to {} as agreed by the platform team"
    with open_store(":memory:") as store:
        a = store.memories.write(text.format(subject, pair[0]), "CONFIG_VALUES").id
        b = store.memories.write(text.format(subject, pair[1]) + suffix, "CONFIG_VALUES").id
        Dreamer(store).run("curate")
        assert [store.memories.get(i).status for i in (a, b)] == ["active", "active"]
        assert store.memories.get(a).content == text.format(subject, pair[0])
        assert store.memories.get(b).content == text.format(subject, pair[1]) + suffix
        near = similarity(store.memories.get(a).content, store.memories.get(b).content)
        assert conflicts(store) == ([(a, b, "open")] if near >= SIMILARITY else [])


# Issue 25: a polarity swap is a value conflict; another project's shared memory is skipped.

FLAG = "The staging feature flag for dark mode is {} on every web node of the cluster"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (FLAG.format("enabled"), FLAG.format("disabled")),
        (
            "Deploys to the staging cluster may run on a Friday afternoon after review",
            "Deploys to the staging cluster may not run on a Friday afternoon after review",
        ),
        (
            "Engineers must restart the payment workers before each schema migration runs",
            "Engineers must not restart the payment workers before each schema migration runs",
        ),
        (
            "The nightly export job runs with compression for the analytics warehouse tables",
            "The nightly export job runs without compression for the analytics warehouse tables",
        ),
    ],
)
@pytest.mark.parametrize("with_model", [False, True])
def test_a_polarity_swap_is_a_value_conflict_with_or_without_a_model(
    tmp_path, first, second, with_model
):
    plugins = [("scripted-model", ScriptedModel([first] * 4))] if with_model else []
    with open_store(tmp_path / "c.db", *plugins) as store:
        a = store.memories.write(first, "CONFIG_VALUES").id
        b = store.memories.write(second, "CONFIG_VALUES").id
        assert similarity(first, second) >= SIMILARITY  # near-duplicates by their words
        Dreamer(store).run("curate")
        for ident, text in ((a, first), (b, second)):
            memory = store.memories.get(ident)
            assert (memory.status, memory.superseded_by, memory.content) == ("active", None, text)
        assert conflicts(store) == [(a, b, "open")]


FILLER = [
    "the",
    "staging",
    "cluster",
    "nightly",
    "export",
    "job",
    "for",
    "analytics",
    "warehouse",
    "tables",
    "runs",
    "every",
    "web",
    "node",
    "payment",
    "workers",
    "before",
    "schema",
    "migration",
    "in",
    "production",
    "region",
    "eu-west",
    "team",
    "agreed",
]
SWAPS = [
    *((x, y) for pair in polarity.OPPOSITES for x, y in (pair, pair[::-1])),
    ("may", "may not"),
    ("must", "must not"),
    ("can", "cannot"),
    ("can", "can't"),
    ("is", "is not"),
    ("is", "isn't"),
    ("do", "don't"),
    ("does", "doesn\u2019t"),
    ("will", "won't"),
    ("should", "should not"),
]


@settings(max_examples=40, deadline=None)
@given(
    words=st.lists(
        st.sampled_from([*FILLER, "not", "enabled", "on", "never"]), min_size=8, max_size=16
    ),
    at=st.integers(0, 16),
    swap=st.sampled_from(SWAPS),
    upper=st.booleans(),
    with_model=st.booleans(),
)
def test_curate_never_merges_a_polarity_swap(words, at, swap, upper, with_model):
    before, after = swap
    if upper:
        before, after = before.capitalize(), after.capitalize()
    at = min(at, len(words))
    first = " ".join([*words[:at], before, *words[at:]])
    second = " ".join([*words[:at], after, *words[at:]])
    plugins = [("scripted-model", ScriptedModel([first] * 4))] if with_model else []
    with open_store(":memory:", *plugins) as store:
        a = store.memories.write(first, "CONFIG_VALUES").id
        b = store.memories.write(second, "CONFIG_VALUES").id
        Dreamer(store).run("curate")
        for ident, text in ((a, first), (b, second)):
            memory = store.memories.get(ident)
            assert (memory.status, memory.superseded_by, memory.content) == ("active", None, text)
        near = similarity(first, second) >= SIMILARITY
        assert conflicts(store) == ([(a, b, "open")] if near else [])


CACHE = "In eu-west production the query cache is enabled for the reporting service by default"


def test_curate_skips_another_projects_shared_memory_and_finishes(tmp_path):
    path = tmp_path / "c.db"
    open_store(path).close()
    with Store(path, project="away") as away:
        shared = away.memories.write(CACHE, "CONFIG_VALUES", scope="global", shareable=True).id
    with Store(path, project="ops", plugins=fresh_plugin_manager()) as store:
        own = store.memories.write(CACHE + " today", "CONFIG_VALUES").id
        copy = store.memories.write(CACHE + " this week", "CONFIG_VALUES").id
        # readable here and near both: the candidate that made every run fail
        assert store.memories.get(shared).project == "away"
        assert similarity(CACHE, CACHE + " today") >= SIMILARITY
        [report] = Dreamer(store).run("curate")
        assert report.error is None and report.finished_pass
        [row] = [r for r in Dreamer(store).status() if r["task"] == "curate"]
        assert row["status"] != "failed"
        # its own near-duplicates still merge; the shared memory is neither source nor target
        assert store.memories.get(own).superseded_by == copy
        kept = store.memories.get(shared)
        assert (kept.status, kept.superseded_by, kept.merged_from) == ("active", None, [])
        assert store.memories.get(copy).merged_from == [own]


def test_merged_text_from_a_model_that_flips_a_polarity_is_not_used(tmp_path):
    flipped = FLAG.format("disabled") + " (merged)"
    model = ScriptedModel([flipped])
    with open_store(tmp_path / "c.db", ("scripted-model", model)) as store:
        short = store.memories.write(FLAG.format("enabled"), "CONFIG_VALUES").id
        long = store.memories.write(FLAG.format("enabled") + " today", "CONFIG_VALUES").id
        Dreamer(store).run("curate")
        assert store.memories.get(short).superseded_by == long
        assert store.memories.get(long).content == FLAG.format("enabled") + " today"
    assert polarity.flips("Never restart db-2 at noon", "Restart db-2 at noon")
    assert polarity.flips("Runs with TLS", "Runs without TLS")
    assert not polarity.flips("High water is 3.4 m with a height of 3.4 m", "High water: 3.4 m")
