"""``copy_store``: a whole store, or one project, moved into another store without loss.

Every table of the migrated schema is copied row for row, every stored
column (generated ones aside) and every id kept, in foreign-key order, in
batches of :data:`BATCH` rows per ``executemany``, inside **one**
transaction on the destination: a failure anywhere leaves it as it was. The
source is read from one snapshot (a read transaction).

What is not copied, and why, is :data:`DERIVED`: the destination builds it
from the copied rows (the full-text index, the sqlite-vec mirror, the
injector's ranking) or it is the destination's own (its migration record).
The queues that triggers fill as rows arrive (:data:`REFILLED`) are copied
last, replacing what the destination's triggers queued, so they hold what
the source's held.

Forgotten memories travel as they are in the source: the row with its text
emptied and the tombstone in ``forgotten``, never the text (the source holds
none).

One project (``project=``): the rows of the tables with a ``project``
column, the rows that reach them through a reference (:func:`_references`:
the declared foreign keys and :data:`UNDECLARED`), and the store-wide tables
(packs, categories, criteria, grid and search settings...) that govern them.
Into a store that holds no project, those are upserted (the source's rows
win, as in a whole copy); into one that holds other projects, the rows it
lacks are added and its own kept (they govern its other projects).

A copy keeps every id, so it goes into a store where they are free: a
destination that holds the project already (or, for a whole copy, any
project) is refused before anything is written, and an id taken by another
project is refused with the rest (:class:`ProjectConflict`). ``memsdk
export`` and ``memsdk import`` renumber instead.

The SQL is plain and written once for both engines (``INSERT ... ON
CONFLICT``, double-quoted names, ``?`` marks); what differs per engine is
at the end of this module: the schema's introspection (:func:`_tables`,
:func:`_columns`, :func:`_foreign_keys`), the read snapshot
(:func:`_snapshot`), how a statement reaches the driver (:func:`_sql`,
:func:`_select`), which error is a refused row (:func:`_is_integrity`) and
what follows rows written with their own ids (:func:`_ids_taken`). The
rebuilds go through the owners (``tables.search.index_ids``,
``tables.toc.rank_ids``, ``tables.memories.pause_triggers``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import attrs

from plugin_sdk.errors import ProjectConflict, SchemaMismatch
from plugin_sdk.store import driver

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

#: Rows per ``executemany``.
BATCH = 1000

#: Tables a copy leaves out: the destination builds them, or they are its own.
DERIVED: dict[str, str] = {
    "memories_fts": "the full-text index: rebuilt from the copied memories",
    "memory_vectors_vec": (
        "the sqlite-vec mirror of memory_vectors: rebuilt by the destination's next vector sync"
    ),
    "toc_rank": "the injector's ranking: rebuilt from the copied rows (toc_rank_source)",
    "insert_triggers_paused": "empty outside a write_many transaction",
    "_sqlite_migrations": "the destination's own migration record (both are at the same schema)",
    "_memsdk_migrations": "the destination's own migration record (both are at the same schema)",
    "search_stats": "PostgreSQL's full-text corpus counts: kept by triggers as the memories arrive",
    "search_terms": "PostgreSQL's word counts: kept by triggers as the memories arrive",
    "search_postings": "PostgreSQL's postings of each word: kept by triggers as the memories arrive",
}

#: Queues that the destination's triggers fill as rows arrive: copied last,
#: keyed by memory id, replacing what the triggers queued for the copied memories.
REFILLED: tuple[str, ...] = ("neardup_dirty", "vector_changes")

#: References that the schema does not declare as foreign keys: (table, column) -> table.
UNDECLARED: dict[tuple[str, str], str] = {
    ("memories", "category"): "categories",  # by name: its insert trigger checks it
    ("composite_events", "composite_id"): "composites",
    ("reference_sets", "head_memory_id"): "memories",
    ("neardup_bands", "memory_id"): "memories",
    ("neardup_dirty", "memory_id"): "memories",
    ("vector_changes", "memory_id"): "memories",
}

#: The statuses a memory may be inserted with whatever its category (the
#: insert trigger lets a quarantined memory keep a category no pack has).
_ANY_CATEGORY = "quarantined"

Progress = Callable[[str, int], object]


@attrs.frozen
class Column:
    """A stored column: its name and its place in the primary key (0: not in it)."""

    name: str
    pk: int = 0


@attrs.frozen
class CopyReport:
    """What a copy did: rows written per table (in the order copied), and what it left out."""

    source: str
    destination: str
    project: str | None
    rows: dict[str, int]
    kept: dict[str, int]  # store-wide rows the destination had already and kept
    skipped: dict[str, str]  # table -> why it is not copied

    @property
    def total(self) -> int:
        return sum(self.rows.values())

    def to_dict(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "total": self.total}


def copy_store(
    source: Store, dest: Store, *, project: str | None = None, progress: Progress | None = None
) -> CopyReport:
    """Copy every table of ``source`` (or the rows of ``project``) into ``dest``; what was copied.

    :param progress: called after each table with its name and the rows written.
    :raises ProjectConflict: ``dest`` holds the project already (for a whole
        copy: any project), or an id of the copied rows is taken there.
        Nothing is written.
    :raises SchemaMismatch: the two stores are not at the same migrations.
    """
    if source.path == dest.path and source.path != ":memory:":
        raise ProjectConflict(f"cannot copy store {source.path} into itself")
    if source.schema_version != dest.schema_version:
        raise SchemaMismatch(
            f"cannot copy {source.path} into {dest.path}: their schemas differ "
            f"(source at {_last(source)}, destination at {_last(dest)}); "
            "open both with the same memsdk first"
        )
    tables = _plan(source, dest)
    skipped = {t: DERIVED[t] for t in _tables(source) if t in DERIVED}
    skipped.update({t: f"part of {DERIVED[v]}" for t, v in _shadows(source).items()})
    _refuse_taken(source, dest, tables, project)
    fresh = not _projects(dest, tables)
    rows: dict[str, int] = {}
    kept: dict[str, int] = {}
    with _snapshot(source), dest.atomic():
        dest.tables.memories.pause_triggers()
        keys: dict[str, set[Any]] = {}  # table -> the copied rows' ids (for what references them)
        for table in [t for t in tables if t not in REFILLED]:
            written, held = _copy_table(source, dest, table, project, keys, fresh)
            _ids_taken(dest, table)
            rows[table] = written
            if held:
                kept[table] = held
            if progress is not None:
                progress(table, written)
        memories = json.dumps(sorted(keys.get("memories", ())))
        for table in REFILLED:
            rows[table] = _refill(source, dest, table, keys.get("memories", set()))
            if progress is not None:
                progress(table, rows[table])
        dest.tables.search.index_ids(memories)
        dest.tables.toc.rank_ids(memories)
        dest.tables.memories.resume_triggers()
    return CopyReport(
        source=source.path,
        destination=dest.path,
        project=project,
        rows=rows,
        kept=kept,
        skipped=skipped,
    )


# What to copy, in which order


def _plan(source: Store, dest: Store) -> list[str]:
    """The tables to copy, parents before the rows that reference them."""
    theirs = set(_tables(dest))
    shadows = _shadows(source)
    names = [t for t in _tables(source) if t not in DERIVED and t not in shadows]
    missing = [t for t in names if t not in theirs]
    if missing:
        raise SchemaMismatch(f"store {dest.path} has no table(s) {', '.join(missing)}")
    parents = {t: {p for p in _references(source, t).values() if p != t} for t in names}
    ordered: list[str] = []
    while len(ordered) < len(names):
        left = [t for t in names if t not in ordered]
        # the first in schema order whose parents are in; a cycle: the first left
        ordered.append(next((t for t in left if parents[t] <= set(ordered)), left[0]))
    return ordered


def _references(store: Store, table: str) -> dict[str, str]:
    """The table's referencing columns: column -> the table it points into."""
    found = dict(_foreign_keys(store, table))
    for (owner, column), target in UNDECLARED.items():
        if owner == table:
            found[column] = target
    return found


