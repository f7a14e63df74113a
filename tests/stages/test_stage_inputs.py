"""Issue 17: docs/stage-inputs.md says which criteria fields and composite tables each stage
reads; each stage is run here and watched, and the table must match what it does."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from plugin_sdk import Dreamer, Store, inject, validate_pack
from plugin_sdk.stages.classify import classify
from plugin_sdk.stages.historian import run_historian
from plugin_sdk.stages.inject import expand
from plugin_sdk.store import models
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager

DOC = Path(__file__).parents[2] / "docs" / "stage-inputs.md"
COMPOSITE_TABLES = ("composites", "composite_members")
PACK = {
    "format": 1,
    "name": "watch",
    "version": "1.0.0",
    "description": "Watched stages.",
    "categories": {
        "DECK_RULES": {
            "kind": "intent",
            "priority": 10,
            "criteria": {
                "definition": "Standing rules for the deck crew.",
                "positive_examples": ["Lash every crate before leaving port."],
                "negative_examples": ["The crate count was 40 yesterday."],
                "exclusions": ["Weather reports."],
            },
        },
        "CARGO_LOG": {
            "kind": "content",
            "priority": 20,
            "criteria": {
                "definition": "What the ship carries and where it is stowed.",
                "positive_examples": ["Hold 2 carries 40 crates of apples."],
                "negative_examples": ["Always lash crates."],
                "exclusions": ["Crew gossip."],
            },
        },
    },
}
CHUNK = [{"role": "user", "content": "Hold 2 carries 40 crates of apples; lash every crate."}]


def documented() -> dict[str, tuple[set[str], set[str]]]:
    """The table: stage -> (criteria fields, composite tables)."""
    rows = {}
    for line in DOC.read_text("utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or (not cells[0].startswith("`") and not cells[0][:1].isalpha()):
            continue
        if cells[0] in ("stage", "---") or set(cells[0]) <= {"-"}:
            continue
        names = [set(re.findall(r"`([a-z_]+)`", cell)) for cell in cells[1:]]
        rows[cells[0]] = (names[0], names[1])
    return rows


def watch(
    monkeypatch: pytest.MonkeyPatch, store: Store, run: Callable[[], object]
) -> tuple[set[str], set[str]]:
    """The criteria fields read and the composite tables queried while ``run`` runs."""
    fields: set[str] = set()
    tables: set[str] = set()
    value = models.Category.value

    def recording(self, field):
        fields.add(field)
        return value(self, field)

    def trace(sql: str) -> None:
        tables.update(t for t in COMPOSITE_TABLES if re.search(rf"\b{t}\b", sql))

    monkeypatch.setattr(models.Category, "value", recording)
    store.db.conn.set_trace_callback(trace)
    try:
        run()
    finally:
        store.db.conn.set_trace_callback(None)
        monkeypatch.setattr(models.Category, "value", value)
    return fields, tables


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def store(tmp_path: Path, model: ScriptedModel):
    with Store(
        tmp_path / "w.db", project="w", plugins=fresh_plugin_manager(("scripted-model", model))
    ) as store:
        store.packs.install(validate_pack(PACK, source="watch"))
        header = store.memories.write("Stowage plan for the apple run", "CARGO_LOG").id
        steps = [
            store.memories.write(f"Step {n}: stow 40 crates of apples in hold {n}.", "CARGO_LOG").id
            for n in (1, 2)
        ]
        store.composites.create("sequence", header, steps)
        store.memories.write("Lash every crate before leaving port.", "DECK_RULES")
        yield store


def observed(name: str, store: Store, model: ScriptedModel, monkeypatch) -> tuple[set, set]:
    if name == "historian":
        model.add('<facts category="CARGO_LOG">\n- Hold 3 is empty.\n</facts>')
        return watch(monkeypatch, store, lambda: run_historian(store, CHUNK))
    if name == "classify (model)":
        model.add(*['{"importance": 60, "scope": "project", "shareable": false}'] * 10)
        return watch(monkeypatch, store, lambda: classify(store))
    if name == "classify (rules)":
        store.plugins.unregister(name="scripted-model")
        return watch(monkeypatch, store, lambda: classify(store))
    if name == "dreamer":
        store.memories.write("Step 1: stow 40 crates of apples in hold 1 today.", "CARGO_LOG")
        model.add(*["<no-facts/>"] * 10)
        dreamer = Dreamer(store)
        tasks = ("curate", "retrospective", "sync-headers")
        return watch(monkeypatch, store, lambda: [dreamer.run(task) for task in tasks])
    if name == "injection":
        return watch(monkeypatch, store, lambda: (inject(store), expand(store, 1)))
    raise AssertionError(f"docs/stage-inputs.md names an unknown stage {name!r}")


def test_the_table_lists_the_four_stages_and_both_classify_paths():
    assert set(documented()) == {
        "historian",
        "classify (model)",
        "classify (rules)",
        "dreamer",
        "injection",
    }


@pytest.mark.parametrize("stage", sorted(documented()))
def test_each_stage_reads_what_the_table_says(stage, store, model, monkeypatch):
    fields, tables = observed(stage, store, model, monkeypatch)
    assert (fields, tables) == documented()[stage]
