"""Plan an import of several transcript files: what each one has that is new.

:func:`plan` reads every file (each format detected on its own), asks the
ledger what was sent from it before, and keeps the messages to send now
(see ``ledger.py``). A file the user named that cannot be read is an error; one
found in a folder or by a glob is reported and left out, so one odd file does
not stop a batch.

Which files a command line names (:func:`expand`): files, folders, globs, and Claude Code sub-agents.

``expand(["~/.claude/projects/-home-dana-src-app"])`` gives every transcript
file under the folder (``*.jsonl``, ``*.json``, ``*.db``), sub-agent files
included; a glob (``"~/.claude/projects/*/*.jsonl"``) is expanded here as
well as by the shell. A Claude Code session file named on its own brings its
sub-agents' files with it (``<session>/subagents/agent-*.jsonl``): they hold
the sub-agents' own conversations, which Claude Code does not copy into the
session file. Each file's format is detected on its own, so a folder may mix
formats.

Left out: Claude Code's sidecar files (``*.meta.json``) and the files of its
compaction agent (``agent-acompact-*.jsonl``: a recap of turns the session
file already holds).
"""

from __future__ import annotations

import glob
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

import attrs

from plugin_sdk.errors import TranscriptError
from plugin_sdk.transcripts import load_transcript
from plugin_sdk.transcripts.ledger import (
    Entry,
    Ledger,
    Mark,
    mark_of,
    new_messages,
    since,
    unchanged,
)
from plugin_sdk.transcripts.model import Message, Transcript
from plugin_sdk.transcripts.text import DEFAULT_TOOL_OUTPUT_CHARS

SUFFIXES = (".jsonl", ".json", ".db", ".sqlite")
_GLOB_CHARS = set("*?[")


@attrs.frozen
class Source:
    """A transcript file, and whether the user named it (not found in a folder or glob)."""

    path: Path
    named: bool


def expand(arguments: Iterable[str]) -> list[Source]:
    """The transcript files ``arguments`` name, in order, each once."""
    found: dict[Path, Source] = {}
    for argument in arguments:
        for source in _expand_one(argument):
            found.setdefault(source.path.resolve(), source)
    return list(found.values())


def _expand_one(argument: str) -> list[Source]:
    path = Path(argument).expanduser()
    if path.is_file():
        return [Source(path, True), *(Source(p, False) for p in subagent_files(path))]
    if path.is_dir():
        return [Source(p, False) for p in _folder(path)]
    if _GLOB_CHARS & set(argument):
        matches = sorted(glob.glob(str(path), recursive=True))
        out: list[Source] = []
        for match in map(Path, matches):
            if match.is_dir():
                out.extend(Source(p, False) for p in _folder(match))
            elif _wanted(match):
                out.append(Source(match, False))
                out.extend(Source(p, False) for p in subagent_files(match))
        if not out:
            raise TranscriptError(f"no transcript file matches {argument!r}")
        return out
    raise TranscriptError(f"no transcript file or folder {argument!r}")


def subagent_files(session: Path) -> list[Path]:
    """A Claude Code session's sub-agent files: ``<session>/subagents/agent-*.jsonl``."""
    if session.suffix != ".jsonl":
        return []
    folder = session.with_suffix("") / "subagents"
    return sorted(p for p in folder.glob("agent-*.jsonl") if _wanted(p))


def _folder(folder: Path) -> list[Path]:
    """Transcript files under ``folder``, each session followed by its sub-agents' files."""
    found = sorted(p for p in folder.rglob("*") if p.is_file() and _wanted(p))
    ordered: dict[Path, None] = {}
    for path in found:
        if path.parent.name != "subagents":
            ordered[path] = None
            ordered.update(dict.fromkeys(subagent_files(path)))
    ordered.update(dict.fromkeys(found))  # sub-agent files whose session is not here
    return list(ordered)


def _wanted(path: Path) -> bool:
    name = path.name
    if name.endswith(".meta.json") or name.startswith("agent-acompact-"):
        return False
    return path.suffix in SUFFIXES


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
