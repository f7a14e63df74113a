"""The consolidation pass (dreamer task ``consolidate``): the SQL agrees with ``strength.py``,
split passes resume to the same result, progress, and what the pass leaves alone."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_sdk import Dreamer, Store, validate_pack
from plugin_sdk.grid.cells import place
from plugin_sdk.grid.consolidation import unknown_relation_types
from plugin_sdk.grid.policy import grid
from plugin_sdk.grid.strength import days_between, strength, weight_temporal
from plugin_sdk.plugin.records import CellDecision
from plugin_sdk.store.models import CELLS
from plugin_sdk.testing import fresh_plugin_manager, pack_document

T = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)  # when the pass runs
PROJECT = "harbour"
MEMORY_TYPES = ("episodic", "semantic", "procedural")
REFERENTS = ("self", "agent", "other", "object", "abstract")
# SQLite's julianday() rounds each time to the millisecond, while strength.py
# uses the microseconds: Δt may be off by up to 1 ms, so the pass and the
# formula agree to ln2 × (0.001 s / 86400 s) / effective half-life in relative
# terms; the smallest effective half-life here is 1 day × (1 + 0.5 × (−6/7)),
# which bounds the difference by 1.4e-8. See docs/grid.md.
SQL_REL = 2e-8
SIGMAS = {"works_on": 90.0, "mentions": 14.0, "part_of": 365.0, "caused": 30.0}
EMOTIONS = {"neutral": 1.0, "positive": 1.3, "negative": 1.5, "critical": 2.0}


def cell_defaults(cell: str) -> tuple[float, float]:
    """Each cell's own half-life (3 .. 87 days) and emotional multiplier (1.0 .. 1.7)."""
    index = CELLS.index(cell)
    return 3.0 + 6 * index, 1.0 + 0.05 * index


GRID: dict[str, Any] = {
    "default_cell": "semantic.object",
    "cells": {
        t: {
            r: {
                "half_life_days": cell_defaults(f"{t}.{r}")[0],
                "emotional_multiplier": cell_defaults(f"{t}.{r}")[1],
            }
            for r in REFERENTS
        }
        for t in MEMORY_TYPES
    },
    "emotions": EMOTIONS,
    "namespaces": [
        {"pattern": "agent:*:instruction:*", "cell": "procedural.agent", "pinned": True},
        {"pattern": "world:*", "cell": "semantic.other", "half_life_days": 365},
    ],
}
PACK = pack_document(
    "harbour",
    "1.0.0",
    {"HARBOUR_LOG": "content"},
    grid=GRID,
    graph={"relations": {name: {"sigma_days": sigma} for name, sigma in SIGMAS.items()}},
)


class Clock:
    def __init__(self, moment: datetime = T) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        return self.moment


HARBOUR = validate_pack(PACK, source="test")


def open_store(clock: Clock, path: Any = ":memory:") -> Store:
    store = Store(path, project=PROJECT, plugins=fresh_plugin_manager(), clock=clock)
    store.packs.install(HARBOUR)
    return store


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(new_store, clock) -> Store:
    """A store on each engine (the batched passes' SQL differs in spelling only)."""
    return new_store(HARBOUR, project=PROJECT, plugins=fresh_plugin_manager(), clock=clock)


def dreamer(store: Store, batch_size: int | None = None) -> Dreamer:
    found = Dreamer(store)
    if batch_size is not None:
        task = found.tasks["consolidate"]
        found.tasks["consolidate"] = attrs.evolve(task, batch_size=batch_size)
    return found


# Random stores

# Ages are in microseconds before the pass (the store's clock has microseconds); negative:
# a clock behind the data. MS_AGES are whole milliseconds.
AGES = st.integers(min_value=-2 * 86_400 * 10**6, max_value=3 * 365 * 86_400 * 10**6)
MS_AGES = st.integers(min_value=-2 * 86_400 * 10**3, max_value=3 * 365 * 86_400 * 10**3).map(
    lambda ms: ms * 1000
)


