"""The store: one SQLite file holding memories and the policy that governs them.

``Store(path)`` opens or creates the file (a new one readable by its owner
only: 0600, in a 0700 directory), switches on WAL, a busy timeout and
foreign keys, and applies pending migrations under the write lock (see
``fence.py``). A store migrated by a newer memsdk is refused with
:class:`~plugin_sdk.errors.SchemaTooNew` before anything is written; one whose
schema does not match its migration records, with
:class:`~plugin_sdk.errors.SchemaMismatch`. Every write goes through
:meth:`Store.atomic`, whose outermost transaction takes the write lock up front
(``BEGIN IMMEDIATE``, see ``locking.py``), so writers wait for each other
instead of failing with "database is locked".
"""

from __future__ import annotations

import importlib
import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sqlite_utils import Database

from plugin_sdk.errors import StoreBusy, StoreError, UnknownCategory
from plugin_sdk.plugin.manager import PluginManager, make_plugin_manager
from plugin_sdk.store import driver, fence, postgres
from plugin_sdk.store.file import tuning
from plugin_sdk.store.locking import (
    BEGIN_ATTEMPTS,
    BUSY_TIMEOUT_MS,
    StoreDatabase,
    is_locked,
    open_database,
    retrying,
)
from plugin_sdk.store.memories import Memories
from plugin_sdk.store.models import Category
from plugin_sdk.store.paths import user_dir
from plugin_sdk.store.project import project_for
from plugin_sdk.store.tables import Tables
from plugin_sdk.store.tokens import TokenCounter, default_counter
from plugin_sdk.store.writing.pending import Pending

if TYPE_CHECKING:
    from plugin_sdk.composites.composite import Composites
    from plugin_sdk.grid.entities import Entities
    from plugin_sdk.grid.relations import Relations
    from plugin_sdk.packs.criteria import Criteria
    from plugin_sdk.packs.install import Packs
    from plugin_sdk.vectors.index import Vectors

#: Facades a plugin attaches with :func:`attach`: attribute -> ``"module:Class"``.
#: The built-in ones are explicit properties of :class:`Store`.
FACADES: dict[str, str] = {}


def attach(name: str, target: str) -> None:
    """Serve ``store.<name>`` from ``target`` (``"module:Class"``; the class takes the store).

    For a plugin's own facade; refuses a name the store already has, so two
    cannot claim one.
    """
    if name in FACADES or hasattr(Store, name):
        raise ValueError(f"store facade {name!r} is already attached")
    module, sep, attribute = target.partition(":")
    if not (module and sep and attribute):
        raise ValueError(f"facade target must be 'module:Class', got {target!r}")
    FACADES[name] = target


log = logging.getLogger("plugin_sdk.store")
_SQLITE_FULL = 13

