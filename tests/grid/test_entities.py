"""Entities and relations: names, defaults from the grid, lookups, links, reinforcement, decay."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_sdk import Dreamer, MemsdkError, NotFound, Store, resolve_pack, validate_pack
from plugin_sdk.errors import DuplicateEntity, InvalidEntityName
from plugin_sdk.grid.policy import check_name, matches
from plugin_sdk.grid.strength import strength
from plugin_sdk.store.models import CELLS
from plugin_sdk.testing import fresh_plugin_manager, pack_document

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
STAMP0 = "2026-03-01T09:00:00.000000+00:00"
PROJECT = "harbour"
MEMORY_TYPES = ("episodic", "semantic", "procedural")
REFERENTS = ("self", "agent", "other", "object", "abstract")


class Clock:
    """The store's clock: fixed at ``moment`` until a test moves it."""

    def __init__(self, start: datetime = T0) -> None:
        self.moment = start

    def __call__(self) -> datetime:
        return self.moment

    def advance(self, **delta: float) -> None:
        self.moment += timedelta(**delta)


def half_life(cell: str) -> int:
    """Each cell's default half-life in the test pack: episodic 11..15, semantic 21..25, ..."""
    memory_type, referent = cell.split(".")
    return 10 * (MEMORY_TYPES.index(memory_type) + 1) + REFERENTS.index(referent) + 1


GRID: dict[str, Any] = {
    "default_cell": "semantic.object",
    "cells": {
        t: {
            r: {
                "half_life_days": half_life(f"{t}.{r}"),
                "emotional_multiplier": 1.1 if f"{t}.{r}" == "semantic.other" else 1.0,
            }
            for r in REFERENTS
        }
        for t in MEMORY_TYPES
    },
    "emotions": {"neutral": 1.0, "positive": 1.3, "negative": 1.5, "critical": 2.0},
    "namespaces": [
        {"pattern": "world:*", "half_life_days": 365},
        {"pattern": "world:person:*", "cell": "semantic.other"},
        {"pattern": "agent:*", "cell": "semantic.agent"},
        {"pattern": "agent:*:rc:*", "cell": "semantic.agent", "half_life_days": 7},
        {"pattern": "agent:*:instruction:*", "cell": "procedural.agent", "pinned": True},
        {"pattern": "agent:*:relationship:*", "cell": "semantic.agent", "half_life_days": 90},
        {"pattern": "session:*", "cell": "episodic.self", "half_life_days": 3},
    ],
    "cues": {
        "memory_type": {"procedural": [r"\bdrill\b"]},
        "referent": {"object": [r"\blamp\b", r"\bdrill\b"]},
    },
}
GRAPH = {
    "relations": {
        "works_on": {"sigma_days": 90},
        "mentions": {"sigma_days": 14},
        "part_of": {"sigma_days": 365},
    }
}
PACK = pack_document(
    "harbour",
    "1.0.0",
    {"HARBOUR_LOG": "content", "HARBOUR_RULES": "intent"},
    grid=GRID,
    graph=GRAPH,
)


HARBOUR = validate_pack(PACK, source="test")


def open_store(path: Any = ":memory:", clock: Clock | None = None) -> Store:
    store = Store(path, project=PROJECT, plugins=fresh_plugin_manager(), clock=clock or Clock())
    store.packs.install(HARBOUR)
    return store


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(clock) -> Iterator[Store]:
    with open_store(":memory:", clock) as s:
        yield s


# Names


@pytest.mark.parametrize(
    "name",
    [
        "world:person:anya",
        "agent:claude-code:rc:rc-2",
        "a:b",
        "concept:kindness",
        "session:2026-03-01",
        "world:project:memsdk_v2.1",
    ],
)
def test_valid_names(store, name):
    assert check_name(name) == name
    assert store.entities.add(name).name == name


@pytest.mark.parametrize(
    "name",
    [
        "anya",
        "",
        "world:",
        ":anya",
        "world::anya",
        "world:person anya",
        "world:person:*",
        "world/person/anya",
        "world:-anya",
        "world:person:anya:",
        "wörld:person",
    ],
)
def test_invalid_names_are_refused(store, name):
    with pytest.raises(InvalidEntityName) as caught:
        store.entities.add(name)
    assert isinstance(caught.value, MemsdkError)
    assert isinstance(caught.value, ValueError)
    assert repr(name) in str(caught.value)
    assert "namespace:slug" in str(caught.value)
    assert store.entities.count() == 0


