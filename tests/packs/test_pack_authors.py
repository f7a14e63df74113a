"""Issue 17: what pack authors need: stale criteria flagged, renames named, fragments, priority order."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from plugin_sdk import Store, validate_pack
from plugin_sdk.cli import cli
from plugin_sdk.errors import UnknownCategory
from plugin_sdk.host.mcp_tools import tool_specs
from plugin_sdk.testing import fresh_plugin_manager

V1 = {
    "format": 1,
    "name": "harbour",
    "version": "1.0.0",
    "description": "Harbour pack.",
    "categories": {
        "TIDE_TABLES": {
            "kind": "content",
            "priority": 20,
            "criteria": {"definition": "Tide times and heights."},
        },
        "BERTH_RULES": {
            "kind": "intent",
            "priority": 10,
            "criteria": {
                "definition": "Rules for berthing.",
                "exclusions": ["Tide heights belong in TIDE_TABLES, not here."],
            },
        },
        "ANCHORAGES": {
            "kind": "content",
            "priority": 30,
            "criteria": {"definition": "Where ships anchor."},
        },
    },
    "prompts": {"tool": "Always name the quay in berth rules."},
}


def v2() -> dict:
    document = copy.deepcopy(V1)
    document["version"] = "2.0.0"
    document["categories"]["TIDES"] = document["categories"].pop("TIDE_TABLES")
    return document


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "h.db"
    with Store(path, project="h", plugins=fresh_plugin_manager()) as store:
        report = store.packs.install(validate_pack(V1, source="v1"))
        assert report.added == ["BERTH_RULES", "TIDE_TABLES", "ANCHORAGES"]  # priority order
    return path


def test_an_upgrade_flags_criteria_that_name_a_renamed_category(db):
    with Store(db, project="h", plugins=fresh_plugin_manager()) as store:
        report = store.packs.upgrade(
            validate_pack(v2(), source="v2"), mapping={"TIDE_TABLES": "TIDES"}
        )
    assert report.stale_mentions == ["BERTH_RULES.exclusions names TIDE_TABLES (renamed to TIDES)"]


def test_validate_against_a_store_flags_criteria_naming_a_category_that_would_be_gone(db, tmp_path):
    file = tmp_path / "harbour-2.json"
    file.write_text(json.dumps(v2()), "utf-8")
    result = CliRunner().invoke(
        cli,
        ["pack", "validate", str(file), "--against", str(db)],
        obj={"plugins": fresh_plugin_manager()},
    )
    assert result.exit_code == 0, result.output
    assert (
        "warn harbour: BERTH_RULES.exclusions names TIDE_TABLES (dropped by this version or retired)"
        in result.output
    )


def test_a_write_to_a_renamed_category_names_the_new_one(db):
    with Store(db, project="h", plugins=fresh_plugin_manager()) as store:
        store.packs.upgrade(validate_pack(v2(), source="v2"), mapping={"TIDE_TABLES": "TIDES"})
        with pytest.raises(UnknownCategory) as caught:
            store.memories.write("High water 04:12.", "TIDE_TABLES")
    assert "renamed to 'TIDES'" in str(caught.value)
    assert caught.value.known == ["BERTH_RULES", "TIDES", "ANCHORAGES"]  # priority order


def test_the_mcp_write_tool_carries_the_packs_tool_fragment(db):
    with Store(db, project="h", plugins=fresh_plugin_manager()) as store:
        write = next(spec for spec in tool_specs(store) if spec.name == "memory_write")
    assert "Always name the quay in berth rules." in write.description
    assert write.input_schema["properties"]["category"]["enum"] == [
        "BERTH_RULES",
        "TIDE_TABLES",
        "ANCHORAGES",
    ]
