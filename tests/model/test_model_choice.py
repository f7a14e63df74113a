"""The models a command line can name: claude-code (a fake `claude` on PATH) and scripted:FILE."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from plugin_sdk.errors import ModelError
from plugin_sdk.model.choose import default_choice, model_plugin
from plugin_sdk.model.claude_headless import CHILD_ENV, ClaudeCodeModel
from plugin_sdk.model.scripted import FileScriptedModel
from plugin_sdk.plugin.records import Prompt

PROMPT = Prompt(
    purpose="historian", system="SYSTEM TEXT", messages=[{"role": "user", "content": "hi"}]
)


def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "claude"
    log = tmp_path / "claude.log"
    script.write_text(
        f'#!/bin/sh\necho "$@" > {log}\necho "child=${CHILD_ENV}" >> {log}\ncat >> {log}\n{body}\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return log


def test_the_answer_is_the_result_and_the_child_has_no_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = fake_claude(
        tmp_path,
        monkeypatch,
        """echo '{"type":"result","is_error":false,"result":"<no-facts/>"}'""",
    )
    assert default_choice() == "claude-code"
    assert ClaudeCodeModel().complete(PROMPT) == "<no-facts/>"
    seen = log.read_text()
    assert seen.startswith("-p --output-format json --tools  --strict-mcp-config")
    assert "child=1" in seen and "SYSTEM TEXT" in seen and "hi" in seen


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            """echo '{"is_error":true,"result":"Credit balance is too low"}'""",
            "Credit balance is too low",
        ),
        ("echo 'boom' >&2; exit 3", "exit 3: boom"),
        ("echo 'not json'", "not a JSON object"),
        ("sleep 5", "no answer within 0.5 s"),
    ],
)
def test_errors_and_timeouts_are_model_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, said: str
) -> None:
    fake_claude(tmp_path, monkeypatch, body)
    with pytest.raises(ModelError, match=said):
        ClaudeCodeModel(timeout=0.5).complete(PROMPT)


def test_no_claude_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert default_choice() == "none"
    with pytest.raises(ModelError, match="no 'claude' executable on PATH"):
        ClaudeCodeModel().complete(PROMPT)


def test_scripted_from_a_list_and_from_a_folder(tmp_path: Path) -> None:
    listed = tmp_path / "answers.json"
    listed.write_text(json.dumps(["one", "two"]))
    model = model_plugin(f"scripted:{listed}")
    assert isinstance(model, FileScriptedModel)
    assert [model.model_complete(PROMPT), model.model_complete(PROMPT)] == ["one", "two"]
    with pytest.raises(ModelError, match="no answer left for the historian prompt"):
        model.model_complete(PROMPT)
    folder = tmp_path / "answers"
    folder.mkdir()
    (folder / "02.txt").write_text("second")
    (folder / "01.txt").write_text("first")
    assert FileScriptedModel(folder).answers == ["first", "second"]
    (tmp_path / "bad.json").write_text('{"a": 1}')
    with pytest.raises(ModelError, match="not a JSON list of strings"):
        model_plugin(f"scripted:{tmp_path / 'bad.json'}")
    assert model_plugin("none") is None
