"""Claude Code session transcripts (``~/.claude/projects/<dir>/<session>.jsonl``).

One JSON record per line; ``type`` says what it is.

- ``user`` and ``assistant`` records carry ``message.content``: a string or
  a list of blocks. ``text`` blocks are kept; ``image`` and ``document``
  blocks become ``[image]`` / ``[document]``; ``tool_use`` blocks become
  one summary line; ``tool_result`` blocks (in user records) become ``tool``
  messages named after the call they answer, long output shortened with a
  marker; ``thinking`` and ``redacted_thinking`` blocks are skipped and
  counted (the model's scratch work, not the session's facts).
- Consecutive assistant records of one API message (Claude Code writes one
  record per block, all with the same ``message.id``) are joined.
- Sidechain records (``isSidechain``: a sub-agent's own conversation) are
  kept as a conversation of their own, so a chunk never mixes them with the
  main thread.
- Meta user records (``isMeta``: harness notes such as command caveats) and
  compact summaries (``isCompactSummary``: a recap of turns that are in the
  file already) are skipped and counted.
- Every other record type (``summary``, ``system``,
  ``file-history-snapshot``, ``queue-operation``, and types newer versions
  add) is skipped and counted by type; unknown block types likewise.
- A line that is not JSON (a session file cut mid-write) is reported with its
  line number and skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from plugin_sdk.errors import TranscriptError
from plugin_sdk.transcripts.model import ImportReport, Message, Transcript
from plugin_sdk.transcripts.text import (
    DEFAULT_TOOL_OUTPUT_CHARS,
    placeholder,
    text_of,
    tool_call,
    tool_name,
    tool_output,
    tool_result,
)

FORMAT = "claude-code"
RECORD_TYPES = ("user", "assistant")


def read(path: Path, *, tool_output_chars: int = DEFAULT_TOOL_OUTPUT_CHARS) -> Transcript:
    """Import a Claude Code session file; see the module docstring."""
    report = ImportReport(FORMAT, str(path))
    try:
        lines = path.read_text("utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise TranscriptError(f"{path}: not UTF-8 text ({error.reason})") from error
    reader = _Reader(report, tool_output_chars)
    for number, line in enumerate(lines, 1):
        if line.strip():
            reader.line(number, line)
    messages = reader.messages
    report.messages = len(messages)
    report.conversations = len({m.conversation for m in messages})
    return Transcript(messages, report)


class _Reader:
    def __init__(self, report: ImportReport, limit: int) -> None:
        self.report = report
        self.limit = limit
        self.messages: list[Message] = []
        self.tool_names: dict[str, str] = {}
        self.last_message_id: str | None = None  # message.id of the last assistant message

    def line(self, number: int, line: str) -> None:
        where = f"line {number}"
        count = len(self.messages)
        last, last_id = (self.messages[-1] if count else None), self.last_message_id
        try:
            self.record(where, line)
        except Exception as error:  # a safety net: one odd record never stops an import
            del self.messages[count:]
            if last is not None:
                self.messages[-1] = last  # undo a join into the previous message
            self.last_message_id = last_id
            self.report.unreadable(where, error)

    def record(self, where: str, line: str) -> None:
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            self.report.problem(where, f"not valid JSON ({error.msg}, column {error.colno})")
            self.report.skip("malformed line")
            return
        if not isinstance(record, dict):
            self.report.problem(where, f"a JSON {type(record).__name__}, not a record object")
            self.report.skip("malformed line")
            return
        kind = record.get("type")
        if kind not in RECORD_TYPES:
            subtype = f" ({record['subtype']})" if isinstance(record.get("subtype"), str) else ""
            named = isinstance(kind, str) and kind
            self.report.skip(f"record type {kind!r}{subtype}" if named else "record without a type")
            return
        if record.get("isMeta"):
            self.report.skip("meta user record")
            return
        if record.get("isCompactSummary"):
            self.report.skip("compact summary (repeats earlier turns)")
            return
        message = record.get("message")
        if not isinstance(message, dict):
            self.report.problem(where, f"{kind} record without a message object")
            self.report.skip("malformed line")
            return
        session = record.get("sessionId")
        conversation = session if isinstance(session, str) else ""
        if record.get("isSidechain"):
            agent = record.get("agentId")
            conversation += (
                f" sidechain {agent}" if isinstance(agent, str) and agent else " sidechain"
            )
        context = (where, conversation, record.get("timestamp"))
        if kind == "assistant":
            self.assistant(message, context)
        else:
            self.user(message.get("content"), context)

    def user(self, content: Any, context: tuple[str, str, Any]) -> None:
        self.last_message_id = None
        blocks = self.blocks(content, context[0])
        if blocks is None:
            return
        if not blocks or all(b.get("type") == "text" and not b.get("text") for b in blocks):
            self.report.skip("empty user record")
            return
        pieces: list[str] = []
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                pieces.append(self.text(block, context[0]))
            elif kind == "tool_result":
                self.emit("user", "\n".join(p for p in pieces if p), context)
                pieces = []
                self.result(block, context)
            elif kind in ("image", "document"):
                pieces.append(self.media(block, kind))
            else:
                self.unknown(kind)
        self.emit("user", "\n".join(p for p in pieces if p), context)

    def assistant(self, message: dict[str, Any], context: tuple[str, str, Any]) -> None:
        blocks = self.blocks(message.get("content"), context[0])
        if blocks is None:
            return
        if not blocks:
            self.report.skip("empty assistant record")
            return
        pieces: list[str] = []
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                pieces.append(self.text(block, context[0]))
            elif kind in ("tool_use", "server_tool_use"):
                name = tool_name(block.get("name"))
                if isinstance(block.get("id"), str) and name:
                    self.tool_names[block["id"]] = name
                pieces.append(tool_call(name, block.get("input")))
            elif kind in ("thinking", "redacted_thinking"):
                self.report.skip(f"content block {kind!r}")
            else:
                self.unknown(kind)
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        text = "\n".join(piece for piece in pieces if piece)
        if not text.strip():
            if all(b.get("type") == "text" for b in blocks):
                self.report.skip("empty assistant record")
            return
        previous = self.messages[-1] if self.messages else None
        if (
            previous is not None
            and message_id
            and message_id == self.last_message_id
            and previous.role == "assistant"
            and previous.conversation == context[1]
        ):
            first = previous.source.split()[-1].split("-")[0]
            last = context[0].split()[-1]
            self.messages[-1] = Message(
                "assistant",
                f"{previous.text}\n{text}",
                f"lines {first}-{last}",
                previous.conversation,
                previous.timestamp,
            )
            return
        self.last_message_id = message_id
        self.emit("assistant", text, context)

    def result(self, block: dict[str, Any], context: tuple[str, str, Any]) -> None:
        where, conversation, timestamp = context
        name = self.tool_names.get(str(block.get("tool_use_id")))
        content = block.get("content")
        if isinstance(content, str):
            output = content
        elif content is None or isinstance(content, list):
            pieces = []
            for inner in _blocks(content):
                kind = inner.get("type")
                if kind == "text":
                    pieces.append(self.text(inner, where))
                elif kind in ("image", "document"):
                    pieces.append(self.media(inner, kind))
                else:
                    self.unknown(kind)
            output = "\n".join(p for p in pieces if p)
        else:
            self.report.problem(where, f"tool_result content is a {type(content).__name__}")
            self.report.skip("malformed tool result content")
            output = ""
        text = tool_result(
            name, tool_output(self.report, output, self.limit), error=bool(block.get("is_error"))
        )
        self.messages.append(Message("tool", text, where, conversation, _stamp(timestamp), name))

    def blocks(self, content: Any, where: str) -> list[dict[str, Any]] | None:
        """The content's blocks; ``None`` (reported) when it is neither text nor a list."""
        if content is None or isinstance(content, (str, list)):
            return _blocks(content)
        self.report.problem(where, f"message content is a {type(content).__name__}")
        self.report.skip("malformed content")
        return None

    def text(self, block: dict[str, Any], where: str) -> str:
        """A text block's text; null is no text, and any other non-string is reported."""
        text = text_of(block.get("text"))
        if text is None:
            self.report.problem(
                where, f"a text block whose text is a {type(block['text']).__name__}"
            )
            self.report.skip("malformed content block")
            return ""
        return text

    def media(self, block: dict[str, Any], kind: str) -> str:
        title = block.get("title")
        return placeholder(self.report, kind, title if isinstance(title, str) else None)

    def unknown(self, kind: Any) -> None:
        named = isinstance(kind, str) and kind
        self.report.skip(f"content block {kind!r}" if named else "content block without a type")

    def emit(self, role: str, text: str, context: tuple[str, str, Any]) -> None:
        if not text.strip():
            return
        where, conversation, timestamp = context
        self.messages.append(Message(role, text, where, conversation, _stamp(timestamp)))


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b if isinstance(b, dict) else {"type": None} for b in content]
    return []


def _stamp(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