def test_type_subtype_namespace_slug(store):
    anya = store.entities.add("world:person:anya")
    assert (anya.type, anya.subtype, anya.namespace, anya.slug) == (
        "world",
        "person",
        "world:person",
        "anya",
    )
    rc = store.entities.add("agent:claude-code:rc:rc-2")
    assert (rc.type, rc.subtype, rc.namespace, rc.slug) == (
        "agent",
        "claude-code:rc",
        "agent:claude-code:rc",
        "rc-2",
    )
    kindness = store.entities.add("concept:kindness")
    assert (kindness.type, kindness.subtype, kindness.namespace) == ("concept", None, "concept")


# Defaults: given, else the namespace rule, else the cell (or the classify_cell hook)


@pytest.mark.parametrize(
    ("name", "given", "cell", "half_life_days", "pinned", "signal"),
    [
        # The most specific rule (world:person:*) places it; it sets no half-life, so it
        # inherits its parent world:*'s 365 (rules inherit unless they override).
        ("world:person:anya", {}, "semantic.other", 365, False, "namespace world:person:*"),
        # world:* sets the half-life but no cell: the rule-based classifier places the name
        # ("world project lamp": the cue "lamp" votes object; no memory-type cue: default).
        ("world:project:lamp", {}, "semantic.object", 365, False, "rules"),
        ("world:tool:drill", {}, "procedural.object", 365, False, "rules"),
        ("world:person:anya", {"cell": "episodic.other"}, "episodic.other", 365, False, "given"),
        ("world:person:anya", {"half_life_days": 5}, "semantic.other", 5, False, "namespace world:person:*"),
        ("world:project:lamp", {"cell": "semantic.abstract", "half_life_days": 2.5}, "semantic.abstract", 2.5, False, "given"),
        ("agent:claude-code", {}, "semantic.agent", 22, False, "namespace agent:*"),
        ("agent:claude-code:rc:rc-2", {}, "semantic.agent", 7, False, "namespace agent:*:rc:*"),
        ("agent:claude-code:instruction:no-force-push", {}, "procedural.agent", 32, True, "namespace agent:*:instruction:*"),
        ("agent:claude-code:instruction:no-force-push", {"pinned": False}, "procedural.agent", 32, False, "namespace agent:*:instruction:*"),
        ("agent:claude-code:relationship:anya", {}, "semantic.agent", 90, False, "namespace agent:*:relationship:*"),
        ("session:2026-03-01", {}, "episodic.self", 3, False, "namespace session:*"),
        # No rule, no cue: the grid's default cell.
        ("concept:kindness", {}, "semantic.object", 24, False, "rules (default)"),
        ("concept:kindness", {"pinned": True}, "semantic.object", 24, True, "rules (default)"),
    ],
)  # fmt: skip
def test_defaults(store, name, given, cell, half_life_days, pinned, signal):
    entity = store.entities.add(name, **given)
    assert entity.cell == cell
    assert (entity.memory_type, entity.referent) == tuple(cell.split("."))
    assert entity.half_life_days == half_life_days
    assert entity.pinned is pinned
    assert entity.cell_signal == signal
    assert entity.base_strength == 1.0
    assert entity.status == "active"
    assert (entity.positive_outcomes, entity.negative_outcomes, entity.retrieval_count) == (0, 0, 0)
    assert entity.created_at == entity.updated_at == entity.last_seen_at == STAMP0
    assert entity.last_retrieved_at is None
    assert entity.strength is None  # until a consolidation pass
    assert store.entities.get(name) == entity


@pytest.mark.parametrize(
    ("name", "tag", "multiplier"),
    [
        ("world:person:anya", None, 1.1),  # semantic.other's default
        ("world:project:lamp", None, 1.0),
        ("world:person:anya", "neutral", 1.0),  # a tag replaces the cell's default
        ("world:person:anya", "positive", 1.3),
        ("world:project:lamp", "negative", 1.5),
        ("world:project:lamp", "critical", 2.0),
    ],
)
def test_emotional_multiplier(store, name, tag, multiplier):
    entity = store.entities.add(name, emotional_tag=tag)
    assert entity.emotional_tag == tag
    assert entity.emotional_multiplier == multiplier


