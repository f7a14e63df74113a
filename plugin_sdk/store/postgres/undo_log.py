"""The undo recording on PostgreSQL: :class:`~plugin_sdk.store.tables.undo_log.UndoLog`'s methods.

The same recording as on SQLite (``proposals/undo.py``), in PostgreSQL's terms:

- Tables, columns and keys come from the catalog: each covered table is known
  by its primary key, or by its ``rowid`` column when it has none (the
  PostgreSQL schema gives such a table one). Generated columns (the
  full-text ``search``, ``search_len``, ``fts_scope``) are neither read nor
  written back: they follow the row. Besides the tables SQLite's recording
  leaves out, the derived ones are not covered: ``search_stats`` (kept by
  ``memories``' own triggers, as SQLite's full-text shadow tables are) and
  the pgvector mirror (rebuilt from ``memory_vectors``).
- One trigger function, ``memsdk_undo_record()`` (``schema/postgres_undo.sql``),
  logs the first change of each key and copies the row as it was into a
  temporary table made ``LIKE`` the covered one, so the old values are kept
  in their own types (bigint, double precision, text, bytea) and written back
  exactly. The store creates the function when a recording first needs it
  and finds it missing (a store made before the file was part of its schema).
- The trigger ``memsdk_undo`` on each covered table is created once, by the
  first recording that needs it, and committed **disabled**; a recording
  enables it inside its transaction (:meth:`PgUndoLog.start`) and disables it
  again before the transaction ends (:meth:`PgUndoLog.stop`). Other
  connections never see it enabled: DDL is transactional, and the catalog
  change is undone before the commit (or by the rollback).

Locks: ``CREATE TRIGGER`` and ``ALTER TABLE … ENABLE/DISABLE TRIGGER`` take
``SHARE ROW EXCLUSIVE`` on the table until the transaction ends. That lock
lets readers through (their ``ACCESS SHARE`` does not conflict) and holds off
only other writers, which the store's write lock (the transaction advisory
lock of :meth:`~plugin_sdk.store.postgres.connection.Database.atomic`) holds
off already; a recording runs inside that lock, so it waits for no one and
makes no one wait who would not have waited anyway. ``DROP TRIGGER`` would
take ``ACCESS EXCLUSIVE`` (measured on PostgreSQL 15), blocking every reader
of every covered table until the commit: that is why the trigger is disabled
rather than dropped (it is dropped only when a table's key changed, once).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from plugin_sdk.store.postgres.schema import text
from plugin_sdk.store.tables.undo_log import NOT_RECORDED, VOLATILE, Table, Touched
from plugin_sdk.store.tables.vectors import MIRROR

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

#: Tables kept by triggers or rebuilt from others: they follow what is restored.
DERIVED = frozenset({"search_stats", MIRROR})
TRIGGER = "memsdk_undo"
FUNCTION = "memsdk_undo_record"
_LOG = "pg_temp.memsdk_undo_log"


class PgUndoLog:
    """Recording and reverting row changes on a PostgreSQL store (``store.tables.proposals.undo``)."""

    def __init__(self, store: Store) -> None:
        self.db = store.db
        self._oids: dict[str, int] = {}
        self._enabled: list[str] = []

    def tables(self) -> list[Table]:
        """The tables a recording covers."""
        listed = self.db.execute(
            "SELECT c.oid, c.relname FROM pg_class c "
            "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') "
            "ORDER BY c.relname"
        ).fetchall()
        keys: dict[int, list[str]] = {}
        for oid, column in self.db.execute(
            "SELECT i.indrelid, a.attname FROM pg_index i "
            "CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) "
            "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
            "JOIN pg_class c ON c.oid = i.indrelid "
            "WHERE i.indisprimary AND c.relnamespace = current_schema()::regnamespace "
            "ORDER BY i.indrelid, k.n"
        ):
            keys.setdefault(int(oid), []).append(str(column))
        result = []
        for oid, name in listed:
            if name.startswith("_") or name in NOT_RECORDED or name in DERIVED:
                continue
            columns = self.db.columns(name)
            key = keys.get(int(oid)) or (["rowid"] if "rowid" in columns else [])
            if not key:
                raise ValueError(
                    f"table {name} has neither a primary key nor a rowid column: "
                    "an undo recording cannot tell its rows apart"
                )
            self._oids[name] = int(oid)
            result.append(Table(name, columns, key, False))
        return result

    def start(self, covered: list[Table]) -> None:
        """Create the log and enable the triggers on ``covered`` (inside a transaction)."""
        self.stop(len(covered))
        if self.db.execute("SELECT to_regproc(?)", [FUNCTION]).fetchone()[0] is None:
            self.db.executescript(text("postgres_undo.sql"))
        self.db.executescript(
            f"CREATE TEMP TABLE {_LOG.split('.')[1]} (seq bigint GENERATED ALWAYS AS IDENTITY, "
            "tbl text NOT NULL, op text NOT NULL, key jsonb NOT NULL, "
            "PRIMARY KEY (tbl, key)) ON COMMIT DROP"
        )
        present = self._triggers()
        for table in covered:
            name = _quote(table.name)
            arguments = ", ".join(_literal(column) for column in table.key)
            if present.get(table.name) == table.key:
                self.db.executescript(f"ALTER TABLE {name} ENABLE TRIGGER {TRIGGER}")
            else:
                if table.name in present:  # the table's key changed since it was made
                    self.db.executescript(f"DROP TRIGGER {TRIGGER} ON {name}")
                self.db.executescript(
                    f"CREATE TRIGGER {TRIGGER} AFTER INSERT OR UPDATE OR DELETE ON {name} "
                    f"FOR EACH ROW EXECUTE FUNCTION {FUNCTION}({arguments})"
                )
            self._enabled.append(table.name)

    def stop(self, count: int) -> None:
        """Disable the triggers and drop the temporary tables of this connection's recording.

        In a transaction that has failed there is nothing to do: its rollback
        undoes the enabling and the temporary tables with everything else.
        """
        if self._failed():
            self._enabled = []
            return
        for name in self._enabled:
            self.db.executescript(f"ALTER TABLE {_quote(name)} DISABLE TRIGGER {TRIGGER}")
        for name in self._enabled:
            self.db.executescript(f"DROP TABLE IF EXISTS pg_temp.{self._copy(name)}")
        self._enabled = []
        self.db.executescript(f"DROP TABLE IF EXISTS {_LOG}")

    def collect(self, covered: list[Table]) -> list[Touched]:
        """Each row the recording saw change, with its state before the first change and now."""
        by_name = {table.name: table for table in covered}
        result: list[Touched] = []
        for seq, name, op, key in self.db.execute(
            f"SELECT seq, tbl, op, key FROM {_LOG} ORDER BY seq"
        ).fetchall():
            table = by_name[name]
            before = None
            if op != "insert":
                columns = ", ".join(_quote(c) for c in table.columns)
                cursor = self.db.execute(
                    f"SELECT {columns} FROM pg_temp.{self._copy(name)} WHERE memsdk_seq = ?",
                    [seq],
                )
                before = dict(zip(table.columns, cursor.fetchone(), strict=True))
            key = list(key)
            after = self.read(table, key)
            if before != after:
                result.append((table.name, key, before, after))
        return result

    def read(self, table: Table, key: list[Any]) -> dict[str, Any] | None:
        """One row of ``table`` by its key (its columns but the generated ones), or None."""
        columns = ", ".join(_quote(c) for c in table.columns)
        row = self.db.execute(
            f"SELECT {columns} FROM {_quote(table.name)} WHERE {_match(table)}", key
        ).fetchone()
        return None if row is None else dict(zip(table.columns, row, strict=True))

    def restore(self, table: Table, key: list[Any], before: dict[str, Any] | None) -> None:
        """Put one row back as ``before`` (None: absent); volatile columns stay as they are."""
        name = _quote(table.name)
        current = self.read(table, key)
        if before is None:
            if current is not None:
                self.db.execute(f"DELETE FROM {name} WHERE {_match(table)}", key)
            return
        values = {k: v for k, v in before.items() if k in table.columns}
        if current is None:
            columns = ", ".join(_quote(c) for c in values)
            marks = ", ".join("?" * len(values))
            self.db.execute(
                f"INSERT INTO {name} ({columns}) OVERRIDING SYSTEM VALUE VALUES ({marks})",
                list(values.values()),
            )
            return
        differ = {k: v for k, v in values.items() if k not in VOLATILE and current[k] != v}
        if differ:
            assignments = ", ".join(f"{_quote(c)} = ?" for c in differ)
            self.db.execute(
                f"UPDATE {name} SET {assignments} WHERE {_match(table)}",
                [*differ.values(), *key],
            )

    @contextmanager
    def deferred_checks(self, names: list[str]) -> Iterator[None]:
        """Constraints checked when the rows are back, not row by row (inside a transaction).

        ``SET CONSTRAINTS ALL DEFERRED`` reaches only constraints declared
        ``DEFERRABLE``: the schema's foreign keys must be, for a memory deleted
        with its vectors (by the cascade, after it) to come back. ``SET
        CONSTRAINTS ALL IMMEDIATE`` at the end checks what was deferred and
        raises ``IntegrityError`` for a row that refers to a missing one.
        """
        self.db.executescript("SET CONSTRAINTS ALL DEFERRED")
        yield
        self.db.executescript("SET CONSTRAINTS ALL IMMEDIATE")

    def _copy(self, name: str) -> str:
        return f"memsdk_undo_old_{self._oids[name]}"

    def _triggers(self) -> dict[str, list[str]]:
        """Table name -> the key columns its ``memsdk_undo`` trigger was made with."""
        rows = self.db.execute(
            "SELECT c.relname, t.tgargs FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE t.tgname = ? AND c.relnamespace = current_schema()::regnamespace",
            [TRIGGER],
        )
        return {
            name: [part.decode() for part in bytes(arguments).split(b"\x00")[:-1]]
            for name, arguments in rows
        }

    def _failed(self) -> bool:
        from psycopg import pq

        status = self.db.conn.raw.info.transaction_status
        return bool(status == pq.TransactionStatus.INERROR)


def _match(table: Table) -> str:
    return " AND ".join(f"{_quote(c)} = ?" for c in table.key)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