def _shadows(store: Store) -> dict[str, str]:
    """Tables an engine keeps for a derived one (FTS5's and vec0's own tables) -> that one."""
    names = _tables(store)
    return {
        name: derived
        for derived in DERIVED
        for name in names
        if name != derived and name.startswith(f"{derived}_") and derived in names
    }


# Refusals, before anything is written


def _projects(store: Store, tables: Iterable[str]) -> set[str]:
    """The projects that hold any row in the store."""
    found: set[str] = set()
    for table in tables:
        if "project" in {c.name for c in _columns(store, table)}:
            found.update(
                row[0] for row in _select(store, f'SELECT DISTINCT project FROM "{table}"')
            )
    return found


def _refuse_taken(source: Store, dest: Store, tables: list[str], project: str | None) -> None:
    there = _projects(dest, tables)
    if project is None and there:
        raise ProjectConflict(
            f"store {dest.path} is not empty: it holds project(s) {', '.join(sorted(there))}; "
            "a whole-store copy goes into an empty store (or copy one project: --project NAME)"
        )
    if project is not None and project in there:
        raise ProjectConflict(
            f"store {dest.path} holds project {project!r} already; a copy never merges: "
            "delete it there first (memsdk projects delete) or copy into another store"
        )
    if project is not None and project not in _projects(source, tables):
        raise ProjectConflict(f"store {source.path} holds no project {project!r}")


