"""The owner of memory_cells, grid_overrides, grid_history: every statement that touches them.

A memory's cell is written two ways: the Retain Job inserts it when the memory
is new (:meth:`CellRows.insert`, :meth:`CellRows.insert_many`, one statement
for both), and the ``classify`` task places or moves it (:meth:`CellRows.place`,
which leaves a row that already says the same alone). A store's grid
overrides and their history are :class:`OverrideRows`
(``store.tables.cells.overrides``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

from plugin_sdk.store import driver
from plugin_sdk.store.tables.grid.entities import INFINITY

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

INSERT = """INSERT INTO memory_cells (memory_id, memory_type, referent, act, signal,
               half_life_days) VALUES (?, ?, ?, ?, ?, ?)"""

# The consolidation pass: the formula of ``grid/strength.py`` with base strength 1 and no
# outcomes, the cell's half-life unless the memory has its own; the grid's cells in
# ``temp.consolidate_cells`` (:meth:`CellRows.load_grid`). ``+project``: each batch
# seeks by id (a plan that sorts the project's rows for every batch is quadratic).
BATCH_END = """SELECT max(memory_id) FROM (SELECT c.memory_id FROM memory_cells c
               JOIN memories m ON m.id = c.memory_id
               WHERE +m.project = ? AND c.memory_id > ? ORDER BY c.memory_id LIMIT ?)"""
CONSOLIDATE = f"""UPDATE memory_cells AS c SET strength = CASE WHEN m.pinned = 1 THEN {INFINITY} ELSE
        pow(0.5, max(0.0, julianday(:stamp) - julianday(m.last_seen_at)) / coalesce(c.half_life_days, g.half_life_days))
        * (1 + 0.1 * log2(m.retrieval_count + 1)) * g.emotional_multiplier END,
        strength_at = :stamp
    FROM memories AS m, temp.consolidate_cells AS g
    WHERE m.id = c.memory_id AND g.memory_type = c.memory_type AND g.referent = c.referent
      AND c.memory_id > :after AND c.memory_id <= :upto
      AND +m.project = :project AND +m.status = 'active'"""

Row = tuple[Any, ...]


class CellRows:
    """Statements on memory_cells, grid_overrides, grid_history; reached as ``store.tables.cells``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # Project-wide (host/projects.py, host/portable.py)

    def export_rows(self, project: str) -> Iterator[dict[str, Any]]:
        """The grid places of ``project``'s memories."""
        return self.db.query(
            "SELECT c.* FROM memory_cells c JOIN memories m ON m.id = c.memory_id "
            "WHERE m.project = ?",
            [project],
        )

    @cached_property
    def overrides(self) -> OverrideRows:
        """grid_overrides and grid_history."""
        return OverrideRows(self.store)

    def of_memory(self, memory_id: int) -> dict[str, Any] | None:
        """A memory's row, or ``None`` if it is not placed yet."""
        rows = list(self.db.query("SELECT * FROM memory_cells WHERE memory_id = ?", [memory_id]))
        return rows[0] if rows else None

    def half_life_of(self, memory_id: int) -> tuple[str, str, float | None] | None:
        """(memory type, referent, own half-life) of a memory placed, or ``None``."""
        row: tuple[str, str, float | None] | None = self.db.conn.execute(
            "SELECT memory_type, referent, half_life_days FROM memory_cells WHERE memory_id = ?",
            [memory_id],
        ).fetchone()
        return row

    def insert(self, row: Row) -> None:
        """A new memory's cell: (memory id, memory type, referent, act, signal, half-life)."""
        self.db.conn.execute(INSERT, row)

    def insert_many(self, rows: Iterable[Row]) -> None:
        """New memories' cells, :meth:`insert`'s rows, in one statement."""
        self.db.conn.executemany(INSERT, rows)

    def place(
        self, memory_id: int, memory_type: str, referent: str, act: str | None, signal: str
    ) -> int:
        """Place (or move) a memory on the grid; 1 if the row changed, else 0."""
        cursor = self.db.execute(
            """INSERT INTO memory_cells (memory_id, memory_type, referent, act, signal)
               VALUES (?, ?, ?, ?, ?)
               ON CONFLICT (memory_id) DO UPDATE SET memory_type = excluded.memory_type,
                   referent = excluded.referent, act = excluded.act, signal = excluded.signal
               WHERE (memory_type, referent, act, signal) IS NOT
                     (excluded.memory_type, excluded.referent, excluded.act, excluded.signal)""",
            [memory_id, memory_type, referent, act, signal],
        )
        return int(cursor.rowcount)

    def counts_by_cell(self, project: str) -> list[tuple[str, str, int]]:
        """(memory type, referent, memories) of the project's active memories placed."""
        return self.db.execute(
            """SELECT c.memory_type, c.referent, count(*) FROM memory_cells c
               JOIN memories m ON m.id = c.memory_id
               WHERE m.project = ? AND m.status = 'active' GROUP BY c.memory_type, c.referent""",
            [project],
        ).fetchall()

    def count_active(self, project: str) -> int:
        """How many of the project's active memories are placed."""
        row = self.db.execute(
            """SELECT count(*) FROM memory_cells c JOIN memories m ON m.id = c.memory_id
               WHERE m.project = ? AND m.status = 'active'""",
            [project],
        ).fetchone()
        return int(row[0])

    def snapshot(self) -> list[Row]:
        """Every cell, clock-free (``retain/end_state.py``)."""
        return self.db.conn.execute(
            """SELECT memory_id, memory_type, referent, act, signal, half_life_days
               FROM memory_cells ORDER BY memory_id"""
        ).fetchall()

    def load_grid(self, cells: Iterable[Row]) -> None:
        """The grid's (memory type, referent, half-life, multiplier) in
        ``temp.consolidate_cells``, for :meth:`consolidate`."""
        self.db.execute(
            """CREATE TEMP TABLE IF NOT EXISTS consolidate_cells (memory_type TEXT, referent TEXT,
                   half_life_days REAL, emotional_multiplier REAL, PRIMARY KEY (memory_type, referent))"""
        )
        self.db.execute("DELETE FROM temp.consolidate_cells")
        self.db.conn.executemany("INSERT INTO temp.consolidate_cells VALUES (?, ?, ?, ?)", cells)

    def consolidate(self, project: str, *, after: int, size: int, stamp: str) -> tuple[int, int]:
        """One batch of the consolidation pass after memory id ``after``: (last id, rows)."""
        upto = self.db.execute(BATCH_END, [project, after, size]).fetchone()[0]
        if upto is None:
            return after, 0
        params = {"stamp": stamp, "project": project, "after": after, "upto": upto}
        return int(upto), self.db.execute(CONSOLIDATE, params).rowcount


