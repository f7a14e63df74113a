"""Issue 17: curate never merges near-duplicates whose values differ; it records a conflict."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_sdk_plugins.curate import SIMILARITY, similarity

from plugin_sdk import Dreamer, Store, validate_pack
from plugin_sdk.cli import cli
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