# Copying one table


def _copy_table(
    source: Store,
    dest: Store,
    table: str,
    project: str | None,
    keys: dict[str, set[Any]],
    fresh: bool,
) -> tuple[int, int]:
    """Copy the table's rows (the project's, or all); (rows written, store-wide rows kept)."""
    columns = _copied(source, dest, table, keep_rowid=fresh)
    names = [c.name for c in columns]
    key = [c.name for c in sorted(columns, key=lambda c: c.pk) if c.pk]
    refs = _references(source, table)
    selves = [c for c, target in refs.items() if target == table]  # set once all rows are in
    scoped = _scope(source, table, project, refs, keys)
    # A whole copy goes into a store that holds no project: what it has (the rows a
    # new store starts with, packs it installed) gives way to the source's rows.
    # One project's store-wide rows: the same into such a store; else its own kept.
    shared = scoped is None
    insert = _insert_sql(table, names, key, upsert=shared and fresh, keep=shared and not fresh)
    fix = _fixer(dest, table, names)
    later: list[tuple[Any, ...]] = []
    written = held = 0
    ids: set[Any] = set()
    track = "id" if "id" in names else ("memory_id" if "memory_id" in names else None)
    for batch in _read(source, table, names, scoped):
        if track is not None:
            ids.update(row[names.index(track)] for row in batch)
        if selves:
            later.extend(
                (*(row[names.index(c)] for c in selves), *(row[names.index(k)] for k in key))
                for row in batch
                if any(row[names.index(c)] is not None for c in selves)
            )
            at = [names.index(c) for c in selves]
            batch = [
                _without(row, at) if any(row[i] is not None for i in at) else row for row in batch
            ]
        rows = [fix.before(row) for row in batch] if fix else batch
        count = _write(dest, table, insert, rows)
        written += len(rows) if count < 0 else count
        held += len(rows) - count if count >= 0 else 0
        if fix:
            fix.after(rows)
    if later:
        sets = ", ".join(f'"{c}" = ?' for c in selves)
        where = " AND ".join(f'"{k}" = ?' for k in key)
        _executemany(dest, table, f'UPDATE "{table}" SET {sets} WHERE {where}', later)
    keys[table] = ids
    return written, held


def _copied(source: Store, dest: Store, table: str, *, keep_rowid: bool) -> list[Column]:
    """The source's stored columns of ``table``, checked against the destination's."""
    mine = _columns(source, table)
    theirs = {c.name for c in _columns(dest, table)}
    missing = [c.name for c in mine if c.name not in theirs and c.name != "rowid"]
    if missing:
        raise SchemaMismatch(f"store {dest.path}: table {table} has no column(s) {missing}")
    # The implicit rowid keeps the order rows arrived in (the inbox is worked in
    # it); into a store that holds other projects it would collide, so the
    # destination numbers them, in the same order.
    return [c for c in mine if c.name in theirs and (c.name != "rowid" or keep_rowid)]


