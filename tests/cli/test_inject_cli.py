"""``memsdk inject`` and ``memsdk expand`` end to end, on a store built by ``memsdk demo``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from plugin_sdk_plugins.injection import OPEN_TAG

from plugin_sdk.cli import cli

# The CLI reads these; a developer's shell must not change what the tests see.
CLEAN_ENV = {
    "MEMSDK_DB": None,
    "MEMSDK_PROJECT": None,
    "MEMSDK_TRACE": None,
}
HEADER = re.compile(r"^- \[(\d+): (\d+) details\] ")


def runner() -> CliRunner:
    """stdout and stderr kept apart: click < 8.2 needs mix_stderr=False, 8.2+ always does."""
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:  # click 8.2+ removed mix_stderr; result.stdout/.stderr are separate
        return CliRunner()


def invoke(*args: str, code: int = 0) -> Result:
    result = runner().invoke(cli, list(args), env=CLEAN_ENV, catch_exceptions=False)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli-demo") / "demo.db"
    out = invoke("demo", "--db", str(path)).stdout
    assert f"store {path}, project 'demo'" in out
    assert path.exists() and not Path(f"{path}-wal").exists()
    return path


@pytest.fixture
def db(demo_file: Path, tmp_path: Path) -> str:
    path = tmp_path / "demo.db"
    shutil.copyfile(demo_file, path)
    return str(path)


def memsdk(db: str, *args: str, code: int = 0) -> Result:
    return invoke(*args, "--db", db, "--project", "demo", code=code)


def test_inject_prints_the_block_and_the_account_apart(db):
    result = memsdk(db, "inject", "--budget", "1500")
    out = result.stdout
    assert out.startswith(OPEN_TAG + "\n") and out.endswith("</memory>\n")
    assert "# Directives (follow these)" in out and "# Known facts" in out
    assert re.search(r"^- \[\d+: \d+ details\] ", out, re.M)
    assert re.search(r"^- \[\d+: \d+ memories\] ", out, re.M)
    account = result.stderr.strip().splitlines()
    assert len(account) == 1
    assert re.fullmatch(
        r"\d+/1500 tokens; \d+ of \d+ candidates shown, \d+ left out; \d+ of \d+ active "
        r"memories reachable \(coverage \d+%\); after 0/1/2 expands: \d+% / \d+% / \d+%",
        account[0],
    ), account[0]
    assert "tokens;" not in out
    used = int(account[0].split("/")[0])
    assert used <= 1500


def test_inject_json_account(db):
    data = json.loads(memsdk(db, "inject", "--budget", "1500", "--json").stdout)
    assert data["budget"] == 1500
    assert 0 < data["tokens"] <= 1500
    assert data["shown"] and all(isinstance(i, int) for i in data["shown"])
    assert data["left_out"] and all(
        key.isdigit() and reason in ("over budget", "over budget once rendered")
        for key, reason in data["left_out"].items()
    )
    assert set(data["shown"]).isdisjoint(int(k) for k in data["left_out"])
    assert len(data["shown"]) + len(data["left_out"]) == data["candidates"]
    assert 0.0 < data["coverage"] <= 1.0
    assert data["coverage"] == data["reachable"] / data["active"]
    assert data["text"].startswith(OPEN_TAG + "\n")
    assert "hashes" not in data
    again = json.loads(memsdk(db, "inject", "--budget", "1500", "--json").stdout)
    assert again == data  # byte-identical text, same account


def test_inject_session_then_delta_with_nothing_changed(db):
    first = memsdk(db, "inject", "--budget", "1500", "--session", "s")
    assert first.stdout.startswith(OPEN_TAG)
    result = memsdk(db, "inject", "--session", "s", "--delta")
    assert result.stdout == "(nothing changed)\n"
    change = json.loads(memsdk(db, "inject", "--session", "s", "--delta", "--json").stdout)
    assert change == {
        "text": "",
        "tokens": 0,
        "budget": 200,
        "new": [],
        "updated": [],
        "removed": [],
        "fits": True,
    }


def test_delta_after_an_update_shows_it(db):
    shown = json.loads(memsdk(db, "inject", "--budget", "4000", "--session", "s", "--json").stdout)
    target = shown["shown"][-1]
    memsdk(db, "memory", "update", str(target), "--content", "Rebuilt text for the delta test.")
    change = json.loads(memsdk(db, "inject", "--session", "s", "--delta", "--json").stdout)
    assert change["updated"] == [target]
    assert f"- [{target}] Rebuilt text for the delta test." in change["text"]
    assert memsdk(db, "inject", "--session", "s", "--delta").stdout == "(nothing changed)\n"


def test_delta_without_session_is_a_one_line_error(db):
    result = memsdk(db, "inject", "--delta", code=1)
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == ["Error: --delta needs --session"]


def test_delta_for_an_unknown_session_is_a_one_line_error(db):
    result = memsdk(db, "inject", "--session", "never", "--delta", code=1)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "never" in lines[0]


@pytest.mark.parametrize("budget", ["0", "-3", "many"])
def test_inject_refuses_a_bad_budget(db, budget):
    result = memsdk(db, "inject", "--budget", budget, code=2)
    assert len(result.stderr.strip().splitlines()) == 1
    assert "budget" in result.stderr


def test_expand_a_header_within_a_budget_as_json(db):
    out = memsdk(db, "inject", "--budget", "4000").stdout
    headers = {
        int(m.group(1)): int(m.group(2)) for line in out.splitlines() if (m := HEADER.match(line))
    }
    assert headers
    head, details = max(headers.items(), key=lambda item: item[1])
    whole = json.loads(memsdk(db, "expand", str(head), "--json").stdout)
    assert len(whole["shown"]) == details and whole["left_out"] == []
    budget = whole["tokens"] // 2
    part = json.loads(memsdk(db, "expand", str(head), "--budget", str(budget), "--json").stdout)
    assert set(part) == {"text", "tokens", "shown", "left_out"}
    assert 0 < part["tokens"] <= budget
    assert part["shown"] + part["left_out"] == whole["shown"]  # a prefix, then the rest
    assert part["shown"] and part["left_out"]
    assert part["text"].startswith(f'<memory-details of="{head}">\n')
    plain = memsdk(db, "expand", str(head), "--budget", str(budget))
    assert plain.stdout.rstrip("\n") == part["text"]
    assert plain.stderr.strip() == f"{len(part['left_out'])} details left out by the budget"


def test_expand_an_unknown_memory_is_a_one_line_error(db):
    result = memsdk(db, "expand", "999999", code=1)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")


def test_pin_then_inject_shows_it_first(db):
    listed = json.loads(
        memsdk(db, "memory", "list", "-c", "MODEL_KNOWLEDGE", "-n", "5", "--json").stdout
    )
    target = listed[0]["id"]
    memsdk(db, "memory", "update", str(target), "--pin")
    lines = memsdk(db, "inject", "--budget", "1500").stdout.splitlines()
    assert lines[1] == "# Pinned"
    assert lines[2] == "## MODEL_KNOWLEDGE"
    assert lines[3].startswith(f"- [{target}] ")
    assert lines.index("# Pinned") < lines.index("# Directives (follow these)")
    memsdk(db, "memory", "update", str(target), "--unpin")
    assert "# Pinned" not in memsdk(db, "inject", "--budget", "1500").stdout
