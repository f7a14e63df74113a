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
from plugin_sdk.errors import ModelError
from plugin_sdk.packs.documents import validate_pack
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager, pack_document
from plugin_sdk.transcripts.ledger import Ledger

DATA = Path(__file__).parents[1] / "data"
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


def drain(db: Path, model: ScriptedModel | None) -> Any:
    plugins = (("scripted-model", model),) if model is not None else ()
    return CliRunner().invoke(
        cli,
        ["historian", "drain", "--db", str(db), "--project", "harbour", "--json"],
        obj={"plugins": fresh_plugin_manager(*plugins)},
        env=ENV,
    )


def test_pre_compact_queues_and_the_drain_reads_it_once(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[list[str]] = []
    monkeypatch.setattr(
        "plugin_sdk.host.claude.hook_queue.subprocess.Popen", lambda c, **k: started.append(c)
    )
    model = ScriptedModel([])  # the hook itself calls no model
    answer = hook_with_model("PreCompact", db, payload("PreCompact", tmp_path), model)
    assert answer == {"suppressOutput": True}
    assert model.prompts == []
    assert len(started) == 1
    drain_words = ["historian", "drain", "--db", str(db), "--project", "harbour"]
    assert started[0][-8:] == [*drain_words, "--model", "scripted:x"]
    with Store(db, project="harbour") as store:
        rows = store.db.execute("SELECT event, files, done_at FROM hook_queue").fetchall()
        assert Ledger(store).entries() == []
    assert [(r[0], r[2]) for r in rows] == [("PreCompact", None)]
    assert len(json.loads(rows[0][1])) == 2  # the session and its sub-agent's file
    drained = drain(db, ScriptedModel([FACT, "<no-facts/>"]))
    assert drained.exit_code == 0, drained.output
    assert json.loads(drained.stdout)["done"] == 1
    with Store(db, project="harbour") as store:
        assert len(Ledger(store).entries()) == 2
        found = store.memories.search("tide times local time")
    written = [hit.memory for hit in found if "harbor API" in hit.memory.content]
    assert [memory.source for memory in written] == ["claude-code"]
    # SessionEnd right after: queued, and the drain sends nothing again.
    hook_with_model("SessionEnd", db, payload("SessionEnd", tmp_path), ScriptedModel([]))
    again = drain(db, ScriptedModel([]))
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout) == {**json.loads(again.stdout), "done": 1, "error": None}


def hook_with_model(event: str, db: Path, stdin: str, model: ScriptedModel) -> dict[str, Any]:
    result = CliRunner().invoke(
        cli,
        [
            "hook",
            "claude-code",
            event,
            "--db",
            str(db),
            "--project",
            "harbour",
            "--model",
            "scripted:x",
        ],
        input=stdin,
        obj={"plugins": fresh_plugin_manager(("scripted-model", model))},
        env=ENV,
        catch_exceptions=False,
    )
    assert result.exit_code == 0, (result.stdout, result.stderr)
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def test_without_a_model_the_session_waits_in_the_queue(db: Path, tmp_path: Path) -> None:
    answer = hook("SessionEnd", db, payload("SessionEnd", tmp_path))
    assert "no model chosen" in answer["systemMessage"]
    # said once per session
    assert "systemMessage" not in hook("SessionEnd", db, payload("SessionEnd", tmp_path))
    result = drain(db, None)
    assert result.exit_code == 1
    assert "no model for the historian" in result.output
    with Store(db, project="harbour") as store:
        assert Ledger(store).entries() == []
        assert (
            store.db.execute("SELECT count(*) FROM hook_queue WHERE done_at IS NULL").fetchone()[0]
            == 2
        )
        runs = dict(store.db.execute("SELECT event, last_error FROM hook_runs").fetchall())
    assert "no model" in runs["drain"]


def test_a_model_error_leaves_the_work_queued(db: Path, tmp_path: Path) -> None:
    hook("SessionEnd", db, payload("SessionEnd", tmp_path))
    down = ScriptedModel([lambda p: (_ for _ in ()).throw(ModelError("down"))])
    failing = drain(db, down)
    assert failing.exit_code == 1 and "down" in failing.output
    assert len(down.prompts) == 1  # asked once, and the error kept the work
    with Store(db, project="harbour") as store:
        row = store.db.execute("SELECT attempts, last_error, done_at FROM hook_queue").fetchone()
        assert Ledger(store).entries() == []
    assert tuple(row) == (1, "down", None)


