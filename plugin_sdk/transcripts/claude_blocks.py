"""Claude Code content blocks into messages: the part of the reader every record type shares.

A record's ``message.content`` is a string or a list of blocks. Text blocks
give text; ``image`` and ``document`` blocks give placeholders; a
``tool_result`` block gives a ``tool`` message named after the ``tool_use``
it answers, its output shortened with a marker; any other block type is
counted by name. ``claude_code.py`` decides which records are read and how
blocks join into user and assistant messages.
"""

from __future__ import annotations

from typing import Any

import attrs

from plugin_sdk.transcripts.claude_harness import strip_agent_lines
from plugin_sdk.transcripts.model import ImportReport, Message
from plugin_sdk.transcripts.text import placeholder, text_of, tool_output, tool_result


@attrs.frozen
class At:
    """Where a record is: for the messages made from it."""

    where: str
    conversation: str
    timestamp: str | None
    key: str
    end: int


class BlockReader:
    """Turns blocks into text and messages, counting what it does not keep."""

    def __init__(self, report: ImportReport, limit: int) -> None:
        self.report = report
        self.limit = limit
        self.messages: list[Message] = []
        self.tool_names: dict[str, str] = {}  # tool_use id -> tool name

    def result(self, block: dict[str, Any], at: At) -> None:
        name = self.tool_names.get(str(block.get("tool_use_id")))
        content = block.get("content")
        if isinstance(content, str):
            output = content
        elif content is None or isinstance(content, list):
            pieces = []
            for inner in content_blocks(content):
                kind = inner.get("type")
                if kind == "text":
                    pieces.append(self.text(inner, at.where))
                elif kind in ("image", "document"):
                    pieces.append(self.media(inner, kind))
                else:
                    self.unknown(kind)
            output = "\n".join(p for p in pieces if p)
        else:
            self.report.problem(at.where, f"tool_result content is a {type(content).__name__}")
            self.report.skip("malformed tool result content")
            output = ""
        output = strip_agent_lines(output, self.report)
        text = tool_result(
            name, tool_output(self.report, output, self.limit), error=bool(block.get("is_error"))
        )
        self.messages.append(
            Message("tool", text, at.where, at.conversation, at.timestamp, name, at.key, at.end)
        )

    def blocks(self, content: Any, where: str) -> list[dict[str, Any]] | None:
        """The content's blocks; ``None`` (reported) when it is neither text nor a list."""
        if content is None or isinstance(content, (str, list)):
            return content_blocks(content)
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

    def emit(self, role: str, text: str, at: At, *, explicit: bool = False) -> None:
        if not text.strip():
            return
        self.messages.append(
            Message(
                role,
                text,
                at.where,
                at.conversation,
                at.timestamp,
                key=at.key,
                position=at.end,
                explicit=explicit,
            )
        )


def content_blocks(content: Any) -> list[dict[str, Any]]:
    """A content value as a list of blocks: a string is one text block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b if isinstance(b, dict) else {"type": None} for b in content]
    return []


def stamp(value: Any) -> str | None:
    """A timestamp field: a non-empty string, else None."""
    return value if isinstance(value, str) and value else None
