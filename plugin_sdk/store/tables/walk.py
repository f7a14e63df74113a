"""Statements over any table of the store, by name: what walks the whole schema uses.

Renaming, merging and deleting a project (``host/projects.py``) touches every
table with a ``project`` column, and an export travels row for row with every
stored column (``host/portable.py``), so a table a later migration adds takes
part without a change there. Reached as ``store.tables.walk``.

Table and column names are never taken on trust: each is checked against the
store's own schema (``sqlite_master`` and ``PRAGMA table_xinfo``, read again
whenever ``PRAGMA schema_version`` moves; on PostgreSQL the catalog, read
each time) before it is written into a
statement, and an unknown one is a :class:`StoreError` naming it. Values are
always bound parameters. A filter is a mapping of column to value, all equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from plugin_sdk.errors import StoreError

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class TableWalk:
    """Reads and writes on the store's tables by name; reached as ``store.tables.walk``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
        self._version: int | None = None
        self._tables: dict[str, bool] = {}  # name -> virtual
        self._columns: dict[str, list[str]] = {}

    # The schema

    def _schema(self) -> dict[str, bool]:
        if self.store.engine == "postgresql":
            return dict.fromkeys(self.db.table_names(), False)
        (version,) = self.db.execute("PRAGMA schema_version").fetchone()
        if version != self._version:
            self._tables = {
                name: (sql or "").startswith("CREATE VIRTUAL TABLE")
                for name, sql in self.db.execute(
                    "SELECT name, sql FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%' ORDER BY name"
                )
            }
            self._columns = {}
            self._version = version
        return self._tables

    def table_names(self, *, virtual: bool = False) -> list[str]:
        """The store's tables (never views nor SQLite's own), by name; ``virtual``: with the
        virtual tables (the full-text index) too."""
        return [name for name, is_virtual in self._schema().items() if virtual or not is_virtual]

    def has_table(self, table: str) -> bool:
        """Whether the store has a table called ``table``."""
        return table in self._schema()

    def _table(self, table: str) -> str:
        if table not in self._schema():
            raise StoreError(f"store {self.store.path} has no table {table!r}")
        return f"[{table}]"

    def columns(self, table: str) -> list[str]:
        """The stored columns of ``table`` in order (generated ones left out)."""
        quoted = self._table(table)
        del quoted  # checked
        found = self._columns.get(table)
        if found is None:
            found = self.db.columns(table)  # generated columns left out, on either engine
            self._columns[table] = found
        return found

    def _column(self, table: str, column: str) -> str:
        if column not in self.columns(table) and column != "rowid":
            raise StoreError(f"table {table!r} of store {self.store.path} has no column {column!r}")
        return f"[{column}]"

    def _where(self, table: str, where: Mapping[str, Any]) -> tuple[str, list[Any]]:
        if not where:
            return "", []
        tests = " AND ".join(f"{self._column(table, column)} = ?" for column in where)
        return f" WHERE {tests}", list(where.values())

    def foreign_keys(self, table: str) -> list[tuple[str, str]]:
        """``(parent table, column)`` of each foreign key of ``table``."""
        self._table(table)
        return [(parent, column) for column, parent in self.db.foreign_keys(table)]

    # Reads

    def rows(
        self, table: str, where: Mapping[str, Any], order: Sequence[str] = ()
    ) -> Iterator[dict[str, Any]]:
        """The rows of ``table`` matching ``where`` (every column), in ``order`` (column names)."""
        sql = f"SELECT * FROM {self._table(table)}"
        condition, params = self._where(table, where)
        ordering = ", ".join(self._column(table, column) for column in order)
        return self.db.query(sql + condition + (f" ORDER BY {ordering}" if order else ""), params)

    def has_rows(self, table: str, where: Mapping[str, Any]) -> bool:
        """Whether ``table`` holds a row matching ``where``."""
        condition, params = self._where(table, where)
        found = self.db.execute(f"SELECT 1 FROM {self._table(table)}{condition} LIMIT 1", params)
        return found.fetchone() is not None

    def distinct(self, table: str, column: str) -> list[Any]:
        """The distinct values of ``column`` in ``table``."""
        quoted = self._column(table, column)
        return [row[0] for row in self.db.execute(f"SELECT DISTINCT {quoted} FROM [{table}]")]

    # Writes (inside the caller's transaction; a batch is one of its own when there is none)

    def insert(self, table: str, row: Mapping[str, Any]) -> int:
        """Insert one row (its columns by name); its rowid."""
        names = [self._column(table, column) for column in row]
        cursor = self.db.execute(
            f"INSERT INTO {self._table(table)} ({', '.join(names)}) "
            f"VALUES ({', '.join('?' * len(names))})",
            list(row.values()),
        )
        return int(cursor.lastrowid or 0)

    def insert_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
        """Insert ``rows`` (values in ``columns``' order), all in one transaction; how many."""
        names = [self._column(table, column) for column in columns]
        sql = (
            f"INSERT INTO {self._table(table)} ({', '.join(names)}) "
            f"VALUES ({', '.join('?' * len(names))})"
        )
        with self.store.atomic():
            return int(self.db.conn.executemany(sql, rows).rowcount)

    def update(
        self,
        table: str,
        values: Mapping[str, Any],
        where: Mapping[str, Any],
        *,
        or_ignore: bool = False,
    ) -> int:
        """Set ``values`` on the rows matching ``where``; how many changed.

        ``or_ignore``: a row the change would make clash with a unique key stays as it was.
        """
        sets = ", ".join(f"{self._column(table, column)} = ?" for column in values)
        condition, params = self._where(table, where)
        if or_ignore and self.store.engine == "postgresql":
            return self._update_or_ignore(table, sets, list(values.values()), condition, params)
        verb = "UPDATE OR IGNORE" if or_ignore else "UPDATE"
        cursor = self.db.execute(
            f"{verb} {self._table(table)} SET {sets}{condition}", [*values.values(), *params]
        )
        return int(cursor.rowcount)

    def _update_or_ignore(
        self, table: str, sets: str, values: list[Any], condition: str, params: list[Any]
    ) -> int:
        """SQLite's ``UPDATE OR IGNORE`` on PostgreSQL: row by row, each in a savepoint
        (inside the caller's transaction); a row that would clash stays as it was."""
        from plugin_sdk.store import driver

        quoted = self._table(table)
        rows = self.db.execute(f"SELECT ctid::text FROM {quoted}{condition}", params).fetchall()
        changed = 0
        for (ctid,) in rows:
            try:
                with self.store.atomic():
                    self.db.execute(
                        f"UPDATE {quoted} SET {sets} WHERE ctid = CAST(? AS tid)", [*values, ctid]
                    )
                changed += 1
            except driver.IntegrityError:
                continue
        return changed

    def delete(self, table: str, where: Mapping[str, Any]) -> int:
        """Delete the rows matching ``where`` (never every row: ``where`` may not be empty)."""
        if not where:
            raise StoreError(f"a delete from {table!r} names no rows")
        condition, params = self._where(table, where)
        return int(self.db.execute(f"DELETE FROM {self._table(table)}{condition}", params).rowcount)
