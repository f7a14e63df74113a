"""The owner of entities, memory_entities: every statement that touches them.

The rules that go with an entity's row live here, written once: the strength
formula (:data:`STRENGTH`, the consolidation pass's and the Retain Job's), the
clock (:meth:`EntityRows.seen`), the retrieval boost and the outcomes. What an
entity's defaults are (its cell, half-life, multiplier) is the grid's
(``plugin_sdk/grid/entities.py``): the rows take them as given. Links from
memories to entities (``memory_entities``) are :class:`LinkRows`, reached as
``store.tables.entities.links``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

# The table's columns in its order (and ``grid.entities.Entity``'s): rows by position.
COLUMNS = (
    "id, project, name, type, subtype, memory_type, referent, status, base_strength, pinned, "
    "positive_outcomes, negative_outcomes, retrieval_count, emotional_tag, half_life_days, "
    "emotional_multiplier, strength, strength_at, cell_signal, truth_id, created_at, "
    "updated_at, last_seen_at, last_retrieved_at"
)

INFINITY = "9e999"  # SQLite reads this literal as +inf

# Strength by the formula of ``grid/strength.py`` (a property test checks they agree).
STRENGTH = f"""CASE WHEN e.pinned = 1 THEN {INFINITY} ELSE
    e.base_strength
    * pow(0.5, max(0.0, julianday(:stamp) - julianday(e.last_seen_at))
               / (e.half_life_days * (1 + 0.5 * ((e.positive_outcomes - e.negative_outcomes) * 1.0
                                                 / (e.positive_outcomes + e.negative_outcomes + 1)))))
    * (1 + 0.1 * log2(e.retrieval_count + 1))
    * e.emotional_multiplier END"""

# The consolidation pass, one id range at a time (``+project``: seek by id, see cells.py).
BATCH_END = "SELECT max(id) FROM (SELECT id FROM entities WHERE +project = ? AND id > ? ORDER BY id LIMIT ?)"
CONSOLIDATE = f"""UPDATE entities AS e SET strength = {STRENGTH}, strength_at = :stamp
    WHERE e.id > :after AND e.id <= :upto AND +e.project = :project"""

LINK = "INSERT OR IGNORE INTO memory_entities (memory_id, entity_id, role) VALUES (?, ?, ?)"
# An entity's newest live memories, by link (the link's memory id, along its index).
# The id is read from the link, the column the ORDER BY walks: PostgreSQL refuses a
# DISTINCT ordered by a column it does not select, and it is m.id by the join.
_LATEST_LIVE = """SELECT DISTINCT l.memory_id, m.normalized_hash, m.token_count FROM memory_entities l
                  JOIN memories m ON m.id = l.memory_id
                  WHERE l.entity_id = ? AND m.status IN ('active', 'pending')
                  ORDER BY l.memory_id DESC LIMIT ?"""

_INSERT = f"""INSERT INTO entities (project, name, type, subtype, memory_type, referent, status,
       base_strength, pinned, emotional_tag, half_life_days, emotional_multiplier,
       cell_signal, created_at, updated_at, last_seen_at)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
   RETURNING {COLUMNS}"""


def _marks(ids: Sequence[int]) -> str:
    return ", ".join(f":id{i}" for i in range(len(ids)))


def _named(ids: Sequence[int], stamp: str) -> dict[str, Any]:
    return {"stamp": stamp, **{f"id{i}": entity_id for i, entity_id in enumerate(ids)}}


class EntityRows:
    """Statements on entities, memory_entities; reached as ``store.tables.entities``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # Project-wide (host/projects.py, host/portable.py)

    def export_rows(self, project: str) -> Iterator[dict[str, Any]]:
        """Every entity of ``project``, by id."""
        return self.db.stream("SELECT * FROM entities WHERE project = ? ORDER BY id", [project])

    def export_links(self, project: str) -> Iterator[dict[str, Any]]:
        """The entity links of ``project``'s memories, in order."""
        return self.db.query(
            "SELECT * FROM memory_entities WHERE memory_id IN "
            "(SELECT id FROM memories WHERE project = ?) ORDER BY memory_id, entity_id, role",
            [project],
        )

    def project_counts(self) -> dict[str, int]:
        """Entities per project."""
        return dict(
            self.db.execute("SELECT project, count(*) FROM entities GROUP BY project").fetchall()
        )

    def same_names(self, source: str, target: str) -> list[tuple[int, int]]:
        """(source id, target id) of each entity of ``source`` whose name ``target`` has too
        (case aside)."""
        return self.db.execute(
            """SELECT s.id, t.id FROM entities s JOIN entities t
               ON t.project = ? AND lower(t.name) = lower(s.name) WHERE s.project = ?""",
            [target, source],
        ).fetchall()

    def delete_one(self, entity_id: int) -> None:
        """Delete one entity row (what pointed at it was repointed first)."""
        self.db.execute("DELETE FROM entities WHERE id = ?", [entity_id])

    @cached_property
    def links(self) -> LinkRows:
        """memory_entities: which memories link to which entities, in which role."""
        return LinkRows(self.store)

    # Reads.

    def by_id(self, entity_id: int) -> dict[str, Any] | None:
        """The row of an entity by id, or ``None``."""
        rows = list(self.db.query("SELECT * FROM entities WHERE id = ?", [entity_id]))
        return rows[0] if rows else None

    def by_name(self, project: str, name: str) -> dict[str, Any] | None:
        """The row of the project's entity named ``name`` (NOCASE), or ``None``."""
        rows = list(
            self.db.query(
                "SELECT * FROM entities WHERE project = ? AND name = ? COLLATE NOCASE",
                [project, name],
            )
        )
        return rows[0] if rows else None

    def by_names(self, project: str, names: Sequence[str]) -> list[tuple[Any, ...]]:
        """Rows (:data:`COLUMNS` by position) of the project's entities named in ``names``
        (NOCASE), in one query: the caller bounds ``names``."""
        return self.db.conn.execute(
            f"""SELECT {COLUMNS} FROM entities WHERE project = ?
                AND name COLLATE NOCASE IN ({", ".join("?" * len(names))})""",
            [project, *names],
        ).fetchall()

    def by_ids(self, ids: Sequence[int]) -> list[dict[str, Any]]:
        """Rows of the entities with these ids (one query; no savepoint)."""
        cursor = self.db.conn.execute(
            f"SELECT * FROM entities WHERE id IN ({', '.join('?' * len(ids))})", list(ids)
        )
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def names_with_prefix(self, project: str, prefix: str, *, limit: int = 5) -> list[str]:
        """Names of the project's entities starting with ``prefix``, in order."""
        return [
            row["name"]
            for row in self.db.query(
                "SELECT name FROM entities WHERE project = ? AND substr(name, 1, ?) = ? "
                "ORDER BY name LIMIT ?",
                [project, len(prefix), prefix, limit],
            )
        ]

    def matching(
        self, project: str, conditions: Iterable[tuple[str, list[Any]]], limit: int | None
    ) -> Iterable[dict[str, Any]]:
        """The project's rows by name, meeting every (condition, params) the grid built."""
        where: list[str] = ["project = ?"]
        params: list[Any] = [project]
        for condition, extra in conditions:
            where.append(condition)
            params += extra
        sql = f"SELECT * FROM entities WHERE {' AND '.join(where)} ORDER BY name"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return self.db.query(sql, params)

    def count(self, project: str) -> int:
        """How many entities the project has."""
        row = self.db.execute("SELECT count(*) FROM entities WHERE project = ?", [project])
        return int(row.fetchone()[0])

    def counts_by_cell(self, project: str) -> list[tuple[str, str, int]]:
        """(memory type, referent, entities) of the project's entities not archived."""
        return self.db.execute(
            "SELECT memory_type, referent, count(*) FROM entities WHERE project = ? "
            "AND status != 'archived' GROUP BY memory_type, referent",
            [project],
        ).fetchall()

    def truths(self, ids: Sequence[int]) -> list[tuple[int, int, int, str]]:
        """(entity id, truth id, version, markdown) of the current truths of these entities."""
        return self.db.conn.execute(
            f"""SELECT e.id, t.id, t.version, t.markdown FROM entities e
                JOIN compiled_truths t ON t.id = e.truth_id
                WHERE e.id IN ({", ".join("?" * len(ids))})""",
            list(ids),
        ).fetchall()

    def snapshot(self) -> list[tuple[Any, ...]]:
        """Every entity, clock-free (``retain/end_state.py``)."""
        return self.db.conn.execute(
            """SELECT id, name, type, status, half_life_days, emotional_tag,
                      emotional_multiplier FROM entities ORDER BY id"""
        ).fetchall()

    # Writes.

    def insert(
        self,
        project: str,
        name: str,
        *,
        kind: str,
        subtype: str | None,
        memory_type: str,
        referent: str,
        status: str,
        base_strength: float,
        pinned: bool,
        emotional_tag: str | None,
        half_life_days: float,
        emotional_multiplier: float,
        cell_signal: str,
        now: str,
    ) -> tuple[Any, ...]:
        """Insert an entity, its clock starting ``now``; its row (:data:`COLUMNS`)."""
        cursor = self.db.conn.execute(
            _INSERT,
            [
                project,
                name,
                kind,
                subtype,
                memory_type,
                referent,
                status,
                base_strength,
                int(pinned),
                emotional_tag,
                half_life_days,
                emotional_multiplier,
                cell_signal,
                now,
                now,
                now,
            ],
        )
        row: tuple[Any, ...] = cursor.fetchone()
        return row

    def update(
        self,
        entity_id: int,
        *,
        pinned: bool,
        emotional_tag: str | None,
        emotional_multiplier: float,
        status: str,
        memory_type: str,
        referent: str,
        cell_signal: str,
        half_life_days: float,
        now: str,
    ) -> None:
        """Write what a person may change, every field given."""
        self.db.execute(
            """UPDATE entities SET pinned = ?, emotional_tag = ?, emotional_multiplier = ?,
                   status = ?, memory_type = ?, referent = ?, cell_signal = ?,
                   half_life_days = ?, updated_at = ?
               WHERE id = ?""",
            [
                int(pinned),
                emotional_tag,
                emotional_multiplier,
                status,
                memory_type,
                referent,
                cell_signal,
                half_life_days,
                now,
                entity_id,
            ],
        )

    def set_half_life(self, entity_id: int, days: float) -> None:
        self.db.execute("UPDATE entities SET half_life_days = ? WHERE id = ?", [days, entity_id])

    def set_tag(self, entity_id: int, tag: str | None, multiplier: float, now: str) -> None:
        """A new emotional tag and the multiplier that goes with it."""
        self.db.conn.execute(
            """UPDATE entities SET emotional_tag = ?, emotional_multiplier = ?,
                   updated_at = ? WHERE id = ?""",
            [tag, multiplier, now, entity_id],
        )

    def activate(self, entity_id: int, multiplier: float, now: str) -> None:
        """Status ``active``, with the multiplier of its tag and cell."""
        self.db.conn.execute(
            """UPDATE entities SET status = 'active', emotional_multiplier = ?, updated_at = ?
               WHERE id = ?""",
            [multiplier, now, entity_id],
        )

    def activate_observed(self, project: str, observation_id: str, now: str) -> None:
        """The provisional entities an observation is about become ``active``."""
        self.db.execute(
            """UPDATE entities SET status = 'active', updated_at = ? WHERE status = 'provisional'
               AND id IN (SELECT entity_id FROM entity_observations
                          WHERE project = ? AND observation_id = ?)""",
            [now, project, observation_id],
        )

    def seen(self, ids: Sequence[int], stamp: str) -> None:
        """Seen again at ``stamp``: the decay clock restarts (one statement; ≤ 500 ids)."""
        self.db.conn.execute(
            f"UPDATE entities SET last_seen_at = :stamp, updated_at = :stamp WHERE id IN ({_marks(ids)})",
            _named(ids, stamp),
        )

    def set_strength(self, ids: Sequence[int], stamp: str) -> None:
        """Strength at ``stamp`` by :data:`STRENGTH` (one statement; ≤ 500 ids)."""
        self.db.conn.execute(
            f"""UPDATE entities AS e SET strength = {STRENGTH}, strength_at = :stamp
                WHERE e.id IN ({_marks(ids)})""",
            _named(ids, stamp),
        )

    def retrieved(self, entity_id: int, now: str) -> None:
        """One more retrieval: the boost grows, the clock does not restart."""
        self.db.execute(
            """UPDATE entities SET retrieval_count = retrieval_count + 1,
                   last_retrieved_at = :now, updated_at = :now WHERE id = :id""",
            {"now": now, "id": entity_id},
        )

    def retrieved_through(self, memory_ids: Iterable[int], now: str) -> None:
        """One more retrieval for every entity each memory links to (a memory shown)."""
        self.db.conn.executemany(
            """UPDATE entities SET retrieval_count = retrieval_count + 1,
                   last_retrieved_at = :now, updated_at = :now
               WHERE id IN (SELECT DISTINCT entity_id FROM memory_entities
                            WHERE memory_id = :memory)""",
            [{"now": now, "memory": memory_id} for memory_id in memory_ids],
        )

    def add_outcomes(self, ids: Iterable[int], *, positive: bool, now: str) -> None:
        """One more good (or bad) outcome for each entity: the reward factor moves."""
        column = "positive_outcomes" if positive else "negative_outcomes"
        self.db.conn.executemany(
            f"UPDATE entities SET {column} = {column} + 1, updated_at = ? WHERE id = ?",
            [(now, entity_id) for entity_id in ids],
        )

    def point_truths(self, pairs: Iterable[tuple[int, int]]) -> None:
        """(truth id, entity id): each entity's current Compiled Truth."""
        self.db.conn.executemany("UPDATE entities SET truth_id = ? WHERE id = ?", pairs)

    def consolidate(self, project: str, *, after: int, size: int, stamp: str) -> tuple[int, int]:
        """One batch of the consolidation pass after id ``after``: (last id, rows updated)."""
        upto = self.db.execute(BATCH_END, [project, after, size]).fetchone()[0]
        if upto is None:
            return after, 0
        params = {"stamp": stamp, "project": project, "after": after, "upto": upto}
        return int(upto), self.db.execute(CONSOLIDATE, params).rowcount


