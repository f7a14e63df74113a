"""``memsdk historian run`` over folders and globs, with the import ledger: a rerun sends only what is new."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from plugin_sdk import Store
from plugin_sdk.cli import cli
from plugin_sdk.packs.documents import validate_pack
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager, pack_document
from plugin_sdk.transcripts.ledger import Ledger

DATA = Path(__file__).parents[1] / "data" / "transcripts"
SESSION_NAME = "9b2e7c41-0d5a-4f3e-8c2b-6a1d0e7f5c93"
PACK = pack_document("harbour", "1.0.0", {"BERTH_RULES": "intent", "QUAY_STATE": "content"})
ENV = {"MEMSDK_DB": None, "MEMSDK_PROJECT": None, "MEMSDK_TRACE": None, "MEMSDK_MODEL": None}
NO_FACTS = "<no-facts/>"


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "harbour.db"
    store = Store(path, project="harbour", plugins=fresh_plugin_manager())
    store.packs.install(validate_pack(PACK, source="harbour"))
    store.close()
    return str(path)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the Claude Code sample project folder (the tests append to it)."""
    return Path(shutil.copytree(DATA / "claude-project", tmp_path / "claude-project"))


def run(db: str, *args: str, model: ScriptedModel | None = None, code: int = 0) -> Result:
    plugins = (("scripted-model", model),) if model is not None else ()
    result = CliRunner().invoke(
        cli,
        ["historian", "run", *args, "--db", db, "--project", "harbour"],
        obj={"plugins": fresh_plugin_manager(*plugins)},
        env=ENV,
        catch_exceptions=False,
    )
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def transcript_of(prompt_text: str) -> str:
    return prompt_text.split("# Transcript chunk\n", 1)[1]


def test_a_folder_is_imported_and_a_rerun_sends_nothing(db, project):
    first = ScriptedModel([NO_FACTS] * 20)
    result = run(db, str(project), "--budget", "4000", model=first)
    assert len(first.prompts) == 2  # the session, and its sub-agent's own conversation
    seen = "\n".join(p.messages[0]["content"] for p in first.prompts)
    assert "Keep zoneinfo" in seen and "List every place that converts tide times." in seen
    assert "historian: 2 chunk(s) with model scripted-model" in result.stdout

    # the ledger has both files: a rerun calls no model (a ScriptedModel with no reply
    # left would fail the run if it were called)
    again = run(db, str(project), model=ScriptedModel([]))
    assert again.stdout.count("unchanged since the last import; nothing to send") == 2
    assert "historian: nothing new to send" in again.stdout

    store = Store(db, project="harbour", plugins=fresh_plugin_manager())
    try:
        entries = Ledger(store).entries()
        assert {Path(e.path).name for e in entries} == {
            f"{SESSION_NAME}.jsonl",
            "agent-a3f9c21.jsonl",
        }
        assert all(e.format == "claude-code" and e.mark.content_hash for e in entries)
        session = next(e for e in entries if e.path.endswith(f"{SESSION_NAME}.jsonl"))
        assert session.mark.last_key == "a19" and session.messages == 11
    finally:
        store.close()


def test_an_appended_record_sends_only_the_new_chunk(db, project):
    session = project / f"{SESSION_NAME}.jsonl"
    run(db, str(session), "--budget", "4000", model=ScriptedModel([NO_FACTS] * 5))
    record = {
        "parentUuid": "a19",
        "isSidechain": False,
        "sessionId": SESSION_NAME,
        "type": "user",
        "uuid": "u20",
        "timestamp": "2026-05-02T11:00:00.000Z",
        "message": {"role": "user", "content": "Quay 3 is closed for dredging until June 9."},
    }
    with session.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    model = ScriptedModel(
        ['<facts category="QUAY_STATE">\n- Quay 3 closed until June 9.\n</facts>']
    )
    result = run(db, str(session), "--budget", "4000", model=model)
    [prompt] = model.prompts
    assert transcript_of(prompt.messages[0]["content"]).startswith(
        "[user]\nQuay 3 is closed for dredging until June 9.\n"
    )
    assert "Keep zoneinfo" not in prompt.messages[0]["content"]
    assert "appended since the last import: 1 new message(s) to send" in result.stdout
    assert "unchanged since the last import" in result.stdout  # the sub-agent's file
    run(db, str(session), model=ScriptedModel([]))  # and now nothing again


