"""Claude Code transcripts as written: shell mode, unsent queued messages, sub-agent harness lines."""

from __future__ import annotations

import json
from pathlib import Path

from plugin_sdk.transcripts import load_transcript
from plugin_sdk.transcripts.claude_harness import SHELL_OUTPUT_CHARS

FIXTURE = Path(__file__).parents[1] / "data" / "transcripts" / "claude-code-as-written.jsonl"


def _load(path: Path = FIXTURE):
    transcript = load_transcript(path)
    return transcript.messages, transcript.report


def test_shell_mode_becomes_one_line_with_the_command_and_a_cut_of_its_output():
    messages, report = _load()
    shell = [m.text for m in messages if m.text.startswith("[shell]")]
    assert shell[0] == "[shell] $ git status --short → M tidewater/parser.py ?? notes/tides-2026.md"
    long = shell[1]
    assert long.startswith("[shell] $ pytest -q tests/test_parser.py → tests/test_parser.py::")
    assert "characters cut]" in long and "29 passed in 0.41s" in long  # its end is kept
    assert "stderr: DeprecationWarning" in long
    assert "\n" not in long and "\x1b" not in long
    assert len(long) < SHELL_OUTPUT_CHARS + 120
    everything = "\n".join(m.text for m in messages)
    assert "<bash-" not in everything
    assert report.placeholders["shell command"] == 2
    assert report.skipped["shell output record (joined to its command)"] == 2


def test_a_queued_message_removed_unsent_is_kept_as_the_users_text_and_counted():
    messages, report = _load()
    users = [m.text for m in messages if m.role == "user"]
    assert "and never hardcode the harbour ids, read them from stations.toml" in users
    assert "also bump the version to 0.4.1" in users  # a remove record that holds its text
    assert users.count("rename load_offsets to read_offsets") == 1  # sent: recorded once
    assert report.placeholders["queued message never sent"] == 2


def test_sub_agent_harness_lines_are_stripped_from_tool_results_and_counted():
    messages, report = _load()
    [task] = [m for m in messages if m.role == "tool"]
    assert task.text == (
        "[tool result Task]\nTide offsets are loaded in tidewater/offsets.py:load_offsets(),"
        " from data/offsets.csv, once per process."
    )
    assert report.skipped["sub-agent harness line"] == 2  # the agentId line and its usage block


def test_a_tool_result_that_only_mentions_agent_ids_is_left_alone(tmp_path):
    record = json.loads(FIXTURE.read_text("utf-8").splitlines()[8])
    text = "agentId is a field of the Task result; see docs (not a harness line)"
    record["message"]["content"][0]["content"] = [{"type": "text", "text": text}]
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(record) + "\n", "utf-8")
    messages, report = _load(path)
    assert text in messages[0].text and "sub-agent harness line" not in report.skipped


def test_shell_output_without_its_command_is_still_one_shell_line(tmp_path):
    lines = FIXTURE.read_text("utf-8").splitlines()
    path = tmp_path / "orphan.jsonl"
    path.write_text(lines[1] + "\n", "utf-8")
    messages, _ = _load(path)
    assert [m.text for m in messages] == ["[shell] → M tidewater/parser.py ?? notes/tides-2026.md"]
