"""The command line end to end: observe a JSONL file with good and bad lines, retain,
replay, review dark matter, read conflicts and Compiled Truth."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from plugin_sdk import Store
from plugin_sdk.cli import cli
from plugin_sdk.cli import retain as retain_cli
from plugin_sdk.retain import observations
from plugin_sdk.testing import fresh_plugin_manager
from tests.retain.test_retain import HERON, MARSH, dump_all, field_pack, obs

KESTREL = "bird:raptor:kestrel"


@pytest.fixture
def run(tmp_path):
    db = str(tmp_path / "cli.db")

    def invoke(*args: str, input: str | None = None, code: int = 0):
        result = CliRunner().invoke(
            cli,
            list(args),
            input=input,
            env={"MEMSDK_DB": db, "MEMSDK_PROJECT": "field"},
            obj={"plugins": fresh_plugin_manager()},
        )
        assert result.exit_code == code, (result.stdout, result.stderr)
        return result

    pack = tmp_path / "field.json"
    pack.write_text(json.dumps(field_pack()), "utf-8")
    invoke("pack", "install", str(pack))
    invoke.db = db
    return invoke


def open_db(db: str) -> Store:
    return Store(db, project="field", plugins=fresh_plugin_manager())


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def observations_file(tmp_path: Path) -> Path:
    good = [
        obs(
            "o-1",
            [HERON, MARSH],
            "Grey heron at the north marsh.",
            relations=[(HERON, "seen_at", MARSH)],
        ),
        obs("o-2", [HERON], "Heron nests in the reedbed.", facts=[(HERON, "nest", "reedbed")]),
        obs(
            "o-3",
            [KESTREL, MARSH],
            "Kestrel hunting over the marsh.",
            relations=[(KESTREL, "seen_at", MARSH)],
        ),
    ]
    no_actors = obs("o-5", [HERON], "x")
    no_actors["actors"] = []
    lines = [
        json.dumps(good[0]),
        "{not json",  # line 2
        json.dumps(good[1]),
        "",  # blank: skipped, not an error
        json.dumps(no_actors),  # line 5: the schema refuses it
        json.dumps(obs("o-6", [HERON], "Rain.", category="WEATHER")),  # line 6: kept as invalid
        json.dumps(good[2]),
        json.dumps(obs("o-1", [HERON], "Not what o-1 said.")),  # line 8: id reused
        json.dumps(obs("o-9", ["Bad Name"], "x")),  # line 9: not an entity name
    ]
    return write_lines(tmp_path / "observations.jsonl", lines)


def test_observe_reports_bad_lines_by_number_and_retains_the_good_ones(run, tmp_path):
    path = observations_file(tmp_path)
    result = run("observe", str(path), code=1)
    out = result.stdout
    assert f"{path}:2: not JSON" in out
    assert f"{path}:5: [o-5] actors: [] should be non-empty" in out
    assert f"{path}:6: [o-6] unknown category 'WEATHER'" in out and "(kept as invalid)" in out
    assert f"{path}:8: [o-1] id 'o-1' is used by line 1 for different content" in out
    assert f"{path}:9: [o-9] actors[0]: 'Bad Name' is not valid: An entity name" in out
    assert "Queued 3; replayed (unchanged) 0; bad lines 5 (1 kept as invalid)" in out

    ran = run("retain", "run")
    assert ran.stderr == ""  # no terminal, so no progress bar (test_cli_habits.py draws one)
    assert "Processed 3 observations" in ran.stdout and "0 failed" in ran.stdout

    store = open_db(run.db)
    try:
        names = [e.name for e in store.entities.list()]
        assert names == sorted([HERON, MARSH, KESTREL])
        edges = {(r.source, r.type, r.target) for r in store.relations.of(MARSH)}
        assert edges == {(HERON, "seen_at", MARSH), (KESTREL, "seen_at", MARSH)}
        statuses = dict(store.db.execute("SELECT id, status FROM observations").fetchall())
        assert statuses == {
            "o-1": "retained",
            "o-2": "retained",
            "o-3": "retained",
            "o-6": "invalid",
        }
        assert store.memories.count() == 3
    finally:
        store.close()

    status = json.loads(run("retain", "status", "--json").stdout)
    assert status["observations"]["invalid"] == 1 and status["observations"]["queued"] == 0
    assert status["policy"]["dark_matter_below"] == {"value": 0.3, "pack": "field"}


def test_a_replay_of_the_same_file_changes_nothing(run, tmp_path):
    path = observations_file(tmp_path)
    run("observe", str(path), code=1)
    run("retain", "run")
    for ident in json.loads(run("review", "list", "--json").stdout):
        run("review", "accept", ident["id"])
    store = open_db(run.db)
    before = dump_all(store)
    store.close()

    again = run("observe", str(path), code=1)  # the same bad lines, reported again
    assert "Queued 0; replayed (unchanged) 3; bad lines 5" in again.stdout
    ran = run("retain", "run", "--json")
    assert json.loads(ran.stdout)["processed"] == 0

    store = open_db(run.db)
    try:
        assert dump_all(store) == before
    finally:
        store.close()


def test_observe_reads_standard_input_and_a_clean_file_exits_0(run):
    lines = "\n".join(json.dumps(obs(f"s-{i}", [HERON], f"Heron {i}.")) for i in range(3))
    result = run("observe", "-", "--json", input=lines)
    assert json.loads(result.stdout)["queued"] == ["s-0", "s-1", "s-2"]


def test_observe_a_missing_file_is_one_error_line(run, tmp_path):
    result = run("observe", str(tmp_path / "nope.jsonl"), code=1)
    assert result.stderr.startswith("Error: cannot read") and result.stderr.count("\n") == 1


def test_observe_a_file_bad_in_its_encoding_mid_way_stores_none_of_it(run, tmp_path):
    good = [json.dumps(obs(f"u-{i}", [HERON], f"Heron {i}.")).encode() for i in range(3)]
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b"\n".join([*good, b'{"id": "u-9", "text": "\xff\xfe"}']) + b"\n")
    store = open_db(run.db)
    try:
        before = dump_all(store)
    finally:
        store.close()
    result = run("observe", str(path), code=1)
    assert result.stderr.startswith(f"Error: cannot read {path}: 'utf-8' codec")
    store = open_db(run.db)
    try:
        assert dump_all(store) == before  # the good lines before it rolled back with it
    finally:
        store.close()


def test_observe_reads_a_file_line_by_line(run, tmp_path, monkeypatch):
    path = write_lines(
        tmp_path / "many.jsonl",
        [json.dumps(obs(f"m-{i}", [HERON], f"Heron {i}.")) for i in range(5)],
    )
    read: list[str] = []
    real = observations.observe

    def spy(store, lines, **kwargs):
        assert not isinstance(lines, list | tuple)  # a stream, not the whole file
        return real(store, (read.append(line) or line for line in lines), **kwargs)

    monkeypatch.setattr(observations, "observe", spy)
    result = run("observe", str(path), "--json")
    assert json.loads(result.stdout)["queued"] == [f"m-{i}" for i in range(5)]
    assert len(read) == 5


def test_observe_reads_standard_input_to_its_end_before_it_takes_the_write_lock(run, monkeypatch):
    real = retain_cli.open_store
    left: list[bytes] = []

    def opening(*args, **kwargs):
        left.append(sys.stdin.buffer.read())  # what a slow producer has not sent yet
        return real(*args, **kwargs)

    monkeypatch.setattr(retain_cli, "open_store", opening)
    lines = "\n".join(json.dumps(obs(f"p-{i}", [HERON], f"Heron {i}.")) for i in range(3))
    result = run("observe", "-", "--json", input=lines)
    assert left == [b""]
    assert json.loads(result.stdout)["queued"] == ["p-0", "p-1", "p-2"]


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_observe_a_file_takes_any_line_ending(run, tmp_path, ending):
    path = tmp_path / "endings.jsonl"
    lines = [json.dumps(obs(f"e-{i}", [HERON], f"Heron {i}.")) for i in range(3)]
    path.write_bytes(ending.join(lines).encode())
    result = run("observe", str(path), "--json")
    assert json.loads(result.stdout)["queued"] == ["e-0", "e-1", "e-2"]


def test_review_lists_dark_matter_with_its_half_life_and_decides(run, tmp_path):
    path = write_lines(
        tmp_path / "dark.jsonl",
        [
            json.dumps(obs("d-1", ["odd:rare:hoopoe"], "A hoopoe on the lawn!")),
            json.dumps(obs("d-2", ["odd:rare:wryneck"], "Wryneck in the orchard.")),
        ],
    )
    run("observe", str(path))
    run("retain", "run")
    listed = run("review", "list").stdout
    half = (10.0 + 2) * 0.5  # SIGHTINGS' cell (episodic.other) in this pack, halved
    assert "d-1  fit 0.00  SIGHTINGS  odd:rare:hoopoe" in listed
    assert f"(half-life {half:g} days)" in listed
    assert "A hoopoe on the lawn!" in listed
    assert "Accepted d-1" in run("review", "accept", "d-1").stdout
    assert "Rejected d-2" in run("review", "reject", "d-2", "--reason", "a starling").stdout
    assert run("review", "list").stdout.strip() == "Nothing to review."
    again = run("review", "accept", "d-2", code=1)
    assert "Error: observation 'd-2' is rejected, not waiting for review" in again.stderr


def test_conflicts_and_compiled_truth_on_the_command_line(run, tmp_path):
    facts = [
        obs(
            f"c-{i}",
            [HERON],
            f"Heron nest, visit {i}.",
            facts=[(HERON, "nest", value), (HERON, "colour", "grey")],
        )
        for i, value in enumerate(["reedbed", "reedbed", "alders"])
    ]
    run("observe", str(write_lines(tmp_path / "c.jsonl", [json.dumps(f) for f in facts])))
    run("retain", "run", "--batch-size", "1")  # truths are regenerated after each batch
    conflicts = run("review", "conflicts").stdout
    assert f"[open] {HERON} nest: 'reedbed' (c-1) vs 'alders' (c-2)" in conflicts
    shown = run("truth", "show", HERON).stdout
    assert shown.startswith("--- version ")
    assert f"# {HERON}" in shown and "--- 1 open conflict(s)" in shown
    assert "unchanged" in run("truth", "regenerate", HERON).stdout
    history = run("truth", "show", HERON, "--history", "--json").stdout
    versions = json.loads(history)["versions"]
    assert [v["version"] for v in versions] == [1, 2, 3]
    assert all(a["superseded_by"] == b["id"] for a, b in itertools.pairwise(versions))
    assert versions[-1]["superseded_by"] is None
    missing = run("truth", "show", "bird:none:here", code=1)
    assert missing.stderr.startswith("Error: no entity named 'bird:none:here'")
    run("observe", "-", input=json.dumps(obs("c-9", [MARSH], "The marsh.")))
    run("retain", "run")
    fresh = run("truth", "show", MARSH).stdout
    assert fresh.strip() == f"{MARSH} has no compiled truth yet (impact gathered 1 of 3)"
