"""The grid in use: the CLI, the injector's strength ranking, install reports, merges, plans."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from plugin_sdk import Store, validate_pack
from plugin_sdk.cli import cli
from plugin_sdk.consolidate import _BATCH_END, _UPDATE, prepare
from plugin_sdk.dreamer import Dreamer
from plugin_sdk.grid import CELLS
from plugin_sdk.inject import inject
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
            env={"PLUGIN_SDK_DB": db, "PLUGIN_SDK_PROJECT": "demo", "PLUGIN_SDK_LOAD_PLUGINS": ""},
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
    from plugin_sdk.classify import classify

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
    for sql in (_BATCH_END[phase], _UPDATE[phase]):
        params = (
            ["p", 0, 10]
            if sql is _BATCH_END[phase]
            else {"stamp": store.now(), "project": "p", "after": 0, "upto": 10}
        )
        plan = " ".join(row[-1] for row in store.db.execute("EXPLAIN QUERY PLAN " + sql, params))
        assert "INTEGER PRIMARY KEY" in plan, plan
        assert "USE TEMP B-TREE FOR ORDER BY" not in plan, plan
