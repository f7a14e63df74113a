"""Transcript importers on odd input: every record is read, skipped and counted, or
reported as a problem with its position; only an unreadable file raises."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin_sdk.errors import TranscriptError
from plugin_sdk.store import driver
from plugin_sdk.transcripts import FORMATS, Transcript, load_transcript
from plugin_sdk.transcripts.model import ROLES

# The smallest llm logs.db a message-store thread needs.
LLM_SCHEMA = """
CREATE TABLE threads (id TEXT PRIMARY KEY, name TEXT, tip_message_hash TEXT,
    forked_from TEXT, datetime_utc TEXT);
CREATE TABLE messages (hash TEXT PRIMARY KEY, parent_hash TEXT, role TEXT,
    provider_metadata TEXT);
CREATE TABLE parts (id INTEGER PRIMARY KEY, message_hash TEXT, position INTEGER, type TEXT,
    tool_name TEXT, text TEXT, payload TEXT);
CREATE TABLE fragments (id INTEGER PRIMARY KEY, hash TEXT, content TEXT, datetime_utc TEXT,
    source TEXT);
CREATE TABLE attachments (id TEXT PRIMARY KEY, type TEXT, path TEXT, url TEXT, content BLOB);
"""


def llm_db(path: Path, messages: list[tuple[str, str | None, str]], parts: list[tuple]) -> Path:
    """A logs.db with one thread whose tip is the last of ``messages`` (hash, parent, role)."""
    db = driver.connect(path)
    db.executescript(LLM_SCHEMA)
    db.executemany("INSERT INTO messages VALUES (?, ?, ?, NULL)", messages)
    db.executemany(
        "INSERT INTO parts (message_hash, position, type, tool_name, text, payload) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        parts,
    )
    db.execute(
        "INSERT INTO threads VALUES ('t1', NULL, ?, NULL, '2026-01-01T00:00:00')",
        [messages[-1][0]],
    )
    db.execute("INSERT INTO fragments VALUES (1, 'h', 'x', NULL, 'notes.md')")
    db.commit()
    db.close()
    return path


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", "utf-8")
    return path


def assert_sound(transcript: Transcript, raw: str = "") -> None:
    """Every message is well-typed, and the report adds up.

    ``raw``: the input; a message shows ``None`` (a null turned into text, or a
    Python repr) only if the input had that word.
    """
    for message in transcript.messages:
        assert "None" not in message.text or "None" in raw
        assert message.role in ROLES
        assert isinstance(message.text, str) and message.text.strip()
        assert isinstance(message.source, str) and isinstance(message.conversation, str)
        assert message.tool is None or isinstance(message.tool, str)
        assert message.timestamp is None or isinstance(message.timestamp, str)
    assert transcript.report.messages == len(transcript.messages)
    assert all(isinstance(p, str) for p in transcript.report.problems)


# -- llm logs ---------------------------------------------------------------


def test_llm_logs_a_message_chain_that_loops_is_reported_not_followed(tmp_path):
    # a and b are each other's parent; the thread's tip is b.
    path = llm_db(
        tmp_path / "loop.db",
        [("a", "b", "user"), ("b", "a", "assistant")],
        [("a", 0, "text", None, "question", None), ("b", 0, "text", None, "answer", None)],
    )
    transcript = load_transcript(path)
    assert [(m.role, m.text) for m in transcript.messages] == [
        ("user", "question"),
        ("assistant", "answer"),
    ]
    assert transcript.report.problems == [
        "threads t1: the message chain loops back to message b; read up to there"
    ]


def test_llm_logs_odd_payloads_are_reported_by_message(tmp_path):
    path = llm_db(
        tmp_path / "odd.db",
        [("m1", None, "user"), ("m2", "m1", "assistant")],
        [
            ("m1", 0, "text", None, None, '{"text_ref": [5]}'),
            ("m1", 1, "text", None, None, '{"text_ref": 7}'),
            ("m1", 2, "text", None, None, '{"text_ref": [{"fragment": {"id": 1}}]}'),
            ("m1", 3, "text", None, "kept", None),
            ("m2", 0, "tool_result", None, None, '{"name": ["x"], "attachments": 3}'),
            ("m2", 1, "attachment", None, None, '{"attachment": {"id": [1]}}'),
        ],
    )
    transcript = load_transcript(path)
    assert [m.text for m in transcript.messages] == [
        "[fragment: unnamed]\nkept",
        "[tool result unknown tool]",
        "[attachment]",
    ]
    assert transcript.report.problems == [
        "messages m1: text_ref[0] is a int, not an object",
        "messages m1: text_ref is a int, not a list",
        "messages m2: attachments is a int, not a list",
    ]
    assert transcript.report.skipped["malformed text reference"] == 2


# -- OpenAI messages ----------------------------------------------------------


def test_openai_a_file_part_with_a_numeric_name_is_a_plain_file_placeholder(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(
        json.dumps(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "see attached"},
                        {"type": "file", "file": {"filename": 123}},
                    ],
                },
                {"role": "tool", "name": ["not", "a", "name"], "content": "done"},
            ]
        ),
        "utf-8",
    )
    transcript = load_transcript(path)
    assert [m.text for m in transcript.messages] == [
        "see attached\n[file]",
        "[tool result unknown tool]\ndone",
    ]
    assert transcript.messages[1].tool is None


def test_openai_a_record_that_breaks_the_reader_is_a_problem_not_a_crash(tmp_path, monkeypatch):
    from plugin_sdk.transcripts import openai_messages

    def broken(self, raw, where):
        raise RuntimeError("boom")

    monkeypatch.setattr(openai_messages._Reader, "assistant", broken)
    path = tmp_path / "chat.json"
    path.write_text(
        json.dumps([{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]),
        "utf-8",
    )
    transcript = load_transcript(path)
    assert [m.text for m in transcript.messages] == ["one"]
    assert transcript.report.problems == ["messages[1]: cannot read (RuntimeError: boom)"]
    assert transcript.report.skipped["unreadable record"] == 1


def test_openai_json_nested_too_deeply_is_one_clear_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, "utf-8")
    with pytest.raises(TranscriptError, match="nested too deeply"):
        load_transcript(path, "openai")
    with pytest.raises(TranscriptError, match="cannot tell the transcript format"):
        load_transcript(path)


# -- Claude Code ----------------------------------------------------------------


def claude(kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "sessionId": "s", "message": {"role": kind, "content": content}, **extra}


def test_claude_code_null_text_is_no_text_and_odd_text_is_counted(tmp_path):
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            claude("user", [{"type": "text", "text": None}, {"type": "text", "text": "hello"}]),
            claude("assistant", [{"type": "text", "text": None}, {"type": "text", "text": "hi"}]),
            claude("assistant", [{"type": "text", "text": {"odd": 1}}]),
        ],
    )
    transcript = load_transcript(path)
    assert [m.text for m in transcript.messages] == ["hello", "hi"]
    assert "None" not in "".join(m.text for m in transcript.messages)
    assert transcript.report.problems == ["line 3: a text block whose text is a dict"]
    assert transcript.report.skipped["malformed content block"] == 1


def test_claude_code_a_tool_result_with_object_content_is_counted(tmp_path):
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            claude("assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]),
            claude(
                "user",
                [{"type": "tool_result", "tool_use_id": "t1", "content": {"stdout": "ok"}}],
            ),
            claude("user", [{"type": "tool_result", "tool_use_id": "t1", "content": None}]),
        ],
    )
    transcript = load_transcript(path)
    assert [m.text for m in transcript.messages] == [
        "[tool call Bash]",
        "[tool result Bash]",
        "[tool result Bash]",
    ]
    assert transcript.report.problems == ["line 2: tool_result content is a dict"]
    assert transcript.report.skipped == {"malformed tool result content": 1}


def test_claude_code_a_record_that_breaks_the_reader_leaves_nothing_half_read(
    tmp_path, monkeypatch
):
    from plugin_sdk.transcripts import claude_code

    original = claude_code._Reader.result

    def broken(self, block, context):
        original(self, block, context)
        raise RuntimeError("boom")

    monkeypatch.setattr(claude_code._Reader, "result", broken)
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            claude("user", "first"),
            claude("user", [{"type": "text", "text": "half"}, {"type": "tool_result"}]),
            claude("user", "last"),
        ],
    )
    transcript = load_transcript(path)
    assert [m.text for m in transcript.messages] == ["first", "last"]
    assert transcript.report.problems == ["line 2: cannot read (RuntimeError: boom)"]


# -- random records -------------------------------------------------------------
# Each format's records with the fields its importer reads, every field's value
# drawn from arbitrary JSON (or left out), so the odd types reach every branch.

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=12),
)
json_ish = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)


def mostly(likely: st.SearchStrategy[Any], odd: st.SearchStrategy[Any], one_in: int = 4):
    """``likely`` most of the time, ``odd`` about once in ``one_in`` draws."""
    return st.integers(1, one_in).flatmap(lambda n: odd if n == 1 else likely)


def anything(*likely: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A field's value: mostly one of the likely shapes, else a JSON scalar or any JSON."""
    return mostly(st.one_of(*likely), leaves | json_ish) if likely else leaves | json_ish


