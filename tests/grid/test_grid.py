"""The entity grid as pack data: validation, the built-in packs, namespace rules, ownership, NoGrid."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from click.testing import CliRunner

from plugin_sdk import Dreamer, MemsdkError, PackError, Store, resolve_pack, validate_pack
from plugin_sdk.cli import cli
from plugin_sdk.errors import NoGrid
from plugin_sdk.grid.policy import grid, has_grid, matches, merge
from plugin_sdk.stages.classify import classify
from plugin_sdk.store.models import CELLS
from plugin_sdk.testing import fresh_plugin_manager, pack_document

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
MEMORY_TYPES = ("episodic", "semantic", "procedural")
REFERENTS = ("self", "agent", "other", "object", "abstract")
BUILT_IN_EMOTIONS = {"neutral": 1.0, "positive": 1.3, "negative": 1.5, "critical": 2.0}


class Clock:
    """An injectable clock: fixed unless advanced (``step`` advances it on every read)."""

    def __init__(self, start: datetime = T0, step: timedelta = timedelta(0)) -> None:
        self.moment = start
        self.step = step

    def __call__(self) -> datetime:
        moment = self.moment
        self.moment += self.step
        return moment


def cells(offset: int = 0) -> dict[str, dict[str, dict[str, float]]]:
    """Every cell, each with its own half-life: episodic 11..15, semantic 21..25, procedural 31..35."""
    return {
        memory_type: {
            referent: {
                "half_life_days": 10 * (row + 1) + column + 1 + offset,
                "emotional_multiplier": 1.0,
            }
            for column, referent in enumerate(REFERENTS)
        }
        for row, memory_type in enumerate(MEMORY_TYPES)
    }


def grid_section() -> dict[str, Any]:
    return {
        "default_cell": "semantic.object",
        "cells": cells(),
        "emotions": dict(BUILT_IN_EMOTIONS),
        "namespaces": [
            {"pattern": "crew:*", "cell": "semantic.other", "half_life_days": 400},
            {"pattern": "bot:*", "cell": "semantic.agent"},
            {"pattern": "bot:*:rc:*", "cell": "semantic.agent", "half_life_days": 2},
        ],
        "category_cells": {"LAMP_LOG": "episodic.object"},
        "cues": {
            "memory_type": {"episodic": [r"\blast night\b"]},
            "referent": {"self": [r"\bkeeper\b"], "object": [r"\blamp\b"]},
        },
        "acts": {"directive": [r"^\s*trim\b", r"\bmust\b"]},
    }


def graph_section() -> dict[str, Any]:
    return {
        "relations": {
            "guards": {"sigma_days": 30, "description": "a keeper guards a light"},
            "sighted": {"sigma_days": 7},
        }
    }


def lighthouse(name: str = "lighthouse", version: str = "1.0.0", **extra: Any) -> dict[str, Any]:
    """A custom pack with its own categories, grid and graph."""
    document = pack_document(
        name,
        version,
        {"KEEPER_ORDERS": "intent", "LAMP_LOG": "content", "SHIP_NOTES": "content"},
        grid=grid_section(),
        graph=graph_section(),
    )
    document.update(extra)
    return document


def test_the_custom_pack_is_valid():
    pack = validate_pack(lighthouse(), source="test")
    assert set(merge([(pack.name, pack.document)]).cells) == set(CELLS)


# Validation: refused with a PackError naming the field

DELETE = object()


def mutate(document: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    document = copy.deepcopy(document)
    target = document
    for key in path[:-1]:
        target = target[key]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return document


ROBOT_CELL = {"half_life_days": 5, "emotional_multiplier": 1.0}

INVALID = [
    # (id, where to change, new value, the error's path, a fragment of its message)
    ("unknown cell", ("grid", "cells", "episodic", "robot"), ROBOT_CELL, "grid.cells.episodic", "'robot'"),
    ("unknown memory type", ("grid", "cells", "dreamy"), {}, "grid.cells", "'dreamy'"),
    ("unknown default cell", ("grid", "default_cell"), "episodic.robot", "grid.default_cell", "'episodic.robot'"),
    ("cell without a dot", ("grid", "default_cell"), "episodic", "grid.default_cell", "'episodic'"),
    ("unknown namespace cell", ("grid", "namespaces", 0, "cell"), "semantic.robot", "grid.namespaces[0].cell", "'semantic.robot'"),
    ("unknown category cell", ("grid", "category_cells", "LAMP_LOG"), "robot.object", "grid.category_cells.LAMP_LOG", "'robot.object'"),
    ("missing cell", ("grid", "cells", "procedural", "abstract"), DELETE, "grid.cells.procedural", "'abstract' is a required property"),
    ("missing row", ("grid", "cells", "semantic"), DELETE, "grid.cells", "'semantic' is a required property"),
    ("missing default cell", ("grid", "default_cell"), DELETE, "grid", "'default_cell' is a required property"),
    ("missing half-life", ("grid", "cells", "episodic", "self", "half_life_days"), DELETE, "grid.cells.episodic.self", "'half_life_days' is a required property"),
    ("negative half-life", ("grid", "cells", "episodic", "self", "half_life_days"), -1, "grid.cells.episodic.self.half_life_days", "-1"),
    ("zero half-life", ("grid", "cells", "semantic", "object", "half_life_days"), 0, "grid.cells.semantic.object.half_life_days", "0"),
    ("text half-life", ("grid", "cells", "semantic", "object", "half_life_days"), "ten", "grid.cells.semantic.object.half_life_days", "'ten'"),
    ("zero namespace half-life", ("grid", "namespaces", 2, "half_life_days"), 0, "grid.namespaces[2].half_life_days", "0"),
    ("zero emotional multiplier", ("grid", "cells", "semantic", "other", "emotional_multiplier"), 0, "grid.cells.semantic.other.emotional_multiplier", "0"),
    ("negative emotional multiplier", ("grid", "cells", "episodic", "agent", "emotional_multiplier"), -1.3, "grid.cells.episodic.agent.emotional_multiplier", "-1.3"),
    ("zero emotion", ("grid", "emotions", "critical"), 0, "grid.emotions.critical", "0"),
    ("no neutral emotion", ("grid", "emotions", "neutral"), DELETE, "grid.emotions", "'neutral' is a required property"),
    ("relation without sigma", ("graph", "relations", "guards", "sigma_days"), DELETE, "graph.relations.guards", "'sigma_days' is a required property"),
    ("zero sigma", ("graph", "relations", "sighted", "sigma_days"), 0, "graph.relations.sighted.sigma_days", "0"),
    ("negative sigma", ("graph", "relations", "sighted", "sigma_days"), -7, "graph.relations.sighted.sigma_days", "-7"),
    ("graph without relations", ("graph", "relations"), DELETE, "graph", "'relations' is a required property"),
    ("bad cue regex", ("grid", "cues", "referent", "self", 0), "(unclosed", "grid.cues.referent.self[0]", "not a regular expression"),
    ("bad act regex", ("grid", "acts", "directive", 1), "[a-", "grid.acts.directive[1]", "not a regular expression"),
    ("cue for an unknown referent", ("grid", "cues", "referent", "robot"), ["x"], "grid.cues.referent", "'robot'"),
    ("unknown act", ("grid", "acts", "shouting"), ["!!"], "grid.acts", "'shouting'"),
    ("category cell of another pack", ("grid", "category_cells", "NOT_MINE"), "semantic.object", "grid.category_cells.NOT_MINE", "not a category of this pack"),
    ("bad namespace pattern", ("grid", "namespaces", 0, "pattern"), "crew member:*", "grid.namespaces[0].pattern", "'crew member:*'"),
    ("unknown grid key", ("grid", "colour"), "blue", "grid", "'colour'"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "value", "where", "fragment"),
    [case[1:] for case in INVALID],
    ids=[case[0] for case in INVALID],
)
def test_invalid_grid_is_refused_naming_the_field(path, value, where, fragment):
    with pytest.raises(PackError) as caught:
        validate_pack(mutate(lighthouse(), path, value), source="lighthouse.toml")
    assert caught.value.path == where
    assert fragment in caught.value.reason
    assert f"lighthouse.toml at {where}:" in str(caught.value)


def test_the_command_line_names_the_field(tmp_path):
    path = tmp_path / "lighthouse.json"
    document = mutate(lighthouse(), ("grid", "cells", "episodic", "self", "half_life_days"), -1)
    path.write_text(json.dumps(document), "utf-8")
    result = CliRunner().invoke(cli, ["pack", "validate", str(path)])
    assert result.exit_code == 1
    assert "grid.cells.episodic.self.half_life_days" in result.output
    assert "-1 is less than or equal to the minimum of 0" in result.output


def test_an_invalid_grid_never_reaches_a_store(tmp_path):
    with Store(tmp_path / "g.db", project="g", plugins=fresh_plugin_manager()) as store:
        with pytest.raises(PackError):
            store.packs.install(
                validate_pack(mutate(lighthouse(), ("grid", "default_cell"), "x.y"), source="t")
            )
        assert store.packs.installed() == []
        assert not has_grid(store)


# The built-in packs


@pytest.mark.parametrize("name", ["ops", "dev"])
def test_builtin_packs_validate_and_carry_a_grid(name):
    pack = resolve_pack(name)
    assert "grid" in pack.document
    assert "graph" in pack.document
    policy = merge([(pack.name, pack.document)])
    assert set(policy.cells) == set(CELLS)
    assert all(c.half_life_days > 0 and c.emotional_multiplier > 0 for c in policy.cells.values())
    assert policy.default_cell in CELLS
    assert {tag: policy.emotions[tag] for tag in BUILT_IN_EMOTIONS} == BUILT_IN_EMOTIONS
    assert policy.relations
    assert all(r.sigma_days > 0 for r in policy.relations.values())
    assert set(policy.category_cells) <= set(pack.categories)
    # The built-in namespaces: world:* long, agent:*:rc:* short, agent:*:instruction:* pinned.
    world = policy.rule_for("world:person:anya")
    rc = policy.rule_for("agent:claude-code:rc:rc-2")
    instruction = policy.rule_for("agent:claude-code:instruction:no-force-push")
    assert world is not None and rc is not None and instruction is not None
    assert rc.pattern == "agent:*:rc:*"
    assert instruction.pattern == "agent:*:instruction:*"
    assert instruction.pinned
    assert rc.half_life_days is not None and world.half_life_days is not None
    assert rc.half_life_days < world.half_life_days
    assert policy.rule_for("agent:claude-code:relationship:anya") is not None


@pytest.mark.parametrize("name", ["ops", "dev"])
def test_builtin_pack_in_a_store_gives_the_grid(tmp_path, name):
    with Store(tmp_path / "g.db", project="g", plugins=fresh_plugin_manager()) as store:
        store.packs.install(resolve_pack(name))
        assert has_grid(store)
        assert set(grid(store).cells) == set(CELLS)
        assert {c.pack for c in grid(store).cells.values()} == {name}


# Namespace patterns


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("world:*", "world:person:anya", True),  # a trailing * is one or more segments
        ("world:*", "world:anya", True),
        ("world:*", "world", False),
        ("world:*", "worldly:anya", False),
        ("world:*", "other:world:anya", False),
        ("agent:*:rc:*", "agent:claude-code:rc:rc-2", True),
        ("agent:*:rc:*", "agent:claude-code:rc:rc-2:part", True),
        ("agent:*:rc:*", "agent:claude-code:rc", False),
        ("agent:*:rc:*", "agent:claude:code:rc:rc-2", False),  # a non-trailing * is one segment
        ("agent:*:rc:*", "agent:rc:rc-2", False),
        ("*:person:anya", "world:person:anya", True),
        ("*:person:anya", "world:x:person:anya", False),
        ("world:person:anya", "world:person:anya", True),  # no *: the name itself
        ("world:person:anya", "world:person:anya:x", False),
        ("world:person", "world:person:anya", False),
        ("a.b:*", "a.b:c", True),  # '.' is literal, not a regex wildcard
        ("a.b:*", "axb:c", False),
        ("*", "world:person:anya", True),
        ("*:*", "world", False),
    ],
)
def test_namespace_matching(pattern, name, expected):
    assert matches(pattern, name) is expected


def rules_grid(patterns: list[str]):
    section = grid_section()
    section["namespaces"] = [
        {"pattern": p, "half_life_days": index + 1} for index, p in enumerate(patterns)
    ]
    document = lighthouse()
    document["grid"] = section
    return merge([("t", validate_pack(document, source="t").document)])


@pytest.mark.parametrize(
    ("patterns", "name", "winner"),
    [
        # More literal segments win, whatever the order of the rules.
        (["world:*", "world:person:*"], "world:person:anya", "world:person:*"),
        (["world:person:*", "world:*"], "world:person:anya", "world:person:*"),
        (["world:*", "world:person:*"], "world:org:acme", "world:*"),
        (["agent:*", "agent:*:rc:*", "agent:*:instruction:*"], "agent:cc:rc:rc-2", "agent:*:rc:*"),
        (["agent:*:rc:*", "agent:*"], "agent:cc:rc:rc-2", "agent:*:rc:*"),
        (["agent:*:rc:*", "agent:*"], "agent:cc:notes", "agent:*"),
        (["world:*", "world:person:anya"], "world:person:anya", "world:person:anya"),
        # Same literals: more segments win.
        (["world:*", "*:person:*"], "world:person:anya", "*:person:*"),
        (["*:person:*", "world:*"], "world:person:anya", "*:person:*"),
        # Same literals and segments: the earliest rule wins.
        (["world:*:anya", "world:person:*"], "world:person:anya", "world:*:anya"),
        (["world:person:*", "world:*:anya"], "world:person:anya", "world:person:*"),
    ],
)
def test_most_specific_rule_wins(patterns, name, winner):
    rule = rules_grid(patterns).rule_for(name)
    assert rule is not None
    assert rule.pattern == winner


def test_no_rule_matches():
    assert rules_grid(["world:*", "agent:*:rc:*"]).rule_for("concept:kindness") is None


# Several packs: the first installed owns each value


def second_pack(name: str, version: str = "1.0.0") -> dict[str, Any]:
    """A pack that sets some of lighthouse's keys differently, and some new ones."""
    section = grid_section()
    section["default_cell"] = "procedural.self"
    section["cells"] = cells(offset=100)  # every cell differs: episodic.self is 111
    section["emotions"]["critical"] = 3.0
    section["emotions"]["wistful"] = 0.8
    section["namespaces"] = [
        {"pattern": "crew:*", "cell": "episodic.other"},  # lighthouse: semantic.other, 400
        {"pattern": "dock:*", "cell": "semantic.object", "half_life_days": 50},
    ]
    section["category_cells"] = {"BEACON_LOG": "episodic.object"}
    section["cues"] = {"referent": {"self": [r"\bwatchman\b"]}}
    section["acts"] = {"directive": [r"\bbeacon on\b"]}
    return pack_document(
        name,
        version,
        {"BEACON_LOG": "content"},
        grid=section,
        graph={"relations": {"guards": {"sigma_days": 99}, "moored_at": {"sigma_days": 5}}},
    )


