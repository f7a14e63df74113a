"""Claude Code session transcripts (``~/.claude/projects/<dir>/<session>.jsonl``).

One JSON record per line; ``type`` says what it is. Sub-agents write their
own files beside the session (``<session>/subagents/agent-*.jsonl``), in the
same shape; ``batch.py`` finds them.

- Only the conversation as it stands is read: the records on the chain that
  ends at the last record (``parentUuid``; see ``claude_chain.py``). Turns
  abandoned by a rewind are skipped and counted.
- ``user`` and ``assistant`` records carry ``message.content``: a string or
  a list of blocks. ``text`` blocks are kept; ``image`` and ``document``
  blocks become ``[image]`` / ``[document]``; ``tool_use`` blocks become
  one summary line; ``tool_result`` blocks (in user records) become ``tool``
  messages named after the call they answer, long output shortened with a
  marker; ``thinking`` and ``redacted_thinking`` blocks are skipped and
  counted (the model's scratch work, not the session's facts).
- The harness's own text in user records (slash commands, local command
  output, system reminders, interruption notices) is summarised or removed
  and counted; ``<user-memory-input>`` (the user's ``#`` "remember this")
  is kept and marks the message explicit (see ``claude_harness.py``).
  Assistant records Claude Code wrote itself ("API Error: ...") are skipped.
- Messages the user typed while the agent was busy (``queue-operation``
  ``enqueue`` records, and ``queued_command`` attachments) are kept as user
  messages, unless Claude Code recorded the same text as a user record later.
  One a ``remove`` record takes off the queue was never sent: it is still
  what the user asked, so it is kept (counted as ``queued message never
  sent``), from the ``remove`` record's own text when no ``enqueue`` held it.
- Shell mode (``<bash-input>`` then ``<bash-stdout>``/``<bash-stderr>``)
  becomes one ``[shell] $ cmd → output`` line; a sub-agent's harness lines
  in tool results (``agentId: ... (use SendMessage ...)``) are stripped and
  counted (``claude_harness.py``).
- Consecutive assistant records of one API message (Claude Code writes one
  record per block, all with the same ``message.id``) are joined.
- Sidechain records (``isSidechain``: a sub-agent's own conversation) are
  kept as a conversation of their own, so a chunk never mixes them with the
  main thread.
- Meta user records (``isMeta``: harness notes such as command caveats) and
  compact summaries (``isCompactSummary``: a recap of turns that are in the
  file already) are skipped and counted.
- Every other record type (``summary``, ``system``,
  ``file-history-snapshot``, other queue operations, ``attachment`` and
  types newer versions add) is skipped and counted by type; unknown block
  types likewise.
- A line that is not JSON (a session file cut mid-write) is reported with its
  line number and skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from plugin_sdk.errors import InvalidDocument, TranscriptError
from plugin_sdk.store.limits import loads_json
from plugin_sdk.transcripts.claude_blocks import At, BlockReader, stamp
from plugin_sdk.transcripts.claude_chain import kept_records
from plugin_sdk.transcripts.claude_harness import SHELL, clean, is_synthetic
from plugin_sdk.transcripts.model import ImportReport, Message, Transcript
from plugin_sdk.transcripts.text import DEFAULT_TOOL_OUTPUT_CHARS, tool_call, tool_name

FORMAT = "claude-code"
RECORD_TYPES = ("user", "assistant")


def read(path: Path, *, tool_output_chars: int = DEFAULT_TOOL_OUTPUT_CHARS) -> Transcript:
    """Import a Claude Code session file; see the module docstring."""
    report = ImportReport(FORMAT, str(path))
    raw = path.read_bytes()
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TranscriptError(f"{path}: not UTF-8 text ({error.reason})") from error
    lines = _lines(raw)
    records = [_parse(report, number, text) for number, _, text in lines]
    kept = kept_records(records, report)
    reader = _Reader(report, tool_output_chars)
    consumed = 0
    for at, (number, end, _) in enumerate(lines):
        record = records[at]
        if record is None:
            continue
        consumed = end
        if kept is not None and at not in kept and record.get("type") in RECORD_TYPES:
            report.skip("record on an abandoned branch (rewound)")
            continue
        reader.line(number, end, record)
    messages = reader.finish()
    report.messages = len(messages)
    report.conversations = len({m.conversation for m in messages})
    return Transcript(messages, report, consumed)


def _lines(raw: bytes) -> list[tuple[int, int, str]]:
    """``(line number, byte offset past the line, text)`` of each non-blank line."""
    out, start = [], 0
    for number, line in enumerate(raw.split(b"\n"), 1):
        end = start + len(line) + 1
        if line.strip():
            out.append((number, min(end, len(raw)), line.decode("utf-8")))
        start = end
    return out


def _parse(report: ImportReport, number: int, line: str) -> dict[str, Any] | None:
    where = f"line {number}"
    try:
        record = loads_json(line, numbers=False)
    except json.JSONDecodeError as error:
        report.problem(where, f"not valid JSON ({error.msg}, column {error.colno})")
        report.skip("malformed line")
        return None
    except InvalidDocument as error:  # too large, too deep, a lone surrogate
        report.problem(where, f"refused: {error}")
        report.skip("malformed line")
        return None
    if not isinstance(record, dict):
        report.problem(where, f"a JSON {type(record).__name__}, not a record object")
        report.skip("malformed line")
        return None
    return record


class _Reader(BlockReader):
    def __init__(self, report: ImportReport, limit: int) -> None:
        super().__init__(report, limit)
        self.last_message_id: str | None = None  # message.id of the last assistant message
        self.queued: list[int] = []  # indexes of messages the user typed while the agent was busy
        self.unsent: set[int] = set()  # of those, the ones taken off the queue unsent

    def line(self, number: int, end: int, record: dict[str, Any]) -> None:
        where = f"line {number}"
        count = len(self.messages)
        last, last_id = (self.messages[-1] if count else None), self.last_message_id
        try:
            self.record(where, end, record)
        except Exception as error:  # a safety net: one odd record never stops an import
            del self.messages[count:]
            self.queued = [q for q in self.queued if q < count]
            self.unsent = {q for q in self.unsent if q < count}
            if last is not None:
                self.messages[-1] = last  # undo a join into the previous message
            self.last_message_id = last_id
            self.report.unreadable(where, error)

    def record(self, where: str, end: int, record: dict[str, Any]) -> None:
        kind = record.get("type")
        key = record["uuid"] if isinstance(record.get("uuid"), str) else ""
        at = At(where, _conversation(record), stamp(record.get("timestamp")), key, end)
        if kind == "queue-operation":
            self.queue_operation(record, at)
            return
        if kind == "attachment":
            self.attachment(record, at)
            return
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
        if kind == "assistant":
            if is_synthetic(record, message):
                self.report.skip("API error message (written by Claude Code)")
                return
            self.assistant(message, at)
        else:
            self.user(message.get("content"), at)

    def queue_operation(self, record: dict[str, Any], at: At) -> None:
        operation = record.get("operation")
        content = _queued_text(record.get("content"))
        if operation == "enqueue" and content.strip():
            self.steering(content, at)
        elif operation == "remove":
            self.removed(content, at)
        else:
            named = isinstance(operation, str) and operation
            self.report.skip(f"queue operation {operation!r}" if named else "queue operation")

    def removed(self, content: str, at: At) -> None:
        """A queued message taken off the queue unsent: it stays the user's text, counted.

        The ``remove`` record names its text (or, without one, the oldest
        message still queued); a text never enqueued is kept from it.
        """
        pending = [q for q in self.queued if q not in self.unsent]
        text = clean(content, self.report).text if content.strip() else ""
        match = next((q for q in pending if self.messages[q].text == text), None)
        if match is None and not text and pending:
            match = pending[0]
        if match is None and text:
            self.steering(content, at)
            match = self.queued[-1] if self.queued else None
        if match is None:
            self.report.skip("queue operation 'remove' (nothing queued)")
            return
        self.unsent.add(match)
        self.report.placeholders["queued message never sent"] += 1

    def attachment(self, record: dict[str, Any], at: At) -> None:
        attachment = record.get("attachment")
        kind = attachment.get("type") if isinstance(attachment, dict) else None
        if kind == "queued_command" and isinstance(attachment, dict):
            prompt = attachment.get("prompt")
            if isinstance(prompt, str) and prompt.strip():
                self.steering(prompt, at)
                return
        named = isinstance(kind, str) and kind
        self.report.skip(f"attachment {kind!r}" if named else "attachment")

    def steering(self, text: str, at: At) -> None:
        """A message the user typed while the agent was at work."""
        self.last_message_id = None
        cleaned = clean(text, self.report)
        if not cleaned.text:
            return
        self.queued.append(len(self.messages))
        self.emit("user", cleaned.text, at, explicit=cleaned.explicit)

    def finish(self) -> list[Message]:
        """The messages, without steering messages Claude Code also wrote as user records."""
        drop: set[int] = set()
        for index in self.queued:
            queued = self.messages[index]
            seen_before = any(
                q < index and q not in drop and _same(self.messages[q], queued) for q in self.queued
            )
            later = any(
                _same(m, queued) and i not in self.queued
                for i, m in enumerate(self.messages[index + 1 :], index + 1)
            )
            if seen_before or later:
                drop.add(index)
                self.report.skip("queued message (recorded again)")
        return [m for i, m in enumerate(self.messages) if i not in drop]

    def user(self, content: Any, at: At) -> None:
        self.last_message_id = None
        blocks = self.blocks(content, at.where)
        if blocks is None:
            return
        if not blocks or all(b.get("type") == "text" and not b.get("text") for b in blocks):
            self.report.skip("empty user record")
            return
        pieces: list[str] = []
        explicit = False
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                cleaned = clean(self.text(block, at.where), self.report)
                if cleaned.shell_output and not pieces and self.join_shell(cleaned.text, at):
                    continue
                pieces.append(cleaned.text)
                explicit = explicit or cleaned.explicit
            elif kind == "tool_result":
                self.emit("user", "\n".join(p for p in pieces if p), at, explicit=explicit)
                pieces, explicit = [], False
                self.result(block, at)
            elif kind in ("image", "document"):
                pieces.append(self.media(block, kind))
            else:
                self.unknown(kind)
        self.emit("user", "\n".join(p for p in pieces if p), at, explicit=explicit)

    def join_shell(self, output: str, at: At) -> bool:
        """Join a shell command's output to the ``[shell] $ cmd`` line just before it."""
        previous = self.messages[-1] if self.messages else None
        if (
            previous is None
            or previous.role != "user"
            or previous.conversation != at.conversation
            or not previous.text.startswith(f"{SHELL} $ ")
            or "\n" in previous.text
            or " → " in previous.text
        ):
            return False
        self.messages[-1] = attrs.evolve(
            previous,
            text=previous.text + output[len(SHELL) :],
            key=at.key or previous.key,
            position=at.end,
        )
        self.report.skip("shell output record (joined to its command)")
        return True

    def assistant(self, message: dict[str, Any], at: At) -> None:
        blocks = self.blocks(message.get("content"), at.where)
        if blocks is None:
            return
        if not blocks:
            self.report.skip("empty assistant record")
            return
        pieces: list[str] = []
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                pieces.append(self.text(block, at.where))
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
            and previous.conversation == at.conversation
        ):
            first = previous.source.split()[-1].split("-")[0]
            last = at.where.split()[-1]
            self.messages[-1] = attrs.evolve(
                previous,
                text=f"{previous.text}\n{text}",
                source=f"lines {first}-{last}",
                key=at.key or previous.key,
                position=at.end,
            )
            return
        self.last_message_id = message_id
        self.emit("assistant", text, at)


def _queued_text(content: Any) -> str:
    """The text of a queue operation's ``content``: a string, or text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b if isinstance(b, str) else str(b.get("text") or "")
            for b in content
            if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
        )
    return ""


def _conversation(record: dict[str, Any]) -> str:
    session = record.get("sessionId")
    conversation = session if isinstance(session, str) else ""
    if record.get("isSidechain"):
        agent = record.get("agentId")
        conversation += f" sidechain {agent}" if isinstance(agent, str) and agent else " sidechain"
    return conversation


def _same(a: Message, b: Message) -> bool:
    return a.role == b.role and a.conversation == b.conversation and a.text == b.text
