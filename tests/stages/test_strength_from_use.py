"""Issue 17: strength hears about use: retrievals through inject and expand, reported outcomes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from plugin_sdk import Store, inject, validate_pack
from plugin_sdk.cli import cli
from plugin_sdk.host.mcp_tools import call_tool, tool_specs
from plugin_sdk.stages.inject import expand
from plugin_sdk.testing import fresh_plugin_manager, grid_section, pack_document

PROJECT = "use"


def pack() -> dict:
    document = pack_document("use", "1.0.0", {"OPS_RULES": "intent", "ENV_STATE": "content"})
    document["grid"] = grid_section()
    return document


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "use.db"
    with Store(path, project=PROJECT, plugins=fresh_plugin_manager()) as store:
        store.packs.install(validate_pack(pack(), source="use"))
        memory = store.memories.write("db-2 runs Postgres 16 for staging.", "ENV_STATE").id
        store.entities.link(memory, ["world:host:db-2"], role="subject")
    return path


def open_store(db: Path) -> Store:
    return Store(db, project=PROJECT, plugins=fresh_plugin_manager())


def entity(db: Path) -> dict:
    result = CliRunner().invoke(
        cli,
        ["entity", "show", "world:host:db-2", "--db", str(db), "--project", PROJECT, "--json"],
        obj={"plugins": fresh_plugin_manager()},
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_memory_shown_by_inject_or_expand_is_a_retrieval_of_its_entities(db):
    before = entity(db)
    with open_store(db) as store:
        shown = inject(store, session="s1")
        assert shown.shown == [1]
        expand(store, 1)
    after = entity(db)
    assert (before["retrieval_count"], after["retrieval_count"]) == (0, 2)
    assert after["strength_now"] > before["strength_now"]
    assert after["last_retrieved_at"] is not None


def test_outcomes_move_the_reward_factor_and_show_in_entity_show(db):
    runner = CliRunner()
    base = ["--db", str(db), "--project", PROJECT]
    good = runner.invoke(
        cli, ["outcome", "1", "good", *base], obj={"plugins": fresh_plugin_manager()}
    )
    assert good.exit_code == 0, good.output
    assert "entities moved: world:host:db-2" in good.output
    shown = runner.invoke(
        cli, ["entity", "show", "world:host:db-2", *base], obj={"plugins": fresh_plugin_manager()}
    )
    assert "outcomes +1 -0" in shown.output
    with open_store(db) as store:
        store.memories.outcome(1, False)
        store.memories.outcome(1, False)
        assert store.memories.outcomes(1) == (1, 2)
    data = entity(db)
    assert (data["positive_outcomes"], data["negative_outcomes"]) == (1, 2)


def test_the_mcp_outcome_tool_reports_an_outcome(db):
    with open_store(db) as store:
        specs = tool_specs(store)
        result = call_tool(store, specs, "memory_outcome", {"id": 1, "outcome": "bad"})
        assert not result.is_error, result.text
        assert store.entities.get("world:host:db-2").negative_outcomes == 1
        refused = call_tool(store, specs, "memory_outcome", {"id": 1, "outcome": "meh"})
        assert refused.is_error