def test_an_appended_message_in_a_json_file_sends_only_it(db, tmp_path):
    chat = tmp_path / "chat.json"
    messages = [
        {"role": "user", "content": "Quay 1 takes 10.5 m draught."},
        {"role": "assistant", "content": "Noted."},
    ]
    chat.write_text(json.dumps(messages), "utf-8")
    run(db, str(chat), model=ScriptedModel([NO_FACTS]))
    messages.append({"role": "user", "content": "Quay 2 is for ferries only."})
    chat.write_text(json.dumps(messages), "utf-8")
    model = ScriptedModel([NO_FACTS])
    run(db, "--transcript", str(chat), model=model)
    assert transcript_of(model.prompts[0].messages[0]["content"]) == (
        "[user]\nQuay 2 is for ferries only.\n"
    )


def test_all_sends_everything_again(db, project):
    session = project / f"{SESSION_NAME}.jsonl"
    run(db, str(session), "--budget", "4000", model=ScriptedModel([NO_FACTS] * 5))
    model = ScriptedModel([NO_FACTS] * 5)
    run(db, str(session), "--budget", "4000", "--all", model=model)
    assert len(model.prompts) == 2


def test_since_leaves_out_older_messages(db, project):
    model = ScriptedModel([NO_FACTS] * 5)
    session = project / f"{SESSION_NAME}.jsonl"
    result = run(db, str(session), "--since", "2026-05-02T10:02:00Z", "--json", model=model)
    report = json.loads(result.stdout)
    sent = "\n".join(p.messages[0]["content"] for p in model.prompts)
    assert "daylight-saving change in March" in sent and "Keep zoneinfo" not in sent
    assert report["files"][0]["import"]["skipped"]["older than --since"] > 0
    run(db, str(session), "--since", "yesterday", code=2)


def test_dry_run_shows_what_would_be_sent_and_records_nothing(db, project):
    result = run(db, str(project), "--dry-run", "--json")
    shown = json.loads(result.stdout)
    assert [Path(f["path"]).name for f in shown["files"]] == [
        f"{SESSION_NAME}.jsonl",
        "agent-a3f9c21.jsonl",
    ]
    assert len(shown["chunks"]) >= 2 and shown["chunks"][0]["file"].endswith(".jsonl")
    assert "[user: remember this]" in "\n".join(c["prompt"][0]["content"] for c in shown["chunks"])
    model = ScriptedModel([NO_FACTS] * 20)
    run(db, str(project), model=model)  # the dry run recorded nothing: all is still new
    assert model.prompts


def test_explicit_requests_are_flagged_in_the_prompt(db, project):
    model = ScriptedModel([NO_FACTS] * 5)
    run(db, str(project / f"{SESSION_NAME}.jsonl"), "--budget", "4000", model=model)
    text = model.prompts[0].messages[0]["content"]
    assert "[user: remember this]\nThe staging harbor API key lives in 1Password" in text
    assert "# Explicit requests\nA message headed [user: remember this]" in text


def test_repeated_transcript_options_keep_every_file(db):
    model = ScriptedModel([NO_FACTS] * 5)
    result = run(
        db,
        "--transcript",
        str(DATA / "openai-responses.json"),
        "--transcript",
        str(DATA / "chatgpt-conversations.json"),
        "--json",
        model=model,
    )
    report = json.loads(result.stdout)
    assert [f["import"]["format"] for f in report["files"]] == ["openai", "chatgpt-export"]
    assert len(model.prompts) == 3  # one conversation, then two


def test_a_file_that_yields_no_message_says_so_and_fails(db, tmp_path):
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([{"title": "empty", "mapping": {}, "current_node": None}]))
    result = run(db, str(export), code=1)
    assert f"{export}: no messages imported" in result.stderr
    assert "chatgpt-export, 0 messages in 0 conversation(s)" in result.stdout


def test_in_a_folder_an_empty_or_unreadable_file_is_reported_and_the_rest_imported(db, tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(DATA / "openai-responses.json", folder / "a.json")
    (folder / "b.jsonl").write_text(json.dumps({"type": "summary", "summary": "x"}) + "\n")
    (folder / "c.json").write_text("{}")
    model = ScriptedModel([NO_FACTS])
    result = run(db, str(folder), model=model)
    assert len(model.prompts) == 1
    assert "b.jsonl: no messages imported" in result.stderr
    assert "c.json: left out: " in result.stdout


def test_nothing_named_is_a_usage_error(db):
    assert "name a transcript" in run(db, code=2).stderr