def _scope(
    source: Store,
    table: str,
    project: str | None,
    refs: dict[str, str],
    keys: dict[str, set[Any]],
) -> tuple[str, Any] | None:
    """How the table's rows of ``project`` are chosen: ``("project", name)``, ``(column, ids)`` or None (all)."""
    if project is None:
        return None
    if "project" in {c.name for c in _columns(source, table)}:
        return ("project", project)
    for column, target in refs.items():
        if target != table and target in keys and _scoped_table(source, target, keys):
            return (column, keys[target])
    return None


def _scoped_table(
    source: Store, table: str, keys: dict[str, set[Any]], seen: frozenset[str] = frozenset()
) -> bool:
    """Whether ``table``'s copied rows are one project's (it, or what it references, has a project)."""
    if "project" in {c.name for c in _columns(source, table)}:
        return True
    return any(
        t not in seen
        and t != table
        and t in keys
        and _scoped_table(source, t, keys, seen | {table})
        for t in _references(source, table).values()
    )


def _read(
    source: Store, table: str, names: list[str], scoped: tuple[str, Any] | None
) -> Iterator[list[tuple[Any, ...]]]:
    """The rows to copy, in batches, in key order (the order they were written)."""
    select = ", ".join(f'"{n}"' for n in names)
    stored = [c.name for c in _columns(source, table)]
    order = next((f'"{n}"' for n in ("rowid", "id") if n in stored), None)
    order = order or ", ".join(f'"{n}"' for n in stored)
    if scoped is not None and scoped[0] == "project":
        cursor = _select(
            source,
            f'SELECT {select} FROM "{table}" WHERE project = ? ORDER BY {order}',
            [scoped[1]],
            stream=True,
        )
    else:
        cursor = _select(source, f'SELECT {select} FROM "{table}" ORDER BY {order}', stream=True)
    column = None if scoped is None or scoped[0] == "project" else names.index(scoped[0])
    try:
        while True:
            batch = cursor.fetchmany(BATCH)
            if not batch:
                return
            rows = [tuple(row) for row in batch]
            if column is not None:
                rows = [row for row in rows if row[column] in scoped[1]]  # type: ignore[index]
            if rows:
                yield rows
    finally:
        cursor.close()


def _insert_sql(table: str, names: list[str], key: list[str], *, upsert: bool, keep: bool) -> str:
    """The insert: plain (a taken key is an error), upserting, or keeping the destination's row."""
    columns = ", ".join(f'"{n}"' for n in names)
    marks = ", ".join("?" for _ in names)
    sql = f'INSERT INTO "{table}" ({columns}) VALUES ({marks})'
    target = ", ".join(f'"{k}"' for k in key)
    if keep and key:
        return f"{sql} ON CONFLICT ({target}) DO NOTHING"
    if upsert and key:
        rest = [n for n in names if n not in key]
        if not rest:
            return f"{sql} ON CONFLICT ({target}) DO NOTHING"
        sets = ", ".join(f'"{n}" = excluded."{n}"' for n in rest)
        return f"{sql} ON CONFLICT ({target}) DO UPDATE SET {sets}"
    return sql


