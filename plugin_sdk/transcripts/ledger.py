"""The import ledger: per transcript file and project, how far the historian was fed.

One row of ``transcript_imports`` per (absolute path, project): the format,
the :class:`~plugin_sdk.transcripts.select.Mark` (bytes read, their hash, the
last message key overall and per conversation), how many messages were sent
over all runs, and when. ``memsdk historian run`` reads it before importing
a file and writes it once every chunk of the file has been through the
historian, so a run stopped by a model error sends that file's new messages
again next time (and the historian's deduplication folds repeats). The hooks'
drain (``memsdk historian drain``) records a :func:`partial_mark` after every
chunk instead, so a drain stopped mid-file sends only the chunks not sent.

Which messages to send: those not sent before, and not older than ``--since``.
A file imported before has a ledger entry: how far it was
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
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from plugin_sdk.transcripts.model import ImportReport, Message, Transcript

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


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


PARTIAL = "partial"  # the content_hash of a mark recorded mid-file: it matches no file


def partial_mark(previous: Mark | None, sent: Sequence[Message]) -> Mark:
    """The mark after the whole messages ``sent`` (in order) of a file, mid-way through it.

    Its hash matches nothing, so the next read takes each conversation's
    messages after its cursor (the last message sent of it), whatever the
    format: what was sent is never sent again.
    """
    cursors = dict(previous.cursors) if previous else {}
    for message in sent:
        cursors[message.conversation] = key_of(message)
    last = key_of(sent[-1]) if sent else (previous.last_key if previous else "")
    return Mark(previous.offset if previous else 0, PARTIAL, last, cursors)


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


@attrs.frozen
class Entry:
    """A ledger row."""

    path: str
    project: str
    format: str
    mark: Mark
    messages: int
    imported_at: str


class Ledger:
    """Read and write the import ledger of a store."""

    def __init__(self, store: Store, project: str | None = None) -> None:
        self.store = store
        self.project = project or store.project

    def get(self, path: Path) -> Entry | None:
        row = self.store.tables.sessions.import_entry(_key(path), self.project)
        if row is None:
            return None
        mark = Mark(row[1], row[2], row[3], json.loads(row[4]))
        return Entry(_key(path), self.project, row[0], mark, row[5], row[6])

    def record(self, path: Path, format: str, mark: Mark, sent: int) -> None:
        """Save how far ``path`` was imported; ``sent`` messages were sent this time."""
        with self.store.atomic():
            self.store.tables.sessions.record_import(
                _key(path),
                self.project,
                format,
                mark.offset,
                mark.last_key,
                mark.content_hash,
                json.dumps(mark.cursors, sort_keys=True),
                sent,
            )

    def entries(self) -> list[Entry]:
        """Every file imported into this project, most recent first."""
        paths = self.store.tables.sessions.imported_paths(self.project)
        return [entry for path in paths if (entry := self.get(Path(path))) is not None]


def _key(path: Path) -> str:
    return str(path.expanduser().resolve())
