"""The import ledger: per transcript file and project, how far the historian was fed.

One row of ``transcript_imports`` per (absolute path, project): the format,
the :class:`~plugin_sdk.transcripts.select.Mark` (bytes read, their hash, the
last message key overall and per conversation), how many messages were sent
over all runs, and when. ``memsdk historian run`` reads it before importing
a file and writes it once every chunk of the file has been through the
historian, so a run stopped by a model error sends that file's new messages
again next time (and the historian's deduplication folds repeats).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from plugin_sdk.transcripts.select import Mark

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


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
        row = self.store.db.execute(
            "SELECT format, offset_bytes, content_hash, last_key, cursors, messages, imported_at "
            "FROM transcript_imports WHERE path = ? AND project = ?",
            [_key(path), self.project],
        ).fetchone()
        if row is None:
            return None
        mark = Mark(row[1], row[2], row[3], json.loads(row[4]))
        return Entry(_key(path), self.project, row[0], mark, row[5], row[6])

    def record(self, path: Path, format: str, mark: Mark, sent: int) -> None:
        """Save how far ``path`` was imported; ``sent`` messages were sent this time."""
        with self.store.atomic():
            self.store.db.execute(
                """INSERT INTO transcript_imports (path, project, format, offset_bytes, last_key,
                       content_hash, cursors, messages, imported_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (path, project) DO UPDATE SET
                       format = excluded.format, offset_bytes = excluded.offset_bytes,
                       last_key = excluded.last_key, content_hash = excluded.content_hash,
                       cursors = excluded.cursors,
                       messages = transcript_imports.messages + excluded.messages,
                       imported_at = excluded.imported_at""",
                [
                    _key(path),
                    self.project,
                    format,
                    mark.offset,
                    mark.last_key,
                    mark.content_hash,
                    json.dumps(mark.cursors, sort_keys=True),
                    sent,
                    self.store.now(),
                ],
            )

    def entries(self) -> list[Entry]:
        """Every file imported into this project, most recent first."""
        rows = self.store.db.execute(
            "SELECT path FROM transcript_imports WHERE project = ? ORDER BY imported_at DESC",
            [self.project],
        ).fetchall()
        return [entry for (path,) in rows if (entry := self.get(Path(path))) is not None]


def _key(path: Path) -> str:
    return str(path.expanduser().resolve())
