"""Memories on PostgreSQL: ``write_many``'s new rows and folds, one statement each.

On SQLite a batch's rows go in by ``executemany``: one prepared statement,
stepped once a row, with no per-statement cost. psycopg's ``executemany``
sends one statement per row, so on PostgreSQL every statement-level trigger
on ``memories`` (the corpus counts of ``search_stats``, the TOC and
near-duplicate queues: ``schema/postgres*.sql``) would fire once a row, each
with its own transition tables. Here the batch's new rows are one
``INSERT … SELECT … FROM unnest(…)`` (a column per array, in item order, so
the ids are drawn in the order ``executemany`` would draw them), and its
folds one ``UPDATE … FROM unnest(…)``: the statement triggers fire once a
batch. The columns and what a repeat does are :mod:`tables.memories`' own
(:data:`COLUMNS`, ``_REPEAT``).

The full-text index takes the batch's words in its pending list (the limit
raised to :data:`BATCH_PENDING_LIST` for the insert) and merges them once,
after it (``gin_clean_pending_list``), when the store's role owns the index
as that function requires; else the list is merged whenever it passes the
connection's limit (``schema/postgres_search.sql``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from plugin_sdk.store.postgres.database import PENDING_LIST_LIMIT
from plugin_sdk.store.tables.memories.memories import _REPEAT, COLUMNS, Key, MemoryRows

#: The pending list's limit while a batch is inserted: room for its words.
BATCH_PENDING_LIST = "16MB"
_LIMIT = "SELECT set_config('gin_pending_list_limit', ?, true)"
_MERGE = "SELECT gin_clean_pending_list('memories_search'), " + _LIMIT[len("SELECT ") :]
_OWNS_INDEX = (
    "SELECT coalesce(pg_has_role(relowner, 'USAGE'), false) FROM pg_class "
    "WHERE oid = to_regclass('memories_search')"
)

#: The type of each of :data:`COLUMNS`, in order (the arrays are cast to them).
_TYPES = (
    "text", "text", "text", "text", "text", "text", "bigint", "text", "bigint", "text",
    "text", "bigint", "text", "text", "text", "text", "text", "bigint", "bigint",
)  # fmt: skip
_NAMES = [name.strip() for name in COLUMNS.split(",")]
_ARRAYS = ", ".join(f"CAST(? AS {kind}[])" for kind in _TYPES)
_INSERT = (
    f"INSERT INTO memories ({COLUMNS}) SELECT {', '.join('u.' + n for n in _NAMES)} "
    f"FROM unnest({_ARRAYS}) WITH ORDINALITY AS u({COLUMNS}, position) ORDER BY u.position "
    "RETURNING id, project, category, normalized_hash"
)
_FOLD = (
    "UPDATE memories SET "
    + _REPEAT.format(added="f.added", seen="f.seen", occurred="f.occurred")
    + " FROM unnest(CAST(? AS bigint[]), CAST(? AS text[]), CAST(? AS text[]),"
    " CAST(? AS bigint[])) AS f(added, seen, occurred, id) WHERE memories.id = f.id"
)


class PgMemoryRows(MemoryRows):
    """:class:`MemoryRows` with the batch forms in one statement (``store.tables.memories`` on PostgreSQL)."""

    def insert_many(self, rows: Iterable[Sequence[Any]]) -> dict[Key, int] | None:
        """Insert new memories' rows (:func:`memory_row`, distinct keys), one statement; their ids by key."""
        rows = list(rows)
        if not rows:
            return {}
        if any(len(row) != len(_TYPES) for row in rows):
            raise ValueError(f"a memory row has {len(_TYPES)} columns ({COLUMNS})")
        columns = [list(values) for values in zip(*rows, strict=True)]
        conn = self.db.conn
        merge = self._owns_index()
        if merge:
            conn.execute(_LIMIT, [BATCH_PENDING_LIST])
        ids = {
            (str(project), str(category), str(digest)): int(row_id)
            for row_id, project, category, digest in conn.execute(_INSERT, columns)
        }
        if merge:
            conn.execute(_MERGE, [PENDING_LIST_LIMIT])
        return ids

    def _owns_index(self) -> bool:
        """Whether the store's role may merge the full-text index's pending list (its owner's right)."""
        owns = self.__dict__.get("_owns")
        if owns is None:
            row = self.db.conn.execute(_OWNS_INDEX).fetchone()
            owns = self.__dict__["_owns"] = bool(row and row[0])
        return bool(owns)

    def fold_many(self, folds: Iterable[tuple[int, str, str | None, int]]) -> None:
        """Fold repeats into existing rows (each id once): ``(added, now, occurred_at, id)`` each, one statement."""
        folds = list(folds)
        if folds:
            self.db.conn.execute(_FOLD, [list(values) for values in zip(*folds, strict=True)])
