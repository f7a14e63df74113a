"""A brand-new pack drives every stage: taxonomy as data, end to end.

The pack ``harbour`` declares categories that no built-in pack has
(``HARBOUR_RULES``, ``TIDE_TABLES``, ``BERTH_NOTES``). Installed from a file in
a fresh store, it is the whole vocabulary of the historian's prompt, the
memory tool's schema, admission, classify, the injector's sections and the
dreamer's curate and retrospective tasks. Nothing in the code knows these
names: they come from the DB.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_sdk_plugins.injection import OPEN_TAG

from plugin_sdk import Store, available_packs, resolve_pack
from plugin_sdk.model.prompts import (
    dreamer_curate,
    dreamer_retrospective,
    historian_system,
    tool_schema,
)
from plugin_sdk.proposals.filing import pending
from plugin_sdk.stages.classify import classify, rule_importance
from plugin_sdk.stages.dreamer import Dreamer
from plugin_sdk.stages.historian import run_historian
from plugin_sdk.stages.inject import inject
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager

PROJECT = "port-ellen"
NAMES = ["HARBOUR_RULES", "TIDE_TABLES", "BERTH_NOTES"]

HARBOUR_TOML = """
format = 1
name = "harbour"
version = "0.3.0"
description = "A harbour master's assistant: standing rules, tide tables and berth notes."

[categories.HARBOUR_RULES]
kind = "intent"
priority = 5
promotable = false
label = "Harbour rules"

[categories.HARBOUR_RULES.criteria]
definition = "Standing rules every vessel movement in the harbour must follow."
positive_examples = ["No vessel over 40 m enters the inner basin without a pilot."]
negative_examples = ["High water today is 04:12. (TIDE_TABLES)"]
exclusions = ["Rules for a single day's event."]

[categories.TIDE_TABLES]
kind = "content"
priority = 15
promotable = true
label = "Tide tables"

[categories.TIDE_TABLES.criteria]
definition = "Observed and predicted tide times and heights at the harbour's gauges."
positive_examples = ["Spring high water at the east gauge reaches 4.1 m."]
exclusions = ["Weather forecasts."]

[categories.BERTH_NOTES]
kind = "content"
priority = 25
promotable = true
label = "Berth notes"

[categories.BERTH_NOTES.criteria]
definition = "What each berth offers and where it is awkward."
positive_examples = ["Berth 4 has fresh water and 63 A shore power."]