def _write(dest: Store, table: str, sql: str, rows: Sequence[tuple[Any, ...]]) -> int:
    """Write ``rows``; how many were written (-1 when the driver cannot say).

    On PostgreSQL in statements of many rows each (``VALUES (...), (...)``):
    its triggers run once a statement where they can, and one statement per
    row cost a trigger run per row (a ranking refresh per composite member).
    """
    if _is_sqlite(dest) or not rows:
        cursor = _executemany(dest, table, sql, rows)
        return cursor.rowcount if cursor.rowcount is not None else -1
    head, _, rest = sql.partition(" VALUES (")
    marks, tail = rest.split(")", 1)
    step = max(1, _MAX_PARAMS // len(rows[0]))
    written = 0
    for start in range(0, len(rows), step):
        chunk = rows[start : start + step]
        many = f"{head} VALUES {', '.join(f'({marks})' for _ in chunk)}{tail}"
        try:
            cursor = dest.db.conn.execute(_sql(dest, many), [v for row in chunk for v in row])
        except Exception as error:
            _refused(dest, table, error)
        written += cursor.rowcount
    return written


#: Parameters PostgreSQL takes in one statement (its wire protocol's count is 16 bits).
_MAX_PARAMS = 65535


def _executemany(dest: Store, table: str, sql: str, rows: Sequence[tuple[Any, ...]]) -> Any:
    try:
        return dest.db.conn.executemany(_sql(dest, sql), rows)
    except Exception as error:
        _refused(dest, table, error)


def _refused(dest: Store, table: str, error: Exception) -> NoReturn:
    """Raise ``error`` again, as :class:`ProjectConflict` when it is a refused row."""
    if not _is_integrity(dest, error):
        raise error
    raise ProjectConflict(
        f"cannot copy table {table} into store {dest.path}: {error}. A copy keeps every "
        "id: copy into a store where they are free (a new one), or move the project with "
        "memsdk export and memsdk import, which renumber"
    ) from error


def _without(row: tuple[Any, ...], at: list[int]) -> tuple[Any, ...]:
    """``row`` with the columns at ``at`` empty (set once every row is in)."""
    return tuple(None if i in at else value for i, value in enumerate(row))


@attrs.frozen
class _Fixer:
    """Rows that the destination's insert triggers would refuse, inserted in two steps."""

    before: Callable[[tuple[Any, ...]], tuple[Any, ...]]
    after: Callable[[Sequence[tuple[Any, ...]]], None]


def _fixer(dest: Store, table: str, names: list[str]) -> _Fixer | None:
    """For ``memories``: a memory whose category is not active (an archived one of a retired category).

    The insert trigger refuses it unless it is quarantined: it goes in
    quarantined and gets its own status back right after, which the update
    trigger allows for every status but active and pending.
    """
    if table != "memories":
        return None
    status, category, ident = names.index("status"), names.index("category"), names.index("id")
    active = set(dest.category_names())
    moved: dict[Any, str] = {}

    def before(row: tuple[Any, ...]) -> tuple[Any, ...]:
        if row[category] in active or row[status] == _ANY_CATEGORY:
            return row
        moved[row[ident]] = row[status]
        return (*row[:status], _ANY_CATEGORY, *row[status + 1 :])

    def after(rows: Sequence[tuple[Any, ...]]) -> None:
        back = [(moved.pop(row[ident]), row[ident]) for row in rows if row[ident] in moved]
        if back:
            _executemany(dest, table, f'UPDATE "{table}" SET "status" = ? WHERE "id" = ?', back)

    return _Fixer(before, after)


def _refill(source: Store, dest: Store, table: str, memories: set[Any]) -> int:
    """Replace what the destination's triggers queued for the copied memories with the source's queue."""
    ids = [(i,) for i in sorted(memories)]
    _executemany(dest, table, f'DELETE FROM "{table}" WHERE memory_id = ?', ids)
    names = [c.name for c in _columns(source, table)]
    rows = [row for batch in _read(source, table, names, ("memory_id", memories)) for row in batch]
    insert = _insert_sql(table, names, [], upsert=False, keep=False)
    for start in range(0, len(rows), BATCH):
        _executemany(dest, table, insert, rows[start : start + BATCH])
    return len(rows)


def _last(store: Store) -> str:
    version = store.schema_version
    return version[-1] if version else "no migration"


# The engine's introspection (SQLite here; PostgreSQL's branch goes beside it)


def _is_sqlite(store: Store) -> bool:
    return store.engine == "sqlite"


def _tables(store: Store) -> list[str]:
    """The store's tables (virtual ones and their shadow tables too), in schema order."""
    if not _is_sqlite(store):
        return [
            row[0]
            for row in store.db.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relkind = 'r' ORDER BY c.oid"
            )
        ]
    rows = store.db.conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY rowid"
    )
    return [row[0] for row in rows]


_WITHOUT_ROWID = re.compile(r"\)\s*WITHOUT\s+ROWID\s*;?\s*$", re.IGNORECASE)


