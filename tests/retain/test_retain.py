"""The Retain Job on a custom pack: routes, review, conflicts, dedup, handlers, failures.

The pack here (``field``, a birdwatcher's notebook) is the only pack installed,
so nothing assumes a built-in category. Other retain test files import its
helpers from this module.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from plugin_sdk import MemsdkError, PackError, Store, validate_pack
from plugin_sdk.errors import NoRetainPolicy, WrongStatus
from plugin_sdk.plugin.records import RetainHandler
from plugin_sdk.retain.dark_matter import accept, conflicts, pending, reject
from plugin_sdk.retain.handlers import DEFAULT, default_handle, dispatch
from plugin_sdk.retain.job import retain
from plugin_sdk.retain.observations import get, observe
from plugin_sdk.retain.routing import policy
from plugin_sdk.stages.dreamer import Dreamer
from plugin_sdk.testing import fresh_plugin_manager, pack_document

HALF_LIVES = {"episodic": 10.0, "semantic": 40.0, "procedural": 80.0}
REFERENT_STEP = {"self": 0, "agent": 1, "other": 2, "object": 3, "abstract": 4}


def cell_half_life(cell: str) -> float:
    memory_type, referent = cell.split(".")
    return HALF_LIVES[memory_type] + REFERENT_STEP[referent]


def field_pack(name: str = "field", version: str = "1.0.0", **retain: float) -> dict[str, Any]:
    """A birdwatcher's pack with its own categories, grid, graph and retain policy."""
    cells = {
        memory_type: {
            referent: {
                "half_life_days": cell_half_life(f"{memory_type}.{referent}"),
                "emotional_multiplier": 1.0,
            }
            for referent in REFERENT_STEP
        }
        for memory_type in HALF_LIVES
    }
    return pack_document(
        name,
        version,
        {"SIGHTINGS": "content", "FIELD_NOTES": "content", "SITE_RULES": "intent"},
        grid={
            "default_cell": "semantic.object",
            "cells": cells,
            "emotions": {"neutral": 1.0, "positive": 1.3, "negative": 1.5, "critical": 2.0},
            "namespaces": [
                {"pattern": "bird:*", "cell": "semantic.other", "half_life_days": 100},
                {"pattern": "bird:raptor:*", "cell": "semantic.other", "half_life_days": 50},
                {"pattern": "site:*", "cell": "semantic.object", "half_life_days": 200},
            ],
            "category_cells": {"SIGHTINGS": "episodic.other", "FIELD_NOTES": "semantic.abstract"},
        },
        graph={
            "relations": {
                "seen_at": {"sigma_days": 30},
                "nests_in": {"sigma_days": 90},
                "preys_on": {"sigma_days": 60},
            }
        },
        retain={
            "dark_matter_below": 0.3,
            "fast_track_above": 0.7,
            "dark_matter_half_life_factor": 0.5,
            "fast_track_half_life_factor": 1.5,
            "truth_impact_threshold": 3.0,
            **retain,
        },
    )


def obs(
    ident: str,
    actors: list[str],
    text: str,
    *,
    category: str = "SIGHTINGS",
    topic: str = "dawn count",
    sentiment: str | None = None,
    facts: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
    relations: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
    timestamp: str = "2026-05-01T06:00:00Z",
) -> dict[str, Any]:
    """One observation document."""
    document: dict[str, Any] = {
        "id": ident,
        "source": "notebook",
        "timestamp": timestamp,
        "category": category,
        "actors": actors,
        "topic": topic,
        "payload_typed": {
            "text": text,
            "facts": [{"subject": s, "predicate": p, "object": o} for s, p, o in facts],
            "relations": [{"source": s, "type": t, "target": o} for s, t, o in relations],
        },
    }
    if sentiment is not None:
        document["sentiment"] = sentiment
    return document


def jsonl(*documents: dict[str, Any]) -> list[str]:
    return [json.dumps(document) for document in documents]


FIELD = validate_pack(field_pack(), source="field")


def open_field_store(path: Path, *plugins: tuple[str, object], **options: Any) -> Store:
    store = Store(path, project="field", plugins=fresh_plugin_manager(*plugins), **options)
    store.packs.install(FIELD)
    return store