def obj(required: dict[str, Any] | None = None, **optional: Any) -> st.SearchStrategy[Any]:
    """A JSON object with ``required`` fields and any of the ``optional`` ones."""
    return st.fixed_dictionaries(required or {}, optional=optional)


def words(*values: str) -> st.SearchStrategy[Any]:
    """A type or role field: a known value, an unknown one, or no string at all."""
    return mostly(st.sampled_from([*values, "other"]), leaves, one_in=8)


openai_part = obj(
    {"type": words("text", "input_text", "image_url", "input_audio", "file", "input_file",
                   "refusal")},
    text=anything(st.text()),
    file=anything(obj(filename=anything(st.text()))),
    filename=json_ish,
    refusal=json_ish,
)  # fmt: skip
openai_call = obj(
    id=anything(st.text(max_size=3)),
    type=json_ish,
    function=anything(obj(name=json_ish, arguments=anything(json_ish.map(json.dumps)))),
)
openai_message = obj(
    {"role": words("user", "assistant", "tool", "function", "system", "developer")},
    content=anything(st.lists(anything(openai_part), max_size=4)),
    name=json_ish,
    tool_call_id=anything(st.text(max_size=3)),
    tool_calls=anything(st.lists(anything(openai_call), max_size=3)),
    function_call=anything(obj(name=json_ish, arguments=json_ish)),
    refusal=json_ish,
    audio=anything(obj(transcript=json_ish)),
)
responses_item = obj(
    {"type": words("function_call", "function_call_output", "custom_tool_call", "mcp_call",
                   "reasoning", "web_search_call")},
    call_id=anything(st.text(max_size=3)),
    id=json_ish,
    name=json_ish,
    server_label=json_ish,
    arguments=anything(json_ish.map(json.dumps)),
    input=json_ish,
    output=anything(st.text(), st.lists(anything(openai_part), max_size=2)),
    error=json_ish,
)  # fmt: skip
claude_block = obj(
    {"type": words("text", "tool_use", "server_tool_use", "tool_result", "image", "document",
                   "thinking")},
    text=json_ish,
    id=anything(st.text(max_size=3)),
    name=json_ish,
    input=json_ish,
    tool_use_id=anything(st.text(max_size=3)),
    content=anything(st.lists(anything(obj({"type": words("text", "image")}, text=json_ish)))),
    is_error=json_ish,
    title=json_ish,
)  # fmt: skip
claude_record = obj(
    {
        "type": words("user", "assistant", "summary", "system", "queue-operation", "attachment"),
        "message": anything(
            obj({"content": anything(st.lists(anything(claude_block), max_size=4))}, id=json_ish)
        ),
    },
    sessionId=json_ish,
    isSidechain=json_ish,
    agentId=json_ish,
    timestamp=json_ish,
    isMeta=mostly(st.just(False), json_ish),
    isCompactSummary=mostly(st.just(False), json_ish),
    subtype=json_ish,
    uuid=anything(st.sampled_from(["u1", "u2", "u3", "u4"])),
    parentUuid=anything(st.sampled_from(["u1", "u2", "u3", "u4", "gone"])),
    logicalParentUuid=json_ish,
    isApiErrorMessage=mostly(st.just(False), json_ish),
    operation=words("enqueue", "dequeue", "remove"),
    content=anything(st.text(max_size=40), st.sampled_from(
        ["<command-name>/x</command-name>", "<user-memory-input>k</user-memory-input>",
         "[Request interrupted by user]", "<system-reminder>r</system-reminder>"])),
    attachment=anything(obj({"type": words("queued_command")}, prompt=json_ish)),
)  # fmt: skip
chatgpt_message = obj(
    author=anything(obj(role=words("user", "assistant", "tool", "system"), name=json_ish)),
    content=anything(
        obj(
            {"content_type": words("text", "multimodal_text", "code", "thoughts")},
            parts=anything(st.lists(anything(st.text(), obj(content_type=json_ish)), max_size=3)),
            text=json_ish,
        )
    ),
    create_time=json_ish,
    recipient=anything(st.sampled_from(["all", "python", ""])),
    metadata=json_ish,
)
chatgpt_node = obj(
    message=anything(chatgpt_message),
    parent=anything(st.sampled_from(["n0", "n1", "n2", "n3"])),
    children=json_ish,
)
chatgpt_conversation = obj(
    {"mapping": anything(st.dictionaries(st.sampled_from(["n0", "n1", "n2", "n3"]),
                                         anything(chatgpt_node), max_size=4))},
    current_node=anything(st.sampled_from(["n0", "n1", "n2", "n3", "gone"])),
    id=json_ish,
    conversation_id=json_ish,
)  # fmt: skip
llm_payload = obj(
    text_ref=anything(st.lists(anything(obj(literal=json_ish, fragment=json_ish)), max_size=3)),
    arguments=json_ish,
    name=json_ish,
    output=json_ish,
    attachments=anything(st.lists(anything(obj(id=json_ish)), max_size=2)),
    attachment=anything(obj(id=json_ish)),
    exception=json_ish,
)
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@FUZZ
@given(
    data=anything(
        st.lists(anything(openai_message, responses_item), max_size=6),
        obj({"messages": st.lists(anything(openai_message), max_size=6)}, id=json_ish),
        obj({"input": st.lists(anything(openai_message, responses_item), max_size=6)}),
    )
)
def test_openai_never_crashes_on_random_json(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "chat.json"
        path.write_text(json.dumps(data), "utf-8")
        try:
            transcript = load_transcript(path, "openai")
        except TranscriptError as error:  # only JSON that holds no message list
            assert "expected a list of messages" in str(error)
            return
        assert_sound(transcript, json.dumps(data))


@pytest.mark.slow
@FUZZ
@given(records=st.lists(anything(claude_record), max_size=8))
def test_claude_code_never_crashes_on_random_records(records):
    with tempfile.TemporaryDirectory() as folder:
        path = write_jsonl(Path(folder) / "s.jsonl", records)
        transcript = load_transcript(path, "claude-code")  # JSONL is never refused as a whole
        assert_sound(transcript, json.dumps(records))


llm_part = st.tuples(
    st.sampled_from(["text", "tool_call", "tool_result", "attachment", "reasoning", "other"]),
    st.none() | st.text(max_size=8),  # tool_name
    st.none() | st.text(max_size=8),  # text
    st.none() | st.text(max_size=8) | anything(llm_payload).map(json.dumps),  # payload
)


@pytest.mark.slow
@FUZZ
@given(
    roles=st.lists(st.sampled_from(["user", "assistant", "tool", "system", "x"]), min_size=1),
    parts=st.lists(st.tuples(st.integers(0, 7), llm_part), max_size=12),
)
def test_llm_logs_never_crash_on_random_parts(roles, parts):
    messages = [(f"m{i}", f"m{i - 1}" if i else None, role) for i, role in enumerate(roles)]
    rows = [
        (f"m{index % len(roles)}", position, kind, tool, text, payload)
        for position, (index, (kind, tool, text, payload)) in enumerate(parts)
    ]
    with tempfile.TemporaryDirectory() as folder:
        path = llm_db(Path(folder) / "logs.db", messages, rows)
        transcript = load_transcript(path, "llm-logs")
        assert_sound(transcript, json.dumps(rows))
        assert all(p.startswith("messages m") for p in transcript.report.problems)


@FUZZ
@given(data=anything(st.lists(anything(chatgpt_conversation), max_size=3), chatgpt_conversation))
def test_chatgpt_export_never_crashes_on_random_conversations(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "conversations.json"
        path.write_text(json.dumps(data), "utf-8")
        transcript = load_transcript(path, "chatgpt-export")  # odd conversations are counted
        assert_sound(transcript, json.dumps(data))


def test_every_format_is_fuzzed():
    assert set(FORMATS) == {"openai", "chatgpt-export", "claude-code", "llm-logs"}