def _columns(store: Store, table: str) -> list[Column]:
    """The table's stored columns (generated ones aside); ``rowid`` first when it is implicit.

    An implicit rowid (a table without an ``INTEGER PRIMARY KEY`` and not
    ``WITHOUT ROWID``) is a column of its own on PostgreSQL, named ``rowid``.
    """
    if not _is_sqlite(store):
        # Stored columns in order (the rowid counter included; a rowid generated
        # from the key, and the full-text columns, are generated: left out).
        place = dict(
            store.db.execute(
                "SELECT a.attname, k.ord FROM pg_index i "
                "JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true "
                "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
                "WHERE i.indrelid = CAST(? AS regclass) AND i.indisprimary",
                [f'"{table}"'],
            ).fetchall()
        )
        return [Column(name, int(place.get(name, 0))) for name in store.db.columns(table)]
    conn = store.db.conn
    info = conn.execute(f'PRAGMA table_xinfo("{table}")').fetchall()
    # table_xinfo: (cid, name, type, notnull, default, pk, hidden); hidden 0 is a plain column.
    columns = [Column(row[1], row[5]) for row in info if row[6] == 0]
    keys = [row for row in info if row[5]]
    alias = len(keys) == 1 and keys[0][2].upper() == "INTEGER"
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", [table]).fetchone()
    if not alias and not _WITHOUT_ROWID.search(sql or ""):
        columns.insert(0, Column("rowid"))
    return columns


def _foreign_keys(store: Store, table: str) -> list[tuple[str, str]]:
    """The table's declared foreign keys: (column, the table it references)."""
    if not _is_sqlite(store):
        return [
            (row[0], row[1])
            for row in store.db.execute(
                "SELECT a.attname, f.relname FROM pg_constraint o "
                "JOIN pg_class f ON f.oid = o.confrelid "
                "JOIN pg_attribute a ON a.attrelid = o.conrelid AND a.attnum = o.conkey[1] "
                "WHERE o.contype = 'f' AND o.conrelid = CAST(? AS regclass) ORDER BY o.conname",
                [f'"{table}"'],
            )
        ]
    rows = store.db.conn.execute(f'PRAGMA foreign_key_list("{table}")')
    # foreign_key_list: (id, seq, table, from, to, on_update, on_delete, match)
    return [(row[3], row[2]) for row in rows]


def _sql(store: Store, sql: str) -> str:
    """``sql`` (written with ``?`` marks) as the engine's driver takes it."""
    return sql


def _select(store: Store, sql: str, params: Sequence[Any] = (), *, stream: bool = False) -> Any:
    """A cursor over the rows of ``sql`` (read with ``fetchmany``, then closed).

    ``stream`` (inside :func:`_snapshot`'s transaction): on PostgreSQL a server-side
    cursor, so a table's rows come a batch at a time, as SQLite steps them, instead of
    the whole result held by the client.
    """
    conn = store.db.conn
    cursor = conn.cursor(stream=True) if stream and not _is_sqlite(store) else conn.cursor()
    cursor.execute(_sql(store, sql), list(params))
    return cursor


def _is_integrity(store: Store, error: Exception) -> bool:
    """Whether ``error`` is the engine's refusal of a row (a key taken, a constraint)."""
    return isinstance(error, driver.IntegrityError)


def _ids_taken(store: Store, table: str) -> None:
    """After rows went in with their own ids: the engine's next id follows them.

    SQLite's next ``INTEGER PRIMARY KEY`` is the largest plus one already; on
    PostgreSQL each identity sequence is moved past the largest id
    (``memsdk_reset_sequences``, ``schema/postgres.sql``).
    """
    if not _is_sqlite(store):
        store.db.execute("SELECT memsdk_reset_sequences()")


@contextmanager
def _snapshot(store: Store) -> Iterator[None]:
    """Every read of the block from one moment of the store (a read transaction)."""
    conn = store.db.conn
    if conn.in_transaction:
        yield
        return
    conn.execute(
        "BEGIN DEFERRED" if _is_sqlite(store) else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
    )
    try:
        yield
    finally:
        conn.execute("ROLLBACK")
