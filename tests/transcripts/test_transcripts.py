"""Transcript importers on realistic samples: what is kept, what is skipped and counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plugin_sdk.errors import TranscriptError
from plugin_sdk.store import driver
from plugin_sdk.transcripts import FORMATS, detect_format, load_transcript

DATA = Path(__file__).parents[1] / "data" / "transcripts"
OPENAI = DATA / "openai-chat.json"
CLAUDE = DATA / "claude-code-session.jsonl"
LLM_SQL = DATA / "llm-logs.sql"


@pytest.fixture
def llm_logs(tmp_path: Path) -> Path:
    """The llm logs sample as a real SQLite database."""
    path = tmp_path / "logs.db"
    db = driver.connect(path)
    db.executescript(LLM_SQL.read_text("utf-8"))
    db.close()
    return path


def test_formats_are_detected_from_content(tmp_path, llm_logs):
    assert detect_format(OPENAI) == "openai"
    assert detect_format(CLAUDE) == "claude-code"
    assert detect_format(llm_logs) == "llm-logs"
    renamed = tmp_path / "session.txt"  # the name plays no part
    renamed.write_bytes(CLAUDE.read_bytes())
    assert detect_format(renamed) == "claude-code"
    assert set(FORMATS) == {"openai", "chatgpt-export", "claude-code", "llm-logs"}


def test_undetectable_and_unreadable_files_raise_one_clear_error(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("just some notes\n", "utf-8")
    with pytest.raises(TranscriptError, match="cannot tell the transcript format; pass one of"):
        load_transcript(notes)
    with pytest.raises(TranscriptError, match="no transcript file"):
        load_transcript(tmp_path / "missing.json")
    with pytest.raises(TranscriptError, match="unknown transcript format 'yaml'"):
        load_transcript(OPENAI, "yaml")
    with pytest.raises(TranscriptError, match=r"not valid JSON \(line 2"):
        load_transcript(CLAUDE, "openai")  # the override is obeyed, and fails clearly
    other = tmp_path / "other.db"
    driver.connect(other).execute("CREATE TABLE notes (body TEXT)").connection.commit()
    with pytest.raises(TranscriptError, match="not an llm logs database"):
        load_transcript(other)


def test_openai_messages_keep_turns_and_summarise_tools():
    transcript = load_transcript(OPENAI)
    messages = transcript.messages
    assert [m.role for m in messages] == [
        "user", "assistant", "tool", "tool", "assistant", "user",
        "assistant", "user", "assistant", "assistant", "tool",
    ]  # fmt: skip
    assert {m.conversation for m in messages} == {"openai-chat"}
    first = messages[0]
    assert first.source == "messages[2]"
    assert first.text.endswith("load line.\n[image]")
    assert messages[1].text == (
        '[tool call get_berth_schedule: harbour="Port Ellis", date="2026-03-15"]\n'
        '[tool call get_tide_table: station="PE-04", days=2]'
    )
    # tool messages are named after the call they answer (by tool_call_id)
    assert [m.tool for m in messages if m.role == "tool"] == [
        "get_berth_schedule",
        "get_tide_table",
        "lookup_vessel",
    ]
    assert messages[3].text.startswith("[tool result get_tide_table]\nPE-04 2026-03-15: HW 07:42")
    assert messages[5].text.startswith("[audio]\n(voice note from the pilot)")
    assert messages[7].text.startswith("[file: berth-rules-2026.pdf]\n")
    assert messages[8].text == "[refusal] I can't review video footage."
    assert messages[9].text == '[tool call lookup_vessel: imo="9387421"]'  # legacy function_call
    everything = "\n".join(m.text for m in messages)
    assert "Harbourmaster" not in everything  # the system prompt
    assert "Europe/Dublin" not in everything  # the developer message
    assert "base64" not in everything and "UklGR" not in everything

    report = transcript.report
    assert report.messages == 11 and report.conversations == 1
    assert dict(report.skipped) == {
        "system message": 1,
        "developer message": 1,
        "content part 'video_url'": 1,
        "role 'ipython'": 1,
        "malformed message": 1,
        "empty assistant message": 1,
    }
    assert dict(report.placeholders) == {"image": 1, "audio": 1, "file": 1}
    assert report.problems == ["messages[14]: a str, not a message object"]


def test_openai_accepts_a_bare_list_and_the_same_messages(tmp_path):
    document = json.loads(OPENAI.read_text("utf-8"))
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(document["messages"]), "utf-8")
    assert detect_format(bare) == "openai"
    wrapped, listed = load_transcript(OPENAI), load_transcript(bare)
    assert [m.text for m in listed.messages] == [m.text for m in wrapped.messages]
    assert listed.report.skipped == wrapped.report.skipped


def test_openai_rejects_json_that_holds_no_messages(tmp_path):
    path = tmp_path / "object.json"
    path.write_text('{"model": "gpt-4o"}', "utf-8")
    with pytest.raises(TranscriptError, match="expected a list of messages"):
        load_transcript(path, "openai")


def test_claude_code_session_keeps_the_conversation_and_counts_the_rest():
    transcript = load_transcript(CLAUDE)
    messages = transcript.messages
    main = [m for m in messages if not m.conversation.endswith("sidechain")]
    side = [m for m in messages if m.conversation.endswith("sidechain")]
    assert [m.role for m in main] == [
        "user", "assistant", "tool", "assistant", "tool", "assistant", "tool",
        "user", "assistant", "tool", "user", "user", "assistant",
    ]  # fmt: skip
    assert [m.role for m in side] == ["user", "assistant", "tool", "assistant"]
    assert side[0].conversation == main[0].conversation + " sidechain"
    assert main[0].text.startswith("The tide parser drops the last reading")
    assert main[0].timestamp == "2026-03-14T09:12:14.518Z"
    # the records of one API message (same message.id) are joined
    assert main[1].source == "lines 7-8"
    assert main[1].text == (
        "I'll run the suite first to see the failure.\n"
        '[tool call Bash: command="make check", description="Run the test suite"]'
    )
    # a long tool output is shortened with a marker, never silently
    bash = main[2]
    assert bash.tool == "Bash" and bash.text.startswith("[tool result Bash, error]\n")
    assert "more characters of tool output not imported]" in bash.text
    assert "1 failed, 47 passed" not in bash.text
    assert main[7].text.endswith("the 23:50 reading is back:\n[image]")
    assert main[9].text == (
        "[tool result Task]\nOne more: tidewater/currents.py:41 has the same `[:-1]` slice."
    )
    assert main[-1].text == (
        '[tool call web_search: query="postgres 16 default port"]\n'
        "Noted: staging is Postgres 16 on port 5433."
    )
    everything = "\n".join(m.text for m in messages)
    assert "Let me look at the parser" not in everything  # thinking
    assert "Caveat:" not in everything and "<command-name>" not in everything  # meta records
    assert "iVBORw0KGgo" not in everything

    report = transcript.report
    # typed while the agent was busy (a queue-operation), kept as the user's message
    assert main[10].text == "also update the changelog" and main[10].role == "user"
    assert report.messages == 17 and report.conversations == 2
    assert dict(report.skipped) == {
        "record type 'summary'": 1,
        "record type 'file-history-snapshot'": 2,
        "record type 'system' (local_command)": 1,
        "record type 'ai-title'": 1,
        "record type 'last-prompt'": 1,
        "meta user record": 2,
        "content block 'thinking'": 1,
        "content block 'redacted_thinking'": 1,
        "content block 'web_search_tool_result'": 1,
        "malformed line": 1,
    }
    assert report.placeholders == {"image": 1}
    assert report.shortened == 1
    assert len(report.problems) == 1 and report.problems[0].startswith(
        "line 22: not valid JSON (Unterminated string"
    )


def test_claude_code_tool_output_limit_can_be_lifted():
    full = load_transcript(CLAUDE, tool_output_chars=0)
    bash = next(m for m in full.messages if m.tool == "Bash")
    assert "=========== 1 failed, 47 passed in 2.31s ===========" in bash.text
    assert full.report.shortened == 0


def test_claude_code_odd_lines_are_reported_by_number(tmp_path):
    path = tmp_path / "odd.jsonl"
    lines = [
        json.dumps(
            {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "hi"}}
        ),
        "[1, 2, 3]",
        json.dumps({"type": "assistant", "sessionId": "s"}),
        "",
        json.dumps({"type": "user", "sessionId": "s", "message": {"role": "user", "content": ""}}),
        json.dumps({"sessionId": "s", "note": "no type"}),
        json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": " "}]}}),
    ]
    path.write_text("\n".join(lines) + "\n", "utf-8")
    transcript = load_transcript(path)
    assert [m.text for m in transcript.messages] == ["hi"]
    assert transcript.report.problems == [
        "line 2: a JSON list, not a record object",
        "line 3: assistant record without a message object",
    ]
    assert dict(transcript.report.skipped) == {
        "malformed line": 2,
        "empty user record": 1,
        "empty assistant record": 1,
        "record without a type": 1,
    }


def test_llm_logs_read_both_the_responses_table_and_the_message_store(llm_logs):
    transcript = load_transcript(llm_logs)
    messages = transcript.messages
    conversations = list(dict.fromkeys(m.conversation for m in messages))
    assert [c.split()[1] for c in conversations] == [
        "conversation", "conversation", "conversation", "thread", "thread",
    ]  # fmt: skip
    by = {c: [m for m in messages if m.conversation == c] for c in conversations}

    tools, photo, failed, thread, fork = (by[c] for c in conversations)
    assert [m.role for m in tools] == ["user", "assistant", "tool", "assistant"]
    assert tools[1].text == "[tool call llm_time]"
    assert tools[2].tool == "llm_time" and '"timezone_name": "IST"' in tools[2].text
    assert tools[0].timestamp == "2025-05-28T14:05:11.204311+00:00"
    assert photo[0].text == "Describe the damage\n[image: quay1-fender.jpg]"
    assert photo[2].text.endswith("ETA two weeks.\n[fragment: docs/maintenance.md]")
    assert failed[2].text.startswith("[tool result read_file, error]\nexception: FileNotFoundError")

    assert [m.role for m in thread] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert thread[0].text == (
        "[fragment: berths.md]\n"
        "When is high water at Port Ellis tomorrow? The Corrib Star draws 9.2 m."
    )
    assert thread[1].text == '[tool call tide_table: station="PE-04"]'
    assert thread[4].text == "And this photo of quay 1?\n[image]"
    assert all(m.timestamp for m in thread)
    # the fork repeats nothing of the thread it shares its start with
    assert [m.text for m in fork] == [
        "What about quay 2 instead?",
        "Quay 2 is closed for dredging until April.",
    ]
    everything = "\n".join(m.text for m in messages)
    assert "lock keeper's assistant" not in everything and "Harbourmaster" not in everything
    assert "fender 3 is split." not in everything  # reasoning

    report = transcript.report
    assert report.conversations == 5 and report.messages == 20
    assert dict(report.skipped) == {
        "system prompt": 2,
        "empty response row": 1,
        "reasoning part": 1,
        "part type 'citation'": 1,
        "message shared with an earlier thread (a fork)": 5,
    }
    assert dict(report.placeholders) == {"image": 2, "fragment": 2}
    assert report.problems == []


def test_llm_logs_from_an_old_llm_without_tool_tables(tmp_path):
    path = tmp_path / "old-logs.db"
    db = driver.connect(path)
    db.executescript(
        """CREATE TABLE conversations (id TEXT PRIMARY KEY, name TEXT, model TEXT);
           CREATE TABLE responses (id TEXT PRIMARY KEY, model TEXT, prompt TEXT, system TEXT,
               prompt_json TEXT, options_json TEXT, response TEXT, response_json TEXT,
               conversation_id TEXT, duration_ms INTEGER, datetime_utc TEXT);
           INSERT INTO conversations VALUES ('c1', 'rota', 'gpt-3.5-turbo');
           INSERT INTO responses VALUES ('r2', 'gpt-3.5-turbo', 'and on Sundays?', NULL, NULL,
               '{}', 'Sundays: Ciara.', NULL, 'c1', 900, '2023-07-02T09:00:05');
           INSERT INTO responses VALUES ('r1', 'gpt-3.5-turbo', 'who opens the lock on Mondays?',
               NULL, NULL, '{}', 'Mondays: Tomás.', NULL, 'c1', 800, '2023-07-02T09:00:00');"""
    )
    db.close()
    transcript = load_transcript(path)
    assert [m.text for m in transcript.messages] == [
        "who opens the lock on Mondays?",
        "Mondays: Tomás.",
        "and on Sundays?",
        "Sundays: Ciara.",
    ]
    assert transcript.report.skipped == {}


def test_report_lines_say_what_was_skipped_and_why():
    lines = load_transcript(CLAUDE).report.lines()
    assert lines[0].endswith(
        "claude-code-session.jsonl: claude-code, 17 messages in 2 conversation(s)"
    )
    assert any(
        line.startswith("skipped: ") and "record type 'summary' (1)" in line for line in lines
    )
    assert "placeholders: image (1)" in lines
    assert "tool outputs shortened: 1" in lines
    assert any(line.startswith("problem: line 22: not valid JSON") for line in lines)
