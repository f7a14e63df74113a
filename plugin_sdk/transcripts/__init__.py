"""Transcripts in common formats, imported as historian chunks.

::

    from plugin_sdk.transcripts import load_transcript, chunk_messages

    transcript = load_transcript("session.jsonl")          # format detected
    for chunk in chunk_messages(transcript.messages, store.tokenizer, budget=3000):
        run_historian(store, chunk.as_historian())
    print("\\n".join(transcript.report.lines()))           # what was skipped, and why

Formats (one module each): ``openai`` (a JSON list of chat messages or
Responses-API items, or an object with ``messages``, ``input`` or
``output``), ``chatgpt-export`` (ChatGPT's ``conversations.json``),
``claude-code`` (Claude Code session JSONL), ``llm-logs`` (the ``llm`` tool's
``logs.db``). Each importer turns records
into :class:`Message` objects and accounts in an :class:`ImportReport` for
everything it skipped, replaced or could not read; unknown record and part
types are counted, never fatal. Only a file that cannot be read as its format
at all raises :class:`TranscriptError`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from plugin_sdk.errors import TranscriptError
from plugin_sdk.store.limits import jsonl_lines
from plugin_sdk.transcripts import chatgpt_export, claude_code, llm_logs, openai_messages
from plugin_sdk.transcripts.chunker import (
    DEFAULT_BUDGET,
    MIN_BUDGET,
    Chunk,
    chunk_messages,
    render,
    split_text,
)
from plugin_sdk.transcripts.model import ImportReport, Message, Transcript
from plugin_sdk.transcripts.text import DEFAULT_TOOL_OUTPUT_CHARS

Reader = Callable[..., Transcript]

FORMATS: dict[str, Reader] = {
    openai_messages.FORMAT: openai_messages.read,
    chatgpt_export.FORMAT: chatgpt_export.read,
    claude_code.FORMAT: claude_code.read,
    llm_logs.FORMAT: llm_logs.read,
}

_SQLITE_MAGIC = b"SQLite format 3\x00"
_SNIFF_LINES = 200
_OPENAI_KEYS = {"messages", "input", "output"}
_CLAUDE_KEYS = {"sessionId", "parentUuid", "leafUuid"}
_CLAUDE_TYPES = {"user", "assistant", "summary", "system", "file-history-snapshot"}

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_TOOL_OUTPUT_CHARS",
    "FORMATS",
    "MIN_BUDGET",
    "Chunk",
    "ImportReport",
    "Message",
    "Transcript",
    "chunk_messages",
    "detect_format",
    "load_transcript",
    "render",
    "split_text",
]


def load_transcript(
    path: str | Path,
    format: str | None = None,
    *,
    tool_output_chars: int = DEFAULT_TOOL_OUTPUT_CHARS,
) -> Transcript:
    """Import a transcript file.

    :param format: one of :data:`FORMATS`; default: detected from the content.
    :param tool_output_chars: keep at most this many characters of each tool
        output (0 keeps all); a cut output ends with a marker and is counted.
    """
    path = Path(path)
    if not path.is_file():
        raise TranscriptError(f"no transcript file {str(path)!r}")
    name = format or detect_format(path)
    if name not in FORMATS:
        raise TranscriptError(f"unknown transcript format {name!r}; known: {', '.join(FORMATS)}")
    return FORMATS[name](path, tool_output_chars=tool_output_chars)


def detect_format(path: str | Path) -> str:
    """Tell the format from the file's content; raise :class:`TranscriptError` if unsure."""
    path = Path(path)
    with path.open("rb") as handle:
        head = handle.read(len(_SQLITE_MAGIC))
    if head == _SQLITE_MAGIC:
        return llm_logs.FORMAT
    try:
        text = path.read_text("utf-8-sig")
    except UnicodeDecodeError as error:
        raise TranscriptError(f"{path}: neither text nor a SQLite database") from error
    try:
        data = json.loads(text)
    except (RecursionError, ValueError):  # not JSON, too deep, an integer too long
        data = None
    else:
        if chatgpt_export.looks_like(data):
            return chatgpt_export.FORMAT
        if isinstance(data, list) or (isinstance(data, dict) and _OPENAI_KEYS & data.keys()):
            return openai_messages.FORMAT
    for line in jsonl_lines(text)[:_SNIFF_LINES]:
        try:
            record = json.loads(line)
        except (RecursionError, ValueError):
            continue
        if isinstance(record, dict) and (
            _CLAUDE_KEYS & record.keys() or record.get("type") in _CLAUDE_TYPES
        ):
            return claude_code.FORMAT
    raise TranscriptError(
        f"{path}: cannot tell the transcript format; pass one of: {', '.join(FORMATS)}"
    )