[prompts]
historian = "Give tide heights in metres, to one decimal."
"""

TIDE = "High water at the east gauge on Monday is 04:12 at a height of 3.4 m"
TIDE_AGAIN = TIDE + " today"
RULE = "No vessel over 40 m enters the inner basin without a pilot aboard"
RULE_AGAIN = RULE + " ever"
CHUNK = [
    {"role": "user", "content": "Tide check: high water at the east gauge on Monday is 04:12."},
    {"role": "assistant", "content": "Logged. Reminder: berth 4 has fresh water."},
]


@pytest.fixture
def pack_file(tmp_path: Path) -> Path:
    path = tmp_path / "harbour.toml"
    path.write_text(HARBOUR_TOML, "utf-8")
    return path


def open_store(tmp_path: Path, pack_file: Path, model: ScriptedModel | None = None) -> Store:
    plugins = [("scripted-model", model)] if model is not None else []
    store = Store(tmp_path / "harbour.db", project=PROJECT, plugins=fresh_plugin_manager(*plugins))
    if not store.packs.installed():
        store.packs.install(resolve_pack(str(pack_file)))
    return store


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def store(tmp_path: Path, pack_file: Path, model: ScriptedModel):
    with open_store(tmp_path, pack_file, model) as s:
        yield s


@pytest.fixture
def plain_store(tmp_path: Path, pack_file: Path):
    """The same pack, no model registered."""
    with open_store(tmp_path, pack_file) as s:
        yield s


def builtin_category_names() -> set[str]:
    names: set[str] = set()
    for available in available_packs():
        if available.pack is not None:
            names.update(available.pack.categories)
    return names


def test_the_names_are_new(store):
    builtin = builtin_category_names()
    assert {"OPS_RULES", "PROJECT_RULES"} <= builtin  # the built-in packs were found
    assert builtin.isdisjoint(NAMES)
    assert store.category_names() == NAMES


# Prompt and schema


def test_historian_prompt_carries_the_new_criteria(store):
    text = historian_system(store)
    for category in store.categories():
        assert f"## {category.name} ({category.label}): {category.kind}" in text
        assert category.value("definition") in text
    assert "- No vessel over 40 m enters the inner basin without a pilot." in text
    assert "- Spring high water at the east gauge reaches 4.1 m." in text
    assert "- Weather forecasts." in text
    assert "Give tide heights in metres, to one decimal." in text  # the pack's fragment
    assert "Use only these category names: HARBOUR_RULES, TIDE_TABLES, BERTH_NOTES." in text
    for name in builtin_category_names():
        assert name not in text


def test_dreamer_prompts_carry_the_new_criteria(store):
    curate = dreamer_curate(store)
    retrospective = dreamer_retrospective(store)
    for category in store.categories():
        assert category.value("definition") in curate
    assert "Standing rules every vessel movement" in retrospective
    assert "Use only these category names: HARBOUR_RULES." in retrospective
    # rules are proposed in intent categories only
    assert "## HARBOUR_RULES" in retrospective
    assert "## TIDE_TABLES" not in retrospective and "## BERTH_NOTES" not in retrospective


def test_tool_schema_enum_is_exactly_the_new_names(store):
    schema = tool_schema(store)
    assert schema["input_schema"]["properties"]["category"]["enum"] == NAMES
    assert "- HARBOUR_RULES (intent): Standing rules every vessel movement" in schema["description"]


# Historian: admission by the new names


def test_a_reply_tagged_with_the_new_names_is_admitted(store, model):
    model.add(
        '<facts category="TIDE_TABLES">\n'
        f"- {TIDE}\n"
        "</facts>\n"
        '<facts category="BERTH_NOTES">\n'
        "- Berth 4 has fresh water and 63 A shore power.\n"
        "</facts>\n"
        '<facts category="HARBOUR_RULES">\n'
        "- Check the tide table before every berthing.\n"
        "</facts>"
    )
    report = run_historian(store, CHUNK)
    assert report.quarantined == []
    written = [store.memories.get(i) for i in report.written]
    assert [(m.category, m.kind) for m in written] == [
        ("TIDE_TABLES", "content"),
        ("BERTH_NOTES", "content"),
        ("HARBOUR_RULES", "intent"),
    ]
    assert "Give tide heights in metres" in model.prompts[0].system


def test_an_unknown_tag_is_quarantined_and_reported(store, model):
    model.add(
        '<facts category="TIDE_TABLES">\n- Low water is 10:31.\n</facts>\n'
        '<facts category="OPS_RULES">\n- Rollback first, debug second.\n</facts>'
    )
    report = run_historian(store, CHUNK)
    assert len(report.written) == 1
    [entry] = report.quarantined
    assert entry["category"] == "OPS_RULES"  # a built-in pack's name means nothing here
    assert all(name in entry["reason"] for name in NAMES)
    kept = store.memories.get(entry["id"])
    assert (kept.status, kept.content) == ("quarantined", "Rollback first, debug second.")


# Classify


def test_classify_assigns_importances_from_the_new_pack(plain_store):
    store = plain_store
    text = "the harbour master walks the quay every evening"  # 8 words, nothing specific
    ids = {name: store.memories.write(text, name).id for name in NAMES}
    report = classify(store)
    assert report.signals == {"rules": 3}
    got = {name: store.memories.get(i).importance for name, i in ids.items()}
    assert got == {"HARBOUR_RULES": 80, "TIDE_TABLES": 55, "BERTH_NOTES": 40}
    for rank, name in enumerate(NAMES):
        memory = store.memories.get(ids[name])
        assert got[name] == rule_importance(memory, rank, 3, memory.kind)
        assert memory.category == name


def test_classify_with_the_model_sees_the_new_criteria(store, model):
    store.memories.write(TIDE, "TIDE_TABLES")
    model.add('{"importance": 64, "scope": "project", "shareable": true}')
    assert classify(store).signals == {"model": 1}
    assert "Observed and predicted tide times" in model.prompts[0].messages[0]["content"]
    assert store.memories.list()[0].importance == 64


# Injection


def test_injector_shows_the_new_categories_as_sections(plain_store):
    store = plain_store
    store.memories.write(TIDE, "TIDE_TABLES", importance=70)
    store.memories.write("Berth 4 has fresh water and 63 A shore power.", "BERTH_NOTES")
    store.memories.write(RULE, "HARBOUR_RULES", importance=90)
    lines = inject(store).text.splitlines()
    assert lines[0] == OPEN_TAG and lines[-1] == "</memory>"
    heads = [line for line in lines if line.startswith("#")]
    assert heads == [
        "# Directives (follow these)",
        "## HARBOUR_RULES",
        "# Known facts",
        "## TIDE_TABLES",
        "## BERTH_NOTES",
    ]
    assert any(RULE in line for line in lines[2:4])


# The dreamer's tasks over the new pack


def test_curate_runs_over_the_new_pack(plain_store):
    store = plain_store
    tide = store.memories.write(TIDE, "TIDE_TABLES").id
    tide_again = store.memories.write(TIDE_AGAIN, "TIDE_TABLES").id
    berth_copy = store.memories.write(TIDE, "BERTH_NOTES").id  # same words, another category
    rule = store.memories.write(RULE, "HARBOUR_RULES").id
    rule_again = store.memories.write(RULE_AGAIN, "HARBOUR_RULES").id
    [report] = Dreamer(store).run("curate")
    assert report.finished_pass
    assert store.memories.get(tide).superseded_by == tide_again
    assert store.memories.get(tide_again).merged_from == [tide]
    assert store.memories.get(berth_copy).status == "active"
    for intent in (rule, rule_again):
        assert store.memories.get(intent).status == "active"
    [proposal] = pending(store)
    assert proposal.diff["category"] == "HARBOUR_RULES"
    assert proposal.diff["action"] == "merge"


def test_retrospective_with_the_model_proposes_a_rule_in_the_new_intent_category(store, model):
    first = store.memories.write(TIDE, "TIDE_TABLES")
    store.memories.write(TIDE, "TIDE_TABLES")  # seen twice: it recurs
    store.memories.write("Berth 4 has fresh water and 63 A shore power.", "BERTH_NOTES")  # once
    model.add(
        '<facts category="HARBOUR_RULES">\n'
        "- Check the east gauge before any berthing at low water.\n"
        "</facts>\n"
        '<facts category="TIDE_TABLES">\n- Not a rule category.\n</facts>\n'
        '<facts category="OPS_RULES">\n- Unknown here.\n</facts>'
    )
    [report] = Dreamer(store).run("retrospective")
    assert report.finished_pass and report.handled == 1
    [prompt] = model.prompts
    assert prompt.purpose == "retrospective"
    assert prompt.system == dreamer_retrospective(store)
    assert f"[{first.id}] (TIDE_TABLES, seen 2x) {TIDE}" in prompt.messages[0]["content"]
    assert "Berth 4" not in prompt.messages[0]["content"]
    proposal, content, unknown = pending(store)
    assert proposal.diff_type == "memory_entry"
    assert proposal.source == "dreamer:retrospective"
    assert proposal.diff == {
        "action": "write",
        "category": "HARBOUR_RULES",
        "content": "Check the east gauge before any berthing at low water.",
    }
    assert proposal.evidence == [first.id]
    # issue 25: the blocks that are no rule are kept for a person with the reason, never dropped
    assert content.diff == {"action": "review", "reply": "Not a rule category."}
    assert "'TIDE_TABLES' is a content category" in content.rationale
    assert "HARBOUR_RULES" in content.rationale
    assert unknown.diff == {"action": "review", "reply": "Unknown here."}
    assert "'OPS_RULES' is not a category of this store" in unknown.rationale
    assert report.error is None
    # a proposal only: no intent memory was written
    assert store.memories.list(kind="intent") == []


def test_retrospective_keeps_prose_next_to_a_rule_for_review(store, model):
    store.memories.write(TIDE, "TIDE_TABLES")
    store.memories.write(TIDE, "TIDE_TABLES")
    model.add(
        "Here is what I found about the gauges.\n"
        '<facts category="harbour_rules">\n- Check the east gauge first.\n</facts>'
    )
    Dreamer(store).run("retrospective")
    rule, prose = pending(store)
    assert rule.diff["category"] == "HARBOUR_RULES"  # the attribute matched in any case
    assert prose.diff == {"action": "review", "reply": "Here is what I found about the gauges."}
    assert "text outside any <facts> block" in prose.rationale


def test_retrospective_without_a_model_proposes_promotion_within_the_pack(plain_store):
    store = plain_store
    first = store.memories.write(TIDE, "TIDE_TABLES")
    store.memories.write(TIDE, "TIDE_TABLES")
    Dreamer(store).run("retrospective")
    [proposal] = pending(store)
    assert proposal.diff == {"action": "write", "category": "HARBOUR_RULES", "content": TIDE}
    assert proposal.evidence == [first.id]


def test_the_whole_cycle_on_the_new_pack(store, model):
    """historian -> classify -> dreamer -> injector, all by the new pack's names."""
    model.add(
        f'<facts category="TIDE_TABLES">\n- {TIDE}\n- {TIDE_AGAIN}\n</facts>\n'
        f'<facts category="HARBOUR_RULES">\n- {RULE}\n</facts>'
    )
    written = run_historian(store, CHUNK).written
    assert len(written) == 3
    model.add(*['{"importance": 70, "scope": "project", "shareable": false}'] * 3)
    assert classify(store).signals == {"model": 3}
    model.add("High water, east gauge, Monday: 04:12, 3.4 m.")  # curate's merged text
    Dreamer(store).run("curate")
    tides = store.memories.list(category="TIDE_TABLES")
    assert [m.content for m in tides] == ["High water, east gauge, Monday: 04:12, 3.4 m."]
    result = inject(store)
    assert "## TIDE_TABLES" in result.text and "## HARBOUR_RULES" in result.text
    assert "04:12, 3.4 m." in result.text
    assert json.loads(json.dumps(result.to_dict()))["shown"] == result.shown
    assert model.answers == []  # every planned model call happened