def install_both(store: Store, first: str, second: str):
    store.packs.install(validate_pack(lighthouse(first), source="first"))
    return store.packs.install(validate_pack(second_pack(second), source="second"))


def check_first_owns(store: Store, first: str, second: str) -> None:
    policy = grid(store)
    assert policy.cells["episodic.self"].half_life_days == 11
    assert policy.cells["episodic.self"].pack == first
    assert policy.cells["procedural.abstract"].half_life_days == 35
    assert policy.emotions["critical"] == 2.0
    assert policy.emotions["wistful"] == 0.8  # a new key: the second pack's
    crew = policy.rule_for("crew:anya")
    assert crew is not None
    assert (crew.cell, crew.half_life_days, crew.pack) == ("semantic.other", 400, first)
    dock = policy.rule_for("dock:north")
    assert dock is not None
    assert dock.pack == second
    assert policy.relations["guards"].sigma_days == 30
    assert policy.relations["guards"].pack == first
    assert policy.relations["moored_at"].sigma_days == 5
    assert policy.relations["moored_at"].pack == second
    assert policy.default_cell == "semantic.object"
    # Category hints and cues add up (each pack names its own categories).
    assert policy.category_cells == {"LAMP_LOG": "episodic.object", "BEACON_LOG": "episodic.object"}
    assert set(policy.cues["referent"]["self"]) == {r"\bkeeper\b", r"\bwatchman\b"}
    assert r"\bbeacon on\b" in policy.acts["directive"]
    # Entities follow the owner's rule.
    assert store.entities.add("crew:anya").cell == "semantic.other"
    assert store.entities.get("crew:anya").half_life_days == 400