@pytest.mark.parametrize(
    ("given", "fragment"),
    [
        ({"emotional_tag": "wistful"}, "critical, negative, neutral, positive"),
        ({"half_life_days": 0}, "half-life"),
        ({"half_life_days": -3}, "half-life"),
        ({"base_strength": 0}, "base strength"),
        ({"status": "asleep"}, "active, provisional, archived"),
        ({"cell": "semantic.robot"}, "episodic.self"),
        ({"cell": "semantic"}, "semantic.object"),
    ],
)
def test_bad_fields_are_refused_and_nothing_is_written(store, given, fragment):
    with pytest.raises(MemsdkError) as caught:
        store.entities.add("world:person:anya", **given)
    assert fragment in str(caught.value)
    assert store.entities.count() == 0


def test_builtin_ops_pack_pins_instructions_and_shortens_root_causes(tmp_path, clock):
    with Store(
        tmp_path / "o.db", project=PROJECT, plugins=fresh_plugin_manager(), clock=clock
    ) as s:
        s.packs.install(resolve_pack("ops"))
        instruction = s.entities.add("agent:claude-code:instruction:no-force-push")
        rc = s.entities.add("agent:claude-code:rc:rc-2")
        person = s.entities.add("world:person:anya")
        assert instruction.pinned
        assert not rc.pinned and not person.pinned
        assert rc.half_life_days < person.half_life_days


def test_pinned_instruction_never_decays_through_consolidation(store, clock):
    instruction = store.entities.add("agent:claude-code:instruction:no-force-push")
    ordinary = store.entities.add("agent:claude-code:rc:rc-2")
    store.entities.outcome(instruction.id, positive=False)
    for years in (1, 10, 100):
        clock.moment = T0 + timedelta(days=365 * years)
        [report] = Dreamer(store).run("consolidate")
        assert report.finished_pass
        pinned = store.entities.get(instruction.id)
        assert pinned.strength == math.inf
        assert pinned.strength_at == store.now()
        assert pinned.strength_now(store.now()) == math.inf
        assert pinned.to_dict()["strength"] == "pinned"
        decayed = store.entities.get(ordinary.id)
        assert 0 <= decayed.strength < 1
    # Unpinned by a person: it decays from when it was last seen, like any other.
    unpinned = store.entities.update(instruction.id, pinned=False)
    assert unpinned.strength_now(store.now()) < 1e-3


# Adding twice, finding, listing


def test_duplicate_add_is_refused(store):
    first = store.entities.add("world:person:anya")
    with pytest.raises(DuplicateEntity) as caught:
        store.entities.add("world:person:anya", cell="episodic.other")
    assert isinstance(caught.value, MemsdkError)
    assert "'world:person:anya'" in str(caught.value)
    assert repr(PROJECT) in str(caught.value)
    assert store.entities.get("world:person:anya") == first
    assert store.entities.count() == 1
    # The same name in another project is another entity.
    other = store.entities.add("world:person:anya", project="elsewhere")
    assert other.id != first.id
    assert store.entities.count(project="elsewhere") == 1


def test_ensure_returns_the_existing_entity_or_adds_one(store):
    first = store.entities.ensure("world:person:anya", half_life_days=9)
    assert first.half_life_days == 9
    assert store.entities.ensure("world:person:anya", half_life_days=50) == first
    assert store.entities.count() == 1


def test_get_by_id_and_name(store):
    anya = store.entities.add("world:person:anya")
    assert store.entities.get(anya.id) == anya
    assert store.entities.get(str(anya.id)) == anya
    assert store.entities.get("world:person:anya") == anya


def test_not_found_names_close_matches(store):
    for name in ("world:person:anya", "world:person:anyo", "world:org:acme", "agent:claude-code"):
        store.entities.add(name)
    with pytest.raises(NotFound) as caught:
        store.entities.get("world:person:anja")
    message = str(caught.value)
    assert "'world:person:anja'" in message
    assert "world:person:anya" in message
    assert "world:person:anyo" in message
    assert "agent:claude-code" not in message
    with pytest.raises(NotFound, match="no entity with id 999"):
        store.entities.get(999)
    with pytest.raises(NotFound) as nothing_close:
        store.entities.get("concept:kindness")
    assert "close" not in str(nothing_close.value)


