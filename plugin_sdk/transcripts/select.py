"""Which imported messages to send: those not sent before, and not older than ``--since``.

A file imported before has a ledger entry (``ledger.py``): how far it was
read, a hash of what was read, the last message key of each conversation.
Rereading it:

- **unchanged** (same size, same hash): nothing to send, and the file need
  not be parsed at all (:func:`unchanged`);
- **appended** (the part read last time is still the file's beginning): a
  JSON Lines file sends the messages whose records end past the old offset;
  a JSON document, the messages after each conversation's last key;
- **changed** otherwise: each conversation sends the messages after its last
  key when that key is still there, else all of them again (the historian's
  deduplication folds what it already wrote).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import attrs

from plugin_sdk.transcripts.model import ImportReport, Message, Transcript


@attrs.frozen
class Mark:
    """How far a file was imported: what the ledger keeps per file."""

    offset: int  # bytes read (the end of the last record read), or the file's size
    content_hash: str  # SHA-256 of those bytes
    last_key: str  # the key of the file's last message ("" when none)
    cursors: dict[str, str]  # conversation -> key of its last message


def digest(path: Path, size: int) -> str:
    """SHA-256 of the first ``size`` bytes of ``path``."""
    hasher = hashlib.sha256()
    with path.open("rb") as handle:
        left = size
        while left > 0:
            block = handle.read(min(left, 1 << 20))
            if not block:
                break
            hasher.update(block)
            left -= len(block)
    return hasher.hexdigest()


def unchanged(path: Path, mark: Mark) -> bool:
    """Whether the file is exactly what was imported last time."""
    return path.stat().st_size == mark.offset and digest(path, mark.offset) == mark.content_hash


def mark_of(path: Path, transcript: Transcript, previous: Mark | None = None) -> Mark:
    """The ledger mark after importing ``transcript`` from ``path``."""
    offset = transcript.consumed if transcript.consumed >= 0 else path.stat().st_size
    cursors = dict(previous.cursors) if previous else {}
    for message in transcript.messages:
        cursors[message.conversation] = key_of(message)
    last = key_of(transcript.messages[-1]) if transcript.messages else ""
    return Mark(offset, digest(path, offset), last, cursors)


def new_messages(
    path: Path, transcript: Transcript, mark: Mark | None
) -> tuple[list[Message], str]:
    """The messages not sent before, and how the file stands: new, appended or changed."""
    messages = transcript.messages
    if mark is None:
        return list(messages), "new"
    size = path.stat().st_size
    appended = size >= mark.offset and digest(path, mark.offset) == mark.content_hash
    if appended and transcript.consumed >= 0:
        return [m for m in messages if m.position > mark.offset], "appended"
    return _after_cursors(messages, mark.cursors), "appended" if appended else "changed"


def since(messages: Sequence[Message], moment: datetime, report: ImportReport) -> list[Message]:
    """The messages from ``moment`` on; those without a timestamp are kept."""
    kept = []
    for message in messages:
        stamp = parse_time(message.timestamp)
        if stamp is not None and stamp < moment:
            report.skip("older than --since")
        else:
            kept.append(message)
    return kept


def parse_time(value: str | None) -> datetime | None:
    """An ISO 8601 timestamp as an aware datetime (UTC when it names no zone)."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def key_of(message: Message) -> str:
    """The message's key for the ledger: its record's id, else its source."""
    return message.key or message.source


def _after_cursors(messages: Sequence[Message], cursors: dict[str, str]) -> list[Message]:
    start: dict[str, int] = {}
    for index, message in enumerate(messages):
        if cursors.get(message.conversation) == key_of(message):
            start[message.conversation] = index + 1
    return [m for i, m in enumerate(messages) if i >= start.get(m.conversation, 0)]
