"""What hooks leave for later, and what they record of their own runs (tables of m018).

A SessionEnd or PreCompact hook only records the files to read (:func:`enqueue`,
the session's transcript and its sub-agents' files with their sizes) and
starts ``memsdk historian drain`` detached (:func:`start_drain`); the drain
(:mod:`plugin_sdk.host.hook_drain`) runs the historian on them later. Work
stays queued until the historian has read it: a crash, a kill or a missing
model leaves it there, and the import ledger (``transcripts/ledger.py``) sends
only what was not sent before, so nothing is read twice.

Functions here take a plain :class:`sqlite3.Connection` (what the lean hook
entry point opens) or a store's ``db.conn``: no import of sqlite-utils.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

DRAIN_LOG = "drain.log"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


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
    files = json.dumps(session_files(transcript))
    with conn:
        cursor = conn.execute(
            "INSERT INTO hook_queue (project, session_id, event, files, queued_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (project, session, event, files, now()),
        )
    return int(cursor.lastrowid or 0)


def pending(conn: sqlite3.Connection, project: str) -> list[sqlite3.Row | tuple[Any, ...]]:
    """Queued rows of ``project`` not done yet, oldest first: (id, files, attempts)."""
    return conn.execute(
        "SELECT id, files, attempts FROM hook_queue WHERE project = ? AND done_at IS NULL "
        "ORDER BY id",
        (project,),
    ).fetchall()


def record_run(conn: sqlite3.Connection, project: str, event: str, error: str | None) -> None:
    """Note that ``event``'s hook ran for ``project`` (and its error, if it failed)."""
    at = now()
    with conn:
        conn.execute(
            "INSERT INTO hook_runs (project, event, runs, last_run_at, last_ok_at, last_error, "
            "last_error_at) VALUES (?, ?, 1, ?, ?, ?, ?) ON CONFLICT (project, event) DO UPDATE "
            "SET runs = runs + 1, last_run_at = excluded.last_run_at, "
            "last_ok_at = coalesce(excluded.last_ok_at, last_ok_at), "
            "last_error = coalesce(excluded.last_error, last_error), "
            "last_error_at = coalesce(excluded.last_error_at, last_error_at)",
            (project, event, at, None if error else at, error, at if error else None),
        )


def first_notice(conn: sqlite3.Connection, session: str, project: str, notice: str) -> bool:
    """Whether ``notice`` is new to ``session`` (it is then recorded: said once per session)."""
    with conn:
        cursor = conn.execute(
            "INSERT OR IGNORE INTO hook_notices (session_id, project, notice, at) "
            "VALUES (?, ?, ?, ?)",
            (session, project, notice, now()),
        )
    return cursor.rowcount == 1


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
