"""The grid in use: the CLI, the injector's strength ranking, install reports, merges, plans."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from plugin_sdk import Store, validate_pack
from plugin_sdk.cli import cli
from plugin_sdk.grid.consolidation import prepare
from plugin_sdk.stages.dreamer import Dreamer
from plugin_sdk.stages.inject import inject
from plugin_sdk.store.models import CELLS
from plugin_sdk.store.tables.grid import cells, entities, relations
from plugin_sdk.testing import fresh_plugin_manager, grid_section, pack_document

T = datetime(2026, 6, 1, tzinfo=timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.moment = T

    def __call__(self) -> datetime:
        return self.moment


def harbour(version: str = "1.0.0", **grid_extra) -> dict:
    return pack_document(
        "harbour",
        version,
        {"HARBOUR_RULES": "intent", "HARBOUR_LOG": "content"},
        grid=grid_section(**grid_extra),
        graph={"relations": {"moored_at": {"sigma_days": 10}}},
    )


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(tmp_path, clock):
    with Store(
        tmp_path / "g.db", project="p", plugins=fresh_plugin_manager(), clock=clock
    ) as opened:
        opened.packs.install(validate_pack(harbour(), source="test"))
        yield opened


@pytest.fixture
def run(tmp_path):
    db = str(tmp_path / "cli.db")

    def invoke(*args: str, ok: bool = True):
        result = CliRunner().invoke(
            cli,
            list(args),
            env={"MEMSDK_DB": db, "MEMSDK_PROJECT": "demo", "MEMSDK_LOAD_PLUGINS": ""},
        )
        if ok:
            assert result.exit_code == 0, result.output
        return result

    invoke.db = db
    return invoke


def test_grid_show_on_the_demo_store_prints_every_cell_with_defaults_and_counts(run):
    run("demo", "--db", run.db)
    shown = run("grid", "show").output
    data = json.loads(run("grid", "show", "--json").output)
    assert set(data["cells"]) == set(CELLS)
    lines = shown.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["self"])
    assert lines[header].split() == ["self", "agent", "other", "object", "abstract"]
    for offset, memory_type in enumerate(("episodic", "semantic", "procedural")):
        defaults = lines[header + 1 + 2 * offset].split()
        counts = lines[header + 2 + 2 * offset].split()
        assert defaults[0] == memory_type
        for index, referent in enumerate(("self", "agent", "other", "object", "abstract")):
            cell = data["cells"][f"{memory_type}.{referent}"]
            assert defaults[1 + 2 * index] == f"{cell['half_life_days']:g}d"
            assert defaults[2 + 2 * index] == f"×{cell['emotional_multiplier']:g}"
            assert counts[3 * index : 3 * index + 3] == [
                str(cell["entities"]),
                "/",
                str(cell["memories"]),
            ]
    # the demo placed every active memory and added its sample entities
    assert sum(c["memories"] for c in data["cells"].values()) > 400
    assert sum(c["entities"] for c in data["cells"].values()) >= 10
    assert "works_on" in shown and "agent:*:instruction:*" in shown


def test_entity_commands_round_trip(run):
    run("init", "--pack", "ops")
    added = json.loads(run("entity", "add", "world:person:anya", "--json").output)
    assert (added["cell"], added["half_life_days"]) == ("semantic.other", 365.0)
    run("entity", "add", "world:project:atlas")
    pinned = run("entity", "add", "agent:claude-code:instruction:no-force-push").output
    assert "pinned" in pinned
    run("entity", "relate", "world:person:anya", "works_on", "world:project:atlas")
    category = json.loads(run("criteria", "show", "--json").output)[0]["name"]
    memory = json.loads(
        run("memory", "write", "Please always tag releases.", "-c", category, "--json").output
    )
    run("entity", "link", str(memory["id"]), "world:person:anya")
    run("dream", "run", "classify", "consolidate")
    shown = json.loads(run("entity", "show", "world:person:anya", "--json").output)
    assert shown["memories"] == [memory["id"]]
    assert shown["relations"][0]["target"] == "world:project:atlas"
    assert shown["strength"] == pytest.approx(1.0, rel=1e-3)  # consolidated just now
    listed = json.loads(run("entity", "list", "--ns", "agent:*:instruction:*", "--json").output)
    assert [e["name"] for e in listed] == ["agent:claude-code:instruction:no-force-push"]
    assert listed[0]["strength_now"] == "pinned"
    by_cell = json.loads(run("entity", "list", "--cell", "semantic.object", "--json").output)
    assert [e["name"] for e in by_cell] == ["world:project:atlas"]
    acts = json.loads(run("entity", "acts", "--json").output)
    assert acts["world:person:anya"]["directive"] == 1
    assert "predominantly directive" in run("entity", "acts").output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("entity", "add", "Anya"), "is not namespace:slug"),
        (("entity", "show", "world:person:nobody"), "no entity named 'world:person:nobody'"),
        (("entity", "relate", "world:a:b", "likes", "world:c:d"), "unknown relation type 'likes'"),
        (("entity", "add", "world:person:x", "--emotion", "smug"), "unknown emotional tag 'smug'"),
    ],
)
def test_entity_errors_are_one_line(run, args, message):
    run("init", "--pack", "ops")
    run("entity", "add", "world:a:b")
    result = run(*args, ok=False)
    assert result.exit_code == 1
    assert message in result.output
    assert result.output.count("\n") == 1


def test_grid_show_without_a_grid_says_so(run, tmp_path):
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(pack_document("plain", "1.0.0", {"PLAIN_NOTES": "content"})))
    run("init", "--pack", str(path))
    result = run("grid", "show", ok=False)
    assert result.exit_code == 1
    assert "no installed pack has a [grid] section" in result.output


def test_the_injector_ranks_by_strength_after_importance(store, clock):
    category = store.category_names()[1]
    old = store.memories.write("Harbour crane two was serviced in spring.", category).id
    fresh = store.memories.write("Harbour crane one was serviced in summer.", category).id
    with store.atomic():
        store.db.execute("UPDATE memories SET importance = 50 WHERE id IN (?, ?)", [old, fresh])
        store.db.execute(
            "UPDATE memories SET last_seen_at = ?, seen_count = 5 WHERE id = ?",
            [(T - timedelta(days=90)).isoformat(), old],
        )
    before = inject(store, budget=4000)
    assert before.shown.index(old) < before.shown.index(fresh)  # seen more: the tie-break
    from plugin_sdk.stages.classify import classify

    classify(store)
    with store.atomic():  # the same importance again (classify rates them)
        store.db.execute("UPDATE memories SET importance = 50 WHERE id IN (?, ?)", [old, fresh])
    Dreamer(store).run("consolidate")
    after = inject(store, budget=4000)
    assert after.shown.index(fresh) < after.shown.index(old)  # stronger now: 90 days fresher


def test_install_reports_grid_values_another_pack_owns(store):
    rival = pack_document(
        "rival",
        "1.0.0",
        {"RIVAL_NOTES": "content"},
        grid=grid_section(half_life_days=99),
        graph={"relations": {"moored_at": {"sigma_days": 3}}},
    )
    report = store.packs.install(validate_pack(rival, source="test"))
    assert "graph.relations.moored_at (kept from pack harbour)" in report.grid_kept
    assert "grid.cells.episodic.self (kept from pack harbour)" in report.grid_kept
    assert len([k for k in report.grid_kept if k.startswith("grid.cells.")]) == len(CELLS)


def test_a_merge_gives_the_survivor_the_entity_links(store):
    category = store.category_names()[1]
    a = store.memories.write("The ferry leaves at nine.", category).id
    b = store.memories.write("Ferry departs 09:00 daily.", category).id
    store.entities.link(a, ["world:person:skipper"])
    store.entities.link(b, ["world:boat:ferry"], role="subject")
    store.memories.merge([b], into=a)
    linked = {(role, e.name) for role, e in store.entities.of_memory(a)}
    assert linked == {("actor", "world:person:skipper"), ("subject", "world:boat:ferry")}


@pytest.mark.parametrize("phase", ["entities", "relations", "memories"])
def test_consolidation_batches_walk_id_ranges_not_project_indexes(store, phase):
    # At 1M rows a plan that sorts the project's rows for every batch made the
    # pass quadratic (bench/bench_consolidate.py): each batch must seek by id.
    prepare(store)
    owner = {"entities": entities, "relations": relations, "memories": cells}[phase]
    for sql in (owner.BATCH_END, owner.CONSOLIDATE):
        params = (
            ["p", 0, 10]
            if sql is owner.BATCH_END
            else {"stamp": store.now(), "project": "p", "after": 0, "upto": 10}
        )
        plan = " ".join(row[-1] for row in store.db.execute("EXPLAIN QUERY PLAN " + sql, params))
        assert "INTEGER PRIMARY KEY" in plan, plan
        assert "USE TEMP B-TREE FOR ORDER BY" not in plan, plan


def test_edges_never_cross_projects(store):
    here = store.entities.add("world:boat:ferry")
    there = store.entities.add("world:boat:tug", project="other")
    from plugin_sdk.errors import NotFound

    with pytest.raises(NotFound, match=f"no entity with id {there.id} in project 'p'"):
        store.relations.relate(here.id, there.id, "moored_at", project="p")
    with pytest.raises(NotFound):  # the target is looked up in the source's project
        store.relations.relate(here.id, there.id, "moored_at")
    assert store.db.execute("SELECT count(*) FROM relations").fetchone()[0] == 0


def test_relating_again_keeps_the_weight_unless_given(store, clock):
    store.entities.add("world:boat:ferry")
    store.entities.add("world:place:quay-1")
    first = store.relations.relate(
        "world:boat:ferry", "world:place:quay-1", "moored_at", weight=0.5
    )
    clock.moment = T + timedelta(days=10)
    again = store.relations.relate("world:boat:ferry", "world:place:quay-1", "moored_at")
    assert (first.weight, again.weight, again.evidence_count) == (0.5, 0.5, 2)
    assert again.last_seen_at > first.last_seen_at
    changed = store.relations.relate(
        "world:boat:ferry", "world:place:quay-1", "moored_at", weight=2.0
    )
    assert changed.weight == 2.0


def test_moving_an_entity_to_another_cell_takes_that_cells_half_life(tmp_path, clock):
    pack = pack_document(
        "tide",
        "1.0.0",
        {"TIDE_LOG": "content"},
        grid=grid_section(
            half_life_days=30,
            namespaces=[{"pattern": "world:buoy:*", "half_life_days": 5}],
        ),
    )
    pack["grid"]["cells"]["episodic"]["agent"]["half_life_days"] = 14
    with Store(tmp_path / "t.db", project="p", plugins=fresh_plugin_manager(), clock=clock) as s:
        s.packs.install(validate_pack(pack, source="test"))
        s.entities.add("concept:trust", cell="semantic.abstract")
        moved = s.entities.update("concept:trust", cell="episodic.agent")
        assert (moved.cell, moved.half_life_days) == ("episodic.agent", 14)
        kept = s.entities.update("concept:trust", cell="semantic.self", half_life_days=99)
        assert kept.half_life_days == 99
        s.entities.add("world:buoy:b7", cell="semantic.object")
        ruled = s.entities.update("world:buoy:b7", cell="episodic.agent")
        assert ruled.half_life_days == 5  # the namespace rule's half-life wins over the cell's


def test_list_stops_at_the_limit_and_checks_patterns(store):
    for n in range(30):
        store.entities.add(f"world:boat:b{n:02d}")
    assert [e.name for e in store.entities.list(limit=3)] == [
        "world:boat:b00",
        "world:boat:b01",
        "world:boat:b02",
    ]
    assert len(store.entities.list(pattern="world:*", limit=7)) == 7
    from plugin_sdk.errors import GridError

    with pytest.raises(GridError, match="namespace pattern 'bad pattern'"):
        store.entities.list(pattern="bad pattern")


def test_a_namespace_pattern_twice_in_a_pack_is_refused():
    from plugin_sdk.errors import PackError

    rules = [{"pattern": "world:*", "half_life_days": 9}, {"pattern": "world:*", "pinned": True}]
    with pytest.raises(PackError) as caught:
        validate_pack(harbour(namespaces=rules), source="dup.toml")
    assert caught.value.path == "grid.namespaces[1].pattern"
    assert "grid.namespaces[0]" in str(caught.value)


def test_memories_by_cell_and_act(store):
    rules, log = store.category_names()
    said = store.memories.write("Please always moor at quay 1 after dark.", rules).id
    store.memories.write("The harbour master is called Ines.", log)
    store.entities.link(said, ["world:person:ines"])
    from plugin_sdk.stages.classify import classify

    classify(store)
    # harbour's grid has no act cues: an interaction is assertive; the other memory
    # (no actor) has no act at all
    assert [m.id for m in store.memories.list(act="assertive")] == [said]
    assert store.memories.list(act="directive") == []
    cells = {
        row["memory_id"]: f"{row['memory_type']}.{row['referent']}"
        for row in store.db.query("SELECT * FROM memory_cells")
    }
    for cell in set(cells.values()):
        assert {m.id for m in store.memories.list(cell=cell)} == {
            i for i, c in cells.items() if c == cell
        }
    from plugin_sdk.errors import GridError, MemsdkError

    with pytest.raises(GridError):
        store.memories.list(cell="episodic.robot")
    with pytest.raises(MemsdkError, match="unknown act 'shouting'"):
        store.memories.list(act="shouting")


def test_an_entity_row_by_position_is_the_entity_record():
    # The owner reads and inserts entities by position (no dict per row): its
    # column list must be the record's fields, in order.
    import attrs

    from plugin_sdk.grid.entities import Entity

    assert [c.strip() for c in entities.COLUMNS.split(",")] == [
        f.name for f in attrs.fields(Entity)
    ]


def test_the_one_relate_statement_keeps_a_weight_unless_one_is_given(store, clock):
    # grid/relations.py and the Retain Job's lean path write edges through one statement.
    head = store.entities.add("world:boat:ferry")
    tail = store.entities.add("world:pier:north")
    store.relations.relate(head.id, tail.id, "moored_at", weight=2.0)
    rows = store.tables.relations
    with store.atomic():
        rows.relate("p", head.id, tail.id, "moored_at", weight=1.0, given=False, now=store.now())
    kept = store.relations.between(head.id, tail.id, "moored_at")
    assert (kept.weight, kept.evidence_count) == (2.0, 2)
    with store.atomic():
        rows.relate("p", head.id, tail.id, "moored_at", weight=0.5, given=True, now=store.now())
    given = store.relations.between(head.id, tail.id, "moored_at")
    assert (given.weight, given.evidence_count) == (0.5, 3)


def test_outcomes_of_an_entity_and_of_its_memory_move_the_same_counter(store):
    # One statement (EntityRows.add_outcomes) for store.entities.outcome and memories.outcome.
    ferry = store.entities.add("world:boat:ferry")
    memory = store.memories.write("The ferry leaves at nine.", "HARBOUR_LOG").id
    store.entities.link(memory, [ferry.name])
    store.entities.outcome(ferry.id, positive=True)
    store.memories.outcome(memory, True)
    store.memories.outcome(memory, False)
    after = store.entities.get(ferry.id)
    assert (after.positive_outcomes, after.negative_outcomes) == (2, 1)