NAMES = [
    "world:person:anya",
    "world:person:ben",
    "world:project:lamp",
    "agent:claude-code",
    "agent:claude-code:rc:rc-2",
    "agent:claude-code:relationship:anya",
    "agent:codex:relationship:ben",
    "agent:codex:relationship",  # no slug after relationship: not agent:*:relationship:*
    "agent:codex:instruction:be-brief",
    "session:2026-03-01",
]


def test_list_by_cell_and_pattern(store):
    for name in NAMES:
        store.entities.add(name)
    store.entities.add("agent:codex:relationship:cleo", project="elsewhere")
    names = lambda found: [e.name for e in found]  # noqa: E731
    assert names(store.entities.list()) == sorted(NAMES)
    assert names(store.entities.list(pattern="agent:*:relationship:*")) == [
        "agent:claude-code:relationship:anya",
        "agent:codex:relationship:ben",
    ]
    assert names(store.entities.list(pattern="world:*")) == [
        "world:person:anya",
        "world:person:ben",
        "world:project:lamp",
    ]
    assert names(store.entities.list(pattern="*:person:*")) == [
        "world:person:anya",
        "world:person:ben",
    ]
    assert names(store.entities.list(pattern="agent:claude-code")) == ["agent:claude-code"]
    assert names(store.entities.list(cell="semantic.other")) == [
        "world:person:anya",
        "world:person:ben",
    ]
    assert names(store.entities.list(cell="semantic.agent")) == [
        "agent:claude-code",
        "agent:claude-code:rc:rc-2",
        "agent:claude-code:relationship:anya",
        "agent:codex:relationship",
        "agent:codex:relationship:ben",
    ]
    assert names(store.entities.list(cell="semantic.agent", pattern="agent:*:relationship:*")) == [
        "agent:claude-code:relationship:anya",
        "agent:codex:relationship:ben",
    ]
    assert names(store.entities.list(cell="procedural.agent")) == [
        "agent:codex:instruction:be-brief"
    ]
    assert store.entities.list(cell="episodic.abstract") == []
    assert names(store.entities.list(pattern="agent:*:relationship:*", project="elsewhere")) == [
        "agent:codex:relationship:cleo"
    ]
    assert len(store.entities.list(limit=3)) == 3
    with pytest.raises(MemsdkError, match="unknown cell"):
        store.entities.list(cell="semantic.robot")


SEGMENTS = ["a", "b", "ab", "a.b"]
GRID_NAMES = [
    ":".join(parts) for length in (2, 3, 4) for parts in itertools.product(SEGMENTS, repeat=length)
]


@pytest.fixture(scope="module")
def many_entities() -> Iterator[Store]:
    with open_store() as s:
        with s.atomic():
            for name in GRID_NAMES:
                s.entities.add(name, cell="semantic.object")
        yield s


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([*SEGMENTS, "*"]), min_size=1, max_size=4))
def test_list_by_pattern_is_exactly_the_matching_names(many_entities, segments):
    pattern = ":".join(segments)
    found = [e.name for e in many_entities.entities.list(pattern=pattern, limit=None)]
    assert found == sorted(name for name in GRID_NAMES if matches(pattern, name))


# Memories link to entities


def test_link_memories_to_actors(store):
    said = store.memories.write("Anya asked to trim the lamp before dusk", "HARBOUR_LOG").id
    about = store.memories.write("the lamp project moved to the east pier", "HARBOUR_LOG").id
    existing = store.entities.add("world:person:anya", half_life_days=9)
    linked = store.entities.link(said, ["world:person:anya", "agent:claude-code"])
    assert [e.name for e in linked] == ["world:person:anya", "agent:claude-code"]
    assert linked[0] == existing  # found, not re-created
    assert linked[1].cell == "semantic.agent"  # created with its defaults
    store.entities.link(about, ["world:project:lamp"], role="subject")
    store.entities.link(said, ["world:person:anya"])  # again: no duplicate link
    assert [(role, e.name) for role, e in store.entities.of_memory(said)] == [
        ("actor", "agent:claude-code"),
        ("actor", "world:person:anya"),
    ]
    assert [(role, e.name) for role, e in store.entities.of_memory(about)] == [
        ("subject", "world:project:lamp")
    ]
    assert store.entities.memories_of("world:person:anya") == [said]
    assert store.entities.memories_of("world:person:anya", role="subject") == []
    assert store.entities.memories_of("world:project:lamp", role="subject") == [about]
    assert store.entities.count() == 3


