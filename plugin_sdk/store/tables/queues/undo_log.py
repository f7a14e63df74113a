"""The statements of an undo recording (``proposals/undo.py``), part of the proposals owner.

A recording puts temporary triggers on every covered table (:meth:`UndoLog.start`):
each row a block inserts, updates or deletes is logged in ``memsdk_undo_log``
and, before its first change, copied to ``memsdk_undo_old_<n>``.
:meth:`UndoLog.collect` reads each touched row's state before and after;
:meth:`UndoLog.restore` writes one row back. The triggers and tables are
temporary and belong to this connection only. The queue's own tables, the
dreamer's state, the migrations record and full-text shadow tables are not
covered; :data:`VOLATILE` columns (retrieval counts) are bookkeeping, kept as
they are when a row is put back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import attrs

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


# One touched row: (table name, key, before, after); None: absent.
Touched = tuple[str, list[Any], dict[str, Any] | None, dict[str, Any] | None]


class UndoLog:
    """Recording and reverting row changes on one store; reached as ``store.tables.proposals.undo``."""

    def __init__(self, store: Store) -> None:
        self.db = store.db

    def tables(self) -> list[Table]:
        """The tables a recording covers."""
        rows = self.db.execute("SELECT name, sql FROM main.sqlite_master WHERE type = 'table'")
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
            info = self.db.execute(f"PRAGMA main.table_info({_quote(name)})").fetchall()
            columns = [row[1] for row in info]
            primary = [row[1] for row in sorted((r for r in info if r[5]), key=lambda r: r[5])]
            try:
                self.db.execute(f"SELECT rowid FROM main.{_quote(name)} LIMIT 0")
            except driver.OperationalError:  # WITHOUT ROWID: rows are known by their key
                result.append(Table(name, columns, primary, False))
                continue
            alias = len(primary) == 1 and any(
                row[1] == primary[0] and row[2].upper() == "INTEGER" for row in info
            )
            result.append(Table(name, columns, ["rowid"], not alias))
        return result

    def start(self, covered: list[Table]) -> None:
        """Create the log and put the triggers on ``covered`` (inside a transaction)."""
        self.stop(len(covered))
        self.db.execute(
            f"CREATE TEMP TABLE {_LOG} (seq INTEGER PRIMARY KEY, tbl INTEGER, op TEXT, key TEXT)"
        )
        for index, table in enumerate(covered):
            self._watch(index, table)

    def stop(self, count: int) -> None:
        """Drop the triggers and temporary tables of a recording of ``count`` tables."""
        for index in range(count):
            for op in ("insert", "update", "delete"):
                self.db.execute(f"DROP TRIGGER IF EXISTS temp.memsdk_undo_{index}_{op}")
            self.db.execute(f"DROP TABLE IF EXISTS temp.memsdk_undo_old_{index}")
        self.db.execute(f"DROP TABLE IF EXISTS temp.{_LOG}")

    def collect(self, covered: list[Table]) -> list[Touched]:
        """Each row the recording saw change, with its state before the first change and now."""
        first: dict[tuple[int, str], tuple[int, str]] = {}
        for seq, index, op, key in self.db.execute(
            f"SELECT seq, tbl, op, key FROM temp.{_LOG} ORDER BY seq"
        ).fetchall():
            first.setdefault((index, key), (seq, op))
        result: list[Touched] = []
        for (index, key_text), (seq, op) in first.items():
            table = covered[index]
            key = json.loads(key_text)
            before = None
            if op != "insert":
                cursor = self.db.execute(
                    f"SELECT * FROM temp.memsdk_undo_old_{index} WHERE memsdk_seq = ?", [seq]
                )
                names = [d[0] for d in cursor.description]
                values = cursor.fetchone()
                before = dict(zip(names[1:], values[1:], strict=True))
            after = self.read(table, key)
            if before != after:
                result.append((table.name, key, before, after))
        return result

    def read(self, table: Table, key: list[Any]) -> dict[str, Any] | None:
        """One row of ``table`` by its key (with ``memsdk_rowid`` for a rowid table), or None."""
        rowid = "rowid AS memsdk_rowid, " if table.key == ["rowid"] else ""
        match = " AND ".join(f"{_quote(c)} IS ?" for c in table.key)
        cursor = self.db.execute(
            f"SELECT {rowid}* FROM main.{_quote(table.name)} WHERE {match}", key
        )
        row = cursor.fetchone()
        if row is None:
            return None
        return dict(zip([d[0] for d in cursor.description], row, strict=True))

    def restore(self, table: Table, key: list[Any], before: dict[str, Any] | None) -> None:
        """Put one row back as ``before`` (None: absent); volatile columns stay as they are."""
        name = f"main.{_quote(table.name)}"
        match = " AND ".join(f"{_quote(c)} IS ?" for c in table.key)
        current = self.read(table, key)
        if before is None:
            if current is not None:
                self.db.execute(f"DELETE FROM {name} WHERE {match}", key)
            return
        # generated columns (not in table_info) follow the row: never written
        values = {k: v for k, v in before.items() if k in table.columns}
        if current is None:
            if table.explicit_rowid:
                values = {"rowid": before["memsdk_rowid"], **values}
            columns = ", ".join(_quote(c) for c in values)
            marks = ", ".join("?" * len(values))
            self.db.execute(
                f"INSERT INTO {name} ({columns}) VALUES ({marks})", list(values.values())
            )
            return
        differ = {
            k: v
            for k, v in values.items()
            if k not in VOLATILE and k in current and current[k] != v
        }
        if differ:
            assignments = ", ".join(f"{_quote(c)} = ?" for c in differ)
            self.db.execute(
                f"UPDATE {name} SET {assignments} WHERE {match}", [*differ.values(), *key]
            )

    @contextmanager
    def deferred_checks(self, names: list[str]) -> Iterator[None]:
        """Foreign keys checked when the rows are back, not row by row (inside a transaction).

        Rows come back in the reverse order of their first change, which is
        not always an order the keys allow (a memory deleted first, its
        vectors by the cascade after: they come back before it). The rows
        of ``names`` are checked at the end; a row that refers to a missing
        one raises ``IntegrityError`` naming the table, and so do the rows of
        the tables that refer to them (a row removed that another refers to).
        """
        self.db.execute("PRAGMA defer_foreign_keys = ON")
        try:
            yield
            marks = ", ".join("?" * len(names))
            referring = [
                name
                for (name,) in self.db.execute(
                    "SELECT DISTINCT m.name FROM main.sqlite_master m, "
                    "pragma_foreign_key_list(m.name) f "
                    f"WHERE m.type = 'table' AND f.\"table\" IN ({marks})",
                    names,
                )
            ]
            for name in sorted({*names, *referring}):
                bad = self.db.execute(f"PRAGMA main.foreign_key_check({_quote(name)})").fetchone()
                if bad is not None:
                    raise driver.IntegrityError(
                        f"FOREIGN KEY constraint failed: a row of {bad[0]} refers to a missing "
                        f"row of {bad[2]}"
                    )
        finally:
            self.db.execute("PRAGMA defer_foreign_keys = OFF")

    def _watch(self, index: int, table: Table) -> None:
        name = f"main.{_quote(table.name)}"
        rowid = "rowid AS memsdk_rowid, " if table.key == ["rowid"] else ""
        self.db.execute(
            f"CREATE TEMP TABLE memsdk_undo_old_{index} AS "
            f"SELECT 0 AS memsdk_seq, {rowid}* FROM {name} WHERE 0"
        )
        for when, op, ref in (("AFTER", "INSERT", "NEW"), ("BEFORE", "UPDATE", "OLD")):
            self._trigger(index, table, when, op, ref)
        self._trigger(index, table, "BEFORE", "DELETE", "OLD")

    def _trigger(self, index: int, table: Table, when: str, op: str, ref: str) -> None:
        key = ", ".join(f"{ref}.{_quote(column)}" for column in table.key)
        match = " AND ".join(f"{_quote(c)} IS {ref}.{_quote(c)}" for c in table.key)
        rowid = "rowid, " if table.key == ["rowid"] else ""
        copy = (
            ""
            if op == "INSERT"
            else f"INSERT INTO memsdk_undo_old_{index} SELECT last_insert_rowid(), {rowid}* "
            f"FROM main.{_quote(table.name)} WHERE {match};"
        )
        self.db.execute(
            f"""CREATE TEMP TRIGGER memsdk_undo_{index}_{op.lower()} {when} {op}
                ON main.{_quote(table.name)} BEGIN
                INSERT INTO {_LOG} (tbl, op, key) VALUES ({index}, '{op.lower()}', json_array({key}));
                {copy}
                END"""
        )


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
