"""OpenAI-style chat messages in a JSON file.

Accepted shapes: a list of messages, or an object with a ``messages`` list
(a saved request body, an export), or with an ``input`` or ``output`` list (a
Responses-API request or response). A message is ``{"role", "content"}``
where content is a string, ``null``, or a list of parts. Responses-API items
without a role (tool calls, their outputs, reasoning) are read by
``openai_items.py``.

- ``user`` and ``assistant`` messages are kept; text parts (``text``,
  ``input_text``, ``output_text``) are joined; ``image_url`` and
  ``input_image`` become ``[image]``, ``input_audio`` ``[audio]``, ``file``
  ``[file: name]``; a ``refusal`` (part or field) is kept as ``[refusal] ...``;
  an assistant's ``audio`` reply is kept through its transcript.
- An assistant's ``tool_calls`` (and the legacy ``function_call``) become one
  summary line each.
- ``tool`` (and legacy ``function``) messages become ``tool`` messages named
  after the call they answer; long output is shortened with a marker.
- ``system`` and ``developer`` messages are skipped and counted: they are the
  host's instructions, not what happened in the session.
- Anything else (other roles, unknown part types, messages that are not
  objects, messages left empty) is skipped and counted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from plugin_sdk.errors import InvalidDocument, TranscriptError
from plugin_sdk.store.limits import loads_json
from plugin_sdk.transcripts.model import ImportReport, Message, Transcript
from plugin_sdk.transcripts.openai_items import read_item
from plugin_sdk.transcripts.text import (
    DEFAULT_TOOL_OUTPUT_CHARS,
    placeholder,
    tool_call,
    tool_name,
    tool_output,
    tool_result,
)

FORMAT = "openai"
MAX_FILE_BYTES = 256 * 1024 * 1024  # one JSON document holding the whole conversation
_TEXT_PARTS = ("text", "input_text", "output_text")
_LIST_KEYS = (
    "messages",
    "input",
    "output",
)  # a saved chat request; a Responses request or response


def read(path: Path, *, tool_output_chars: int = DEFAULT_TOOL_OUTPUT_CHARS) -> Transcript:
    """Import an OpenAI-style message list; see the module docstring."""
    report = ImportReport(FORMAT, str(path))
    try:
        data = loads_json(path.read_text("utf-8"), max_bytes=MAX_FILE_BYTES, numbers=False)
    except InvalidDocument as error:
        raise TranscriptError(f"{path}: refused: {error}") from error
    except UnicodeDecodeError as error:
        raise TranscriptError(f"{path}: not UTF-8 text ({error.reason})") from error
    except json.JSONDecodeError as error:
        raise TranscriptError(
            f"{path}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        ) from error
    except RecursionError as error:
        raise TranscriptError(f"{path}: JSON nested too deeply to read") from error
    return from_data(data, report, conversation=path.stem, tool_output_chars=tool_output_chars)


def from_data(
    data: Any,
    report: ImportReport,
    *,
    conversation: str = "",
    tool_output_chars: int = DEFAULT_TOOL_OUTPUT_CHARS,
) -> Transcript:
    """Import already-parsed JSON (a list of messages or ``{"messages": [...]}``)."""
    listed = _LIST_KEYS if isinstance(data, dict) else ()
    key = next((k for k in listed if isinstance(data.get(k), list)), None)
    if key is not None:
        if isinstance(data.get("id"), (str, int)) and str(data["id"]):
            conversation = str(data["id"])
        raw_messages = data[key]
    elif isinstance(data, list):
        raw_messages = data
    else:
        raise TranscriptError(
            f"{report.source}: expected a list of messages or an object with a "
            "'messages', 'input' or 'output' list"
        )
    reader = _Reader(report, conversation, tool_output_chars)
    messages: list[Message] = []
    for index, raw in enumerate(raw_messages):
        try:
            messages.extend(reader.message(index, raw))
        except Exception as error:  # a safety net: one odd record never stops an import
            report.unreadable(f"messages[{index}]", error)
    report.messages = len(messages)
    report.conversations = 1 if messages else 0
    return Transcript(messages, report)


class _Reader:
    def __init__(self, report: ImportReport, conversation: str, limit: int) -> None:
        self.report = report
        self.conversation = conversation
        self.limit = limit
        self.tool_names: dict[str, str] = {}

    def message(self, index: int, raw: Any) -> list[Message]:
        where = f"messages[{index}]"
        if not isinstance(raw, dict):
            self.report.problem(where, f"a {type(raw).__name__}, not a message object")
            self.report.skip("malformed message")
            return []
        role = raw.get("role")
        if role is None and isinstance(raw.get("type"), str) and raw["type"] != "message":
            return read_item(self, raw, where)  # a Responses-API item
        if role in ("system", "developer"):
            self.report.skip(f"{role} message")
            return []
        if role == "user":
            text = self.content(raw.get("content"), where)
            return self.make("user", text, where)
        if role == "assistant":
            return self.make("assistant", self.assistant(raw, where), where)
        if role in ("tool", "function"):
            call_id = raw.get("tool_call_id")
            name = tool_name(raw.get("name")) or self.tool_names.get(str(call_id))
            output = tool_output(self.report, self.content(raw.get("content"), where), self.limit)
            return self.make("tool", tool_result(name, output), where, tool=name)
        self.report.skip(f"role {role!r}" if isinstance(role, str) else "message without a role")
        return []

    def assistant(self, raw: dict[str, Any], where: str) -> str:
        pieces = [self.content(raw.get("content"), where)]
        if isinstance(raw.get("refusal"), str) and raw["refusal"].strip():
            pieces.append(f"[refusal] {raw['refusal']}")
        audio = raw.get("audio")
        if isinstance(audio, dict):
            transcript = audio.get("transcript")
            pieces.append(
                f"[audio] {transcript}"
                if isinstance(transcript, str) and transcript.strip()
                else placeholder(self.report, "audio")
            )
        calls = raw.get("tool_calls") or []
        if not isinstance(calls, list):
            self.report.problem(where, "tool_calls is not a list")
            calls = []
        legacy = raw.get("function_call")
        if isinstance(legacy, dict):
            calls = [*calls, {"type": "function", "function": legacy}]
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                self.report.skip("tool call without a function")
                continue
            name = tool_name(function.get("name"))
            if isinstance(call.get("id"), str) and name:
                self.tool_names[call["id"]] = name
            pieces.append(tool_call(name, function.get("arguments")))
        return "\n".join(piece for piece in pieces if piece)

    def content(self, content: Any, where: str) -> str:
        if content is None:
            return ""
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            self.report.problem(where, f"content is a {type(content).__name__}")
            self.report.skip("malformed content")
            return ""
        pieces = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
                pieces.append(part["text"])
            elif kind in ("image_url", "input_image"):
                pieces.append(placeholder(self.report, "image"))
            elif kind == "input_audio":
                pieces.append(placeholder(self.report, "audio"))
            elif kind in ("file", "input_file"):
                info = part.get("file") if isinstance(part.get("file"), dict) else part
                pieces.append(placeholder(self.report, "file", info.get("filename")))
            elif kind == "refusal" and isinstance(part.get("refusal"), str):
                pieces.append(f"[refusal] {part['refusal']}")
            elif isinstance(kind, str):
                self.report.skip(f"content part {kind!r}")
            else:
                self.report.problem(where, "a content part without a type")
                self.report.skip("malformed content part")
        return "\n".join(pieces)

    def make(self, role: str, text: str, where: str, tool: str | None = None) -> list[Message]:
        if not text.strip():
            self.report.skip(f"empty {role} message")
            return []
        return [Message(role, text, where, self.conversation, None, tool)]
