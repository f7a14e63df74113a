"""Record what a piece of store code changes, so it can be undone exactly.

``with record(store) as changes:`` (inside a transaction) puts temporary
triggers on the store's tables for the duration of the block: every row the
block inserts, updates or deletes is logged with its state before the first
change. When the block ends, ``changes`` holds one :class:`RowChange` per
touched row (its state before and after). :func:`revert` puts those rows back
as they were, after checking that none of them changed since; it refuses
otherwise, and writes nothing.

The triggers are temporary and belong to this connection only; the queue's own
tables, the dreamer's state, the migrations record and full-text shadow
tables are not recorded (the full-text index follows ``memories`` through its
own triggers). Reads are bookkeeping, not content: :data:`VOLATILE` columns
(retrieval counts) are ignored when checking and kept as they are.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import UndoRefused
from plugin_sdk.store import driver

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

NOT_RECORDED = frozenset({"proposals", "proposal_events", "proposal_applications", "dreamer_state"})
VOLATILE = frozenset({"retrieval_count", "last_retrieved_at"})
_LOG = "memsdk_undo_log"


@attrs.frozen
class Table:
    name: str
    columns: list[str]
    key: list[str]  # ["rowid"], or the primary key of a WITHOUT ROWID table
    explicit_rowid: bool  # a rowid table whose rowid is no column of its own


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
    rows = store.db.execute("SELECT name, sql FROM main.sqlite_master WHERE type = 'table'")
    listed = [(name, sql or "") for name, sql in rows.fetchall()]
    virtual = [name for name, sql in listed if sql.upper().startswith("CREATE VIRTUAL TABLE")]
    result = []
    for name, _sql in listed:
        if (
            name.startswith(("sqlite_", "_"))
            or name in NOT_RECORDED
            or name in virtual
            or any(name.startswith(f"{v}_") for v in virtual)
        ):
            continue
        info = store.db.execute(f"PRAGMA main.table_info({_quote(name)})").fetchall()
        columns = [row[1] for row in info]
        primary = [row[1] for row in sorted((r for r in info if r[5]), key=lambda r: r[5])]
        try:
            store.db.execute(f"SELECT rowid FROM main.{_quote(name)} LIMIT 0")
        except driver.OperationalError:  # WITHOUT ROWID: rows are known by their key
            result.append(Table(name, columns, primary, False))
            continue
        alias = len(primary) == 1 and any(
            row[1] == primary[0] and row[2].upper() == "INTEGER" for row in info
        )
        result.append(Table(name, columns, ["rowid"], not alias))
    return result


@contextmanager
def record(store: Store) -> Iterator[list[RowChange]]:
    """Record the block's row changes (call inside a transaction); see the module docstring."""
    covered = tables(store)
    changes: list[RowChange] = []
    _drop(store, len(covered))
    store.db.execute(
        f"CREATE TEMP TABLE {_LOG} (seq INTEGER PRIMARY KEY, tbl INTEGER, op TEXT, key TEXT)"
    )
    for index, table in enumerate(covered):
        _watch(store, index, table)
    try:
        yield changes
        changes.extend(_collect(store, covered))
    finally:
        _drop(store, len(covered))


def revert(store: Store, changes: list[RowChange]) -> None:
    """Put every recorded row back as it was before (call inside a transaction)."""
    by_name = {table.name: table for table in tables(store)}
    moved = []
    for change in changes:
        table = by_name.get(change.table)
        if table is None:
            raise UndoRefused(f"table {change.table} is gone; nothing was undone")
        if _stable(_read(store, table, change.key)) != _stable(change.after):
            moved.append(f"{change.table} row {_show(change.key)}")
    if moved:
        listing = ", ".join(moved[:5]) + (f" and {len(moved) - 5} more" if len(moved) > 5 else "")
        raise UndoRefused(f"changed since: {listing}; undoing would lose those changes")
    try:
        for change in reversed(changes):
            _restore(store, by_name[change.table], change)
    except driver.IntegrityError as error:
        raise UndoRefused(f"the store refuses the old rows: {error}") from error


