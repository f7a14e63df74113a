"""What hooks leave for later, and what they record of their own runs (tables of m018).

A SessionEnd or PreCompact hook only records the files to read (:func:`enqueue`,
the session's transcript and its sub-agents' files with their sizes) and
starts ``memsdk historian drain`` detached (:func:`start_drain`); the drain
(:mod:`plugin_sdk.host.claude.hook_drain`) runs the historian on them later. Work
stays queued until the historian has read it: a crash, a kill or a missing
model leaves it there, and the import ledger (``transcripts/ledger.py``) sends
only what was not sent before, so nothing is read twice.

Functions here take a plain :class:`sqlite3.Connection` (what the lean hook
entry point opens) or a store's ``db.conn``: no import of sqlite-utils. The
statements are the owner's, ``store/tables/queues/hooks.py`` (re-exported here).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from plugin_sdk.store.tables.queues import hooks
from plugin_sdk.store.tables.queues.hooks import first_notice, now, pending, record_run

__all__ = [
    "enqueue",
    "first_notice",
    "now",
    "pending",
    "record_run",
    "session_files",
    "start_drain",
]

DRAIN_LOG = "drain.log"


def session_files(transcript: Path) -> list[dict[str, Any]]:
    """The transcript and its sub-agents' files (one folder, not a walk), with their sizes."""
    files = [transcript]
    folder = transcript.with_suffix("") / "subagents"
    if transcript.suffix == ".jsonl" and folder.is_dir():
        files += sorted(p for p in folder.glob("agent-*.jsonl") if p.is_file())
    return [{"path": str(p.resolve()), "size": p.stat().st_size} for p in files]


def enqueue(
    conn: sqlite3.Connection, project: str, session: str, event: str, transcript: Path
) -> int:
    """Queue ``transcript`` (and its sub-agents' files) for the historian; the row's id."""
    return hooks.enqueue(conn, project, session, event, json.dumps(session_files(transcript)))


def drain_command(db: Path, project: str, model: str | None) -> list[str]:
    """How to run ``memsdk historian drain`` for this store and project."""
    script = Path(sys.executable).with_name("memsdk")
    base = [str(script)] if script.exists() else [sys.executable, "-m", "plugin_sdk.cli"]
    command = [*base, "historian", "drain", "--db", str(db), "--project", project]
    return command + (["--model", model] if model else [])


def start_drain(db: Path, project: str, model: str | None) -> None:
    """Start the drain detached (its own session; its output appended to ``drain.log``)."""
    log = db.with_name(db.name + "." + DRAIN_LOG)
    with open(log, "ab") as out:
        subprocess.Popen(
            drain_command(db, project, model),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
            env={k: v for k, v in os.environ.items() if k != "MEMSDK_DB"},
        )
