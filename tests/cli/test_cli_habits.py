"""Command-line habits: --json everywhere, quiet progress, named environment
variables, completion documented, positional category, demo of any pack,
pack show of a store-installed pack."""

from __future__ import annotations

import io
import json
import re
import types
from pathlib import Path

import click
import pytest
from click import _termui_impl as termui_impl
from click.testing import CliRunner

from plugin_sdk.cli import cli
from plugin_sdk.cli.common import COMPLETION, ENVIRONMENT, Progress

ROOT = Path(__file__).resolve().parents[2]

#: Commands without --json, each with the reason it would make no sense.
NO_JSON = {
    ("mcp",): "serves the MCP protocol on stdio or HTTP until stopped; it prints no result",
    ("hook", "claude-code"): "its output is the hook's JSON answer that Claude Code reads",
    ("export",): "its output is the export itself, JSON Lines (one object per line)",
}


def commands(
    group: click.Group = cli, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command that runs something: the leaves, and groups that run without one.

    Asks the group for its commands (lazy groups load them here), so commands
    added later are covered without a change to this test.
    """
    found = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            if command.invoke_without_command:
                found.append(((*path, name), command))
            found += commands(command, (*path, name))
        else:
            found.append(((*path, name), command))
    return found


def option_names(command: click.Command) -> set[str]:
    return {name for param in command.params for name in getattr(param, "opts", [])}


def test_the_walk_sees_the_lazily_loaded_commands():
    paths = {path for path, _ in commands()}
    assert len(paths) > 60
    assert {("memory", "write"), ("pack", "show"), ("dream", "run")} <= paths


@pytest.mark.parametrize("path", [p for p, _ in commands()], ids=" ".join)
def test_every_command_has_json(path):
    command = dict(commands())[path]
    if path in NO_JSON:
        assert "--json" not in option_names(command), f"{path} has --json now: drop it from NO_JSON"
        return
    assert "--json" in option_names(command), f"memsdk {' '.join(path)} lacks --json"


def test_the_exclusions_are_real_commands():
    assert set(NO_JSON) <= {path for path, _ in commands()}


# -- environment variables and completion ------------------------------------------


def test_every_environment_variable_is_named():
    used = set()
    for folder in ("plugin_sdk", "plugins"):
        for source in (ROOT / folder).rglob("*.py"):
            used |= set(re.findall(r"\bMEMSDK_[A-Z][A-Z_]*[A-Z]\b", source.read_text("utf-8")))
    assert used, "the scan found nothing: the pattern is wrong"
    assert used <= set(ENVIRONMENT), f"not in ENVIRONMENT: {sorted(used - set(ENVIRONMENT))}"
    root_help = CliRunner().invoke(cli, ["--help"], terminal_width=100).output
    cli_doc = (ROOT / "docs" / "cli.md").read_text("utf-8")
    for name in ENVIRONMENT:
        assert name in root_help, name
        assert name in cli_doc, name
    assert f"{COMPLETION}=bash_source memsdk" in root_help
    assert f"{COMPLETION}=bash_source memsdk" in cli_doc


@pytest.mark.parametrize("path", [p for p, _ in commands()], ids=" ".join)
def test_options_show_their_environment_variable(path):
    command = dict(commands())[path]
    for param in command.params:
        if isinstance(param, click.Option) and param.envvar:
            assert param.show_envvar, f"memsdk {' '.join(path)} {param.opts[0]} hides its envvar"
            assert param.envvar in ENVIRONMENT, param.envvar


def test_completion_works_as_documented():
    result = CliRunner().invoke(
        cli, [], prog_name="memsdk", env={COMPLETION: "bash_source"}, catch_exceptions=False
    )
    assert "complete -o nosort -F" in result.output


# -- progress ----------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_writes_nothing_when_not_a_terminal():
    stream = io.StringIO()
    with Progress("retain", stream=stream) as shown:
        for done in range(0, 11):
            shown.update(done, 10)
    assert stream.getvalue() == ""


def test_progress_on_a_terminal_shows_position_and_eta(monkeypatch):
    clock = iter(range(0, 10_000, 5))  # each reading of the clock, 5 s later
    monkeypatch.setattr(termui_impl, "time", types.SimpleNamespace(time=lambda: float(next(clock))))
    stream = Terminal()
    with Progress("retain", stream=stream) as shown:
        shown.update(0, 4)
        shown.update(2, 4)
        shown.update(4, 4)
        shown.update(3, None, label="curate")  # an unknown total: a new bar, no ETA
    text = stream.getvalue()
    assert "retain" in text and "2/4" in text and "4/4" in text
    assert re.search(r"\d\d:\d\d:\d\d", text), text  # the ETA
    assert "curate" in text and "3" in text


def test_no_hand_written_carriage_returns_in_the_cli():
    for source in (ROOT / "plugin_sdk" / "cli").glob("*.py"):
        assert "\\r" not in source.read_text("utf-8"), source.name


# -- the commands end to end ------------------------------------------------------


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> str:
    db = str(tmp_path_factory.mktemp("habits") / "demo.db")
    result = CliRunner().invoke(cli, ["demo", "--db", db, "--json"])
    assert result.exit_code == 0, result.output
    return db


def run(db: str, *args: str, code: int = 0, input: str | None = None):
    result = CliRunner().invoke(
        cli, list(args), input=input, env={"MEMSDK_DB": db, "MEMSDK_PROJECT": "demo"}
    )
    assert result.exit_code == code, result.output
    return result


def category_names(db: str) -> list[str]:
    return [c["name"] for c in json.loads(run(db, "criteria", "show", "--json").stdout)]


def test_logs_get_no_progress_frames(demo_db):
    for args in (("dream", "run", "curate", "--max-batches", "1"), ("retain", "run")):
        result = run(demo_db, *args)
        assert result.stderr == ""  # stderr is no terminal here: no bar, no label, no \r
        assert "\r" not in result.output


def test_json_of_the_commands_that_lacked_it(demo_db):
    memory_id = json.loads(run(demo_db, "memory", "list", "--json").stdout)[0]["id"]
    archived = json.loads(run(demo_db, "memory", "archive", str(memory_id), "--json").stdout)
    assert archived["id"] == memory_id and archived["status"] == "archived"

    drawn = json.loads(run(demo_db, "composite", "map", "--json").stdout)
    assert {"themes", "categories"} <= set(drawn) and drawn["themes"]

    digest = json.loads(run(demo_db, "prompt", "hash", "--json").stdout)
    assert re.fullmatch(r"[0-9a-f]{16,}", digest["surface_hash"])

    category = category_names(demo_db)[0]
    changed = json.loads(
        run(demo_db, "criteria", "set", category, "definition", "A new one.", "--json").stdout
    )
    assert changed["name"] == category
    restored = json.loads(run(demo_db, "criteria", "reset", category, "--json").stdout)
    assert restored["name"] == category

    ran = json.loads(run(demo_db, "dream", "run", "curate", "--max-batches", "1", "--json").stdout)
    assert ran and ran[0]["task"] == "curate" and "handled" in ran[0]

    checked = json.loads(run(demo_db, "pack", "validate", "ops", "--json").stdout)
    assert checked == [
        {
            "source": "ops",
            "name": "ops",
            "version": checked[0]["version"],
            "ok": True,
            "error": None,
            "warnings": [],
        }
    ]


def test_pack_validate_json_reports_a_bad_pack_and_exits_1(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('format = 1\nname = "bad"\n', "utf-8")
    result = CliRunner().invoke(cli, ["pack", "validate", str(bad), "--json"])
    assert result.exit_code == 1
    [row] = json.loads(result.stdout)
    assert row["ok"] is False and row["error"]


# -- memory write TEXT [CATEGORY] -------------------------------------------------


def test_memory_write_takes_the_category_as_an_argument(demo_db):
    category = category_names(demo_db)[0]
    first = json.loads(
        run(demo_db, "memory", "write", "The deploy window is Tuesday.", category, "--json").stdout
    )
    same = json.loads(
        run(
            demo_db, "memory", "write", "The deploy window is Tuesday.", "-c", category, "--json"
        ).stdout
    )
    assert first["created"] and not same["created"] and same["id"] == first["id"]
    assert run(demo_db, "memory", "get", str(first["id"]), "--json").stdout.count(category)


def test_memory_write_needs_one_category(demo_db):
    category, other = category_names(demo_db)[:2]
    missing = run(demo_db, "memory", "write", "text", code=2)
    assert "give the category" in missing.output
    both = run(demo_db, "memory", "write", "text", category, "-c", other, code=2)
    assert "two categories" in both.output
    run(demo_db, "memory", "write", "text, the same", category, "-c", category)


# -- demo --pack ------------------------------------------------------------------


def demo_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["demo", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_demo_of_a_builtin_pack_without_a_sample():
    report = demo_json("--pack", "dev")
    assert report["pack"] == "dev" and report["written"] > 0
    assert all(row["active"] > 0 for row in report["rows"])  # every category has examples
    assert report["searches"] and all(search["hits"] for search in report["searches"])


def test_demo_of_a_pack_file(tmp_path, pack_doc, category, write_pack):
    document = pack_doc(
        {
            "SOIL_NOTES": category(
                priority=10,
                positive_examples=["Raised bed three has clay soil; add compost every spring."],
            ),
            "HARVESTS": category(
                priority=20,
                positive_examples=[
                    "Tomatoes from the south bed ripened in late August this year.",
                    "Garlic planted in October was harvested in early July.",
                ],
            ),
        }
    )
    path = write_pack(document, "mine.toml")
    report = demo_json("--pack", str(path))
    examples = sum(
        len(spec.get("criteria", {}).get("positive_examples", []))
        for spec in document["categories"].values()
    )
    assert report["pack"] == document["name"]
    assert report["written"] + report["folded"] == examples > 0
    assert all(search["hits"] for search in report["searches"])


def test_demo_of_a_pack_without_examples_says_so(pack_doc, write_pack):
    path = write_pack(pack_doc(), "bare.toml")
    result = CliRunner().invoke(cli, ["demo", "--pack", str(path)])
    assert result.exit_code == 1
    assert "ships no sample and its criteria give no examples" in result.output


def test_demo_keeps_the_shipped_sample_of_ops():
    report = demo_json("--pack", "ops")
    assert report["written"] > 20 and report["searches"][0]["query"] == "postgres failover"


# -- pack show of an installed pack -----------------------------------------------


def test_pack_show_sees_a_pack_installed_from_a_file(tmp_path, pack_doc, write_pack):
    document = pack_doc()
    path = write_pack(document, "only-here.toml")
    db = str(tmp_path / "s.db")
    run(db, "pack", "install", str(path))
    shown = CliRunner().invoke(cli, ["pack", "show", document["name"], "--db", db, "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["name"] == document["name"]
    text = CliRunner().invoke(cli, ["pack", "show", document["name"], "--db", db]).output
    assert "installed in" in text and "only-here.toml" in text


def test_pack_show_installed_flag_and_misses(tmp_path):
    db = str(tmp_path / "s.db")
    run(db, "init", "--pack", "ops")
    installed = CliRunner().invoke(cli, ["pack", "show", "ops", "--installed", "--db", db])
    assert installed.exit_code == 0 and "installed in" in installed.output
    absent = CliRunner().invoke(cli, ["pack", "show", "dev", "--installed", "--db", db])
    assert absent.exit_code == 1 and "no pack named 'dev'" in absent.output
    unknown = CliRunner().invoke(cli, ["pack", "show", "nothere", "--db", db])
    assert unknown.exit_code == 1
    assert not (tmp_path / "none.db").exists()
    CliRunner().invoke(cli, ["pack", "show", "nothere", "--db", str(tmp_path / "none.db")])
    assert not (tmp_path / "none.db").exists()