def test_link_refuses_bad_input_and_writes_nothing(store):
    said = store.memories.write("Anya asked to trim the lamp before dusk", "HARBOUR_LOG").id
    with pytest.raises(MemsdkError, match="actor, subject"):
        store.entities.link(said, ["world:person:anya"], role="witness")
    with pytest.raises(NotFound):
        store.entities.link(12345, ["world:person:anya"])
    with pytest.raises(InvalidEntityName):
        store.entities.link(said, ["world:person:anya", "Not A Name"])
    assert store.entities.count() == 0
    assert store.entities.of_memory(said) == []


# Reinforcement, with the store's clock


def test_seen_retrieved_outcome_move_the_right_fields(store, clock):
    added = store.entities.add("world:person:anya", half_life_days=10)
    clock.advance(days=5)
    stamp5 = store.now()
    retrieved = store.entities.retrieved(added.id)
    assert retrieved.retrieval_count == 1
    assert retrieved.last_retrieved_at == stamp5
    assert retrieved.last_seen_at == STAMP0  # a retrieval does not restart the clock
    assert retrieved.updated_at == stamp5
    clock.advance(days=1)
    good = store.entities.outcome("world:person:anya", positive=True)
    assert (good.positive_outcomes, good.negative_outcomes) == (1, 0)
    assert good.last_seen_at == STAMP0
    bad = store.entities.outcome("world:person:anya", positive=False)
    assert (bad.positive_outcomes, bad.negative_outcomes) == (1, 1)
    assert bad.retrieval_count == 1
    assert bad.last_retrieved_at == stamp5
    clock.advance(days=4)
    seen = store.entities.seen("world:person:anya")
    assert seen.last_seen_at == store.now() != STAMP0
    assert (seen.positive_outcomes, seen.negative_outcomes, seen.retrieval_count) == (1, 1, 1)
    assert seen.created_at == STAMP0


def test_strength_now_follows_the_clock(store, clock):
    store.entities.add("world:person:anya", half_life_days=10, emotional_tag="negative")
    assert store.entities.get("world:person:anya").strength_now(store.now()) == 1.5
    for _ in range(3):
        store.entities.retrieved("world:person:anya")
    for positive in (True, True, True, False):
        store.entities.outcome("world:person:anya", positive=positive)
    clock.advance(days=10)
    anya = store.entities.get("world:person:anya")
    # pos 3 neg 1 -> reward 1.2, effective half-life 12; Δt 10 -> 0.5^(10/12);
    # 3 retrievals -> boost 1.2; negative 1.5:  2^(−5/6) × 1.2 × 1.5 = 1.0102158434784358
    assert anya.strength_now(store.now()) == pytest.approx(2 ** (-5 / 6) * 1.8, rel=1e-12)
    # Seen again: the decay clock restarts, the boost and the reward stay.
    store.entities.seen("world:person:anya")
    assert store.entities.get("world:person:anya").strength_now(store.now()) == pytest.approx(
        1.8, rel=1e-12
    )
    # A clock behind the data counts as no time at all.
    clock.advance(days=-30)
    assert store.entities.get("world:person:anya").strength_now(store.now()) == pytest.approx(
        1.8, rel=1e-12
    )


def test_strength_now_is_the_formula(store, clock):
    entity = store.entities.add("world:place:harbour", emotional_tag="critical", base_strength=0.5)
    assert entity.half_life_days == 365  # world:*
    clock.advance(days=40, hours=6)
    found = store.entities.get(entity.id)
    expected = strength(
        base_strength=0.5,
        days=40.25,
        half_life_days=365,
        emotional_multiplier=2.0,
    )
    assert found.strength_now(store.now()) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.5 * 0.5 ** (40.25 / 365) * 2.0, rel=1e-12)


def test_update_changes_cell_tag_and_status(store):
    anya = store.entities.add("world:person:anya")
    assert anya.emotional_multiplier == 1.1
    moved = store.entities.update("world:person:anya", cell="episodic.self")
    assert (moved.cell, moved.cell_signal, moved.emotional_multiplier) == (
        "episodic.self",
        "given",
        1.0,
    )
    tagged = store.entities.update(anya.id, emotional_tag="positive", status="provisional")
    assert (tagged.emotional_multiplier, tagged.status) == (1.3, "provisional")
    with pytest.raises(MemsdkError, match="unknown entity status"):
        store.entities.update(anya.id, status="asleep")