@st.composite
def entity_specs(draw, ages) -> dict[str, Any]:
    return {
        "age": draw(ages),
        "cell": draw(st.sampled_from(CELLS)),
        "half_life_days": draw(st.none() | st.floats(min_value=1, max_value=400)),
        "base_strength": draw(st.floats(min_value=0.1, max_value=5)),
        "pinned": draw(st.booleans()),
        "emotional_tag": draw(st.none() | st.sampled_from(sorted(EMOTIONS))),
        "positive": draw(st.integers(0, 6)),
        "negative": draw(st.integers(0, 6)),
        "retrievals": draw(st.integers(0, 6)),
    }


@st.composite
def memory_specs(draw, ages) -> dict[str, Any]:
    return {
        "age": draw(ages),
        "cell": draw(st.none() | st.sampled_from(CELLS)),  # None: not placed on the grid
        # Its own half-life (the Retain Job's schema_fit scaling), else the cell's.
        "half_life_days": draw(st.none() | st.floats(min_value=1, max_value=400)),
        "retrievals": draw(st.integers(0, 6)),
        "pinned": draw(st.booleans()),
        "archived": draw(st.integers(0, 5).map(lambda n: n == 0)),
    }


@st.composite
def store_specs(draw, ages=AGES) -> dict[str, Any]:
    entities = draw(st.lists(entity_specs(ages), min_size=1, max_size=10))
    pairs = st.tuples(
        st.integers(0, len(entities) - 1),
        st.integers(0, len(entities) - 1),
        st.sampled_from(sorted(SIGMAS)),
        ages,
    ).filter(lambda r: r[0] != r[1])
    relations = draw(st.lists(pairs, max_size=8))
    memories = draw(st.lists(memory_specs(ages), max_size=8))
    return {"entities": entities, "relations": relations, "memories": memories}


def build(store: Store, clock: Clock, spec: dict[str, Any]) -> None:
    """Fill a store as ``spec`` says, each row written at its own (past) time."""
    for index, e in enumerate(spec["entities"]):
        clock.moment = T - timedelta(microseconds=e["age"])
        added = store.entities.add(
            f"world:thing:e{index}",
            cell=e["cell"],
            half_life_days=e["half_life_days"],
            base_strength=e["base_strength"],
            pinned=e["pinned"],
            emotional_tag=e["emotional_tag"],
        )
        for _ in range(e["positive"]):
            store.entities.outcome(added.id, positive=True)
        for _ in range(e["negative"]):
            store.entities.outcome(added.id, positive=False)
        for _ in range(e["retrievals"]):
            store.entities.retrieved(added.id)
    for source, target, type_, age in spec["relations"]:
        clock.moment = T - timedelta(microseconds=age)
        store.relations.relate(f"world:thing:e{source}", f"world:thing:e{target}", type_)
    for index, m in enumerate(spec["memories"]):
        clock.moment = T - timedelta(microseconds=m["age"])
        memory_id = store.memories.write(f"memory number {index} about the lamp", "HARBOUR_LOG").id
        for _ in range(m["retrievals"]):
            store.memories.record_retrievals([memory_id])
        if m["pinned"]:
            store.memories.update(memory_id, pinned=True)
        if m["cell"] is not None:
            memory_type, referent = m["cell"].split(".")
            place(store, [(memory_id, CellDecision(memory_type, referent, None, "test"))])
            if m["half_life_days"] is not None:
                with store.atomic():
                    store.db.execute(
                        "UPDATE memory_cells SET half_life_days = ? WHERE memory_id = ?",
                        [m["half_life_days"], memory_id],
                    )
        if m["archived"]:
            store.memories.archive(memory_id)
    clock.moment = T


