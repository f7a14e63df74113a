"""The undo recording on PostgreSQL: :class:`~plugin_sdk.store.tables.queues.undo_log.UndoLog`'s methods.

The same recording as on SQLite (``proposals/undo.py``), in PostgreSQL's terms:

- Tables, columns and keys come from the catalog: each covered table is known
  by its primary key, or by its ``rowid`` column when it has none (the
  PostgreSQL schema gives such a table one). Generated columns (the
  ``fts_scope``) and the columns a row trigger derives
  (``database.DERIVED_COLUMNS``: the full-text ``search`` and ``search_len``)
  are neither read nor written back: they follow the row. Besides the tables SQLite's recording
  leaves out, the derived ones are not covered: ``search_stats``,
  ``search_terms`` and ``search_postings`` (kept by ``memories``' own triggers, as SQLite's
  full-text shadow tables are) and
  the pgvector mirror (rebuilt from ``memory_vectors``).
- One trigger function, ``memsdk_undo_record()`` (``schema/postgres_undo.sql``),
  logs the first change of each key and copies the row as it was into a
  temporary table made ``LIKE`` the covered one, so the old values are kept
  in their own types (bigint, double precision, text, bytea) and written back
  exactly. The store creates the function when a recording first needs it
  and finds it missing (a store made before the file was part of its schema).
- The trigger ``memsdk_undo`` on each covered table is created once, by the
  first recording that finds it missing, and stays; it fires only ``WHEN``
  the transaction-local setting ``memsdk.undo`` is ``on``, which
  :meth:`PgUndoLog.start` sets (``set_config(…, true)``) and
  :meth:`PgUndoLog.stop` clears, and which ends with the transaction anyway.
  Every other transaction, on this connection or another, skips the trigger
  without calling the function (the condition is evaluated before any event
  is queued).

Locks: ``CREATE TRIGGER`` takes ``SHARE ROW EXCLUSIVE`` on its table until the
transaction ends. That lets readers through (their ``ACCESS SHARE`` does not
conflict) and holds off only other writers, which the store's write lock (the
transaction advisory lock of
:meth:`~plugin_sdk.store.postgres.database.Database.atomic`) holds off
already; a recording runs inside that lock, so the first one waits for no one
and makes no one wait who would not have waited anyway. After that a
recording changes nothing in the catalog but its own temporary tables (the
log, and one copy table per table it changed), which no one else sees; a
trigger is made again only when its table's primary key changed. Two other ways were measured on PostgreSQL 15
and not taken: ``DROP TRIGGER`` before the commit takes ``ACCESS EXCLUSIVE``,
holding up every reader of every covered table until the commit (and queueing
them behind any long read); ``ALTER TABLE … ENABLE/DISABLE TRIGGER`` per
recording (``SHARE ROW EXCLUSIVE``) made a recorded one-row update take
0.63 s against 0.18 s this way (43 tables, a loaded 2-core machine), and
invalidates every connection's cached plans for those tables at each commit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from plugin_sdk.store.postgres.database import DERIVED_COLUMNS
from plugin_sdk.store.postgres.schema import text
from plugin_sdk.store.tables.memories.vectors import MIRROR
from plugin_sdk.store.tables.queues.undo_log import NOT_RECORDED, VOLATILE, Table, Touched

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

#: Tables kept by triggers or rebuilt from others: they follow what is restored.
DERIVED = frozenset({"search_stats", "search_terms", "search_postings", MIRROR})
TRIGGER = "memsdk_undo"
FUNCTION = "memsdk_undo_record"
#: The transaction-local setting that turns the triggers on.
SETTING = "memsdk.undo"
_LOG = "pg_temp.memsdk_undo_log"


class PgUndoLog:
    """Recording and reverting row changes on a PostgreSQL store (``store.tables.proposals.undo``)."""

    def __init__(self, store: Store) -> None:
        self.db = store.db
        self._oids: dict[str, int] = {}

    def tables(self) -> list[Table]:
        """The tables a recording covers."""
        columns: dict[str, list[str]] = {}
        for oid, name, column in self.db.execute(
            "SELECT c.oid, c.relname, a.attname FROM pg_class c "
            "JOIN pg_attribute a ON a.attrelid = c.oid "
            "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') "
            "AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated <> 's' "
            "ORDER BY c.relname, a.attnum"
        ):
            self._oids[name] = int(oid)
            if column not in DERIVED_COLUMNS.get(name, ()):
                columns.setdefault(name, []).append(column)
        keys: dict[str, list[str]] = {}
        for name, column in self.db.execute(
            "SELECT c.relname, a.attname FROM pg_index i "
            "CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) "
            "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
            "JOIN pg_class c ON c.oid = i.indrelid "
            "WHERE i.indisprimary AND c.relnamespace = current_schema()::regnamespace "
            "ORDER BY c.relname, k.n"
        ):
            keys.setdefault(name, []).append(column)
        result = []
        for name, names in columns.items():
            if name.startswith("_") or name in NOT_RECORDED or name in DERIVED:
                continue
            key = keys.get(name) or (["rowid"] if "rowid" in names else [])
            if not key:
                raise ValueError(
                    f"table {name} has neither a primary key nor a rowid column: "
                    "an undo recording cannot tell its rows apart"
                )
            result.append(Table(name, names, key, False))
        return result

    def start(self, covered: list[Table]) -> None:
        """Create the log and turn the triggers on ``covered`` on (inside a transaction)."""
        self.stop(len(covered))
        if self.db.execute("SELECT to_regproc(?)", [FUNCTION]).fetchone()[0] is None:
            self.db.executescript(text("postgres_undo.sql"))
        present = self._triggers()
        made = []
        for table in covered:
            if present.get(table.name) == table.key:
                continue
            name = _quote(table.name)
            if table.name in present:  # the table's key changed since it was made
                made.append(f"DROP TRIGGER {TRIGGER} ON {name}")
            arguments = ", ".join(_literal(column) for column in table.key)
            made.append(
                f"CREATE TRIGGER {TRIGGER} AFTER INSERT OR UPDATE OR DELETE ON {name} "
                f"FOR EACH ROW WHEN (current_setting('{SETTING}', true) = 'on') "
                f"EXECUTE FUNCTION {FUNCTION}({arguments})"
            )
        self.db.executescript(
            ";\n".join(
                [
                    *made,
                    f"CREATE TEMP TABLE {_LOG.split('.')[1]} (seq bigint GENERATED ALWAYS AS "
                    "IDENTITY, tbl text NOT NULL, op text NOT NULL, key jsonb NOT NULL, "
                    "PRIMARY KEY (tbl, key)) ON COMMIT DROP",
                    f"SELECT set_config('{SETTING}', 'on', true)",
                ]
            )
        )

    def stop(self, count: int) -> None:
        """Turn the triggers off and drop the temporary tables of this connection's recording.

        In a transaction that has failed there is nothing to do: its rollback
        ends the setting and drops the temporary tables with everything else.
        """
        if self._failed():
            return
        self.db.execute(f"SELECT set_config('{SETTING}', 'off', true)")
        if self.db.execute("SELECT to_regclass(?)", [_LOG]).fetchone()[0] is None:
            return
        copies = [
            f"pg_temp.{self._copy(name)}"
            for (name,) in self.db.execute(f"SELECT DISTINCT tbl FROM {_LOG} WHERE op <> 'insert'")
        ]
        self.db.executescript(f"DROP TABLE IF EXISTS {', '.join([*copies, _LOG])}")

    def collect(self, covered: list[Table]) -> list[Touched]:
        """Each row the recording saw change, with its state before the first change and now."""
        by_name = {table.name: table for table in covered}
        result: list[Touched] = []
        for seq, name, op, key in self.db.execute(
            f"SELECT seq, tbl, op, key FROM {_LOG} ORDER BY seq"
        ).fetchall():
            table = by_name.get(name)
            if table is None:  # a trigger left on a table no longer covered
                continue
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

        Deferring reaches only constraints declared deferrable: the schema's
        foreign keys are, so a memory deleted with its vectors (by the
        cascade, after it) comes back. Switching them back to immediate at the
        end checks what was deferred and raises ``IntegrityError`` for a row
        that refers to a missing one.
        """
        self.db.executescript("set constraints all deferred")
        yield
        self.db.executescript("set constraints all immediate")

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
