"""Retention: retained observations past the store's retention are pruned (``memsdk retain prune``).

The retention is a store setting (``observation_retention``), :data:`DEFAULT_DAYS`
when unset. A prune keeps what Compiled Truth and the conflicts need (the rule
is ``ObservationRows.prune``'s); queued, dark, failed, invalid and rejected
observations are never pruned. One transaction; the report counts what went.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from plugin_sdk.errors import MemsdkError

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store
    from plugin_sdk.store.tables.queues.observations import Pruned

DEFAULT_DAYS = 30


def keep_days(store: Store) -> int:
    """The store's retention in days (:data:`DEFAULT_DAYS` when unset)."""
    days = store.tables.observations.keep_days()
    return DEFAULT_DAYS if days is None else days


def set_keep_days(store: Store, days: int) -> None:
    """Set the store's retention in days (at least 1)."""
    if days < 1:
        raise MemsdkError(f"retention must be at least 1 day, not {days}")
    with store.atomic():
        store.tables.observations.set_keep_days(days, store.now())


def prune(store: Store, *, older_than: int | None = None, dry_run: bool = False) -> Pruned:
    """Prune the project's retained observations received more than ``older_than`` days ago
    (the store's retention when ``None``)."""
    days = keep_days(store) if older_than is None else older_than
    if days < 0:
        raise MemsdkError(f"--older-than must be 0 days or more, not {days}")
    now = store.now()
    before = (datetime.fromisoformat(now) - timedelta(days=days)).isoformat()
    with store.atomic():
        return store.tables.observations.prune(store.project, before, now, dry_run=dry_run)
