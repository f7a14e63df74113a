"""ChatGPT's data export: ``conversations.json`` (a list of conversations), or one conversation.

A conversation keeps its messages as a tree (``mapping``: node id -> ``{"message",
"parent", "children"}``): every regenerated answer and edited prompt is a
branch. The conversation as the user left it is the path from
``current_node`` up through ``parent`` to the root, read root first; the
other branches are counted, not read.

- A message's ``author.role`` is ``user``, ``assistant``, ``tool`` or
  ``system``. ``content.content_type`` says its shape: ``text`` and
  ``multimodal_text`` have ``parts`` (strings are kept; an image or other
  asset becomes a placeholder), ``code`` and ``execution_output`` have
  ``text``. ``thoughts`` and ``reasoning_recap`` (the model's reasoning) are
  skipped and counted, as are ``user_editable_context`` (custom
  instructions) and content types this reader does not know.
- An assistant message addressed to a tool (``recipient`` other than ``all``)
  is a tool call: one summary line. A ``tool`` message becomes a ``tool``
  message named after its author.
- ``system`` messages, and messages ChatGPT hides from the conversation
  (``metadata.is_visually_hidden_from_conversation``), are skipped and
  counted.

Each conversation is its own conversation (its ``id`` or ``conversation_id``);
a message's ``key`` is its node id, its timestamp its ``create_time``.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from plugin_sdk.errors import InvalidDocument, TranscriptError
from plugin_sdk.store.limits import loads_json
from plugin_sdk.transcripts.model import ImportReport, Message, Transcript
from plugin_sdk.transcripts.text import (
    DEFAULT_TOOL_OUTPUT_CHARS,
    placeholder,
    tool_call,
    tool_name,
    tool_output,
    tool_result,
)

FORMAT = "chatgpt-export"
MAX_FILE_BYTES = 1024 * 1024 * 1024  # an export holds every conversation of an account
_TEXT_TYPES = ("text", "multimodal_text", "code", "execution_output")
_SKIPPED_TYPES = {
    "thoughts": "reasoning",
    "reasoning_recap": "reasoning",
    "user_editable_context": "custom instructions",
}


def looks_like(data: Any) -> bool:
    """Whether parsed JSON is a ChatGPT export (a conversation, or a list of them)."""
    items = data if isinstance(data, list) else [data]
    return bool(items) and all(isinstance(c, dict) and "mapping" in c for c in items[:5])


def read(path: Path, *, tool_output_chars: int = DEFAULT_TOOL_OUTPUT_CHARS) -> Transcript:
    """Import a ChatGPT export file; see the module docstring."""
    report = ImportReport(FORMAT, str(path))
    try:
        data = loads_json(path.read_text("utf-8-sig"), max_bytes=MAX_FILE_BYTES, numbers=False)
    except (UnicodeDecodeError, json.JSONDecodeError, InvalidDocument) as error:
        raise TranscriptError(f"{path}: not a readable JSON file ({error})") from error
    conversations = data if isinstance(data, list) else [data]
    messages: list[Message] = []
    for index, conversation in enumerate(conversations):
        where = f"conversations[{index}]"
        if not isinstance(conversation, dict) or not isinstance(conversation.get("mapping"), dict):
            report.problem(where, "not a conversation with a 'mapping'")
            report.skip("malformed conversation")
            continue
        try:
            messages.extend(_conversation(conversation, where, report, tool_output_chars))
        except Exception as error:  # a safety net: one odd conversation never stops an import
            report.unreadable(where, error)
    report.messages = len(messages)
    report.conversations = len({m.conversation for m in messages})
    return Transcript(messages, report)


def _conversation(
    conversation: dict[str, Any], where: str, report: ImportReport, limit: int
) -> list[Message]:
    mapping: dict[str, Any] = conversation["mapping"]
    name = str(conversation.get("conversation_id") or conversation.get("id") or where)
    path = _current_path(mapping, conversation.get("current_node"), report, where)
    off_path = sum(1 for node in mapping.values() if isinstance(node, dict) and node.get("message"))
    off_path -= sum(1 for node_id in path if mapping[node_id].get("message"))
    if off_path > 0:
        report.skip("message on another branch (regenerated or edited)", off_path)
    out: list[Message] = []
    for node_id in path:
        message = mapping[node_id].get("message")
        if isinstance(message, dict):
            out.extend(_message(message, node_id, name, report, limit))
    return out


def _current_path(
    mapping: dict[str, Any], current: Any, report: ImportReport, where: str
) -> list[str]:
    """Node ids from the root down to ``current_node`` (else the last node in the mapping)."""
    if not isinstance(current, str) or current not in mapping:
        if current is not None:
            report.problem(where, f"current_node {current!r} is not in the mapping")
        current = next(reversed(mapping), None)
    path: list[str] = []
    while isinstance(current, str) and current in mapping and current not in path:
        path.append(current)
        node = mapping[current]
        current = node.get("parent") if isinstance(node, dict) else None
    return path[::-1]


def _message(
    message: dict[str, Any], node_id: str, conversation: str, report: ImportReport, limit: int
) -> list[Message]:
    author = _object(message.get("author"))
    role = author.get("role")
    metadata = _object(message.get("metadata"))
    if metadata.get("is_visually_hidden_from_conversation"):
        report.skip("hidden message")
        return []
    if role == "system":
        report.skip("system message")
        return []
    content = _object(message.get("content"))
    kind = content.get("content_type")
    if kind in _SKIPPED_TYPES:
        report.skip(_SKIPPED_TYPES[kind])
        return []
    if kind not in _TEXT_TYPES:
        report.skip(
            f"content type {kind!r}" if isinstance(kind, str) else "message without content"
        )
        return []
    text = _text(content, report)
    stamp = _stamp(message.get("create_time"))
    recipient = message.get("recipient")
    if role == "assistant" and isinstance(recipient, str) and recipient not in ("all", ""):
        text = tool_call(recipient, text)
    elif role == "tool":
        name = tool_name(author.get("name"))
        output = tool_result(name, tool_output(report, text, limit))
        return [Message("tool", output, f"node {node_id}", conversation, stamp, name, node_id)]
    elif role not in ("user", "assistant"):
        report.skip(f"role {role!r}" if isinstance(role, str) else "message without a role")
        return []
    if not text.strip():
        report.skip(f"empty {role} message")
        return []
    return [Message(role, text, f"node {node_id}", conversation, stamp, key=node_id)]


def _text(content: dict[str, Any], report: ImportReport) -> str:
    if isinstance(content.get("text"), str):
        return str(content["text"])
    pieces = []
    for part in content.get("parts") or []:
        if isinstance(part, str):
            pieces.append(part)
        elif isinstance(part, dict):
            asset = part.get("content_type")
            kind = "image" if isinstance(asset, str) and "image" in asset else "file"
            pieces.append(placeholder(report, kind, part.get("name")))
    return "\n".join(piece for piece in pieces if piece)


def _stamp(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        moment = datetime.fromtimestamp(value, timezone.utc)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return None


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