def test_first_installed_pack_owns_a_grid_value(tmp_path):
    # The clock moves on between the installs. The first pack is named "zeta" so
    # that install order and name order disagree.
    clock = Clock(step=timedelta(seconds=1))
    with Store(tmp_path / "g.db", project="g", plugins=fresh_plugin_manager(), clock=clock) as s:
        report = install_both(s, "zeta", "alpha")
        check_first_owns(s, "zeta", "alpha")
        assert "grid.cells.episodic.self (kept from pack zeta)" in report.grid_kept
        assert "grid.emotions.critical (kept from pack zeta)" in report.grid_kept
        assert "grid.namespaces 'crew:*' (kept from pack zeta)" in report.grid_kept
        assert "graph.relations.guards (kept from pack zeta)" in report.grid_kept
        assert not any("wistful" in k or "moored_at" in k or "dock" in k for k in report.grid_kept)


def test_first_installed_pack_owns_even_when_installed_at_ties(tmp_path):
    # A fixed clock (or two installs in the same microsecond) gives both packs the
    # same installed_at; install order must still decide, not the pack names.
    clock = Clock()
    with Store(tmp_path / "g.db", project="g", plugins=fresh_plugin_manager(), clock=clock) as s:
        report = install_both(s, "zeta", "alpha")
        check_first_owns(s, "zeta", "alpha")
        assert "grid.cells.episodic.self (kept from pack zeta)" in report.grid_kept