@pytest.mark.parametrize(
    ("stdin", "said"),
    [
        ({"transcript_path": 5}, "transcript_path must be a string, not int"),
        ({"transcript_path": "~nosuchuser/x.jsonl"}, "transcript_path '~nosuchuser/x.jsonl'"),
        ({"transcript_path": "/"}, "is a folder, not a transcript file"),
        ({"transcript_path": "/usr"}, "is a folder, not a transcript file"),
        ({"cwd": 5}, "cwd must be a string, not int"),
        ({"session_id": ["x"]}, "session_id must be a string, not list"),
    ],
)
def test_malformed_payloads_get_one_line(db: Path, stdin: dict[str, Any], said: str) -> None:
    import time

    begun = time.perf_counter()
    result = CliRunner().invoke(
        cli,
        ["hook", "claude-code", "SessionEnd", "--db", str(db)],
        input=json.dumps(stdin),
        env=ENV,
    )
    assert time.perf_counter() - begun < 5
    assert result.exit_code == 1
    assert said in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_session_start_block_ends_with_the_packs_session_lines(tmp_path: Path) -> None:
    document = {**PACK, "prompts": {"session": "Call memory_write when you learn a berth rule."}}
    path = tmp_path / "p.db"
    with Store(path, project="harbour", plugins=fresh_plugin_manager()) as store:
        store.packs.install(validate_pack(document, source="harbour"))
        store.memories.write("Check the berth rules before any tide change.", "BERTH_RULES")
    answer = hook("SessionStart", path, payload("SessionStart", tmp_path))
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert text.endswith("Call memory_write when you learn a berth rule.")


def test_a_store_with_no_pack_says_so_once_per_session(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    Store(path, project="harbour", plugins=fresh_plugin_manager()).close()
    first = hook("SessionStart", path, payload("SessionStart", tmp_path))
    assert "has no categories" in first["systemMessage"]
    assert hook("SessionStart", path, payload("SessionStart", tmp_path)) == {}


def test_a_child_of_the_claude_code_model_never_reenters_the_hooks(
    db: Path, tmp_path: Path
) -> None:
    from plugin_sdk.host.claude.hook_entry import CHILD_ENV as checked
    from plugin_sdk.model.claude_headless import CHILD_ENV as set_by_model

    assert checked == set_by_model
    result = CliRunner().invoke(
        cli,
        ["hook", "claude-code", "SessionStart", "--db", str(db), "--project", "harbour"],
        input=payload("SessionStart", tmp_path),
        env={**ENV, checked: "1"},
    )
    assert json.loads(result.stdout) == {}


def test_no_store_yet_says_so(tmp_path: Path) -> None:
    answer = hook("SessionStart", tmp_path / "none.db", payload("SessionStart", tmp_path))
    assert "no store at" in answer["systemMessage"]
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
    store = tmp_path / "store" / "m.db"
    args = ["claude-code", "install", "--project-dir", str(project), "--project", "app", "--yes"]
    args += ["--db", str(store), "--model", "none"]

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
        tail = f"claude-code {event} --project app --db {store} --model none"
        assert any(c.endswith(tail) and " -S " in c and "/hook_client.py " in c for c in commands)
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["memsdk"]
    assert server["args"] == ["mcp", "--project", "app", "--db", str(store)]
    # the store was created with the dev pack, and every check passed
    assert "(created)" in first.output and "pack dev" in first.output
    assert "ok    MCP server starts:" in first.output
    assert first.output.count("ok    hook ") == 4 and "FAIL" not in first.output

    again = CliRunner().invoke(cli, args, env=ENV)
    assert again.exit_code == 0 and "Nothing to change." in again.output, again.output
    assert "(existing)" in again.output and "already installed" in again.output
    status = CliRunner().invoke(cli, ["claude-code", "status", "--project-dir", str(project)])
    assert status.exit_code == 0, status.output
    assert f"Store: {store}" in status.output and "Model: none" in status.output
    assert "SessionStart: 2 runs" in status.output
    assert "no model chosen" in status.output  # SessionEnd's last error

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


def test_install_refuses_an_unknown_pack_by_name(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "claude-code",
            "install",
            "--project-dir",
            str(tmp_path),
            "--yes",
            "--pack",
            "nosuch",
            "--db",
            str(tmp_path / "m.db"),
        ],
        env=ENV,
    )
    assert result.exit_code == 1
    assert "nosuch" in result.output and "dev" in result.output and "ops" in result.output
    assert not (tmp_path / "m.db").exists() and not (tmp_path / ".mcp.json").exists()


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["claude-code", "install", "--project-dir", str(tmp_path), "--dry-run"], env=ENV
    )
    assert result.exit_code == 0 and "SessionStart" in result.output
    assert list(tmp_path.iterdir()) == []


def test_install_answered_no_makes_nothing(tmp_path: Path) -> None:
    """The question comes before the store is made: no means no store, no settings."""
    app, db = tmp_path / "app", tmp_path / "m.db"
    app.mkdir()
    args = ["claude-code", "install", "--project-dir", str(app), "--db", str(db)]
    refused = CliRunner().invoke(cli, [*args, "--model", "none"], input="n\n", env=ENV)
    assert refused.exit_code == 1
    assert "to be created" in refused.output and "Set up the store" in refused.output
    assert not db.exists() and list(app.iterdir()) == []
    json_without_yes = CliRunner().invoke(cli, [*args, "--json"], env=ENV)
    assert json_without_yes.exit_code == 2 and not db.exists()
    accepted = CliRunner().invoke(cli, [*args, "--model", "none"], input="y\n", env=ENV)
    assert accepted.exit_code == 0, accepted.output
    assert db.exists() and (app / ".claude" / "settings.json").exists()
    assert accepted.output.count("+++ ") == 2  # each file's diff shown once
