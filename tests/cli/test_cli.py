"""The command line: each command end to end, and errors as one clear line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from plugin_sdk.cli import cli


@pytest.fixture
def run(tmp_path):
    db = str(tmp_path / "cli.db")

    def invoke(*args: str, input: str | None = None, ok: bool = True):
        result = CliRunner().invoke(
            cli,
            list(args),
            input=input,
            env={"MEMSDK_DB": db, "MEMSDK_PROJECT": "cli-test"},
        )
        if ok:
            assert result.exit_code == 0, result.output
        return result

    invoke.db = db
    return invoke


def first_category(run) -> str:
    shown = json.loads(run("criteria", "show", "--json").output)
    return shown[0]["name"]


def test_init_installs_packs(run):
    out = json.loads(run("init", "--pack", "ops", "--json").output)
    assert out["project"] == "cli-test"
    assert out["installed"][0]["pack"] == "ops"
    listed = json.loads(run("pack", "list", "--json").output)
    ops = next(row for row in listed if row["name"] == "ops")
    assert ops["installed"] == ops["available"] == "1.3.0"


def test_memory_round_trip(run):
    run("init", "--pack", "dev")
    category = first_category(run)
    written = json.loads(
        run("memory", "write", "Use tabs in Makefiles.", "-c", category, "--json").output
    )
    assert written["created"] is True
    again = json.loads(
        run("memory", "write", "use TABS in makefiles", "-c", category, "--json").output
    )
    assert again == {**written, "created": False, "seen_count": 2}
    got = json.loads(run("memory", "get", str(written["id"]), "--json").output)
    assert got["content"] == "Use tabs in Makefiles." and got["category"] == category
    hits = json.loads(run("memory", "search", "makefile tabs", "--json").output)
    assert [h["id"] for h in hits] == [written["id"]]
    run("memory", "update", str(written["id"]), "--content", "Indent every recipe with a tab.")
    assert "No matches" in run("memory", "search", "makefiles").output
    assert json.loads(run("memory", "search", "every", "--json").output)[0]["id"] == written["id"]
    run("memory", "archive", str(written["id"]))
    assert json.loads(run("memory", "search", "every", "--json").output) == []
    assert json.loads(run("memory", "search", "every", "--archived", "--json").output)
    listed = json.loads(run("memory", "list", "--status", "archived", "--json").output)
    assert [m["id"] for m in listed] == [written["id"]]


def test_memory_write_from_stdin(run):
    run("init", "--pack", "ops")
    category = first_category(run)
    out = json.loads(
        run("memory", "write", "-", "-c", category, "--json", input="from stdin\n").output
    )
    got = json.loads(run("memory", "get", str(out["id"]), "--json").output)
    assert got["content"] == "from stdin"


@pytest.mark.parametrize(
    "args, expected",
    [
        (("memory", "get", "999"), "no memory with id 999"),
        (("memory", "write", "x", "-c", "NO_SUCH_CATEGORY"), "unknown category 'NO_SUCH_CATEGORY'"),
        (("pack", "install", "no-such-pack"), "no such pack file or installed pack"),
        (("pack", "install", "missing.toml"), "cannot read file"),
        (("criteria", "reset", "NO_SUCH_CATEGORY"), "unknown category"),
        (("memory", "update", "1"), "nothing to update"),
        (("pack", "upgrade", "ops", "--map", "bad"), "expected OLD=NEW"),
    ],
)
def test_errors_are_one_line(run, args, expected):
    run("init", "--pack", "ops")
    result = run(*args, ok=False)
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("Error: ") and expected in lines[0]
    assert "Traceback" not in result.output


def test_unknown_category_lists_categories_and_writes_nothing(run):
    run("init", "--pack", "ops")
    result = run("memory", "write", "x", "-c", "NOPE", ok=False)
    for name in json.loads(run("criteria", "show", "--json").output):
        assert name["name"] in result.output
    # nothing was written: the project still holds nothing, and a read says so
    listed = run("memory", "list", "--status", "any", "--json", ok=False)
    assert listed.exit_code == 1 and "project 'cli-test' holds nothing" in listed.output


def test_criteria_set_reset_history(run):
    run("init", "--pack", "ops")
    category = first_category(run)
    run("criteria", "set", category, "definition", "Only rules the user said twice.")
    run("criteria", "set", category, "exclusions", "one", "two")
    shown = json.loads(run("criteria", "show", category, "--json").output)[0]["criteria"]
    assert shown["definition"]["value"] == "Only rules the user said twice."
    assert shown["definition"]["source"] == "override"
    assert shown["exclusions"]["value"] == ["one", "two"]
    run("criteria", "set", category, "positive_examples", '["a", "b"]')
    run("criteria", "reset", category)
    shown = json.loads(run("criteria", "show", category, "--json").output)[0]["criteria"]
    assert all(field["source"] == "pack" for field in shown.values())
    events = json.loads(run("criteria", "history", category, "--json").output)
    sources = [e["source"] for e in events]
    assert sources.count("install") == 4
    assert sources[4:] == ["override", "override", "override", "reset", "reset", "reset"]
    text = run("criteria", "history", category, "--field", "definition").output
    assert "override" in text and "reset" in text


def test_pack_validate_reports_file_and_path(run, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'format = 1\nname = "bad"\nversion = "1.0.0"\ndescription = "x"\n'
        '[categories.THINGS]\nkind = "fact"\npriority = 1\n'
        '[categories.THINGS.criteria]\ndefinition = "d"\n'
    )
    result = run("pack", "validate", str(bad), ok=False)
    assert result.exit_code == 1
    assert str(bad) in result.output and "categories.THINGS.kind" in result.output


def test_pack_upgrade_refused_then_mapped(run, tmp_path):
    def pack(version: str, names: list[str]) -> Path:
        path = tmp_path / f"p-{version}.json"
        path.write_text(
            json.dumps(
                {
                    "format": 1,
                    "name": "p",
                    "version": version,
                    "description": "d",
                    "categories": {
                        n: {"kind": "content", "priority": i, "criteria": {"definition": n}}
                        for i, n in enumerate(names)
                    },
                }
            )
        )
        return path

    run("pack", "install", str(pack("1.0.0", ["ALPHA_NOTES", "BETA_NOTES"])))
    wrote = json.loads(run("memory", "write", "a fact", "-c", "ALPHA_NOTES", "--json").output)
    newer = str(pack("2.0.0", ["GAMMA_NOTES", "BETA_NOTES"]))
    refused = run("pack", "upgrade", newer, ok=False)
    assert "needs an explicit mapping" in refused.output and "nothing was changed" in refused.output
    assert (
        json.loads(run("memory", "get", str(wrote["id"]), "--json").output)["category"]
        == "ALPHA_NOTES"
    )
    out = run("pack", "upgrade", newer, "--map", "ALPHA_NOTES=GAMMA_NOTES").output
    assert "ALPHA_NOTES -> GAMMA_NOTES" in out and "memories moved: 1" in out
    assert (
        json.loads(run("memory", "get", str(wrote["id"]), "--json").output)["category"]
        == "GAMMA_NOTES"
    )


def test_pack_show_and_list(run):
    shown = run("pack", "show", "ops").output
    assert "ops 1.3.0" in shown
    document = json.loads(run("pack", "show", "ops", "--json").output)
    for name in document["categories"]:
        assert name in shown
    assert "not installed" in run("pack", "list").output


@pytest.mark.slow
def test_demo_report(run, tmp_path):
    db = tmp_path / "demo.db"
    result = run("demo", "--db", str(db), "--json")
    report = json.loads(result.output)
    assert report["folded"] == 6 and report["written"] >= 200
    details = sum(len(f["details"]) for f in report["fragments"])
    assert report["fragments"], "the demo fragments its long SOPs and config dossiers"
    # Each fragmented original is superseded by its header; its details are new
    # rows, and so is each theme header the map task adds.
    assert report["themes"] > 0
    active = sum(row["active"] for row in report["rows"])
    assert active == report["written"] + details + report["themes"]
    assert report["injection"]["tokens"] <= report["injection"]["budget"]
    assert report["example"]["exact"] is True
    priorities = [row["priority"] for row in report["rows"]]
    assert priorities == sorted(priorities)
    assert all(search["hits"] for search in report["searches"])
    text = run("demo").output
    assert "repeats folded by deduplication" in text and "criteria from" in text


def test_every_lazy_command_is_found_under_its_own_name():
    from plugin_sdk.cli import COMMANDS

    for name in COMMANDS:
        command = cli.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None and command.name == name, name
