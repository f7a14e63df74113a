"""Which transcript files a command line names: files, folders, globs, and Claude Code sub-agents.

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
from collections.abc import Iterable
from pathlib import Path

import attrs

from plugin_sdk.errors import TranscriptError

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
