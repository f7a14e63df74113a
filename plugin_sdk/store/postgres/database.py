"""A PostgreSQL connection with the interface the store uses on SQLite.

:class:`Database` stands where ``sqlite_utils.Database`` stands for a SQLite
store (``execute``, ``query``, ``executescript``, ``atomic``, ``conn``), and
:class:`Connection` where SQLite's ``Connection`` does (``execute``,
``executemany``, ``cursor``, ``in_transaction``), so an owner's statement runs
on either engine unchanged (rewritten by :mod:`.dialect`). psycopg's errors
come out as the store driver's classes (``driver.IntegrityError``,
``driver.OperationalError``), so every ``except`` clause in memsdk sees them;
the PostgreSQL error code is kept as ``pgcode``.

The connection is in autocommit mode: a read outside a transaction sees the
latest commits and holds nothing. :meth:`Database.atomic` is the store's write
transaction, as on SQLite: the outermost block begins a transaction and takes
the store's write lock (a transaction-level advisory lock, keyed by the
store's schema), waiting as SQLite's ``BEGIN IMMEDIATE`` does, bounded, then
:class:`~plugin_sdk.errors.StoreBusy`; nested blocks are savepoints. So the
check-then-act sequences that are safe under SQLite's one writer are safe here
for the same reason, and readers never wait (``docs/postgres.md``,
"Concurrency").
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from plugin_sdk.errors import StoreBusy
from plugin_sdk.store import driver
from plugin_sdk.store.postgres.dialect import ArrayText, statement

#: How long a writer waits for the store's write lock per attempt, and how often.
LOCK_TIMEOUT_MS = 5000
LOCK_ATTEMPTS = 6
_STREAMS = itertools.count(1)  # names of server-side cursors, unique in the process
_LOCK = "SELECT pg_advisory_xact_lock(hashtext('memsdk:' || current_schema()))"
#: The full-text index's pending list on the store's connections (GIN's least).
PENDING_LIST_LIMIT = "64kB"


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError as error:
        raise driver.OperationalError(
            "PostgreSQL needs psycopg 3: pip install 'psycopg[binary]>=3.2' "
            "(in a memsdk checkout: pip install -e '.[postgres]')"
        ) from error
    return psycopg


def _error(error: Exception, sql: str) -> Exception:
    """psycopg's error as the store driver's class, with ``pgcode`` and the statement."""
    psycopg = _import_psycopg()
    code = getattr(error, "sqlstate", None) or ""
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    import os

    if os.environ.get("MEMSDK_PG_DEBUG"):
        message += f" [in: {sql[:300]}]"
    kind: type[Exception]
    if isinstance(error, psycopg.errors.IntegrityError) or code == "P0001":
        kind = driver.IntegrityError  # constraint or trigger abort, as SQLite's RAISE(ABORT)
    elif isinstance(error, psycopg.errors.LockNotAvailable | psycopg.errors.DeadlockDetected):
        kind = driver.OperationalError
        message = f"database is locked ({message})"
    elif isinstance(error, psycopg.errors.DataError):
        kind = driver.IntegrityError  # SQLite: "datatype mismatch"
    else:
        kind = driver.OperationalError
    converted: Any = kind(message)
    converted.pgcode = code
    converted.statement = sql[:200]
    return converted


#: Columns a row trigger sets from the row's others (m029_postgres_write_path:
#: ``memories_search_words`` sets the full-text vector and word count from the
#: text). Like generated columns they are never written: a copy or an undo
#: leaves them out and the trigger sets them again.
DERIVED_COLUMNS: dict[str, frozenset[str]] = {"memories": frozenset({"search", "search_len"})}


class Cursor:
    """The rows of one statement, as a SQLite's ``Cursor`` gives them."""

    def __init__(self, connection: Connection, raw: Any) -> None:
        self.connection = connection
        self._raw = raw
        self.row_factory: Any = None
        self._hide: int | None = None  # the position of a rowid column SQLite would not show
        self._names: list[str] | None = None  # the columns' names, read once a statement

    def execute(self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] = ()) -> Cursor:
        self._ran(self.connection._run(self._raw, sql, parameters))
        return self

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Cursor:
        self.connection._run_many(self._raw, sql, rows)
        return self

    @property
    def description(self) -> Any:
        described = self._raw.description
        if self._hide is None or described is None:
            return described
        return [column for index, column in enumerate(described) if index != self._hide]

    def _ran(self, hides_rowid: bool) -> None:
        self._hide = None
        self._names = None
        if hides_rowid:  # psycopg builds its description anew on each read: read it when needed
            described = self._raw.description
            if described is not None:
                names = [column.name for column in described]
                if "rowid" in names:
                    self._hide = names.index("rowid")

    @property
    def rowcount(self) -> int:
        return int(self._raw.rowcount)

    @property
    def lastrowid(self) -> int | None:
        """The id the last insert drew from an identity column (``lastval()``)."""
        try:
            row = self.connection.raw.execute("SELECT lastval()").fetchone()
        except Exception:
            return None
        return int(row[0]) if row else None

    def _shape(self, row: Any) -> Any:
        if row is None:
            return row
        if self._hide is not None:
            row = row[: self._hide] + row[self._hide + 1 :]
        if self.row_factory is None:
            return row
        if self._names is None:
            self._names = [column.name for column in self.description]
        return Row(self._names, row)

    def fetchone(self) -> Any:
        if self._raw.description is None:
            return None
        return self._shape(self._raw.fetchone())

    def fetchall(self) -> list[Any]:
        if self._raw.description is None:
            return []
        return [self._shape(row) for row in self._raw.fetchall()]

    def fetchmany(self, size: int = 1) -> list[Any]:
        if self._raw.description is None:
            return []
        return [self._shape(row) for row in self._raw.fetchmany(size)]

    def __iter__(self) -> Iterator[Any]:
        if self._raw.description is None:
            return iter(())
        if self._hide is None and self.row_factory is None:
            return iter(self._raw)
        return (self._shape(row) for row in self._raw)

    def close(self) -> None:
        self._raw.close()


