"""Record what a piece of store code changes, so it can be undone exactly.

``with record(store) as changes:`` (inside a transaction) puts temporary
triggers on the store's tables for the duration of the block: every row the
block inserts, updates or deletes is logged with its state before the first
change. When the block ends, ``changes`` holds one :class:`RowChange` per
touched row (its state before and after). :func:`revert` puts those rows back
as they were, after checking that none of them changed since; it refuses
otherwise, and writes nothing.

The statements (the temporary triggers, the log, reading and writing rows
back) are the proposals owner's (``store/tables/queues/undo_log.py``); the queue's own
tables, the dreamer's state, the migrations record and full-text shadow
tables are not recorded (the full-text index follows ``memories`` through its
own triggers). Reads are bookkeeping, not content: ``VOLATILE`` columns
(retrieval counts) are ignored when checking and kept as they are.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import UndoRefused
from plugin_sdk.store import driver
from plugin_sdk.store.tables.queues.undo_log import VOLATILE, Table

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


@attrs.frozen
class RowChange:
    """One row as it was before the first change and as it was at the end (None: absent)."""

    table: str
    key: list[Any]
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "key": self.key,
            "before": _encode(self.before),
            "after": _encode(self.after),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RowChange:
        return cls(data["table"], data["key"], _decode(data["before"]), _decode(data["after"]))


def tables(store: Store) -> list[Table]:
    """The tables a recording covers."""
    return store.tables.proposals.undo.tables()


@contextmanager
def record(store: Store) -> Iterator[list[RowChange]]:
    """Record the block's row changes (call inside a transaction); see the module docstring."""
    log = store.tables.proposals.undo
    covered = log.tables()
    changes: list[RowChange] = []
    log.start(covered)
    try:
        yield changes
        changes.extend(RowChange(*touched) for touched in log.collect(covered))
    finally:
        log.stop(len(covered))


def revert(store: Store, changes: list[RowChange]) -> None:
    """Put every recorded row back as it was before (call inside a transaction)."""
    log = store.tables.proposals.undo
    by_name = {table.name: table for table in log.tables()}
    moved = []
    for change in changes:
        table = by_name.get(change.table)
        if table is None:
            raise UndoRefused(f"table {change.table} is gone; nothing was undone")
        if _stable(log.read(table, change.key)) != _stable(change.after):
            moved.append(f"{change.table} row {_show(change.key)}")
    if moved:
        listing = ", ".join(moved[:5]) + (f" and {len(moved) - 5} more" if len(moved) > 5 else "")
        raise UndoRefused(f"changed since: {listing}; undoing would lose those changes")
    try:
        with log.deferred_checks(sorted({change.table for change in changes})):
            for change in reversed(changes):
                log.restore(by_name[change.table], change.key, change.before)
    except driver.IntegrityError as error:
        raise UndoRefused(f"the store refuses the old rows: {error}") from error


def _stable(row: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else {k: v for k, v in row.items() if k not in VOLATILE}


def _encode(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {k: {"$blob": v.hex()} if isinstance(v, bytes) else v for k, v in row.items()}


def _decode(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {
        k: bytes.fromhex(v["$blob"]) if isinstance(v, dict) and "$blob" in v else v
        for k, v in row.items()
    }


def _show(key: list[Any]) -> str:
    return str(key[0]) if len(key) == 1 else str(tuple(key))