def expected_entities(store: Store, as_of: str) -> dict[int, float]:
    return {
        e.id: strength(
            base_strength=e.base_strength,
            days=days_between(e.last_seen_at, as_of),
            half_life_days=e.half_life_days,
            positive=e.positive_outcomes,
            negative=e.negative_outcomes,
            retrieval_count=e.retrieval_count,
            emotional_multiplier=e.emotional_multiplier,
            pinned=e.pinned,
        )
        for e in store.entities.list(limit=None)
    }


def expected_relations(store: Store, as_of: str) -> dict[int, float]:
    return {
        row["id"]: weight_temporal(days_between(row["last_seen_at"], as_of), SIGMAS[row["type"]])
        for row in store.db.query("SELECT id, type, last_seen_at FROM relations")
    }


def expected_memories(store: Store, as_of: str) -> dict[int, float | None]:
    """Placed memories: active ones by the formula (base 1, no outcomes); archived untouched."""
    policy = grid(store)
    result: dict[int, float | None] = {}
    for row in store.db.query(
        "SELECT memory_id, memory_type, referent, half_life_days FROM memory_cells"
    ):
        memory = store.memories.get(row["memory_id"])
        if memory.status != "active":
            result[memory.id] = None
            continue
        cell = policy.cells[f"{row['memory_type']}.{row['referent']}"]
        result[memory.id] = strength(
            base_strength=1.0,
            days=days_between(memory.last_seen_at, as_of),
            half_life_days=row["half_life_days"] or cell.half_life_days,
            retrieval_count=memory.retrieval_count,
            emotional_multiplier=cell.emotional_multiplier,
            pinned=memory.pinned,
        )
    return result


def computed(store: Store) -> tuple[dict[int, Any], dict[int, Any], dict[int, Any]]:
    entities = {
        row["id"]: (row["strength"], row["strength_at"])
        for row in store.db.query("SELECT id, strength, strength_at FROM entities")
    }
    relations = {
        row["id"]: row["weight_temporal"]
        for row in store.db.query("SELECT id, weight_temporal FROM relations")
    }
    memories = {
        row["memory_id"]: (row["strength"], row["strength_at"])
        for row in store.db.query("SELECT memory_id, strength, strength_at FROM memory_cells")
    }
    return entities, relations, memories


def check_against_python(store: Store, as_of: str) -> None:
    entities, relations, memories = computed(store)
    for entity_id, value in expected_entities(store, as_of).items():
        got, stamp = entities[entity_id]
        assert stamp == as_of
        assert got == pytest.approx(value, rel=SQL_REL), f"entity {entity_id}"
    for relation_id, value in expected_relations(store, as_of).items():
        assert relations[relation_id] == pytest.approx(value, rel=SQL_REL), (
            f"relation {relation_id}"
        )
    for memory_id, value in expected_memories(store, as_of).items():
        got, stamp = memories[memory_id]
        if value is None:
            assert (got, stamp) == (None, None), f"archived memory {memory_id}"
        else:
            assert stamp == as_of
            assert got == pytest.approx(value, rel=SQL_REL), f"memory {memory_id}"


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(store_specs())
def test_the_pass_writes_the_formulas_values(spec):
    # Times with microseconds, as the store's clock writes them.
    run_and_check(spec)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(store_specs(MS_AGES))
def test_the_pass_writes_the_formulas_values_at_whole_milliseconds(spec):
    run_and_check(spec)


def run_and_check(spec: dict[str, Any]) -> None:
    clock = Clock()
    with open_store(clock) as store:
        build(store, clock, spec)
        [report] = Dreamer(store).run("consolidate")
        assert report.finished_pass
        assert report.error is None
        check_against_python(store, store.now())


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(store_specs(MS_AGES), st.integers(1, 4))
def test_a_split_pass_resumes_to_the_same_result(spec, batch_size):
    whole_clock, split_clock = Clock(), Clock()
    with open_store(whole_clock) as whole, open_store(split_clock) as split:
        build(whole, whole_clock, spec)
        build(split, split_clock, spec)
        dreamer(whole, batch_size).run("consolidate")
        as_of = split.now()
        runs = 0
        while True:
            [report] = dreamer(split, batch_size).run("consolidate", max_batches=1)
            runs += 1
            if report.finished_pass:
                break
            assert report.batches == 1
            split_clock.moment += timedelta(hours=6)  # later runs still describe the pass's start
            assert runs < 100
        assert runs > 1
        assert computed(split) == computed(whole)
        check_against_python(split, as_of)


