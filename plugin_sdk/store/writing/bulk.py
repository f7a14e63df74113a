"""``write_many``: a batch of memories in one transaction, a statement per table.

The batch ends in exactly the rows, seen counts and full-text matches that
writing its items one by one with ``Memories.write`` would leave (a property
test holds the two paths to that), but SQLite is asked once per table instead
of once per item:

1. Every item is checked in Python, in order (fields, category, text,
   importance, ``occurred_at``), and hashed for deduplication. The first bad
   item stops the check; the batch then raises for it, naming its position,
   unless an earlier item's text was forgotten (that item is named instead, as
   a one-by-one write would have stopped there first).
2. One ``SELECT`` per (project, category) and chunk of hashes finds the rows
   the batch repeats; one more finds forgotten texts.
3. Repeats fold in Python: the first item of a key wins, later ones add to
   its seen count; ``occurred_at`` is the first one given (the stored one
   first). Existing rows get one ``UPDATE`` each (``executemany``); new rows
   one ``INSERT`` each (``executemany``) with their final seen count; the
   full-text index and the table of contents' ranking rows (``toc_rank``)
   get one ``INSERT ... SELECT`` each for the whole batch, with the per-row
   insert triggers that would do it paused meanwhile (migration ``m016``).
4. Only new rows' texts are counted by the tokenizer (a repeat's count would
   be thrown away). One timestamp serves the whole call.
5. The new rows of a call of more than one share a ``batch`` label (the
   first id the batch takes; migration ``m022``): search's sequence context
   for memories written together without an ``occurred_at``.

New rows' ids: SQLite gives a row without an explicit id one more than the
largest id in the table, so under the write lock the batch's rows take the
ids right after the largest one before it. That is checked after the insert;
if it does not hold (the largest possible id is taken, and SQLite picks free
ids at random) the ids are looked up by key instead. On PostgreSQL the
insert is one statement that returns the ids it drew, in item order
(``store/postgres/memories.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from plugin_sdk.errors import ForgottenText, InvalidMemory, MemsdkError
from plugin_sdk.store.models import WriteResult
from plugin_sdk.store.normalize import normalized_hash
from plugin_sdk.store.search.when import utc_iso
from plugin_sdk.store.tables.memories.memories import Key, memory_row
from plugin_sdk.store.writing.checks import check_content, check_importance

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

#: Hashes per ``IN (...)`` list: far under SQLite's bound-variable limit
#: (999 before SQLite 3.32), with the project and category beside them.
CHUNK = 500


class Item:
    """One checked item of the batch."""

    __slots__ = (
        "category",
        "digest",
        "importance",
        "occurred",
        "position",
        "project",
        "scope",
        "shareable",
        "source",
        "text",
    )

    def __init__(self, position: int, project: str, category: str, text: str) -> None:
        self.position = position
        self.project = project
        self.category = category
        self.text = text
        self.digest = ""
        self.importance = 50
        self.scope = "project"
        self.shareable = 0
        self.source = ""
        self.occurred: str | None = None

    @property
    def key(self) -> Key:
        return (self.project, self.category, self.digest)


class Entry:
    """What the batch does to one key: a new row (``item``) or a fold into row ``id``."""

    __slots__ = ("added", "id", "item", "occurred", "seen", "status")

    def __init__(self, item: Item | None, row_id: int, seen: int, status: str) -> None:
        self.item = item  # the item that creates the row; None: the row exists
        self.id = row_id
        self.seen = seen
        self.status = status
        self.added = 0
        self.occurred: str | None = None


def write_many(
    store: Store, items: Iterable[Mapping[str, Any]], project: str | None
) -> list[WriteResult]:
    """Write ``items`` in one transaction (see the module docstring); nothing on error."""
    with store.atomic():
        kinds = store.tables.packs.active_kinds()
        checked, failure = check(store, kinds, items, project)
        refuse_forgotten(store, checked)
        if failure is not None:
            raise failure
        return apply(store, kinds, checked)


def check(
    store: Store,
    kinds: Mapping[str, str],
    items: Iterable[Mapping[str, Any]],
    project: str | None,
) -> tuple[list[Item], MemsdkError | None]:
    """The items checked and hashed, in order, up to the first bad one, and its error.

    An item whose only fault is its ``occurred_at`` is returned too (hashed):
    a one-by-one write checks the forgotten texts before that field.
    """
    checked: list[Item] = []
    default_project = store.project
    for position, raw in enumerate(items):
        where = f"item {position}"
        try:
            content = raw["content"]
            category = raw["category"]
            item_project = raw.get("project", project) or default_project
            importance = raw.get("importance", 50)
            scope = raw.get("scope", "project")
            shareable = raw.get("shareable", False)
            source = raw.get("source", "")
            occurred_at = raw.get("occurred_at")
        except KeyError as error:
            return checked, _caused(
                InvalidMemory(f"{where}: missing field {error.args[0]!r}"), error
            )
        if category not in kinds:
            return checked, store.unknown_category(category, where=where)
        try:
            text = check_content(content)
            check_importance(importance)
        except InvalidMemory as error:
            return checked, _caused(InvalidMemory(f"{where}: {error}"), error)
        item = Item(position, item_project, category, text)
        item.digest = normalized_hash(text)
        item.importance = int(importance)
        item.scope = scope
        item.shareable = int(bool(shareable))
        item.source = source
        try:
            item.occurred = utc_iso(occurred_at)
        except InvalidMemory as error:
            checked.append(item)  # its text may have been forgotten: that is checked first
            return checked, _caused(InvalidMemory(f"{where}: {error}"), error)
        checked.append(item)
    return checked, None


def _caused(error: MemsdkError, cause: BaseException) -> MemsdkError:
    error.__cause__ = cause
    return error


def refuse_forgotten(store: Store, items: Sequence[Item]) -> None:
    """Raise :class:`ForgottenText` for the first item whose text was forgotten in its project."""
    by_project: dict[str, set[str]] = {}
    for item in items:
        by_project.setdefault(item.project, set()).add(item.digest)
    forgotten = store.tables.memories.forgotten_ids(by_project, CHUNK)
    if not forgotten:
        return
    for item in items:
        memory_id = forgotten.get((item.project, item.digest))
        if memory_id is not None:
            raise ForgottenText(memory_id, f"item {item.position}")


def apply(store: Store, kinds: Mapping[str, str], items: Sequence[Item]) -> list[WriteResult]:
    """Fold repeats, insert new rows, feed the index; the results in item order."""
    rows = store.tables.memories
    existing = rows.by_keys((item.key for item in items), CHUNK)
    entries: dict[Key, Entry] = {}
    new: list[Entry] = []
    folds: list[Entry] = []
    planned: list[tuple[Entry, int, bool]] = []
    for item in items:
        key = item.key
        entry = entries.get(key)
        if entry is None:
            row = existing.get(key)
            if row is None:
                entry = Entry(item, 0, 0, "active")
                new.append(entry)
            else:
                entry = Entry(None, *row)
                folds.append(entry)
            entries[key] = entry
        entry.seen += 1
        entry.added += 1
        if entry.occurred is None:
            entry.occurred = item.occurred
        planned.append((entry, entry.seen, entry.item is item))

    now = store.now()
    if folds:
        rows.fold_many([(entry.added, now, entry.occurred, entry.id) for entry in folds])
    if new:
        insert(store, kinds, new, now)
    return [
        WriteResult(id=entry.id, created=created, status=entry.status, seen_count=seen)
        for entry, seen, created in planned
    ]


def insert(store: Store, kinds: Mapping[str, str], new: Sequence[Entry], now: str) -> None:
    """Insert the new rows and index them; sets each entry's ``id``."""
    memories = store.tables.memories
    count = store.tokenizer.count
    name = store.tokenizer.name
    before = memories.max_id()
    batch = memories.next_batch() if len(new) > 1 else None  # the label its rows share
    rows = []
    for entry in new:
        item = entry.item
        assert item is not None
        rows.append(
            memory_row(
                item.project,
                kinds[item.category],
                item.category,
                item.text,
                item.digest,
                "active",
                item.importance,
                item.scope,
                item.shareable,
                item.source,
                None,
                count(item.text),
                name,
                now,
                entry.occurred,
                entry.seen,
                batch,
            )
        )
    memories.pause_triggers()
    returned = memories.insert_many(rows)
    memories.resume_triggers()
    if returned is not None:  # PostgreSQL: the insert gave the ids back
        for entry in new:
            assert entry.item is not None
            entry.id = returned[entry.item.key]
        feed_ids(store, (entry.id for entry in new))
        return
    last, added = memories.ids_after(before)
    if added == len(new) and last == before + len(new):
        for offset, entry in enumerate(new, start=1):
            entry.id = before + offset
        store.tables.search.index_range(before + 1, last)
        store.tables.toc.rank_range(before + 1, last)
        return
    ids = memories.by_keys((entry.item.key for entry in new if entry.item is not None), CHUNK)
    for entry in new:
        assert entry.item is not None
        entry.id = ids[entry.item.key][0]
    feed_ids(store, (entry.id for entry in new))


def feed_ids(store: Store, ids: Iterable[int]) -> None:
    """What the paused insert triggers would have done for these new rows (each id once)."""
    ids_json = "[" + ",".join(str(int(i)) for i in ids) + "]"
    if ids_json == "[]":
        return
    store.tables.search.index_ids(ids_json)
    store.tables.toc.rank_ids(ids_json)
