"""The hook tables' owner (store/tables/queues/hooks.py) runs on a plain sqlite3 connection, lean."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from plugin_sdk.store.connection import Store
from plugin_sdk.store.tables.queues import hooks


def test_the_hook_path_imports_no_sqlite_utils() -> None:
    script = (
        "import json, sys\n"
        "import plugin_sdk.store.tables.queues.hooks, plugin_sdk.host.claude.hook_queue, plugin_sdk.host.claude.hook_entry\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'sqlite_utils')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert json.loads(result.stdout) == []


def test_queue_runs_and_notices_on_a_plain_connection(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    fresh = sqlite3.connect(tmp_path / "empty.db")
    assert not hooks.has_queue(fresh)
    fresh.close()
    Store(path, project="p").close()
    conn = sqlite3.connect(path)
    try:
        assert hooks.has_queue(conn)
        first = hooks.enqueue(conn, "p", "s1", "SessionEnd", json.dumps([{"path": "a"}]))
        second = hooks.enqueue(conn, "p", "s2", "PreCompact", "[]")
        hooks.enqueue(conn, "other", "s3", "SessionEnd", "[]")
        assert [row[0] for row in hooks.pending(conn, "p")] == [first, second]
        hooks.mark_failed(conn, first, "no model")
        assert hooks.queued_count(conn, "p") == 2
        hooks.mark_done(conn, first, "read 3 notes")
        assert [tuple(row) for row in hooks.pending(conn, "p")] == [(second, "[]", 0)]
        assert conn.execute(
            "SELECT attempts, last_error, summary FROM hook_queue WHERE id = ?", (first,)
        ).fetchone() == (2, "no model", "read 3 notes")
        hooks.record_run(conn, "p", "SessionEnd", None)
        hooks.record_run(conn, "p", "SessionEnd", "boom")
        hooks.record_run(conn, "p", "SessionEnd", None)
        [(event, runs, last, error, error_at)] = hooks.runs(conn, "p")
        assert (event, runs, error) == ("SessionEnd", 3, "boom")
        assert error_at is not None and last >= error_at
        assert hooks.runs(conn, "other") == []
        assert hooks.first_notice(conn, "s1", "p", "hello")
        assert not hooks.first_notice(conn, "s1", "p", "hello")
        assert hooks.first_notice(conn, "s2", "p", "hello")
    finally:
        conn.close()
