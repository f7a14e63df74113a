"""A connection's settings for a long run, and the marks of what changed on a store.

The Retain Job raises the page cache and the WAL checkpoint interval while it
runs (``retain/job.py`` says why) and puts the connection's own values back
after: :func:`at_least`. Between batches it asks whether anyone wrote since
the last one: :func:`change_marks`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.locking import StoreDatabase


@contextmanager
def at_least(db: StoreDatabase, *, cache_kib: int, checkpoint_pages: int) -> Iterator[None]:
    """Within the block, a page cache of ``cache_kib`` KiB and a WAL checkpoint every
    ``checkpoint_pages`` pages at least (values already higher, or checkpoints that are
    off, are left); the connection's own values again after. SQLite's settings: on
    PostgreSQL the server keeps its own cache and log, and nothing changes."""
    if getattr(db, "engine", "sqlite") != "sqlite":
        yield
        return
    conn = db.conn
    (cache,) = conn.execute("PRAGMA cache_size").fetchone()
    (checkpoint,) = conn.execute("PRAGMA wal_autocheckpoint").fetchone()
    (page,) = conn.execute("PRAGMA page_size").fetchone()
    kib = -cache if cache < 0 else cache * page // 1024  # negative: KiB; positive: pages
    if kib < cache_kib:
        conn.execute(f"PRAGMA cache_size = {-int(cache_kib)}")
    if 0 < checkpoint < checkpoint_pages:  # 0 or less: checkpoints are off, left so
        conn.execute(f"PRAGMA wal_autocheckpoint = {int(checkpoint_pages)}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA cache_size = {int(cache)}")
        conn.execute(f"PRAGMA wal_autocheckpoint = {int(checkpoint)}")


def change_marks(db: StoreDatabase) -> tuple[int, int]:
    """``(PRAGMA data_version, total_changes)``: the first moves when another connection
    commits, the second when anything on this one writes. PostgreSQL has no cheap
    counter of others' commits: marks that never repeat, so a batch never keeps the
    previous one's caches on trust there."""
    if getattr(db, "engine", "sqlite") != "sqlite":
        return time.monotonic_ns(), id(db)
    conn = db.conn
    (version,) = conn.execute("PRAGMA data_version").fetchone()
    return int(version), conn.total_changes