class Row(tuple):
    """A row readable by position and by column name, as SQLite's ``Row``."""

    def __new__(cls, names: list[str], values: Sequence[Any]) -> Row:
        row = super().__new__(cls, values)
        row._names = names  # type: ignore[attr-defined]
        return row

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names.index(key))  # type: ignore[attr-defined]
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)  # type: ignore[attr-defined]


class Connection:
    """A psycopg connection behind SQLite's ``Connection``'s methods."""

    # SQLite's Connection names its module's exceptions too: the same ones here.
    Error = driver.Error
    IntegrityError = driver.IntegrityError
    OperationalError = driver.OperationalError

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    @property
    def in_transaction(self) -> bool:
        status = self.raw.info.transaction_status
        return bool(status != _import_psycopg().pq.TransactionStatus.IDLE)

    def cursor(self, *, stream: bool = False) -> Cursor:
        """A cursor; ``stream``: a server-side one, whose rows come as they are fetched
        (``fetchmany``) instead of the whole result at once. Only inside a transaction."""
        if stream:
            return Cursor(self, self.raw.cursor(name=f"memsdk_stream_{next(_STREAMS)}"))
        return Cursor(self, self.raw.cursor())

    def execute(self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] = ()) -> Cursor:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Cursor:
        return self.cursor().executemany(sql, rows)

    def executescript(self, script: str) -> Cursor:
        """Run several statements without parameters (one round trip)."""
        cursor = self.raw.cursor()
        try:
            cursor.execute(script)
        except _import_psycopg().Error as error:
            raise _error(error, script) from error
        return Cursor(self, cursor)

    def _run(self, raw: Any, sql: str, parameters: Sequence[Any] | Mapping[str, Any]) -> bool:
        named = isinstance(parameters, Mapping)
        translated = statement(sql, named)
        values = _values(parameters) if named else translated.parameters(_values(parameters))
        try:
            raw.execute(translated.text, values)
        except _import_psycopg().Error as error:
            raise _error(error, translated.text) from error
        return translated.hides_rowid

    def _run_many(self, raw: Any, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if not rows:
            return
        named = isinstance(rows[0], Mapping)
        translated = statement(sql, named)
        values = [_values(row) if named else translated.parameters(_values(row)) for row in rows]
        try:
            raw.executemany(translated.text, values)
        except _import_psycopg().Error as error:
            raise _error(error, translated.text) from error

    def commit(self) -> None:
        if self.in_transaction:
            self.raw.execute("COMMIT")

    def rollback(self) -> None:
        if self.in_transaction:
            self.raw.execute("ROLLBACK")

    def close(self) -> None:
        self.raw.close()

    @property
    def lost(self) -> bool:
        """True once the server connection is gone (a restart, a failover, a cut network)."""
        return bool(self.raw.closed or self.raw.broken)

    def create_function(self, *args: Any, **kwargs: Any) -> None:
        raise driver.OperationalError(
            "PostgreSQL runs no Python functions inside SQL: this statement needs the "
            "owner's PostgreSQL form"
        )


def _values(parameters: Any) -> Any:
    if isinstance(parameters, Mapping):
        return {key: _value(value) for key, value in parameters.items()}
    return [_value(value) for value in parameters]


def _value(value: Any) -> Any:
    # SQLite keeps booleans as integers; so does the PostgreSQL schema.
    if value is True or value is False:
        return int(value)
    if isinstance(value, memoryview):
        return bytes(value)
    return value


class Database:
    """The store's PostgreSQL database, in ``sqlite_utils.Database``'s shape."""

    engine = "postgresql"

    def __init__(self, connection: Connection, url: str) -> None:
        self.conn = connection
        self.url = url

    def execute(self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] = ()) -> Cursor:
        return self.conn.execute(sql, parameters)

    def executescript(self, script: str) -> Cursor:
        return self.conn.executescript(script)

    def query(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()
    ) -> Iterator[dict[str, Any]]:
        cursor = self.execute(sql, params)
        names = [column.name for column in cursor.description or ()]
        for row in cursor:
            yield dict(zip(names, row, strict=True))

    def stream(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any] = (), size: int = 500
    ) -> Iterator[dict[str, Any]]:
        """The rows of a long read ``size`` at a time, never the whole result in the client.

        A server-side cursor ``WITH HOLD``: the result is the statement's snapshot, kept
        by the server (spilling to disk past ``work_mem``) and fetched in batches, so
        the caller may write between them, in or out of a transaction. Closed when the
        caller stops."""
        cursor = Cursor(
            self.conn, self.conn.raw.cursor(f"memsdk_stream_{next(_STREAMS)}", withhold=True)
        )
        try:
            cursor.execute(sql, params)
            names = [column.name for column in cursor.description or ()]
            while batch := cursor.fetchmany(size):
                yield from (dict(zip(names, row, strict=True)) for row in batch)
        finally:
            if not self.conn.lost:
                cursor.close()

    def __getitem__(self, table: str) -> _Table:
        return _Table(self, table)

    def table_names(self) -> list[str]:
        return [
            name
            for (name,) in self.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' "
                "ORDER BY table_name"
            )
        ]

    def store_tables(self) -> list[str]:
        """The store's own tables, by name (those of its schema)."""
        return self.table_names()

    def foreign_keys(self, table: str) -> list[tuple[str, str]]:
        """``(column, referenced table)`` of each foreign key of ``table``."""
        return [
            (row[0], row[1])
            for row in self.execute(
                "SELECT a.attname, f.relname FROM pg_constraint o "
                "JOIN pg_class f ON f.oid = o.confrelid "
                "JOIN pg_attribute a ON a.attrelid = o.conrelid AND a.attnum = o.conkey[1] "
                "WHERE o.contype = 'f' AND o.conrelid = CAST(? AS regclass) ORDER BY o.conname",
                [f'"{table}"'],
            )
        ]

    def columns(self, table: str) -> list[str]:
        """The column names of ``table``, in order (generated and derived columns left out).

        A derived column (:data:`DERIVED_COLUMNS`) is set by a row trigger from
        the others, as a generated one is: nothing writes it.
        """
        derived = DERIVED_COLUMNS.get(table, frozenset())
        return [
            name
            for (name,) in self.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND table_name = ? "
                "AND is_generated = 'NEVER' ORDER BY ordinal_position",
                [table],
            )
            if name not in derived
        ]

    @contextmanager
    def atomic(self, *, attempts: int = LOCK_ATTEMPTS) -> Iterator[Database]:
        """One transaction holding the store's write lock; a savepoint when nested."""
        raw = self.conn.raw
        if self.conn.in_transaction:
            name = f"memsdk_{id(object()):x}"
            raw.execute(f'SAVEPOINT "{name}"')
            try:
                yield self
            except BaseException:
                if self.conn.in_transaction:
                    raw.execute(f'ROLLBACK TO SAVEPOINT "{name}"')
                    raw.execute(f'RELEASE SAVEPOINT "{name}"')
                raise
            raw.execute(f'RELEASE SAVEPOINT "{name}"')
            return
        self.begin(attempts=attempts)
        try:
            yield self
        except BaseException:
            self.conn.rollback()
            raise
        try:
            raw.execute("COMMIT")
        except _import_psycopg().Error as error:
            self.conn.rollback()
            raise _error(error, "COMMIT") from error

    def begin(self, *, attempts: int = LOCK_ATTEMPTS) -> None:
        """Begin a transaction and take the write lock, waiting (bounded) for it."""
        psycopg = _import_psycopg()
        raw = self.conn.raw
        for attempt in range(1, attempts + 1):
            raw.execute("BEGIN")
            try:
                raw.execute(f"SET LOCAL lock_timeout = {LOCK_TIMEOUT_MS:d}")
                raw.execute(_LOCK)
                raw.execute("SET LOCAL lock_timeout = 0")
                return
            except psycopg.errors.LockNotAvailable as error:
                raw.execute("ROLLBACK")
                if attempt == attempts:
                    raise StoreBusy(
                        f"the store is busy: another process held its write lock through "
                        f"{attempts} waits of {LOCK_TIMEOUT_MS / 1000:g} s; try again"
                    ) from error
                time.sleep(random.uniform(0.005, 0.05) * attempt)
            except BaseException:
                self.conn.rollback()
                raise

    def rollback(self) -> None:
        self.conn.rollback()

    def close(self) -> None:
        self.conn.close()


