"""``memsdk historian run`` end to end: a transcript file, an llm model, the store."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from plugin_sdk import Store
from plugin_sdk.cli import cli
from plugin_sdk.packs.documents import validate_pack
from plugin_sdk.store.tokens import default_counter
from plugin_sdk.testing import ScriptedModel, StoreTemplates, fresh_plugin_manager, pack_document
from plugin_sdk.transcripts import chunk_messages, load_transcript

llm = pytest.importorskip("llm")

DATA = Path(__file__).parents[1] / "data" / "transcripts"
OPENAI = DATA / "openai-chat.json"
CLAUDE = DATA / "claude-code-session.jsonl"
PACK = pack_document("harbour", "1.0.0", {"BERTH_RULES": "intent", "QUAY_STATE": "content"})
HARBOUR = validate_pack(PACK, source="harbour")
CLEAN_ENV = {
    "MEMSDK_DB": None,
    "MEMSDK_PROJECT": None,
    "MEMSDK_TRACE": None,
    "MEMSDK_MODEL": None,
}

Answer = Callable[[str], str]


class PilotModel(llm.Model):
    """A deterministic llm model: each answer is a function of the prompt text."""

    model_id = "memsdk-test-pilot"

    def __init__(self) -> None:
        self.answer: Answer = lambda text: "<no-facts/>"
        self.prompts: list[str] = []

    def execute(self, prompt, stream, response, conversation):
        self.prompts.append(prompt.prompt)
        yield self.answer(prompt.prompt)


class PilotPlugin:
    __name__ = "memsdk-test-pilot-plugin"

    def __init__(self, model: PilotModel) -> None:
        self.model = model

    @llm.hookimpl
    def register_models(self, register):
        register(self.model, aliases=["pilot"])


@pytest.fixture
def pilot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PilotModel]:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm-home"))
    model = PilotModel()
    plugin = PilotPlugin(model)
    llm.pm.register(plugin, name=PilotPlugin.__name__)
    try:
        yield model
    finally:
        llm.pm.unregister(plugin)


@pytest.fixture
def db(tmp_path: Path, memsdk_templates: StoreTemplates) -> str:
    """A closed store file with the harbour pack."""
    return str(memsdk_templates.copy(tmp_path / "harbour.db", HARBOUR))


def memsdk(*args: str, plugins: tuple[tuple[str, object], ...] = (), code: int = 0) -> Result:
    result = CliRunner().invoke(
        cli,
        list(args),
        obj={"plugins": fresh_plugin_manager(*plugins)},  # no third-party plugins
        env=CLEAN_ENV,
        catch_exceptions=False,
    )
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def run(db: str, *args: str, **kwargs) -> Result:
    return memsdk("historian", "run", *args, "--db", db, "--project", "harbour", **kwargs)


def memories(db: str) -> list[tuple[str, str, str]]:
    store = Store(db, project="harbour", plugins=fresh_plugin_manager())
    try:
        rows = store.db.execute(
            "SELECT category, status, content FROM memories ORDER BY id"
        ).fetchall()
        return [tuple(row) for row in rows]
    finally:
        store.close()


def harbour_answer(text: str) -> str:
    blocks = []
    if "Corrib Star is due tomorrow" in text:
        blocks.append(
            '<facts category="QUAY_STATE">\n'
            "- Quay 3 takes at most 8.5 m draught; quay 1 takes 10.5 m.\n"
            "</facts>"
        )
    if "voice note from the pilot" in text:
        blocks.append(
            '<facts category="BERTH_RULES">\n'
            "- Any vessel over 9 m draught berths at quay 1 only.\n"
            '</facts>\n<facts category="TIDE_TABLES">\n'
            "- PE-04 high water 07:42 on 2026-03-15.\n"
            "</facts>"
        )
    return "\n".join(blocks) or "<no-facts/>"


@pytest.mark.slow
def test_historian_run_with_an_llm_model_end_to_end(pilot, db):
    pilot.answer = harbour_answer
    chunks = chunk_messages(load_transcript(OPENAI).messages, default_counter(), 200)
    assert len(chunks) >= 3
    result = run(db, "--transcript", str(OPENAI), "--model", "pilot", "--budget", "200")

    assert len(pilot.prompts) == len(chunks)  # one model call per chunk
    progress = result.stderr.splitlines()
    assert len(progress) == len(chunks)
    assert progress[0].startswith(f"openai-chat.json: chunk 1/{len(chunks)} (")
    assert progress[0].endswith("1 new, 0 folded, 0 quarantined")
    assert any(line.endswith("1 new, 0 folded, 1 quarantined") for line in progress)
    assert sum(line.endswith("nothing new") for line in progress) == len(chunks) - 2

    out = result.stdout.splitlines()
    assert out[0].endswith("openai-chat.json: openai, 11 messages in 1 conversation(s)")
    assert "content part 'video_url' (1)" in out[1] and "system message (1)" in out[1]
    assert "problem: messages[14]: a str, not a message object" in out
    assert f"historian: {len(chunks)} chunk(s) with model pilot" in out
    assert "admitted: 2 (2 new, 0 folded into existing memories)" in out
    assert "quarantined: 1 (1 with an unknown category)" in out

    assert memories(db) == [
        ("QUAY_STATE", "active", "Quay 3 takes at most 8.5 m draught; quay 1 takes 10.5 m."),
        ("BERTH_RULES", "active", "Any vessel over 9 m draught berths at quay 1 only."),
        ("TIDE_TABLES", "quarantined", "PE-04 high water 07:42 on 2026-03-15."),
    ]
    # a rerun sends nothing: the import ledger has seen the whole file
    again = run(db, "--transcript", str(OPENAI), "--model", "pilot", "--budget", "200")
    assert "unchanged since the last import; nothing to send" in again.stdout.splitlines()[0]
    assert "historian: nothing new to send" in again.stdout.splitlines()
    assert len(pilot.prompts) == len(chunks)
    # --all sends it again, and the historian folds what it already knows
    again = run(db, "--transcript", str(OPENAI), "--model", "pilot", "--budget", "200", "--all")
    assert "admitted: 2 (0 new, 2 folded into existing memories)" in again.stdout.splitlines()


def test_json_report(pilot, db):
    pilot.answer = harbour_answer
    result = run(db, "--transcript", str(OPENAI), "--model", "pilot", "--json")
    report = json.loads(result.stdout)
    assert report["chunks"] == 1 and report["model"] == "pilot"
    assert report["admitted"] == 2 and len(report["written"]) == 2 and report["folded"] == []
    assert report["unknown_category"] == 1
    assert [q["category"] for q in report["quarantined"]] == ["TIDE_TABLES"]
    assert report["import"]["skipped"]["role 'ipython'"] == 1
    assert report["import"]["placeholders"] == {"audio": 1, "file": 1, "image": 1}
    assert report["failed_chunks"] == []


def test_without_a_model_the_command_says_one_is_needed(db):
    result = run(db, "--transcript", str(OPENAI), code=1)
    assert result.stderr.startswith("Error: the historian needs a model: pass --model claude-code")
    assert "--model scripted:FILE" in result.stderr and "--model ID" in result.stderr
    assert "pip install -e '.[llm]'" in result.stderr and "--dry-run" in result.stderr
    assert "memsdk[llm]" not in result.stderr  # not on PyPI yet: no hint may send people there
    assert memories(db) == []


def test_a_host_plugin_model_is_used_when_no_model_is_named(db):
    scripted = ScriptedModel(["<no-facts/>"])
    result = run(db, "--transcript", str(OPENAI), plugins=(("scripted-model", scripted),))
    assert "historian: 1 chunk(s) with model scripted-model" in result.stdout
    assert len(scripted.prompts) == 1 and scripted.prompts[0].purpose == "historian"


def test_dry_run_shows_chunks_and_prompts_and_calls_no_model(pilot, db):
    result = run(db, "--transcript", str(CLAUDE), "--budget", "400", "--dry-run")
    out = result.stdout
    headers = re.findall(r"^=== chunk (\d+)/(\d+): (\d+) tokens", out, re.MULTILINE)
    assert len(headers) == 5 and all(int(tokens) <= 400 for _, _, tokens in headers)
    assert out.count("--- system prompt") == 1  # the same for every chunk: shown once
    assert "## BERTH_RULES: intent" in out  # the criteria-built prompt
    assert "[user]\nThe tide parser drops the last reading of each day." in out
    assert "sidechain)" in out  # the sub-agent's conversation has chunks of its own
    assert out.rstrip().endswith("(dry run: 5 chunk(s), no model called, no memory written)")
    assert pilot.prompts == [] and memories(db) == []


def test_dry_run_json(db):
    result = run(db, "--transcript", str(OPENAI), "--dry-run", "--json")
    shown = json.loads(result.stdout)
    [chunk] = shown["chunks"]
    assert chunk["messages"] == 11 and chunk["span"] == "messages[2] .. messages[12]"
    assert chunk["prompt"][0]["role"] == "user"
    assert '[tool call get_tide_table: station="PE-04", days=2]' in chunk["prompt"][0]["content"]
    assert shown["import"]["format"] == "openai"


def test_an_unknown_llm_model_fails_before_any_work(pilot, db):
    result = run(db, "--transcript", str(OPENAI), "--model", "no-such-model", code=1)
    assert result.stderr.startswith("Error: llm has no model 'no-such-model'")
    assert result.stderr.count("\n") == 1 and pilot.prompts == []


def test_a_model_failure_stops_the_run_and_keeps_what_was_done(pilot, db):
    def flaky(text: str) -> str:
        if len(pilot.prompts) == 2:
            raise llm.ModelError("quota exhausted")
        return harbour_answer(text)

    pilot.answer = flaky
    result = run(db, "--transcript", str(OPENAI), "--model", "pilot", "--budget", "200", code=1)
    assert "Error: llm model 'pilot' failed on a historian prompt: ModelError: quota exhausted" in (
        result.stderr
    )
    assert "(stopped at chunk 2 of" in result.stderr and "the 1 chunk(s) before it are kept" in (
        result.stderr
    )
    assert [m[2] for m in memories(db)] == [
        "Quay 3 takes at most 8.5 m draught; quay 1 takes 10.5 m."
    ]


def test_an_unreadable_reply_is_reported_and_the_run_goes_on(pilot, db):
    pilot.answer = lambda text: (
        "Sorry, I cannot help with that." if "Corrib Star is due" in text else harbour_answer(text)
    )
    result = run(db, "--transcript", str(OPENAI), "--model", "pilot", "--budget", "200")
    assert "chunk 1/" in result.stderr and "unreadable reply:" in result.stderr
    assert "unreadable replies: 1 (chunks 1)" in result.stdout.splitlines()
    assert "admitted: 1 (1 new, 0 folded into existing memories)" in result.stdout.splitlines()
    kept = memories(db)
    assert ("", "quarantined", "Sorry, I cannot help with that.") in kept  # the reply, kept


def test_a_transcript_in_an_unknown_format_is_one_line(db, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n", "utf-8")
    result = run(db, "--transcript", str(notes), "--dry-run", code=1)
    assert result.stderr == (
        f"Error: {notes}: cannot tell the transcript format; pass one of: "
        "openai, chatgpt-export, claude-code, llm-logs\n"
    )
