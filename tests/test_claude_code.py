"""Claude Code: ``memsdk claude-code install|uninstall`` and each hook event from a recorded payload."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from plugin_sdk import Store
from plugin_sdk.cli import cli
from plugin_sdk.packs.documents import validate_pack
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager, pack_document
from plugin_sdk.transcripts.ledger import Ledger

DATA = Path(__file__).parent / "data"
PAYLOADS = DATA / "claude_code"
SESSION = "9b2e7c41-0d5a-4f3e-8c2b-6a1d0e7f5c93"
PACK = pack_document("harbour", "1.0.0", {"BERTH_RULES": "intent", "QUAY_STATE": "content"})
ENV = {"MEMSDK_DB": None, "MEMSDK_PROJECT": None, "MEMSDK_MODEL": None}
FACT = (
    '<facts category="QUAY_STATE">\n'
    "- Tide times from the harbor API are local time; convert them in api/tides.py.\n"
    "</facts>"
)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "harbour.db"
    with Store(path, project="harbour", plugins=fresh_plugin_manager()) as store:
        store.packs.install(validate_pack(PACK, source="harbour"))
        store.memories.write("Check the berth rules before any tide change.", "BERTH_RULES")
        store.memories.write("Tide times are converted at the edge.", "QUAY_STATE")
    return path


def payload(event: str, tmp_path: Path) -> str:
    """The recorded payload, its transcript path pointed at a copy of the sample session."""
    document = json.loads((PAYLOADS / f"{event}.json").read_text())
    project = tmp_path / "claude-project"
    if not project.exists():
        shutil.copytree(DATA / "transcripts" / "claude-project", project)
    document["transcript_path"] = str(project / f"{SESSION}.jsonl")
    return json.dumps(document)


def hook(event: str, db: Path, stdin: str, model: ScriptedModel | None = None) -> dict[str, Any]:
    plugins = (("scripted-model", model),) if model is not None else ()
    result = CliRunner().invoke(
        cli,
        ["hook", "claude-code", event, "--db", str(db), "--project", "harbour"],
        input=stdin,
        obj={"plugins": fresh_plugin_manager(*plugins)},
        env=ENV,
        catch_exceptions=False,
    )
    assert result.exit_code == 0, (result.stdout, result.stderr)
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def test_session_start_injects_the_memory_block(db: Path, tmp_path: Path) -> None:
    answer = hook("SessionStart", db, payload("SessionStart", tmp_path))
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    assert "Check the berth rules before any tide change." in output["additionalContext"]
    with Store(db, project="harbour") as store:  # the session's block is recorded (for deltas)
        rows = store.db.execute("SELECT session_id FROM injections").fetchall()
    assert [tuple(r) for r in rows] == [(SESSION,)]


def test_user_prompt_submit_adds_the_memories_that_answer_the_prompt(
    db: Path, tmp_path: Path
) -> None:
    answer = hook("UserPromptSubmit", db, payload("UserPromptSubmit", tmp_path))
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert context.startswith("<memory-recall>")
    assert "Tide times are converted at the edge." in context
    assert "berth rules" in context


def test_a_prompt_nothing_answers_adds_nothing(db: Path, tmp_path: Path) -> None:
    stdin = json.dumps({**json.loads(payload("UserPromptSubmit", tmp_path)), "prompt": "xyzzy?"})
    assert hook("UserPromptSubmit", db, stdin) == {}


def test_pre_compact_runs_the_historian_on_what_is_new_and_session_end_sends_nothing_again(
    db: Path, tmp_path: Path
) -> None:
    model = ScriptedModel([FACT, "<no-facts/>"])  # the session, then its sub-agent's file
    answer = hook("PreCompact", db, payload("PreCompact", tmp_path), model)
    assert answer == {
        "suppressOutput": True,
        "systemMessage": answer["systemMessage"],
    }
    assert answer["systemMessage"].startswith("memsdk: 1 new memories from ")
    assert len(model.prompts) == 2
    with Store(db, project="harbour") as store:
        assert len(Ledger(store).entries()) == 2
        found = store.memories.search("tide times local time")
    written = [hit.memory for hit in found if "harbor API" in hit.memory.content]
    assert [memory.source for memory in written] == ["claude-code"]
    # SessionEnd right after: the ledger has it all, no model is called.
    assert hook("SessionEnd", db, payload("SessionEnd", tmp_path), ScriptedModel([])) == {
        "suppressOutput": True
    }


def test_without_a_model_the_historian_waits_and_records_nothing(db: Path, tmp_path: Path) -> None:
    answer = hook("SessionEnd", db, payload("SessionEnd", tmp_path))
    assert "no model" in answer["systemMessage"]
    with Store(db, project="harbour") as store:
        assert Ledger(store).entries() == []


def test_no_store_yet_is_an_empty_answer(tmp_path: Path) -> None:
    assert hook("SessionStart", tmp_path / "none.db", payload("SessionStart", tmp_path)) == {}
    assert not (tmp_path / "none.db").exists()


def test_bad_input_is_one_line_and_exit_1(db: Path) -> None:
    result = CliRunner().invoke(
        cli, ["hook", "claude-code", "SessionStart", "--db", str(db)], input="not json", env=ENV
    )
    assert result.exit_code == 1
    assert "the hook input is not JSON" in result.output
    wrong = CliRunner().invoke(
        cli,
        ["hook", "claude-code", "SessionStart", "--db", str(db)],
        input=json.dumps({"hook_event_name": "SessionEnd"}),
        env=ENV,
    )
    assert "a SessionEnd event, not SessionStart" in wrong.output


def test_install_is_idempotent_and_uninstall_removes_exactly_what_it_added(
    tmp_path: Path,
) -> None:
    project = tmp_path / "app"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.json"
    original = {
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]},
    }
    settings.write_text(json.dumps(original, indent=2) + "\n")
    args = ["claude-code", "install", "--project-dir", str(project), "--project", "app", "--yes"]

    first = CliRunner().invoke(cli, args, env=ENV)
    assert first.exit_code == 0, first.output
    assert "+++ " in first.output  # the diff is shown
    written = json.loads(settings.read_text())
    assert written["permissions"] == original["permissions"]
    commands = [
        hook["command"]
        for groups in written["hooks"].values()
        for group in groups
        for hook in group["hooks"]
    ]
    assert "echo hi" in commands
    for event in ("SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd"):
        assert any(c.endswith(f"hook claude-code {event} --project app") for c in commands)
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["memsdk"]
    assert server["args"] == ["mcp", "--project", "app"]

    again = CliRunner().invoke(cli, args, env=ENV)
    assert again.exit_code == 0 and "Nothing to change." in again.output

    removed = CliRunner().invoke(
        cli, ["claude-code", "uninstall", "--project-dir", str(project), "--yes"], env=ENV
    )
    assert removed.exit_code == 0, removed.output
    assert json.loads(settings.read_text()) == original
    assert not (project / ".mcp.json").exists()


def test_install_into_an_empty_folder_and_back_leaves_nothing(tmp_path: Path) -> None:
    args = ["--project-dir", str(tmp_path), "--yes"]
    assert CliRunner().invoke(cli, ["claude-code", "install", *args], env=ENV).exit_code == 0
    assert (tmp_path / ".claude" / "settings.json").exists()
    assert CliRunner().invoke(cli, ["claude-code", "uninstall", *args], env=ENV).exit_code == 0
    assert list(tmp_path.iterdir()) == []


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["claude-code", "install", "--project-dir", str(tmp_path), "--dry-run"], env=ENV
    )
    assert result.exit_code == 0 and "SessionStart" in result.output
    assert list(tmp_path.iterdir()) == []
