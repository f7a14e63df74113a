"""``memsdk composite``, ``memsdk memory merge`` and ``memsdk dream run sync-headers``
end to end through click's CliRunner, on a temp-file store."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from plugin_sdk.cli import cli

PROJECT = "cli-composites"
CAT = "WORKFLOWS"  # a content category of the dev pack

SOP = """Release SOP
1. Freeze the main branch.
2. Tag the release:  git tag -s vX.Y.Z

3. Publish and   announce it."""


@pytest.fixture
def run(tmp_path, monkeypatch):
    db = str(tmp_path / "cli.db")
    # Only memsdk's own plugins: no host model answers in these runs.
    monkeypatch.setenv("MEMSDK_LOAD_PLUGINS", "")

    def invoke(*args: str, ok: bool = True):
        result = CliRunner().invoke(
            cli,
            list(args),
            env={
                "MEMSDK_DB": db,
                "MEMSDK_PROJECT": PROJECT,
                "MEMSDK_LOAD_PLUGINS": "",
            },
        )
        if ok:
            assert result.exit_code == 0, result.output
            assert result.exception is None or isinstance(result.exception, SystemExit)
        return result

    invoke("init", "--pack", "dev")
    return invoke


def write(run, text: str, category: str = CAT) -> int:
    out = json.loads(run("memory", "write", text, "-c", category, "--json").stdout)
    assert out["created"] is True
    return out["id"]


def as_json(result) -> object:
    return json.loads(result.stdout)


def one_error_line(result) -> str:
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("Error: "), result.output
    return lines[0]


def test_round_trip(run):
    head = write(run, "On-call rotation")
    m1, m2, m3 = (write(run, f"{name} is on call this week") for name in ("Ada", "Grace", "Linus"))

    created = as_json(
        run(
            "composite",
            "create",
            "theme",
            str(head),
            str(m1),
            str(m2),
            str(m3),
            "--cyclic",
            "--json",
        )
    )
    cid = created["id"]
    assert created["type"] == "theme" and created["cyclic"] is True
    assert created["head"] == head and created["members"] == [m1, m2, m3]

    # The cursor goes around the whole cycle and back to the first member.
    assert run("composite", "cursor", "peek", str(cid)).stdout.strip() == f"cursor 0: #{m1}"
    steps = [run("composite", "cursor", "advance", str(cid)).stdout.strip() for _ in range(3)]
    assert steps == [f"cursor 1: #{m2}", f"cursor 2: #{m3}", f"cursor 0: #{m1}"]
    run("composite", "cursor", "advance", str(cid))
    assert run("composite", "cursor", "reset", str(cid)).stdout.strip() == f"cursor 0: #{m1}"

    listed = as_json(run("composite", "list", "--member", str(m3), "--json"))
    assert [c["id"] for c in listed] == [cid]
    assert [c["id"] for c in as_json(run("composite", "list", "--head", str(head), "--json"))] == [
        cid
    ]

    # Merge M3 into M2: the composite follows, without a duplicate member.
    merged = as_json(run("memory", "merge", str(m3), "--into", str(m2), "--json"))
    assert merged["id"] == m2 and m3 in merged["merged_from"]
    shown = as_json(run("composite", "show", str(cid), "--json"))
    assert shown["members"] == [m1, m2]
    assert shown["head"] == head
    assert isinstance(shown["events"], list)
    assert as_json(run("composite", "list", "--member", str(m3), "--json")) == []
    gone = as_json(run("memory", "get", str(m3), "--json"))
    assert gone["status"] == "superseded" and gone["superseded_by"] == m2
    text = run("composite", "show", str(cid)).stdout
    assert f"#{m3}" not in text and f"#{m2}" in text

    # Fragment a long memory, reconstruct it exactly.
    original = write(run, SOP)
    done = as_json(run("composite", "fragment", str(original), "--json"))
    assert done["original"] == original and len(done["details"]) >= 3
    assert done["summary_by"] in ("first line", "title line")
    header = done["header"]
    assert run("composite", "reconstruct", str(header)).stdout == SOP
    assert as_json(run("memory", "get", str(original), "--json"))["superseded_by"] == header
    again = run("composite", "fragment", str(header), ok=False)
    assert "header" in one_error_line(again)

    # The header map.
    mermaid = run("composite", "map", "--format", "mermaid").stdout
    assert mermaid.startswith("flowchart")
    assert f"m{header}[" in mermaid and f"subgraph {CAT}" in mermaid
    assert f"#{header}" in run("composite", "map").stdout
    assert f"m{header} [label=" in run("composite", "map", "--format", "dot").stdout

    # A detail changes: its header is stale; the dreamer clears it (no model: a proposal).
    assert run("composite", "stale").stdout.strip() == "No stale headers."
    detail = done["details"][-1]
    run(
        "memory",
        "update",
        str(detail),
        "--content",
        "3. Publish, announce, and close the milestone.",
    )
    stale = as_json(run("composite", "stale", "--json"))
    assert [c["id"] for c in stale] == [done["composite"]]
    assert f"header #{header}" in run("composite", "stale").stdout
    assert "[stale]" in run("composite", "map").stdout
    dreamt = run("dream", "run", "sync-headers")
    assert "sync-headers: 1 items" in dreamt.stdout
    assert as_json(run("composite", "stale", "--json")) == []
    assert run("composite", "stale").stdout.strip() == "No stale headers."
    expected = SOP.replace(
        "3. Publish and   announce it.", "3. Publish, announce, and close the milestone."
    )
    assert run("composite", "reconstruct", str(header)).stdout == expected

    # Freeze a reference set, change the live composite, read the set back unchanged.
    set_id = int(run("composite", "freeze", str(cid), "--note", "for a sub-agent").stdout.strip())
    frozen = as_json(run("composite", "refset", str(set_id), "--json"))
    assert [i["memory_id"] for i in frozen["items"]] == [m1, m2]
    assert frozen["note"] == "for a sub-agent" and frozen["composite_id"] == cid
    extra = write(run, "Margaret is on call next week")
    run("composite", "add", str(cid), str(extra), "--position", "0")
    run("composite", "remove", str(cid), str(m1))
    run("memory", "update", str(m2), "--content", "Grace and Linus share the week")
    assert as_json(run("composite", "refset", str(set_id), "--json")) == frozen
    assert f"#{m1}" in run("composite", "refset", str(set_id)).stdout

    # Reorder and delete; the memories stay.
    reordered = as_json(run("composite", "reorder", str(cid), str(m2), str(extra), "--json"))
    assert reordered["members"] == [m2, extra]
    assert run("composite", "delete", str(cid)).stdout.strip() == f"Deleted composite {cid}"
    assert as_json(run("memory", "get", str(m2), "--json"))["status"] == "active"
    assert "no composite" in one_error_line(run("composite", "show", str(cid), ok=False))


def test_non_cyclic_cursor_stops_past_the_end(run):
    head, a, b = (write(run, f"sequence item {i}") for i in range(3))
    cid = as_json(run("composite", "create", "sequence", str(head), str(a), str(b), "--json"))["id"]
    out = [run("composite", "cursor", "advance", str(cid)).stdout.strip() for _ in range(3)]
    assert out == [f"cursor 1: #{b}", "cursor 2: (past the end)", "cursor 2: (past the end)"]


def test_merge_into_the_head_shows_the_event(run):
    head, a, b = (write(run, f"cause item {i}") for i in range(3))
    cid = as_json(run("composite", "create", "cause", str(head), str(a), str(b), "--json"))["id"]
    run("memory", "merge", str(a), "--into", str(head))
    shown = as_json(run("composite", "show", str(cid), "--json"))
    assert shown["members"] == [b]
    assert [e["event"] for e in shown["events"]] == ["membership-dropped"]
    assert "membership-dropped" in run("composite", "show", str(cid)).stdout


def test_cross_category_merge_is_one_error_line_and_changes_nothing(run):
    a = write(run, "a workflow", CAT)
    b = write(run, "a naming rule", "NAMING")
    head = write(run, "group")
    cid = as_json(run("composite", "create", "theme", str(head), str(a), str(b), "--json"))["id"]
    before = as_json(run("composite", "show", str(cid), "--json"))
    line = one_error_line(run("memory", "merge", str(a), "--into", str(b), ok=False))
    assert "cross-category" in line
    assert as_json(run("composite", "show", str(cid), "--json")) == before
    assert as_json(run("memory", "get", str(a), "--json"))["status"] == "active"


@pytest.mark.parametrize(
    "args, expected",
    [
        (("composite", "show", "4242"), "no composite with id 4242"),
        (("composite", "cursor", "advance", "4242"), "4242"),
        (("composite", "delete", "4242"), "4242"),
        (("composite", "create", "theme", "4242"), "no memory with id 4242"),
        (("composite", "reconstruct", "4242"), "4242"),
        (("composite", "fragment", "4242"), "no memory with id 4242"),
        (("composite", "refset", "4242"), "no reference set with id 4242"),
        (("composite", "freeze", "4242"), "no composite with id 4242"),
        (("memory", "merge", "4242", "--into", "4243"), "4243"),
    ],
)
def test_wrong_ids_are_one_error_line(run, args, expected):
    assert expected in one_error_line(run(*args, ok=False))


def test_rule_breaking_composites_are_one_error_line(run):
    head, a = (write(run, f"item {i}") for i in range(2))
    line = one_error_line(
        run("composite", "create", "theme", str(head), str(a), str(head), ok=False)
    )
    assert str(head) in line
    cid = as_json(run("composite", "create", "theme", str(head), str(a), "--json"))["id"]
    line = one_error_line(run("composite", "reorder", str(cid), str(a), str(a), ok=False))
    assert "each current member once" in line
    line = one_error_line(run("composite", "add", str(cid), str(a), ok=False))
    assert "already a member" in line
    single = write(run, "nothing to split here")
    line = one_error_line(run("composite", "fragment", str(single), ok=False))
    assert str(single) in line


def test_unknown_type_is_one_error_line_listing_the_types(run):
    """The CLI contract (plugin_sdk/cli/__init__.py): errors caused by input
    print one line, ``Error: ...``; a wrong argument is a usage error, exit 2."""
    head, a = (write(run, f"item {i}") for i in range(2))
    result = run("composite", "create", "ring", str(head), str(a), ok=False)
    line = one_error_line(result)
    assert "ring" in line
    for name in ("sequence", "theme", "cause", "alternatives"):
        assert name in line
    assert result.exit_code == 2
    assert as_json(run("composite", "list", "--json")) == []