MIN_SQLITE = (3, 35, 0)  # upserts with RETURNING
_T = TypeVar("_T")
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class Store:
    """A memsdk store.

    :param path: the SQLite file (created if missing), or ``":memory:"``.
    :param project: the default project for reads and writes; derived from the
        current directory's git repository when omitted (see ``project.py``).
    :param tokenizer: counts tokens for each memory's cached ``token_count``;
        default: the ``token_counter`` hook, else tiktoken offline.
    :param clock: returns the current time (tests inject a fixed clock).
    :param plugins: the plugin manager whose hooks the stages call; default: a
        fresh one from :func:`~plugin_sdk.plugin.manager.make_plugin_manager`.
    :param synchronous: SQLite's ``PRAGMA synchronous`` for this connection,
        ``"normal"`` (default, or ``MEMSDK_SYNCHRONOUS``), ``"full"`` or
        ``"extra"``. With WAL, ``normal`` never corrupts the file and a killed
        process loses nothing; a power loss may roll back the last commits.
        A forget commits with ``full`` (its own commit; inside a caller's transaction, the caller's).
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        project: str | None = None,
        tokenizer: TokenCounter | None = None,
        clock: Clock = utc_now,
        plugins: PluginManager | None = None,
        synchronous: str | None = None,
    ) -> None:
        self.path = str(path)
        self._closed = False
        self._opened_with = (str(path), synchronous)  # what reopened() opens again
        level = _synchronous(synchronous)
        self.clock = clock
        self._after_commit: list[Callable[[], object]] = []
        self._read_while_unchanged: dict[tuple[str, bool], tuple[tuple[int, int], list[Any]]] = {}
        self.pending = Pending()  # what reads recorded and could not write yet
        self.plugins = plugins if plugins is not None else make_plugin_manager()
        self.tokenizer: TokenCounter = (
            tokenizer or self.plugins.hook.token_counter() or default_counter()
        )
        self.engine = "postgresql" if postgres.is_url(self.path) else "sqlite"
        if self.engine == "postgresql":
            self.db = _connect_postgres(self.path)
            self.path = redacted(self.path)  # what errors and logs print: never the password
        else:
            self.db = _connect(self.path)
        try:
            if self.engine == "postgresql":
                from plugin_sdk.store.postgres import schema as pg_schema

                pg_schema.refuse_newer(self.db, self.path)
                pg_schema.migrate(self.db, self.path)
            else:
                fence.refuse_newer(self.db, self.path)
                if self.path != ":memory:":
                    _enable_wal(self.db, self.path)
                self.db.execute(f"PRAGMA synchronous = {level}")
                fence.migrate(self.db, self.path)
        except BaseException:
            self.db.close()
            raise
        self.project = project if project is not None else project_for()
        self.memories = Memories(self)
        self.tables = Tables(self)

    # The facades of the areas above the store, each built on first use. These
    # six imports are the store's only imports up the layers, named one by one
    # in pyproject.toml's import-linter contract (``ignore_imports``): any other
    # fails ``lint-imports``. They run in the body, so opening a store loads no area.

    @cached_property
    def criteria(self) -> Criteria:
        """Criteria overrides per category and scope (``packs/criteria.py``)."""
        from plugin_sdk.packs.criteria import Criteria

        return Criteria(self)

    @cached_property
    def packs(self) -> Packs:
        """Installing, updating and listing packs (``packs/install.py``)."""
        from plugin_sdk.packs.install import Packs

        return Packs(self)

    @cached_property
    def composites(self) -> Composites:
        """Composites and their fragments (``composites/composite.py``)."""
        from plugin_sdk.composites.composite import Composites

        return Composites(self)

    @cached_property
    def entities(self) -> Entities:
        """The entity grid's entities (``grid/entities.py``)."""
        from plugin_sdk.grid.entities import Entities

        return Entities(self)

    @cached_property
    def relations(self) -> Relations:
        """Relations between entities (``grid/relations.py``)."""
        from plugin_sdk.grid.relations import Relations

        return Relations(self)

    @cached_property
    def vectors(self) -> Vectors:
        """The vector index (``vectors/index.py``)."""
        from plugin_sdk.vectors.index import Vectors

        return Vectors(self)

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: build a plugin's attached facade once.
        target = FACADES.get(name)
        if target is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        module, _, attribute = target.partition(":")
        facade = getattr(importlib.import_module(module), attribute)(self)
        setattr(self, name, facade)
        return facade

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if len(self.pending) and not self.db.conn.in_transaction:
            try:
                with self._transaction(attempts=BEGIN_ATTEMPTS):
                    pass  # the records kept by reads, written now if they can be
            except (StoreBusy, driver.OperationalError) as error:
                log.warning(
                    "memsdk: %d records of reads dropped at close of store %s: %s",
                    len(self.pending),
                    self.path,
                    error,
                )
        self.db.close()
        self._closed = True

    @property
    def lost(self) -> bool:
        """True when a server engine's connection is gone: open the store again to go on.

        A SQLite file's connection is never lost. A PostgreSQL one is after a
        server restart or failover; the statement that met it raised
        ``OperationalError``, and every later one would.
        """
        return self.engine == "postgresql" and self.db.conn.lost

    def reopened(self) -> Store:
        """A new store on the same database, project and options; this one is closed.

        For a :attr:`lost` connection: the new store connects again (with the
        URL's password, which :attr:`path` does not show). What this store's
        reads had kept for writing is carried over.
        """
        location, synchronous = self._opened_with
        with suppress(Exception):  # a lost connection may not close cleanly
            self.db.close()
        self._closed = True
        again = Store(
            location,
            project=self.project,
            tokenizer=self.tokenizer,
            clock=self.clock,
            plugins=self.plugins,
            synchronous=synchronous,
        )
        again.pending = self.pending
        return again

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran: the store reads and writes nothing more."""
        return self._closed

    def vacuum(self) -> None:
        """Leave no freed page holding deleted text (see ``forget.vacuum``)."""
        from plugin_sdk.store.forget import vacuum

        vacuum(self)

    @property
    def schema_version(self) -> list[str]:
        """Names of the migrations applied to this store, in order."""
        if self.engine == "postgresql":
            from plugin_sdk.store.postgres import schema as pg_schema

            return pg_schema.applied(self.db)
        return fence.applied(self.db)

    @contextmanager
    def atomic(self) -> Iterator[Database]:
        """One transaction (a savepoint when nested): all or nothing.

        The outermost one begins ``IMMEDIATE``: it waits (bounded, see
        ``locking.py``) for the write lock before its body runs, and raises
        :class:`~plugin_sdk.errors.StoreBusy` if another process kept it
        through every wait. Reads need no transaction and never wait for it.

        Callbacks registered with :meth:`after_commit` run when the outermost
        transaction commits; those registered inside a block that rolls back
        (the whole transaction, or a nested savepoint) are discarded with it.
        """
        with self._transaction(BEGIN_ATTEMPTS) as db:
            yield db

    @contextmanager
    def savepoint(self, name: str = "memsdk_savepoint") -> Iterator[None]:
        """A savepoint inside the open transaction: its writes and its events roll back together.

        The same guarantee as a nested :meth:`atomic`, in three plain
        statements on the connection (for loops that open one per item, such
        as the Retain Job's one per observation). Raises :class:`StoreError`
        outside a transaction.
        """
        conn = self.db.conn
        if not conn.in_transaction:
            raise StoreError("savepoint() runs inside a transaction: open one with store.atomic()")
        mark = len(self._after_commit)
        conn.execute(f"SAVEPOINT [{name}]")
        try:
            yield
        except BaseException:
            del self._after_commit[mark:]
            if conn.in_transaction:  # SQLite may have rolled back everything already (disk full)
                conn.execute(f"ROLLBACK TO [{name}]")
                conn.execute(f"RELEASE [{name}]")
            raise
        conn.execute(f"RELEASE [{name}]")

    @contextmanager
    def _transaction(self, attempts: int) -> Iterator[Database]:
        outermost = not self.db.conn.in_transaction
        mark = len(self._after_commit)
        restore: Callable[[], None] | None = None
        try:
            with self.db.atomic(attempts=attempts) as db:
                if outermost and (len(self.pending) or self.pending.dropped):
                    restore = self.pending.flush(self.db.conn, self.now())
                yield db
        except BaseException:
            del self._after_commit[mark:]  # all of them when it was the outermost
            if restore is not None:
                restore()  # the records kept by reads, kept again
            raise
        if outermost:
            self._run_after_commit()

    def record(self, write: Callable[[], object], *, what: str) -> bool:
        """Run ``write``, what a read records (retrieval counts, a session's last injection).

        It runs in a short transaction of its own, after the read, waiting for
        the write lock as a write does, and never fails the read: when the lock
        stays taken through every wait, the snapshot is stale, the disk is full
        or the file is read-only, the record is kept and written with this
        connection's next successful write (``store/writing/pending.py``; ``memsdk
        doctor`` counts records written late or dropped). Inside an open
        transaction it is part of that transaction. Returns whether it was
        written now.
        """
        if self.db.conn.in_transaction:
            write()
            return True
        try:
            with self._transaction(attempts=BEGIN_ATTEMPTS):
                write()
        except (StoreBusy, driver.OperationalError) as error:
            if isinstance(error, driver.OperationalError) and not _unwritable(error):
                raise
            self.pending.keep(what, write)
            log.warning(
                "memsdk: %s kept, to be recorded with the next write to store %s: %s",
                what,
                self.path,
                error,
            )
            return False
        return True

    def after_commit(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` once the current transaction commits (now, if none is open).

        Store events (``memory_written`` and friends) fire this way, so a
        listener always sees committed data and its errors cannot undo a write.
        """
        if self.db.conn.in_transaction:
            self._after_commit.append(callback)
        else:
            callback()

    def _run_after_commit(self) -> None:
        pending, self._after_commit = self._after_commit, []
        for callback in pending:
            callback()

    def now(self) -> str:
        """The current time as an ISO 8601 UTC string, from the store's clock."""
        return self.clock().astimezone(timezone.utc).isoformat(timespec="microseconds")

    # Categories come from the DB: the DB is the authority. A read is kept only
    # while nothing can have changed them since (see _unchanged).

    def categories(self, *, include_retired: bool = False) -> list[Category]:
        """Categories in priority order (then name), with effective criteria."""
        return self._unchanged(
            ("categories", include_retired),
            lambda: self.tables.packs.categories(include_retired=include_retired),
        )

    def category_names(self, *, include_retired: bool = False) -> list[str]:
        """Names of the active categories (or all), in priority order."""
        return self._unchanged(
            ("names", include_retired),
            lambda: self.tables.packs.category_names(include_retired=include_retired),
        )

    def _unchanged(self, key: tuple[str, bool], read: Callable[[], list[_T]]) -> list[_T]:
        """``read()``, or the list it gave last if no write can have happened since.

        On SQLite, outside a transaction: ``PRAGMA data_version`` moves when
        another connection commits and ``total_changes`` when this one writes
        (a write rolled back too), so equal marks mean the same rows. Inside
        a transaction, and on PostgreSQL (no such marks), every call reads.
        Classify asks for a memory's category several times a memory: kept,
        classify on 10,000 memories took a fifth less time (docs/benchmarks.md).
        The list is a new one each call; the ``Category`` objects in it are
        shared until the next write, so treat them (frozen, with their
        criteria) as read-only.
        """
        if self.db.conn.in_transaction or self.engine != "sqlite":
            return read()
        marks = tuning.change_marks(self.db)
        held = self._read_while_unchanged.get(key)
        if held is not None and held[0] == marks:
            return list(held[1])
        value = read()
        self._read_while_unchanged[key] = (marks, value)
        return list(value)

    def category(self, name: str, *, where: str = "") -> Category:
        """One active category; :class:`UnknownCategory` lists the others."""
        for category in self.categories():
            if category.name == name:
                return category
        raise self.unknown_category(name, where=where)

    def renamed_to(self, name: str) -> str | None:
        """The active category a retired category was renamed to (following renames), if any."""
        return self.tables.packs.renamed_to(name)

    def unknown_category(self, name: str, *, where: str = "") -> UnknownCategory:
        """The error for a category the store does not have: its categories, any rename."""
        return UnknownCategory(
            name, self.category_names(), where=where, renamed_to=self.renamed_to(name)
        )


def redacted(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for errors, logs and ``store.path``).

    libpq takes the password from the user part (``user:password@``) or from
    a ``password=`` parameter; both are hidden.
    """
    url = re.sub(r"(://[^:/@?#]*:)[^@/?#]*@", r"\1***@", url)
    return re.sub(r"([?&]password=)[^&#]*", r"\1***", url)


def _connect_postgres(url: str) -> Any:
    """Open a PostgreSQL store's connection (the ``postgres`` extra)."""
    from plugin_sdk.store.postgres.database import connect

    try:
        return connect(url)
    except driver.OperationalError as error:
        raise StoreError(f"cannot open store {redacted(url)}: {redacted(str(error))}") from error


def _connect(path: str) -> StoreDatabase:
    """Open the file with the store's pragmas (WAL is switched on before migrating)."""
    if driver.sqlite_version_info < MIN_SQLITE:
        raise StoreError(
            f"memsdk needs SQLite {'.'.join(map(str, MIN_SQLITE))} or newer; "
            f"this Python has {driver.sqlite_version}"
        )
    db = None
    try:
        if path != ":memory:":
            _create_private(Path(path).expanduser())
        db = open_database(path)
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        db.execute("PRAGMA foreign_keys = ON")
        db.execute(f"PRAGMA cache_size = {-CACHE_KIB:d}")
        db.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES:d}")
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (driver.DatabaseError, OSError) as error:
        if db is not None:
            db.close()
        raise StoreError(f"cannot open store {path}: {error}") from error
    return db