class OverrideRows:
    """Statements on grid_overrides, grid_history; reached as ``store.tables.cells.overrides``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    def all(self) -> dict[str, float]:
        """The store's overrides, key -> value, by key."""
        return {
            row["key"]: row["value"]
            for row in self.db.query("SELECT key, value FROM grid_overrides ORDER BY key")
        }

    def set(self, key: str, value: float, now: str) -> None:
        self.db.execute(
            """INSERT INTO grid_overrides (key, value, updated_at) VALUES (?, ?, ?)
               ON CONFLICT (key) DO UPDATE SET value = excluded.value,
                   updated_at = excluded.updated_at""",
            [key, value, now],
        )

    def delete(self, key: str) -> None:
        self.db.execute("DELETE FROM grid_overrides WHERE key = ?", [key])

    def record(
        self,
        key: str,
        source: str,
        old: float | None,
        new: float | None,
        note: str | None,
        now: str,
    ) -> None:
        """One change to a key (``source``: "override" or "reset"), in the history."""
        self.db.execute(
            """INSERT INTO grid_history (key, source, old_value, new_value, note, at)
               VALUES (?, ?, ?, ?, ?, ?)""",
            [key, source, old, new, note, now],
        )

    def history(self, key: str | None = None) -> list[dict[str, Any]]:
        """Every recorded change (of ``key``, when given), oldest first."""
        sql, params = "SELECT * FROM grid_history", []
        if key is not None:
            sql += " WHERE key = ?"
            params.append(key)
        return list(self.db.query(sql + " ORDER BY id", params))


def ensure_math(connection: driver.Connection) -> None:
    """Register ``pow``, ``log2`` and ``exp`` when SQLite was built without math functions."""
    try:
        connection.execute("SELECT pow(2, 1), log2(2), exp(0)").fetchone()
    except driver.OperationalError:
        connection.create_function("pow", 2, math.pow, deterministic=True)
        connection.create_function("log2", 1, math.log2, deterministic=True)
        connection.create_function("exp", 1, math.exp, deterministic=True)