def dump_all(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table (FTS shadow tables aside), for before/after comparisons."""
    names = [
        name for name in store.tables.walk.table_names() if not name.startswith("memories_fts")
    ]
    if store.engine == "postgresql":  # rows in a stable order: by every column
        return {
            name: sorted(
                (tuple(row) for row in store.db.execute(f'SELECT * FROM "{name}"')), key=repr
            )
            for name in names
        }
    # Rows in a stable order: by rowid, or (a WITHOUT ROWID table) by every column.
    return {
        name: sorted(tuple(row) for row in store.db.execute(f"SELECT * FROM [{name}]"))
        if store.db[name].pks != ["rowid"] and _without_rowid(store, name)
        else [tuple(row) for row in store.db.execute(f"SELECT * FROM [{name}] ORDER BY rowid")]
        for name in names
    }


def _without_rowid(store: Store, name: str) -> bool:
    (sql,) = store.db.execute("SELECT sql FROM sqlite_master WHERE name = ?", [name]).fetchone()
    return "WITHOUT ROWID" in sql.upper()


@pytest.fixture
def field(new_store: Callable[..., Store]) -> Store:
    """A new store with the field pack, project ``field``."""
    return new_store(FIELD, name="field.db", project="field", plugins=fresh_plugin_manager())


def feed(store: Store, *documents: dict[str, Any]):
    report = observe(store, jsonl(*documents))
    assert report.ok, report.bad
    return retain(store)


HERON = "bird:heron:grey"
MARSH = "site:marsh:north"
WADER = "odd:wader:grey"  # no namespace rule covers odd:*: unclassified, so dark matter
SLUICE = "odd:site:sluice"
UNRULED = cell_half_life("semantic.object")  # the pack's default cell, for odd:* entities


def test_the_routes_follow_schema_fit_and_scale_half_lives(field):
    feed(field, obs("o1", [HERON], "A grey heron at the north marsh."))
    first = get(field, "o1")  # a new entity the taxonomy classifies: the normal path
    assert first.route == "normal" and first.schema_fit == pytest.approx(0.35 / 0.8)
    assert field.entities.get(HERON).status == "provisional"
    feed(field, obs("o2", [HERON], "The heron again, fishing by the reeds."))
    second = get(field, "o2")  # provisional actor, classified, familiar topic
    assert second.route == "fast" and second.schema_fit == pytest.approx(0.7 / 0.8)
    assert field.entities.get(HERON).status == "active"  # seen again outside dark matter
    feed(field, obs("o3", [WADER], "Something tall and grey in the sluice."))
    third = get(field, "o3")  # nothing known, nothing classified: dark matter
    assert third.route == "dark" and third.schema_fit == 0.0

    base = cell_half_life("episodic.other")  # SIGHTINGS' usual cell
    assert first.half_life_days == base
    assert second.half_life_days == base * 1.5
    assert third.half_life_days == base * 0.5
    own = dict(field.db.execute("SELECT memory_id, half_life_days FROM memory_cells").fetchall())
    assert own == {first.memory_id: None, second.memory_id: base * 1.5, third.memory_id: base * 0.5}
    assert field.entities.get(HERON).half_life_days == 100  # its namespace rule's, as created
    assert field.entities.get(WADER).half_life_days == UNRULED * 0.5


def test_the_consolidation_pass_decays_a_memory_by_its_own_half_life(tmp_path):
    now = [datetime(2026, 5, 1, tzinfo=timezone.utc)]
    store = open_field_store(tmp_path / "c.db", clock=lambda: now[0])
    feed(store, obs("c-1", [HERON], "Heron at dawn."))  # normal: the cell's half-life
    feed(store, obs("c-2", [HERON], "Heron at dawn, again, fishing."))  # fast: × 1.5
    normal, fast = get(store, "c-1"), get(store, "c-2")
    base = cell_half_life("episodic.other")
    assert (normal.route, fast.route) == ("normal", "fast")
    now[0] += timedelta(days=base * 1.5)
    Dreamer(store).run("consolidate")
    strength = dict(store.db.execute("SELECT memory_id, strength FROM memory_cells").fetchall())
    assert strength[fast.memory_id] == pytest.approx(0.5)
    assert strength[normal.memory_id] == pytest.approx(0.5**1.5)
    store.close()


def test_a_low_fit_observation_waits_in_review_with_its_half_life_halved(field):
    feed(
        field,
        obs(
            "dark-1",
            [WADER, SLUICE],
            "Unknown wader near the sluice, grey and tall.",
            facts=[(WADER, "plumage", "breeding")],
            relations=[(WADER, "seen_at", SLUICE)],
        ),
    )
    waiting = pending(field)
    assert [stored.id for stored in waiting] == ["dark-1"]
    stored = waiting[0]
    assert stored.status == "dark" and stored.schema_fit < 0.3
    assert stored.half_life_days == cell_half_life("episodic.other") * 0.5
    memory = field.memories.get(stored.memory_id)
    assert memory.status == "pending"
    assert field.memories.search("wader sluice") == []  # held: not searched
    wader, sluice = field.entities.get(WADER), field.entities.get(SLUICE)
    assert (wader.status, wader.half_life_days) == ("provisional", UNRULED * 0.5)
    assert (sluice.status, sluice.half_life_days) == ("provisional", UNRULED * 0.5)
    assert field.relations.of(WADER) == []  # held until a person accepts
    facts = field.db.execute("SELECT status FROM facts").fetchall()
    assert facts == [("held",)]

    accept(field, "dark-1")
    stored = get(field, "dark-1")
    assert (stored.status, stored.review, stored.route) == ("retained", "accepted", "dark")
    assert field.memories.get(stored.memory_id).status == "active"
    assert field.entities.get(WADER).status == "active"
    assert field.entities.get(WADER).half_life_days == UNRULED * 0.5  # as it was set
    assert [r.type for r in field.relations.of(WADER)] == ["seen_at"]
    assert field.db.execute("SELECT status FROM facts").fetchall() == [("active",)]
    assert pending(field) == []
    with pytest.raises(WrongStatus, match="'dark-1' is retained, not waiting for review"):
        accept(field, "dark-1")


def test_rejecting_dark_matter_keeps_the_record_and_archives_the_memory(field):
    feed(field, obs("ok-1", [HERON], "Heron.", facts=[(HERON, "plumage", "breeding")]))
    feed(field, obs("ok-2", [HERON], "Heron at dawn.", facts=[(HERON, "plumage", "breeding")]))
    feed(
        field,
        obs(
            "odd-1",
            ["odd:egret:great"],
            "An egret, or maybe the heron?",
            facts=[(HERON, "plumage", "winter"), ("odd:egret:great", "size", "large")],
            topic="odd",
        ),
    )
    assert get(field, "odd-1").status == "dark"
    assert [c.value for c in conflicts(field)] == ["winter"]  # held facts still conflict
    reject(field, "odd-1", reason="an egret after all")
    stored = get(field, "odd-1")
    assert (stored.status, stored.review, stored.error) == (
        "rejected",
        "rejected",
        "an egret after all",
    )
    assert field.memories.get(stored.memory_id).status == "archived"
    assert conflicts(field) == []
    assert [c.status for c in conflicts(field, status=None)] == ["dismissed"]
    assert field.entities.get("odd:egret:great").status == "provisional"


def test_a_conflicting_observation_is_recorded_and_both_facts_are_kept(field):
    feed(
        field,
        obs("n-1", [HERON], "Heron nests in the reedbed.", facts=[(HERON, "nest", "reedbed")]),
        obs("n-2", [HERON], "Heron nest seen again.", facts=[(HERON, "nest", "Reedbed")]),
        obs(
            "n-3", [HERON], "The heron nests in the alders now.", facts=[(HERON, "nest", "alders")]
        ),
    )
    assert get(field, "n-3").status == "retained"
    found = conflicts(field)
    assert len(found) == 1  # Reedbed is reedbed: the same value, no conflict
    conflict = found[0]
    assert (conflict.entity, conflict.predicate) == (HERON, "nest")
    assert {conflict.value, conflict.other_value} == {"alders", "Reedbed"}
    assert conflict.observation_id == "n-3"
    kept = field.db.execute(
        "SELECT object, status FROM facts WHERE predicate = 'nest' ORDER BY id"
    ).fetchall()
    assert kept == [("reedbed", "active"), ("Reedbed", "active"), ("alders", "active")]
    feed(field, obs("n-4", [HERON], "Alders again.", facts=[(HERON, "nest", "alders")]))
    assert len(conflicts(field)) == 1  # the same pair of values is one open conflict


def test_the_content_dedup_pass_folds_near_duplicates_but_fast_track_skips_it(field):
    feed(
        field,
        obs("d-1", [HERON], "Grey heron standing in the shallows at the north marsh"),
        obs(
            "d-2",
            [HERON],
            "grey heron standing in the shallows at north marsh",
            category="FIELD_NOTES",  # a new category and topic: the normal path
            topic="habits",
        ),
    )
    one, two = get(field, "d-1"), get(field, "d-2")
    assert two.route == "normal" and two.duplicate and two.memory_id == one.memory_id
    assert field.memories.get(one.memory_id).seen_count == 2
    feed(field, obs("d-3", [HERON], "Grey heron standing in shallows at the north marsh"))
    three = get(field, "d-3")
    assert three.route == "fast" and not three.duplicate
    assert three.memory_id != one.memory_id


def test_a_replay_changes_nothing(field):
    documents = [
        obs("r-1", [HERON, MARSH], "Heron at the marsh.", relations=[(HERON, "seen_at", MARSH)]),
        obs("r-2", [HERON], "Heron again.", facts=[(HERON, "nest", "reedbed")]),
        obs("r-3", ["bird:raptor:kestrel"], "Kestrel hovering.", sentiment="positive"),
    ]
    feed(field, *documents)
    before = dump_all(field)
    report = observe(field, jsonl(*documents, documents[0]))
    assert report.queued == [] and report.replayed == ["r-1", "r-2", "r-3", "r-1"]
    again = retain(field)
    assert again.processed == 0
    assert dump_all(field) == before


def test_an_id_reused_for_other_content_is_a_bad_line(field):
    feed(field, obs("x-1", [HERON], "Heron."))
    report = observe(field, jsonl(obs("x-1", [HERON], "Something else.")))
    assert [(b.line, b.id) for b in report.bad] == [(1, "x-1")]
    assert "different content" in report.bad[0].reason


BARN = "bird:owl:barn"


def test_a_failing_observation_rolls_back_alone(tmp_path):
    class Fussy:
        @staticmethod
        def handle(context):
            default_handle(context)
            if "boom" in context.observation.text:
                raise RuntimeError("cannot handle this one")

    class Plugin:
        from plugin_sdk import hookimpl

        @hookimpl
        def register_retain_handlers(self, register):
            register(RetainHandler("fussy", "bird:*", Fussy.handle))

    store = open_field_store(tmp_path / "f.db", ("fussy", Plugin()))
    observe(
        store,
        jsonl(
            obs("f-1", ["bird:owl:barn"], "Barn owl at dusk.", facts=[(BARN, "call", "hiss")]),
            obs("f-2", ["bird:owl:tawny"], "boom", facts=[(BARN, "call", "screech")]),
            obs("f-3", ["bird:owl:barn"], "Barn owl again."),
        ),
    )
    report = retain(store)
    assert [ident for ident, _ in report.failed] == ["f-2"]
    failed = get(store, "f-2")
    assert failed.status == "failed" and "cannot handle this one" in failed.error
    with pytest.raises(MemsdkError):
        store.entities.get("bird:owl:tawny")  # nothing of f-2 was written
    assert store.db.execute("SELECT observation_id FROM facts").fetchall() == [("f-1",)]
    assert conflicts(store) == [] and report.conflicts == 0  # f-2's conflict rolled back too
    assert report.entities_created == 1 and report.routes["normal"] + report.routes["fast"] == 2
    assert get(store, "f-3").status == "retained"
    store.close()


def test_handlers_dispatch_on_category_and_the_most_specific_namespace(tmp_path):
    ran: list[tuple[str, str]] = []

    def recorder(name):
        def handle(context):
            ran.append((name, context.observation.id))
            default_handle(context)

        return handle

    class Plugin:
        from plugin_sdk import hookimpl

        @hookimpl
        def register_retain_handlers(self, register):
            register(RetainHandler("birds", "bird:*", recorder("birds")))
            register(RetainHandler("raptors", "bird:raptor:*", recorder("raptors")))
            register(
                RetainHandler("notes-on-birds", "bird:*", recorder("notes"), category="FIELD_NOTES")
            )
            register(RetainHandler("everything", "*", recorder("everything")))

    store = open_field_store(tmp_path / "h.db", ("handlers", Plugin()))
    feed(
        store,
        obs("h-1", ["bird:heron:grey"], "Heron."),
        obs("h-2", ["bird:raptor:kestrel"], "Kestrel."),
        obs("h-3", ["bird:heron:grey"], "Herons fish at dawn.", category="FIELD_NOTES"),
        obs("h-4", ["bird:raptor:kestrel"], "Kestrels hover.", category="FIELD_NOTES"),
        obs("h-5", [MARSH], "The marsh floods in March."),
    )
    assert ran == [
        ("birds", "h-1"),
        ("raptors", "h-2"),  # more literal segments beat the category match
        ("notes", "h-3"),  # same pattern: the category's own handler wins
        ("raptors", "h-4"),
        ("everything", "h-5"),
    ]
    assert [get(store, f"h-{i}").handler for i in range(1, 6)] == [
        "birds",
        "raptors",
        "notes-on-birds",
        "raptors",
        "everything",
    ]
    store.close()


def test_dispatch_falls_back_to_the_default_handler():
    handlers = [RetainHandler("birds", "bird:*", default_handle, category="SIGHTINGS")]
    assert dispatch(handlers, "SIGHTINGS", "site:marsh") is DEFAULT
    assert dispatch(handlers, "FIELD_NOTES", "bird:heron") is DEFAULT
    assert dispatch(handlers, "SIGHTINGS", "bird:heron").name == "birds"
    assert dispatch([], "SIGHTINGS", "bird:heron") is DEFAULT


def test_two_handlers_for_the_same_key_are_an_error_naming_both(tmp_path):
    class Plugin:
        from plugin_sdk import hookimpl

        @hookimpl
        def register_retain_handlers(self, register):
            register(RetainHandler("one", "bird:*", default_handle))
            register(RetainHandler("two", "bird:*", default_handle))

    store = open_field_store(tmp_path / "d.db", ("dupes", Plugin()))
    observe(store, jsonl(obs("z-1", [HERON], "Heron.")))
    with pytest.raises(MemsdkError, match="'one' and 'two'"):
        retain(store)
    assert get(store, "z-1").status == "queued"
    store.close()


def test_a_plugin_schema_fit_decides_and_a_bad_value_fails_the_observation(tmp_path):
    class Fit:
        from plugin_sdk import hookimpl

        @hookimpl
        def schema_fit(self, observation, entities):
            return {"trusted": 0.95, "weird": 1.5}.get(observation.source)

    store = open_field_store(tmp_path / "s.db", ("fit", Fit()))
    trusted = obs("s-1", ["bird:rare:hoopoe"], "Hoopoe on the lawn.")
    trusted["source"] = "trusted"
    weird = obs("s-2", ["bird:rare:bittern"], "Bittern booming.")
    weird["source"] = "weird"
    observe(store, jsonl(trusted, weird))
    report = retain(store)
    assert get(store, "s-1").route == "fast" and get(store, "s-1").schema_fit == 0.95
    assert report.failed and "1.5" in report.failed[0][1]
    assert get(store, "s-2").status == "failed"
    store.close()


def test_sentiment_sets_a_stronger_emotional_tag_and_the_clock_restarts(field):
    feed(field, obs("e-1", [HERON], "Heron."), obs("e-2", [HERON], "Heron."))
    assert field.entities.get(HERON).emotional_tag is None
    feed(field, obs("e-3", [HERON], "Heron caught in fishing line!", sentiment="critical"))
    heron = field.entities.get(HERON)
    assert heron.emotional_tag == "critical" and heron.emotional_multiplier == 2.0
    assert heron.strength == pytest.approx(2.0)  # just seen: base 1 × multiplier 2
    feed(field, obs("e-4", [HERON], "Heron fine now.", sentiment="positive"))
    assert field.entities.get(HERON).emotional_tag == "critical"  # the stronger one stays


def test_an_unknown_category_is_reported_and_kept_as_invalid(field):
    report = observe(field, jsonl(obs("u-1", [HERON], "Heron.", category="WEATHER")))
    assert [(b.line, b.id, b.kept) for b in report.bad] == [(1, "u-1", True)]
    assert "unknown category 'WEATHER'" in report.bad[0].reason
    assert "SIGHTINGS" in report.bad[0].reason  # the store's categories, from the DB
    stored = get(field, "u-1")
    assert stored.status == "invalid" and "WEATHER" in stored.error
    again = observe(field, jsonl(obs("u-1", [HERON], "Heron.", category="WEATHER")))
    assert again.bad and again.bad[0].kept
    fixed = observe(field, jsonl(obs("u-1", [HERON], "Heron.", category="SIGHTINGS")))
    assert fixed.queued == ["u-1"] and get(field, "u-1").status == "queued"


def test_the_retain_policy_comes_from_the_packs(tmp_path):
    assert policy_of(tmp_path / "a.db", field_pack()).dark_matter_below == 0.3
    with pytest.raises(NoRetainPolicy, match=r"retain\.truth_impact_threshold"):
        incomplete = field_pack()
        del incomplete["retain"]["truth_impact_threshold"]
        policy_of(tmp_path / "b.db", incomplete)
    with pytest.raises(PackError, match=r"at retain\.dark_matter_below"):
        validate_pack(field_pack(dark_matter_below=0.8), source="crossed")
    with pytest.raises(PackError, match=r"at retain\.fast_track_above"):
        validate_pack(field_pack(fast_track_above=1.5), source="too-high")
    with pytest.raises(PackError, match=r"at retain: Additional properties"):
        document = field_pack()
        document["retain"]["dark_matter"] = 0.2
        validate_pack(document, source="typo")


def test_the_first_installed_pack_owns_a_retain_value(tmp_path):
    store = Store(tmp_path / "two.db", project="p", plugins=fresh_plugin_manager())
    store.packs.install(validate_pack(field_pack(), source="first"))
    second = pack_document("second", "1.0.0", {"OTHER_NOTES": "content"})
    second["retain"] = {"dark_matter_below": 0.1, "truth_impact_threshold": 9.0}
    store.packs.install(validate_pack(second, source="second"))
    found = policy(store)
    assert found.dark_matter_below == 0.3 and found.owners["dark_matter_below"] == "field"
    store.close()


def policy_of(path: Path, document: dict[str, Any]):
    store = Store(path, project="p", plugins=fresh_plugin_manager())
    try:
        store.packs.install(validate_pack(document, source="test"))
        return policy(store)
    finally:
        store.close()


def test_the_dreamer_task_runs_the_retain_job(field):
    observe(field, jsonl(*(obs(f"t-{i}", [HERON], f"Heron number {i}.") for i in range(5))))
    dreamer = Dreamer(field)
    assert "retain" in dreamer.tasks
    status = {row["task"]: row for row in dreamer.status()}
    assert status["retain"]["total"] == 5
    reports = dreamer.run("retain")
    assert reports[0].finished_pass and reports[0].handled == 5
    assert {get(field, f"t-{i}").status for i in range(5)} == {"retained"}


def test_a_store_without_a_grid_refuses_to_retain(tmp_path):
    store = Store(tmp_path / "plain.db", project="p", plugins=fresh_plugin_manager())
    store.packs.install(
        validate_pack(pack_document("plain", "1.0.0", {"NOTES": "content"}), source="plain")
    )
    with pytest.raises(MemsdkError, match="grid"):
        observe(store, jsonl(obs("p-1", ["bird:x:y"], "x", category="NOTES")))
    store.close()


def test_the_observation_schema_is_valid_and_the_docs_example_passes_it():
    import jsonschema

    from plugin_sdk.retain.observations import check_document, observation_schema

    jsonschema.Draft202012Validator.check_schema(observation_schema())
    text = (Path(__file__).resolve().parents[2] / "docs" / "retain.md").read_text("utf-8")
    (example,) = [b.split("\n```", 1)[0] for b in text.split("```json\n")[1:]]
    observation = check_document(json.loads(example))
    assert observation.target == "world:person:anya" and observation.facts[0].predicate == "role"


def test_a_retained_observation_gives_its_memory_the_time_it_happened(field):
    feed(
        field,
        obs(
            "o1", [HERON], "A grey heron at the north marsh.", timestamp="2026-05-01T06:00:00+02:00"
        ),
    )
    memory = field.memories.get(get(field, "o1").memory_id)
    assert memory.occurred_at == "2026-05-01T04:00:00.000000+00:00"