def test_progress_sees_done_increasing_to_total(store, clock):
    for index in range(5):
        store.entities.add(f"world:thing:e{index}")
    for source, target in [(0, 1), (1, 2), (2, 3)]:
        store.relations.relate(f"world:thing:e{source}", f"world:thing:e{target}", "mentions")
    for index in range(5):
        memory_id = store.memories.write(f"memory number {index}", "HARBOUR_LOG").id
        if index != 4:  # the last one is not placed: not part of the pass
            place(store, [(memory_id, CellDecision("episodic", "object", None, "test"))])
    calls: list[tuple[str, int, int | None]] = []
    [report] = dreamer(store, batch_size=2).run(
        "consolidate", progress=lambda task, done, total: calls.append((task.name, done, total))
    )
    assert report.finished_pass
    assert {name for name, _, _ in calls} == {"consolidate"}
    assert {total for _, _, total in calls} == {5 + 3 + 4}
    done = [d for _, d, _ in calls]
    assert done == sorted(done)
    assert done[0] > 0
    assert done[-1] == 12
    assert len(calls) >= 6  # batches of at most 2: 3 + 2 + 2
    [status] = [row for row in Dreamer(store).status() if row["task"] == "consolidate"]
    assert status["passes"] == 1
    assert status["total"] == 12


def test_hand_computed_pass(store, clock):
    clock.moment = T - timedelta(days=10)
    store.entities.add("world:person:anya", half_life_days=10, emotional_tag="negative")
    for _ in range(3):
        store.entities.retrieved("world:person:anya")
    for positive in (True, True, True, False):
        store.entities.outcome("world:person:anya", positive=positive)
    store.entities.add("agent:claude-code:instruction:no-force-push")
    clock.moment = T - timedelta(days=14)
    store.entities.add("world:project:lamp", half_life_days=7)
    store.relations.relate("world:person:anya", "world:project:lamp", "mentions")
    clock.moment = T
    Dreamer(store).run("consolidate")
    anya = store.entities.get("world:person:anya")
    # pos 3 neg 1 -> reward 1.2, effective half-life 12; Δt 10 -> 0.5^(10/12);
    # 3 retrievals -> 1.2; negative 1.5:  2^(−5/6) × 1.8 = 1.0102158434784358
    assert anya.strength == pytest.approx(2 ** (-5 / 6) * 1.8, rel=1e-9)
    assert anya.strength_at == store.now()
    # Half-life 7, Δt 14: 0.25 × semantic.other's multiplier.
    lamp = store.entities.get("world:project:lamp")
    assert lamp.strength == pytest.approx(0.25 * cell_defaults("semantic.other")[1], rel=1e-9)
    assert store.entities.get("agent:claude-code:instruction:no-force-push").strength == math.inf
    # mentions: σ 14, Δt 14 -> exp(−1).
    [relation] = store.relations.of("world:project:lamp")
    assert relation.weight_temporal == pytest.approx(math.exp(-1), rel=1e-9)
    assert relation.effective_weight == pytest.approx(math.exp(-1), rel=1e-9)


