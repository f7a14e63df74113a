"""Plan an import of several transcript files: what each one has that is new.

:func:`plan` reads every file (each format detected on its own), asks the
ledger what was sent from it before, and keeps the messages to send now
(:mod:`select`). A file the user named that cannot be read is an error; one
found in a folder or by a glob is reported and left out, so one odd file does
not stop a batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import attrs

from plugin_sdk.errors import TranscriptError
from plugin_sdk.transcripts import load_transcript
from plugin_sdk.transcripts.ledger import Entry, Ledger
from plugin_sdk.transcripts.model import Message, Transcript
from plugin_sdk.transcripts.select import Mark, mark_of, new_messages, since, unchanged
from plugin_sdk.transcripts.sources import Source
from plugin_sdk.transcripts.text import DEFAULT_TOOL_OUTPUT_CHARS


@attrs.define
class FileImport:
    """One file of a batch: what it holds, and what of it is sent now."""

    source: Source
    state: str  # new | appended | changed | unchanged | unreadable
    transcript: Transcript | None = None  # None when unchanged (not parsed) or unreadable
    messages: list[Message] = attrs.field(factory=list)  # to send now
    mark: Mark | None = None  # the ledger mark to record once they are sent
    previous: Entry | None = None
    error: str = ""

    @property
    def empty(self) -> bool:
        """The file was read and gave no message at all (not: nothing new)."""
        return self.transcript is not None and not self.transcript.messages

    def to_dict(self) -> dict[str, object]:
        return {
            "path": str(self.source.path),
            "state": self.state,
            "import": self.transcript.report.to_dict() if self.transcript else None,
            "messages": len(self.messages),
            "already_sent": self.previous.messages if self.previous else 0,
            "error": self.error or None,
        }


def plan(
    sources: Sequence[Source],
    ledger: Ledger | None,
    *,
    format: str | None = None,
    tool_output_chars: int = DEFAULT_TOOL_OUTPUT_CHARS,
    since_moment: datetime | None = None,
) -> list[FileImport]:
    """What to send from each file; ``ledger=None`` sends everything (no ledger kept)."""
    out = []
    for source in sources:
        previous = ledger.get(source.path) if ledger is not None else None
        if previous is not None and unchanged(source.path, previous.mark):
            out.append(FileImport(source, "unchanged", previous=previous))
            continue
        try:
            transcript = load_transcript(source.path, format, tool_output_chars=tool_output_chars)
        except TranscriptError as error:
            if source.named:
                raise
            out.append(FileImport(source, "unreadable", error=str(error)))
            continue
        mark = previous.mark if previous else None
        messages, state = new_messages(source.path, transcript, mark)
        if since_moment is not None:
            messages = since(messages, since_moment, transcript.report)
        out.append(
            FileImport(
                source,
                state,
                transcript,
                messages,
                mark_of(source.path, transcript, mark),
                previous,
            )
        )
    return out
