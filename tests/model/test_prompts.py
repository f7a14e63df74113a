"""Prompts and the memory tool's schema are assembled from the DB's criteria.

Editing criteria changes the prompts and the surface hash; no edit keeps the
bytes; a reset brings the hash back; pack prompt fragments appear; the tool's
category enum is the store's category list; sessions know when they are stale.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from plugin_sdk import NotFound, Pack, Store, validate_pack
from plugin_sdk.cli import cli
from plugin_sdk.model.prompts import (
    dreamer_curate,
    dreamer_retrospective,
    historian_system,
    is_stale,
    record_session,
    surface,
    surface_hash,
    tool_schema,
)
from plugin_sdk.testing import StoreTemplates, fresh_plugin_manager

PROJECT = "prompts"


def lighthouse_pack(*, version: str = "1.0.0", **extra) -> dict:
    return {
        "format": 1,
        "name": "lighthouse",
        "version": version,
        "description": "A pack for prompt tests.",
        "categories": {
            "KEEPER_ORDERS": {
                "kind": "intent",
                "priority": 10,
                "criteria": {
                    "definition": "Standing orders the keeper gives the agent.",
                    "positive_examples": ["Log every lamp failure within the hour."],
                    "negative_examples": ["The lamp was bright tonight. (LAMP_STATE)"],
                    "exclusions": ["Orders for one night only."],
                },
            },
            "LAMP_STATE": {
                "kind": "content",
                "priority": 20,
                "promotable": True,
                "criteria": {"definition": "Observed state of the lamp and the lens."},
            },
        },
        **extra,
    }


def open_store(path: Path) -> Store:
    return Store(path, project=PROJECT, plugins=fresh_plugin_manager())


@pytest.fixture(scope="module")
def lighthouse() -> Pack:
    return validate_pack(lighthouse_pack(), source="test")


@pytest.fixture
def db(tmp_path: Path, memsdk_templates: StoreTemplates, lighthouse: Pack) -> Path:
    """A closed store file with the lighthouse pack."""
    return memsdk_templates.copy(tmp_path / "prompts.db", lighthouse)


@pytest.fixture
def store(db: Path):
    with open_store(db) as s:
        yield s


# Criteria edits reach every prompt and the hash


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("definition", "Orders about the fog horn and nothing else.", None),
        (
            "positive_examples",
            ["Sound the horn every 30 s in fog."],
            "- Sound the horn every 30 s in fog.",
        ),
        (
            "negative_examples",
            ["Fog came in at 02:00. (LAMP_STATE)"],
            "- Fog came in at 02:00. (LAMP_STATE)",
        ),
        (
            "exclusions",
            ["Anything about the keeper's family."],
            "- Anything about the keeper's family.",
        ),
    ],
)
def test_criteria_set_changes_the_prompts_and_the_hash(store, field, value, shown):
    before_hash = surface_hash(store)
    before = surface(store)
    store.criteria.set("KEEPER_ORDERS", field, value)
    expected = shown or value
    for text in (historian_system(store), dreamer_curate(store), dreamer_retrospective(store)):
        assert expected in text
    assert expected not in before["historian"]
    assert surface_hash(store) != before_hash


def test_definition_edit_reaches_the_tool_description(store):
    store.criteria.set("LAMP_STATE", "definition", "Readings of the lens temperature. More text.")
    description = tool_schema(store)["description"]
    assert "- LAMP_STATE (content): Readings of the lens temperature." in description
    assert "More text." not in description  # the tool lists the first sentence only


def test_historian_prompt_carries_every_category_and_its_criteria(store):
    text = historian_system(store)
    for category in store.categories():
        assert f"## {category.name}" in text
        assert category.value("definition") in text
        for field in ("positive_examples", "negative_examples", "exclusions"):
            for value in category.value(field):
                assert f"- {value}" in text
    assert "Use only these category names: KEEPER_ORDERS, LAMP_STATE." in text
    assert text.index("## KEEPER_ORDERS") < text.index("## LAMP_STATE")  # priority order


def test_no_edit_gives_byte_identical_prompts_across_two_store_objects(db):
    with open_store(db) as first, open_store(db) as second:
        assert surface(first) == surface(second)
        assert historian_system(first).encode() == historian_system(second).encode()
        assert surface_hash(first) == surface_hash(second)
        assert surface_hash(first) == surface_hash(first)


def test_reset_brings_the_original_hash_back(store):
    original = surface_hash(store)
    original_prompt = historian_system(store)
    store.criteria.set("LAMP_STATE", "definition", "Something else entirely.")
    store.criteria.set("KEEPER_ORDERS", "exclusions", ["Nothing."])
    assert surface_hash(store) != original
    store.criteria.reset("LAMP_STATE")
    assert surface_hash(store) != original  # one override is still there
    store.criteria.reset("KEEPER_ORDERS", "exclusions")
    assert surface_hash(store) == original
    assert historian_system(store) == original_prompt


def test_installing_another_pack_changes_the_surface(store):
    before = surface_hash(store)
    store.packs.install(
        validate_pack(
            {
                "format": 1,
                "name": "fog",
                "version": "1.0.0",
                "description": "Fog.",
                "categories": {
                    "FOG_LOG": {
                        "kind": "content",
                        "priority": 15,
                        "criteria": {"definition": "Fog."},
                    }
                },
            },
            source="test",
        )
    )
    assert surface_hash(store) != before
    assert "## FOG_LOG" in historian_system(store)


# Pack prompt fragments


FRAGMENTS = {
    "historian": "Always keep lamp readings in candela.",
    "curate": "Never merge two different nights.",
    "retrospective": "Keepers prefer short orders.",
    "tool": "Write lamp readings as numbers.",
}


def fragment_store(tmp_path: Path, prompts: dict[str, str]) -> Store:
    store = open_store(tmp_path / "fragments.db")
    store.packs.install(validate_pack(lighthouse_pack(prompts=prompts), source="test"))
    return store


def test_pack_prompt_fragments_appear_in_their_stage(tmp_path):
    with fragment_store(tmp_path, FRAGMENTS) as store:
        shown = surface(store)
        assert FRAGMENTS["historian"] in shown["historian"]
        assert "# Notes from pack lighthouse" in shown["historian"]
        assert FRAGMENTS["curate"] in shown["curate"]
        assert FRAGMENTS["retrospective"] in shown["retrospective"]
        assert FRAGMENTS["tool"] in shown["tool"]["description"]
        # each fragment only in its own stage
        assert FRAGMENTS["curate"] not in shown["historian"]
        assert FRAGMENTS["historian"] not in shown["curate"] + shown["retrospective"]


def test_historian_fragment_changes_the_hash(tmp_path, store):
    with fragment_store(tmp_path, {"historian": FRAGMENTS["historian"]}) as other:
        assert historian_system(other) != historian_system(store)
        assert surface_hash(other) != surface_hash(store)


def test_dreamer_fragment_reaches_the_dreamer_prompts(tmp_path):
    # The pack schema documents the fragment stages as "historian, dreamer,
    # tool", and `memsdk prompt show dreamer` shows the dreamer's prompts.
    with fragment_store(tmp_path, {"dreamer": "Dreamer: keep every night apart."}) as store:
        assert "Dreamer: keep every night apart." in dreamer_curate(store)
        assert "Dreamer: keep every night apart." in dreamer_retrospective(store)


# The tool schema


def test_tool_schema_category_enum_is_the_store_category_list(store):
    schema = tool_schema(store)
    assert schema["name"] == "memory"
    assert schema["input_schema"]["properties"]["category"]["enum"] == store.category_names()
    assert schema["input_schema"]["properties"]["category"]["enum"] == [
        "KEEPER_ORDERS",
        "LAMP_STATE",
    ]


def test_tool_schema_enum_follows_a_pack_upgrade(store):
    upgraded = lighthouse_pack(version="1.1.0")
    upgraded["categories"]["LENS_LOG"] = {
        "kind": "content",
        "priority": 5,
        "criteria": {"definition": "Lens cleaning log."},
    }
    store.packs.upgrade(validate_pack(upgraded, source="test"), mapping={})
    enum = tool_schema(store)["input_schema"]["properties"]["category"]["enum"]
    assert enum == store.category_names() == ["LENS_LOG", "KEEPER_ORDERS", "LAMP_STATE"]


def test_empty_store_has_an_empty_enum(tmp_path):
    with open_store(tmp_path / "empty.db") as store:
        assert tool_schema(store)["input_schema"]["properties"]["category"]["enum"] == []
        assert "no intent category" in dreamer_retrospective(store)


# Sessions and staleness


def test_record_session_and_is_stale(store):
    digest = record_session(store, "session-1")
    assert digest == surface_hash(store)
    assert is_stale(store, "session-1") is False
    store.criteria.set("LAMP_STATE", "definition", "The lens only.")
    assert is_stale(store, "session-1") is True
    store.criteria.reset("LAMP_STATE")
    assert is_stale(store, "session-1") is False


def test_recording_again_refreshes_the_session(store):
    record_session(store, "session-1")
    store.criteria.set("LAMP_STATE", "definition", "The lens only.")
    assert is_stale(store, "session-1") is True
    record_session(store, "session-1")
    assert is_stale(store, "session-1") is False
    rows = list(store.db.query("SELECT * FROM session_meta"))
    assert len(rows) == 1
    assert rows[0]["project"] == PROJECT


def test_unknown_session_is_not_found(store):
    with pytest.raises(NotFound, match="no-such-session"):
        is_stale(store, "no-such-session")


def test_staleness_is_seen_from_another_store_object(db):
    with open_store(db) as host:
        record_session(host, "s")
    with open_store(db) as editor:
        editor.criteria.set("KEEPER_ORDERS", "definition", "Only written orders.")
    with open_store(db) as host:
        assert is_stale(host, "s") is True


# The command line


@pytest.fixture
def run(db: Path):
    def invoke(*args: str, code: int = 0):
        result = CliRunner().invoke(
            cli,
            [*args, "--db", str(db), "--project", PROJECT],
            env={"MEMSDK_LOAD_PLUGINS": ""},
        )
        assert result.exit_code == code, result.output
        return result

    return invoke


def test_cli_prompt_show_historian(run, store):
    out = run("prompt", "show", "historian").output
    assert out.rstrip() == historian_system(store).rstrip()
    assert "Standing orders the keeper gives the agent." in out


def test_cli_prompt_show_dreamer(run, store):
    out = run("prompt", "show", "dreamer").output
    assert "# curate" in out and "# retrospective" in out
    assert dreamer_curate(store).strip() in out
    assert dreamer_retrospective(store).strip() in out


def test_cli_prompt_show_tool(run, store):
    shown = json.loads(run("prompt", "show", "tool").output)
    assert shown == tool_schema(store)
    assert shown["input_schema"]["properties"]["category"]["enum"] == store.category_names()


def test_cli_prompt_show_json_has_the_hash(run, store):
    shown = json.loads(run("prompt", "show", "historian", "--json").output)
    assert shown["surface_hash"] == surface_hash(store)
    assert shown["text"] == historian_system(store)


def test_cli_prompt_show_follows_a_criteria_edit(run):
    run("criteria", "set", "LAMP_STATE", "definition", "Lens temperature readings.")
    assert "Lens temperature readings." in run("prompt", "show", "historian").output


def test_cli_prompt_hash_record_and_check(run, db):
    with open_store(db) as s:
        expected = surface_hash(s)
    assert run("prompt", "hash").output.strip() == expected
    assert run("prompt", "hash", "--session", "S").output.strip() == expected
    assert run("prompt", "hash", "--session", "S", "--check").output.strip() == "current"
    run("criteria", "set", "KEEPER_ORDERS", "definition", "Orders in writing only.")
    stale = run("prompt", "hash", "--session", "S", "--check", code=1)
    assert stale.output.strip() == "stale"
    run("prompt", "hash", "--session", "S")  # record again: current
    assert run("prompt", "hash", "--session", "S", "--check").output.strip() == "current"


def test_cli_prompt_hash_check_errors(run):
    assert "--check needs --session" in run("prompt", "hash", "--check", code=1).output
    unknown = run("prompt", "hash", "--session", "never-recorded", "--check", code=1)
    assert "never-recorded" in unknown.output
    assert unknown.output.startswith("Error:")