def test_sub_millisecond_ages_agree(store, clock):
    # The store's clock writes microseconds. Half-life 1 day, 6 bad outcomes -> reward
    # 1 + 0.5 × (−6/7), effective half-life 4/7 day; last seen 499 µs before the pass:
    # 0.5^(499e-6 / 86400 / (4/7)) = 1 − 7.0e-9, not 1; SQLite sees an age of 0 or 1 ms,
    # within SQL_REL of the exact value.
    clock.moment = T - timedelta(microseconds=499)
    entity = store.entities.add("world:thing:flicker", half_life_days=1.0)
    for _ in range(6):
        store.entities.outcome(entity.id, positive=False)
    clock.moment = T
    Dreamer(store).run("consolidate")
    expected = 0.5 ** (499e-6 / 86400 / (4 / 7)) * cell_defaults(entity.cell)[1]
    assert store.entities.get(entity.id).strength == pytest.approx(expected, rel=SQL_REL)


def test_memories_not_on_the_grid_are_left_alone(store, clock):
    clock.moment = T - timedelta(days=30)
    placed = store.memories.write("the lamp went out", "HARBOUR_LOG").id
    unplaced = store.memories.write("the tide came in", "HARBOUR_LOG").id
    archived = store.memories.write("the old lens cracked", "HARBOUR_LOG").id
    place(
        store,
        [
            (placed, CellDecision("episodic", "object", None, "test")),
            (archived, CellDecision("episodic", "object", None, "test")),
        ],
    )
    store.memories.archive(archived)
    clock.moment = T
    memories_before = [tuple(r) for r in store.db.execute("SELECT * FROM memories ORDER BY id")]
    [report] = Dreamer(store).run("consolidate")
    assert report.finished_pass
    _, _, memories = computed(store)
    assert set(memories) == {placed, archived}  # no row for the unplaced memory
    assert memories[archived] == (None, None)
    half_life, multiplier = cell_defaults("episodic.object")
    assert memories[placed][0] == pytest.approx(0.5 ** (30 / half_life) * multiplier, rel=1e-9)
    memories_after = [tuple(r) for r in store.db.execute("SELECT * FROM memories ORDER BY id")]
    assert memories_after == memories_before
    assert unplaced in [r[0] for r in memories_after]


def test_other_projects_are_left_alone(tmp_path, clock):
    path = tmp_path / "two.db"
    with open_store(clock, path) as store:
        store.entities.add("world:person:anya")
        with Store(path, project="elsewhere", plugins=fresh_plugin_manager(), clock=clock) as other:
            other.entities.add("world:person:anya")
            other.entities.add("world:project:lamp")
            other.relations.relate("world:person:anya", "world:project:lamp", "mentions")
        clock.moment = T + timedelta(days=30)
        Dreamer(store).run("consolidate")
        assert store.entities.get("world:person:anya").strength is not None
        elsewhere = store.entities.get("world:person:anya", project="elsewhere")
        assert (elsewhere.strength, elsewhere.strength_at) == (None, None)
        assert store.db.execute("SELECT weight_temporal FROM relations").fetchone()[0] == 1.0


def test_a_relation_type_no_pack_declares_is_left_alone(store, clock):
    store.entities.add("world:person:anya")
    store.entities.add("world:project:lamp")
    kept = store.relations.relate("world:person:anya", "world:project:lamp", "caused")
    gone = store.relations.relate("world:person:anya", "world:project:lamp", "part_of")
    newer = pack_document(
        "harbour",
        "1.1.0",
        {"HARBOUR_LOG": "content"},
        grid=GRID,
        graph={"relations": {"caused": {"sigma_days": 30}}},
    )
    store.packs.upgrade(validate_pack(newer, source="test 1.1"))
    assert unknown_relation_types(store) == {"part_of": 1}
    clock.moment = T + timedelta(days=30)
    [report] = Dreamer(store).run("consolidate")
    assert report.finished_pass
    assert store.relations.between(kept.source, kept.target, "caused").weight_temporal == (
        pytest.approx(math.exp(-1), rel=1e-9)
    )
    assert store.relations.between(gone.source, gone.target, "part_of").weight_temporal == 1.0


def test_an_empty_store_finishes_at_once(store):
    [report] = Dreamer(store).run("consolidate")
    assert report.finished_pass
    assert report.handled == 0
