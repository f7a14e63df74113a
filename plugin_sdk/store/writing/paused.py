"""Memories written one at a time with the insert triggers paused, indexed once later.

For a caller that writes many memories one by one inside one transaction and
can say when the batch ends (the Retain Job: one memory per observation, each
inside the observation's savepoint). ``write_many`` (``bulk.py``) feeds the
full-text index and the table of contents' ranking rows (``toc_rank``) once
per batch; this module lets such a caller do the same:

1. :func:`pause` (a row in ``insert_triggers_paused``, migration ``m016``:
   the two per-row insert triggers of ``memories`` then leave their work);
2. :func:`upsert` each memory, with its **final status** (an update of the
   status right after the insert would fire the update trigger, which deletes
   a full-text row that is not there yet);
3. :func:`feed` the ids :func:`upsert` created as ``active``, and
   :func:`resume`, before anything else may write or change those memories
   (another writer's insert would not be indexed while paused).

Everything happens inside the caller's transaction: the paused row is never
seen by another connection, and a rollback takes it back with the rows.
The end state is that of ``Memories.write_here`` (then a status update for
a memory meant to be ``pending``): the same row, full-text rows and ``toc_rank``
rows. A repeat (the same key) is folded as every write is; the update
triggers that fold fires are not paused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from plugin_sdk.store.models import WriteResult
from plugin_sdk.store.normalize import normalized_hash
from plugin_sdk.store.search.when import utc_iso
from plugin_sdk.store.tables.memories.memories import memory_row
from plugin_sdk.store.writing.bulk import feed_ids
from plugin_sdk.store.writing.checks import check_content, check_importance

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

STATUSES = ("active", "pending")


def pause(store: Store) -> None:
    """Pause the insert triggers (inside the caller's transaction)."""
    store.tables.memories.pause_triggers()


def resume(store: Store) -> None:
    """Let the insert triggers run again."""
    store.tables.memories.resume_triggers()


def upsert(
    store: Store,
    kinds: Mapping[str, str],
    content: str,
    category: str,
    *,
    status: str = "active",
    importance: int = 50,
    source: str = "",
    occurred_at: str | datetime | None = None,
    token_count: int | None = None,
    forgotten: bool = True,
) -> WriteResult:
    """``Memories.write_here`` for the store's project with ``status`` for a new row.

    The caller has paused the insert triggers (:func:`pause`) and feeds the
    new row (:func:`feed`) when it was created ``active``. ``token_count``,
    when given, is the tokenizer's count of the stored (stripped) text.
    ``forgotten=False``: the caller has found no forgotten text in the
    project (:func:`any_forgotten`) since its transaction began, so the text
    is not looked up.
    """
    if category not in kinds:
        raise store.unknown_category(category)
    if status not in STATUSES:
        raise ValueError(f"a memory is written active or pending, not {status!r}")
    text = check_content(content)
    check_importance(importance)
    project = store.project
    digest = normalized_hash(text)
    if forgotten:
        store.memories.refuse_forgotten(project, digest)
    occurred = utc_iso(occurred_at)
    tokenizer = store.tokenizer
    row_id, seen, stored = store.tables.memories.upsert(
        memory_row(
            project,
            kinds[category],
            category,
            text,
            digest,
            status,
            int(importance),
            "project",
            0,
            source,
            None,
            tokenizer.count(text) if token_count is None else token_count,
            tokenizer.name,
            store.now(),
            occurred,
        )
    )
    return WriteResult(id=row_id, created=seen == 1, status=stored, seen_count=seen)


def any_forgotten(store: Store) -> bool:
    """Whether any text of the store's project is forgotten (and not undone)."""
    return store.tables.memories.any_forgotten(store.project)


def feed(store: Store, ids: Iterable[int]) -> None:
    """What the paused insert triggers would have done for these rows (once each)."""
    feed_ids(store, sorted(set(ids)))