class _Table:
    """``db[name]`` as sqlite-utils offers it, for what the doctor asks: ``exists()``."""

    def __init__(self, db: Database, name: str) -> None:
        self.db = db
        self.name = name

    def exists(self) -> bool:
        row = self.db.execute("SELECT to_regclass(?)", [self.name]).fetchone()
        return row is not None and row[0] is not None


def connect(url: str) -> Database:
    """Open ``url`` (libpq: the password from the URL, ``PGPASSWORD`` or ``~/.pgpass``)."""
    psycopg = _import_psycopg()
    from psycopg.types.numeric import FloatLoader, Int8Dumper
    from psycopg.types.string import StrDumper, StrDumperUnknown

    try:
        raw = psycopg.connect(url, autocommit=True, application_name="memsdk")
    except psycopg.Error as error:
        raise driver.OperationalError(str(error).strip()) from error
    raw.adapters.register_loader("numeric", FloatLoader)  # avg() and friends as float, as SQLite
    # Parameters typed as SQLite's values are: every int a bigint, every str a
    # text (not "unknown", which PostgreSQL cannot type in ``? IS NULL``).
    raw.adapters.register_dumper(int, Int8Dumper)
    raw.adapters.register_dumper(str, StrDumper)
    # A list of ids (dialect.ArrayText) untyped: the server reads it as its column's array.
    raw.adapters.register_dumper(ArrayText, StrDumperUnknown)
    # No JIT: the store's statements are short, but the planner prices some
    # far above jit_above_cost (toc_rank_source's subqueries: a 1,000-row
    # ranking is costed at 700,000), and compiling one took 5 to 7 s of a
    # 7 s write_many batch on a busy machine, for a query that runs in 50 ms.
    raw.execute("SET jit = off")
    # The full-text index's pending list (store/schema/postgres_search.sql):
    # small for the store's own writes, so no read scans much of it; a batch
    # raises it for its transaction and merges it at the end (postgres/memories.py).
    raw.execute(f"SET gin_pending_list_limit = '{PENDING_LIST_LIMIT}'")
    return Database(Connection(raw), url)
