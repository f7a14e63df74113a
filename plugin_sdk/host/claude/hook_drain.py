"""``memsdk historian drain``: the historian on what hooks queued, one drain at a time per store.

The lock is an exclusive ``flock`` on ``<db>.drain.lock``, held for the whole
drain and let go by the system when the process ends however it ends, so a
killed drain never blocks the next. Each queued session is read through the
import ledger, which sends only what was not sent before and advances after
every chunk (so a drain killed mid-file sends only the rest); a row is marked
done only after the historian has read all of it. A model error stops the drain and
leaves the rest queued (the error recorded on the row and in ``hook_runs``);
the next SessionStart or SessionEnd starts a drain again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plugin_sdk.errors import MemsdkError
from plugin_sdk.host.claude.hook_queue import pending, record_run
from plugin_sdk.store.tables.queues import hooks

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

EVENT = "drain"


@contextmanager
def drain_lock(db: Path) -> Iterator[bool]:
    """Hold the store's drain lock: yields ``False`` when another drain holds it."""
    import fcntl

    with open(db.with_name(db.name + ".drain.lock"), "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def drain(store: Store) -> dict[str, Any]:
    """Run the historian on every queued session of the store's project, oldest first."""
    from plugin_sdk.host.claude.claude_hooks import run_historian_on

    conn = store.db.conn
    rows = pending(conn, store.project)
    report: dict[str, Any] = {"queued": len(rows), "done": 0, "summaries": [], "error": None}
    if rows and not store.plugins.hook.model_complete.get_hookimpls():
        report["error"] = "no model for the historian: the queue waits (install --model NAME)"
    seen: set[str] = set()
    for row in rows if report["error"] is None else []:
        queue_id, files = row[0], json.loads(row[1])
        transcript = files[0]["path"]
        try:
            if transcript not in seen and Path(transcript).is_file():
                result = run_historian_on(store, Path(transcript))
                if result.get("summary"):
                    report["summaries"].append(result["summary"])
            seen.add(transcript)
        except MemsdkError as error:
            report["error"] = str(error)
            hooks.mark_failed(conn, queue_id, str(error))
            break
        hooks.mark_done(conn, queue_id, "; ".join(report["summaries"][-1:]))
        report["done"] += 1
    record_run(conn, store.project, EVENT, report["error"])
    return report