# Relations


def test_relate_twice_counts_evidence_and_restarts_the_clock(store, clock):
    store.entities.add("world:person:anya")
    store.entities.add("world:project:lamp")
    first = store.relations.relate("world:person:anya", "world:project:lamp", "works_on")
    assert (first.source, first.target, first.type) == (
        "world:person:anya",
        "world:project:lamp",
        "works_on",
    )
    assert (first.evidence_count, first.weight, first.weight_temporal) == (1, 1.0, 1.0)
    assert first.created_at == first.last_seen_at == STAMP0
    clock.advance(days=30)
    again = store.relations.relate("world:person:anya", "world:project:lamp", "works_on", weight=2)
    assert again.id == first.id
    assert again.evidence_count == 2
    assert again.weight == 2.0
    assert again.created_at == STAMP0
    assert again.last_seen_at == again.updated_at == store.now()
    assert store.relations.weight_now(again) == 1.0
    # Another type between the same pair is another edge.
    other = store.relations.relate("world:person:anya", "world:project:lamp", "mentions")
    assert other.id != first.id
    assert [r.type for r in store.relations.of("world:project:lamp")] == ["works_on", "mentions"]


def test_unknown_relation_type_is_refused_naming_known_ones(store):
    store.entities.add("world:person:anya")
    store.entities.add("world:project:lamp")
    with pytest.raises(MemsdkError) as caught:
        store.relations.relate("world:person:anya", "world:project:lamp", "loves")
    message = str(caught.value)
    assert "'loves'" in message
    for known in ("mentions", "part_of", "works_on"):
        assert known in message
    assert store.db.execute("SELECT count(*) FROM relations").fetchone()[0] == 0


def test_relate_refuses_bad_edges(store):
    store.entities.add("world:person:anya")
    store.entities.add("world:project:lamp")
    with pytest.raises(MemsdkError, match="itself"):
        store.relations.relate("world:person:anya", "world:person:anya", "mentions")
    with pytest.raises(MemsdkError, match="weight"):
        store.relations.relate("world:person:anya", "world:project:lamp", "mentions", weight=0)
    with pytest.raises(NotFound):
        store.relations.relate("world:person:anya", "world:person:nobody", "mentions")
    assert store.db.execute("SELECT count(*) FROM relations").fetchone()[0] == 0


def test_relate_by_id_in_another_project(store):
    # Ids name entities of any project; the edge belongs to theirs.
    anya = store.entities.add("world:person:anya", project="elsewhere")
    lamp = store.entities.add("world:project:lamp", project="elsewhere")
    relation = store.relations.relate(anya.id, lamp.id, "mentions")
    assert (relation.project, relation.source, relation.target) == (
        "elsewhere",
        "world:person:anya",
        "world:project:lamp",
    )
    assert store.relations.between(anya.id, lamp.id, "mentions") == relation
    assert [r.id for r in store.relations.of(anya.id)] == [relation.id]


@pytest.mark.parametrize(("type_", "sigma"), [("works_on", 90), ("mentions", 14), ("part_of", 365)])
def test_weight_now_is_exp_minus_days_over_sigma(store, clock, type_, sigma):
    store.entities.add("world:person:anya")
    store.entities.add("world:project:lamp")
    relation = store.relations.relate("world:person:anya", "world:project:lamp", type_)
    for days in (0, 1, 7, 14, 90, 365, 1000):
        clock.moment = T0 + timedelta(days=days)
        expected = math.exp(-days / sigma)
        assert store.relations.weight_now(relation) == pytest.approx(expected, rel=1e-12)
    clock.moment = T0 + timedelta(days=sigma)
    assert store.relations.weight_now(relation) == pytest.approx(math.exp(-1), rel=1e-12)
    clock.moment = T0 - timedelta(days=3)  # a clock behind the data: no decay
    assert store.relations.weight_now(relation) == 1.0


def test_cells_are_the_grid_cells():
    assert len(CELLS) == 15
    assert all(half_life(cell) > 0 for cell in CELLS)