def test_install_reports_a_kept_default_cell(tmp_path):
    clock = Clock(step=timedelta(seconds=1))
    with Store(tmp_path / "g.db", project="g", plugins=fresh_plugin_manager(), clock=clock) as s:
        report = install_both(s, "zeta", "alpha")
        assert grid(s).default_cell == "semantic.object"  # zeta's; alpha says procedural.self
        assert any(key.startswith("grid.default_cell") for key in report.grid_kept), (
            report.grid_kept
        )


def test_upgrading_the_owning_pack_changes_the_value(tmp_path):
    clock = Clock(step=timedelta(seconds=1))
    with Store(tmp_path / "g.db", project="g", plugins=fresh_plugin_manager(), clock=clock) as s:
        install_both(s, "zeta", "alpha")
        assert grid(s).cells["episodic.self"].half_life_days == 11
        newer = lighthouse("zeta", "1.1.0")
        newer["grid"]["cells"]["episodic"]["self"]["half_life_days"] = 12
        newer["graph"]["relations"]["guards"]["sigma_days"] = 31
        s.packs.upgrade(validate_pack(newer, source="zeta 1.1"))
        assert grid(s).cells["episodic.self"].half_life_days == 12
        assert grid(s).relations["guards"].sigma_days == 31
        # Upgrading the other pack changes nothing it does not own.
        other = second_pack("alpha", "1.1.0")
        other["grid"]["cells"]["episodic"]["self"]["half_life_days"] = 500
        report = s.packs.upgrade(validate_pack(other, source="alpha 1.1"))
        assert grid(s).cells["episodic.self"].half_life_days == 12
        assert "grid.cells.episodic.self (kept from pack zeta)" in report.grid_kept