def _watch(store: Store, index: int, table: Table) -> None:
    name = f"main.{_quote(table.name)}"
    rowid = "rowid AS memsdk_rowid, " if table.key == ["rowid"] else ""
    store.db.execute(
        f"CREATE TEMP TABLE memsdk_undo_old_{index} AS "
        f"SELECT 0 AS memsdk_seq, {rowid}* FROM {name} WHERE 0"
    )
    for when, op, ref in (("AFTER", "INSERT", "NEW"), ("BEFORE", "UPDATE", "OLD")):
        _trigger(store, index, table, when, op, ref)
    _trigger(store, index, table, "BEFORE", "DELETE", "OLD")


def _trigger(store: Store, index: int, table: Table, when: str, op: str, ref: str) -> None:
    key = ", ".join(f"{ref}.{_quote(column)}" for column in table.key)
    match = " AND ".join(f"{_quote(c)} IS {ref}.{_quote(c)}" for c in table.key)
    rowid = "rowid, " if table.key == ["rowid"] else ""
    copy = (
        ""
        if op == "INSERT"
        else f"INSERT INTO memsdk_undo_old_{index} SELECT last_insert_rowid(), {rowid}* "
        f"FROM main.{_quote(table.name)} WHERE {match};"
    )
    store.db.execute(
        f"""CREATE TEMP TRIGGER memsdk_undo_{index}_{op.lower()} {when} {op}
            ON main.{_quote(table.name)} BEGIN
            INSERT INTO {_LOG} (tbl, op, key) VALUES ({index}, '{op.lower()}', json_array({key}));
            {copy}
            END"""
    )


def _collect(store: Store, covered: list[Table]) -> list[RowChange]:
    first: dict[tuple[int, str], tuple[int, str]] = {}
    for seq, index, op, key in store.db.execute(
        f"SELECT seq, tbl, op, key FROM temp.{_LOG} ORDER BY seq"
    ).fetchall():
        first.setdefault((index, key), (seq, op))
    result = []
    for (index, key_text), (seq, op) in first.items():
        table = covered[index]
        key = json.loads(key_text)
        before = None
        if op != "insert":
            cursor = store.db.execute(
                f"SELECT * FROM temp.memsdk_undo_old_{index} WHERE memsdk_seq = ?", [seq]
            )
            names = [d[0] for d in cursor.description]
            values = cursor.fetchone()
            before = dict(zip(names[1:], values[1:], strict=True))
        after = _read(store, table, key)
        if before != after:
            result.append(RowChange(table.name, key, before, after))
    return result


def _read(store: Store, table: Table, key: list[Any]) -> dict[str, Any] | None:
    rowid = "rowid AS memsdk_rowid, " if table.key == ["rowid"] else ""
    match = " AND ".join(f"{_quote(c)} IS ?" for c in table.key)
    cursor = store.db.execute(f"SELECT {rowid}* FROM main.{_quote(table.name)} WHERE {match}", key)
    row = cursor.fetchone()
    if row is None:
        return None
    return dict(zip([d[0] for d in cursor.description], row, strict=True))


def _restore(store: Store, table: Table, change: RowChange) -> None:
    name = f"main.{_quote(table.name)}"
    match = " AND ".join(f"{_quote(c)} IS ?" for c in table.key)
    current = _read(store, table, change.key)
    if change.before is None:
        if current is not None:
            store.db.execute(f"DELETE FROM {name} WHERE {match}", change.key)
        return
    values = {k: v for k, v in change.before.items() if k != "memsdk_rowid"}
    if current is None:
        if table.explicit_rowid:
            values = {"rowid": change.before["memsdk_rowid"], **values}
        columns = ", ".join(_quote(c) for c in values)
        marks = ", ".join("?" * len(values))
        store.db.execute(f"INSERT INTO {name} ({columns}) VALUES ({marks})", list(values.values()))
        return
    differ = {
        k: v for k, v in values.items() if k not in VOLATILE and k in current and current[k] != v
    }
    if differ:
        assignments = ", ".join(f"{_quote(c)} = ?" for c in differ)
        store.db.execute(
            f"UPDATE {name} SET {assignments} WHERE {match}", [*differ.values(), *change.key]
        )


def _drop(store: Store, count: int) -> None:
    for index in range(count):
        for op in ("insert", "update", "delete"):
            store.db.execute(f"DROP TRIGGER IF EXISTS temp.memsdk_undo_{index}_{op}")
        store.db.execute(f"DROP TABLE IF EXISTS temp.memsdk_undo_old_{index}")
    store.db.execute(f"DROP TABLE IF EXISTS temp.{_LOG}")


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


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
