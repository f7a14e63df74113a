"""Issue 17: the referent axis reads interior/exterior; grid values are overridable per store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from plugin_sdk import Store
from plugin_sdk.cli import cli
from plugin_sdk.errors import GridError
from plugin_sdk.grid.policy import grid
from plugin_sdk.packs.sources import resolve_pack
from plugin_sdk.testing import fresh_plugin_manager


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "grid.db"
    with Store(path, project="g", plugins=fresh_plugin_manager()) as store:
        store.packs.install(resolve_pack("ops", store.plugins))
    return path


def run(db: Path, *args: str, code: int = 0):
    result = CliRunner().invoke(
        cli, [*args, "--db", str(db), "--project", "g"], obj={"plugins": fresh_plugin_manager()}
    )
    assert result.exit_code == code, result.output
    return result


def test_the_referent_axis_carries_its_interior_exterior_reading(db):
    shown = run(db, "grid", "show").output
    assert (
        "Referent axis: interior: self, agent; exterior: other, object; transversal: abstract"
        in (shown)
    )
    readings = json.loads(run(db, "grid", "show", "--json").output).get("readings")
    assert readings == {
        "self": "interior",
        "agent": "interior",
        "other": "exterior",
        "object": "exterior",
        "abstract": "transversal",
    }


def test_grid_values_are_overridden_per_store_with_history(db):
    with Store(db, project="g", plugins=fresh_plugin_manager()) as store:
        pack_value = grid(store).cells["semantic.other"].half_life_days
    run(db, "grid", "set", "cells.semantic.other.half_life_days", "999", "--note", "people stay")
    run(db, "grid", "set", "emotions.critical", "3")
    with Store(db, project="g", plugins=fresh_plugin_manager()) as store:
        policy = grid(store)
        assert policy.cells["semantic.other"].half_life_days == 999
        assert policy.emotions["critical"] == 3
        relation = next(iter(policy.relations))
    run(db, "grid", "set", f"relations.{relation}.sigma_days", "2.5")
    with Store(db, project="g", plugins=fresh_plugin_manager()) as store:
        assert grid(store).relations[relation].sigma_days == 2.5
        anya = store.entities.add("world:thing:anya", cell="semantic.other")
        assert anya.emotional_multiplier == grid(store).cells["semantic.other"].emotional_multiplier
    shown = run(db, "grid", "show").output
    assert "cells.semantic.other.half_life_days = 999" in shown and "999d ×" in shown
    run(db, "grid", "reset", "cells.semantic.other.half_life_days")
    with Store(db, project="g", plugins=fresh_plugin_manager()) as store:
        assert grid(store).cells["semantic.other"].half_life_days == pack_value
        assert grid(store).emotions["critical"] == 3
    events = json.loads(run(db, "grid", "history", "--json").output)
    assert [(e["key"], e["source"], e["old_value"], e["new_value"]) for e in events] == [
        ("cells.semantic.other.half_life_days", "override", pack_value, 999.0),
        ("emotions.critical", "override", 2.0, 3.0),
        (f"relations.{relation}.sigma_days", "override", events[2]["old_value"], 2.5),
        ("cells.semantic.other.half_life_days", "reset", 999.0, pack_value),
    ]
    assert events[0]["note"] == "people stay"


def test_an_unknown_grid_key_or_a_bad_value_is_refused(db):
    from plugin_sdk.grid import overrides

    with Store(db, project="g", plugins=fresh_plugin_manager()) as store:
        with pytest.raises(GridError, match="no grid value"):
            overrides.set_value(store, "cells.semantic.robot.half_life_days", 3)
        with pytest.raises(GridError, match="above 0"):
            overrides.set_value(store, "emotions.critical", 0)
    assert "no grid value" in run(db, "grid", "set", "emotions.nope", "2", code=1).output