def test_a_graph_only_pack_owns_its_relation_types(tmp_path):
    # The first pack declares relation types but no grid; a later pack with a grid
    # sets one of them differently: the first keeps it, and the install says so.
    clock = Clock(step=timedelta(seconds=1))
    graph_only = pack_document(
        "graphs",
        "1.0.0",
        {"CHART_NOTES": "content"},
        graph={"relations": {"guards": {"sigma_days": 5}}},
    )
    with Store(tmp_path / "g.db", project="g", plugins=fresh_plugin_manager(), clock=clock) as s:
        s.packs.install(validate_pack(graph_only, source="graphs"))
        report = s.packs.install(validate_pack(lighthouse(), source="lighthouse"))
        assert grid(s).relations["guards"].sigma_days == 5
        assert grid(s).relations["guards"].pack == "graphs"
        assert "graph.relations.guards (kept from pack graphs)" in report.grid_kept


# A store without any grid


def plain_store(path) -> Store:
    store = Store(path, project="plain", plugins=fresh_plugin_manager(), clock=Clock())
    store.packs.install(
        validate_pack(pack_document("plain", "1.0.0", {"NOTES": "content"}), source="t")
    )
    return store


def test_no_grid_is_a_clear_error_for_entity_operations(tmp_path):
    with plain_store(tmp_path / "g.db") as store:
        assert not has_grid(store)
        with pytest.raises(NoGrid) as caught:
            grid(store)
        assert isinstance(caught.value, MemsdkError)
        message = str(caught.value)
        assert "[grid]" in message
        assert "pack install" in message
        with pytest.raises(NoGrid, match=r"\[grid\]"):
            store.entities.add("world:person:anya")
        with pytest.raises(NoGrid, match=r"\[grid\]"):
            store.entities.ensure("world:person:anya")
        written = store.memories.write("the lamp was trimmed at dusk", "NOTES").id
        with pytest.raises(NoGrid, match=r"\[grid\]"):
            store.entities.link(written, ["crew:anya"])
        assert store.entities.count() == 0
        assert store.entities.list() == []


def test_no_grid_at_all_in_an_empty_store(tmp_path):
    with Store(tmp_path / "g.db", project="g", plugins=fresh_plugin_manager()) as store:
        assert store.packs.installed() == []
        with pytest.raises(NoGrid, match=r"\[grid\]"):
            store.entities.add("world:person:anya")


def test_no_grid_classify_still_works_and_skips_cells(tmp_path):
    with plain_store(tmp_path / "g.db") as store:
        ids = [
            store.memories.write(text, "NOTES").id
            for text in ["the lamp was trimmed at dusk tonight", "always check the lens first"]
        ]
        report = classify(store)
        assert report.classified == 2
        assert report.placed == 0
        assert report.signals == {"rules": 2}
        assert store.db.execute("SELECT count(*) FROM memory_cells").fetchone()[0] == 0
        assert [store.memories.get(i).category for i in ids] == ["NOTES", "NOTES"]
        dreamer = Dreamer(store)
        for task in ("classify", "consolidate"):
            [run] = dreamer.run(task)
            assert run.finished_pass
            assert run.error is None
        assert store.db.execute("SELECT count(*) FROM memory_cells").fetchone()[0] == 0
