"""Issue 17: the historian sees and fills composites; classify reads criteria text and headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from plugin_sdk import Store, validate_pack
from plugin_sdk.stages.classify import classify
from plugin_sdk.stages.historian import run_historian
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager
from tests.stages.test_stage_inputs import PACK


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def store(tmp_path: Path, model: ScriptedModel):
    with Store(
        tmp_path / "c.db", project="c", plugins=fresh_plugin_manager(("scripted-model", model))
    ) as store:
        store.packs.install(validate_pack(PACK, source="watch"))
        yield store


def apple_run(store: Store) -> tuple[int, list[int], int]:
    header = store.memories.write("Stowage plan for the apple run", "CARGO_LOG").id
    steps = [
        store.memories.write(f"Step {n}: stow the apple crates in hold {n}.", "CARGO_LOG").id
        for n in (1, 2)
    ]
    composite = store.composites.create("sequence", header, steps)
    return header, steps, composite.id


def test_the_historian_shows_the_header_of_a_hit_and_files_a_fact_under_it(store, model):
    header, steps, composite = apple_run(store)
    model.add(
        f'<facts category="CARGO_LOG" under="{header}">\n'
        "- Step 3: stow the apple crates in hold 3.\n</facts>"
    )
    report = run_historian(
        store, [{"role": "user", "content": "Next we stow the apple crates in hold 3."}]
    )
    prompt = model.prompts[0].messages[0]["content"]
    assert f"(header {header}: a sequence of 2) Stowage plan for the apple run" in prompt
    assert f"(under header {header}) Step 1" in prompt
    assert 'under="ID"' in prompt
    [new] = report.written
    assert store.composites.get(composite).members == [*steps, new]
    assert report.placed == [{"id": new, "under": header, "composite": composite}]


def test_a_fact_under_an_id_the_model_was_not_shown_is_written_but_not_placed(store, model):
    _header, steps, composite = apple_run(store)
    model.add('<facts category="CARGO_LOG" under="999">\n- Hold 9 is flooded.\n</facts>')
    report = run_historian(store, [{"role": "user", "content": "Hold 9 is flooded."}])
    assert len(report.written) == 1 and report.placed == []
    assert store.composites.get(composite).members == steps


def test_classify_rules_read_the_criteria_text(store, model):
    store.plugins.unregister(name="scripted-model")
    like = store.memories.write("Hold 4 carries 40 crates of apples today.", "CARGO_LOG").id
    unlike = store.memories.write("Crew gossip about the cook.", "CARGO_LOG").id
    plain = store.memories.write("Ballast tanks were pumped out at noon today.", "CARGO_LOG").id
    classify(store)
    score = {i: store.memories.get(i).importance for i in (like, unlike, plain)}
    assert score[like] > score[plain] > score[unlike]


def test_a_detail_inherits_its_headers_scope_on_both_paths(store, model):
    header, steps, _ = apple_run(store)
    store.db.execute("UPDATE memories SET scope = 'global', shareable = 1 WHERE id = ?", [header])
    model.add('{"importance": 80, "scope": "global", "shareable": true}')  # the header
    model.add(*['{"importance": 60, "scope": "project", "shareable": false}'] * 2)
    report = classify(store)
    assert [(store.memories.get(i).scope, store.memories.get(i).shareable) for i in steps] == [
        ("global", True),
        ("global", True),
    ]
    assert report.signals[f"model; scope from header {header}"] == 2
    detail_prompt = model.prompts[1].messages[0]["content"]
    assert "Typical: Hold 2 carries 40 crates of apples." in detail_prompt
    assert "Excluded: Crew gossip." in detail_prompt
    assert f"under the header [{header}]" in detail_prompt
    store.plugins.unregister(name="scripted-model")
    store.db.execute("UPDATE memories SET scope = 'project' WHERE id IN (?, ?)", steps)
    classify(store)
    assert [store.memories.get(i).scope for i in steps] == ["global", "global"]