class LinkRows:
    """Statements on memory_entities; reached as ``store.tables.entities.links``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    def insert_many(self, rows: Iterable[tuple[int, int, str]]) -> None:
        """Link (memory id, entity id, role) rows; a link already there is kept."""
        self.db.conn.executemany(LINK, rows)

    def copy(self, source_id: int, target_id: int) -> None:
        """Every link of memory ``source_id`` also for ``target_id`` (a merge)."""
        self.db.execute(
            """INSERT OR IGNORE INTO memory_entities (memory_id, entity_id, role)
               SELECT ?, entity_id, role FROM memory_entities WHERE memory_id = ?""",
            [target_id, source_id],
        )

    def latest_live(self, entity_id: int, limit: int) -> list[tuple[int, str, int | None]]:
        """The newest ``limit`` active or pending memories linked to an entity, newest first:
        ``(id, normalized_hash, token_count)`` (the Retain Job's dedup window)."""
        return self.db.conn.execute(_LATEST_LIVE, [entity_id, limit]).fetchall()

    def latest_live_of_any(
        self, entity_ids: Sequence[int], limit: int
    ) -> list[tuple[int, str, int | None]]:
        """:meth:`latest_live` over several entities at once, by memory id, newest first."""
        return self.db.conn.execute(
            f"""SELECT DISTINCT m.id, m.normalized_hash, m.token_count FROM memory_entities l
                JOIN memories m ON m.id = l.memory_id
                WHERE l.entity_id IN ({", ".join("?" * len(entity_ids))})
                  AND m.status IN ('active', 'pending')
                ORDER BY m.id DESC LIMIT ?""",
            [*entity_ids, limit],
        ).fetchall()

    def entity_ids(self, memory_id: int) -> list[int]:
        """Ids of the entities a memory links to, in order."""
        return [
            row[0]
            for row in self.db.execute(
                "SELECT DISTINCT entity_id FROM memory_entities WHERE memory_id = ? "
                "ORDER BY entity_id",
                [memory_id],
            )
        ]

    def memory_ids(self, entity_id: int, role: str | None = None) -> list[int]:
        """Ids of the memories linked to an entity (in ``role``, when given), in order."""
        sql = "SELECT memory_id FROM memory_entities WHERE entity_id = ?"
        params: list[Any] = [entity_id]
        if role is not None:
            sql += " AND role = ?"
            params.append(role)
        return [row["memory_id"] for row in self.db.query(sql + " ORDER BY memory_id", params)]

    def of_memory(self, memory_id: int) -> Iterable[dict[str, Any]]:
        """A memory's links: each entity's row with its ``role``, by role and name."""
        return self.db.query(
            """SELECT l.role, e.* FROM memory_entities l JOIN entities e ON e.id = l.entity_id
               WHERE l.memory_id = ? ORDER BY l.role, e.name""",
            [memory_id],
        )

    def has_actor(self, memory_id: int) -> bool:
        """Whether a memory links to an actor entity."""
        row = self.db.execute(
            "SELECT 1 FROM memory_entities WHERE memory_id = ? AND role = 'actor' LIMIT 1",
            [memory_id],
        ).fetchone()
        return row is not None

    def names(self, memory_ids_json: str) -> list[tuple[int, int, str]]:
        """(memory id, entity id, entity name) of the memories in a JSON list of ids."""
        return self.db.execute(
            """SELECT l.memory_id, e.id, e.name FROM memory_entities l JOIN entities e
               ON e.id = l.entity_id WHERE l.memory_id IN (SELECT value FROM json_each(?))""",
            [memory_ids_json],
        ).fetchall()

    def names_in_category(self, project: str, category: str) -> list[tuple[int, str]]:
        """(memory id, entity name) of the active memories of a category."""
        return self.db.execute(
            """SELECT me.memory_id, e.name FROM memory_entities me
               JOIN entities e ON e.id = me.entity_id JOIN memories m ON m.id = me.memory_id
               WHERE m.project = ? AND m.category = ? AND m.status = 'active'""",
            [project, category],
        ).fetchall()

    def truths(self, project: str, memory_id: int) -> list[tuple[int, str, str]]:
        """(entity id, name, truth markdown) of the project's entities a memory links to
        that have a Compiled Truth, by entity id."""
        return self.db.execute(
            """SELECT e.id, e.name, t.markdown FROM memory_entities l
               JOIN entities e ON e.id = l.entity_id AND e.project = ?
               JOIN compiled_truths t ON t.id = e.truth_id
               WHERE l.memory_id = ? ORDER BY e.id""",
            [project, memory_id],
        ).fetchall()

    def acts(self, project: str, entity_id: int | None = None) -> Iterable[dict[str, Any]]:
        """(name, act, n): per actor entity, its active interaction memories by act."""
        params: list[Any] = [project]
        condition = ""
        if entity_id is not None:
            condition = " AND e.id = ?"
            params.append(entity_id)
        return self.db.query(
            f"""SELECT e.name, c.act, count(*) AS n FROM memory_entities l
                JOIN entities e ON e.id = l.entity_id
                JOIN memories m ON m.id = l.memory_id
                JOIN memory_cells c ON c.memory_id = l.memory_id
                WHERE l.role = 'actor' AND e.project = ? AND m.status = 'active'
                  AND c.act IS NOT NULL{condition}
                GROUP BY e.name, c.act ORDER BY e.name""",
            params,
        )

    def with_acts(self, project: str, actor: str, acts: Sequence[str], limit: int) -> list[int]:
        """Ids of an actor's active memories typed with one of ``acts``, the first ``limit``."""
        return [
            row[0]
            for row in self.db.execute(
                f"""SELECT l.memory_id FROM memory_entities l
                   JOIN entities e ON e.id = l.entity_id
                   JOIN memories m ON m.id = l.memory_id
                   JOIN memory_cells c ON c.memory_id = l.memory_id
                   WHERE e.project = ? AND e.name = ? AND l.role = 'actor'
                     AND c.act IN ({", ".join("?" * len(acts))})
                     AND m.status = 'active' ORDER BY l.memory_id LIMIT ?""",
                [project, actor, *acts, limit],
            ).fetchall()
        ]

    def snapshot(self) -> list[tuple[Any, ...]]:
        """Every link, in order (``retain/end_state.py``)."""
        return self.db.conn.execute(
            "SELECT memory_id, entity_id, role FROM memory_entities ORDER BY 1, 2, 3"
        ).fetchall()