#: The connection's page cache, in KiB (SQLite's default is 2,000 KiB). It is a
#: ceiling, filled as pages are read: a small store uses little of it. A bulk
#: write into a store of 100,000 memories touches more index pages than the
#: default holds (``docs/benchmarks.md``, "Store").
CACHE_KIB = 65536

#: WAL pages after which a commit checkpoints (SQLite's default is 1,000, about
#: 4 MiB). Each checkpoint copies the log into the file and syncs it; a page
#: rewritten by many commits in between is copied once. The log grows to about
#: 40 MiB before it is reused, and SQLite removes it when the last connection
#: closes.
CHECKPOINT_PAGES = 10000

#: ``Store(synchronous=...)`` / ``MEMSDK_SYNCHRONOUS``: SQLite's levels the store accepts.
SYNCHRONOUS = ("normal", "full", "extra")
SYNCHRONOUS_ENV = "MEMSDK_SYNCHRONOUS"


def _synchronous(given: str | None) -> str:
    """The ``PRAGMA synchronous`` level: ``given``, else the environment's, else ``normal``.

    In WAL mode ``normal`` syncs the log at checkpoints, not at every commit:
    a crash of the process loses nothing and no setting corrupts the file,
    but the last commits before a power loss or an OS crash may roll back.
    ``full`` syncs every commit (a few ms each on a typical disk).
    """
    value = given if given is not None else os.environ.get(SYNCHRONOUS_ENV) or "normal"
    if value.lower() not in SYNCHRONOUS:
        where = "synchronous=" if given is not None else f"{SYNCHRONOUS_ENV}="
        raise StoreError(
            f"{where}{value!r} is not a synchronous level; use one of {', '.join(SYNCHRONOUS)}"
        )
    return value.upper()


def _unwritable(error: driver.OperationalError) -> bool:
    """Busy, stale snapshot, read-only file or full disk: the write waits for later."""
    message = str(error)
    full = getattr(error, "sqlite_errorcode", 0) & 0xFF == _SQLITE_FULL or "disk is full" in message
    return is_locked(error) or full or "readonly" in message or "read-only" in message


def _enable_wal(db: Database, path: str) -> None:
    # Many processes may switch a new file to WAL at once: the switch needs a
    # moment alone with the file, so a busy answer is waited out, bounded.
    try:
        retrying(db.enable_wal)
    except driver.OperationalError as error:
        raise StoreError(f"cannot open store {path}: {error}") from error


def _create_private(path: Path) -> None:
    """A new store is readable by its owner only: the file 0600, new directories 0700.

    SQLite gives the ``-wal`` and ``-shm`` files the main file's mode. memsdk's
    own user directory is made 0700 even when it exists; other directories
    that exist are left as they are, and so is an existing store file.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.parent.resolve() == user_dir().resolve():
        os.chmod(path.parent, 0o700)
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
