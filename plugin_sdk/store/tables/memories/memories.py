"""The owner of memories, forgotten, memory_outcomes, insert_triggers_paused: every statement that touches them.

A memory's row is written by one statement set, whatever the path: its
columns (:data:`COLUMNS`, built by :func:`memory_row`) and what a repeat of
its key does (:data:`_REPEAT`: one more sighting, the latest time seen, the
first ``occurred_at`` given) are written once here. The single write
(``Memories.write``, ``write_here``, ``quarantine``, the Retain Job's paused
writes) runs them as one upsert (:meth:`MemoryRows.upsert`); ``write_many``
as one ``INSERT`` per new row and one ``UPDATE`` per folded row, each an
``executemany`` (:meth:`MemoryRows.insert_many`, :meth:`MemoryRows.fold_many`;
on PostgreSQL one statement each, ``postgres/memories.py``).

The reads the areas make over memories are in ``memory_reads.py`` (reached
through the same object). Writes are made inside the caller's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from plugin_sdk.store.tables.memories.memory_reads import MemoryReads

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

#: The columns a new memory's row is written with, in :func:`memory_row`'s order.
COLUMNS = (
    "project, kind, category, content, normalized_hash, status, importance, scope, "
    "shareable, source, note, token_count, tokenizer, created_at, updated_at, last_seen_at, "
    "occurred_at, seen_count, batch"
)
_INSERT = f"INSERT INTO memories ({COLUMNS}) VALUES ({', '.join('?' * 19)})"

# What a repeat of a key does to its row: the upsert's ``DO UPDATE`` and the batch's fold.
_REPEAT = (
    # Qualified: in an upsert PostgreSQL reads a bare name as ambiguous (row or excluded).
    "seen_count = memories.seen_count + {added}, last_seen_at = {seen}, "
    "occurred_at = coalesce(memories.occurred_at, {occurred})"
)
_UPSERT = (
    _INSERT
    + " ON CONFLICT (project, category, normalized_hash) DO UPDATE SET "
    + _REPEAT.format(added="1", seen="excluded.last_seen_at", occurred="excluded.occurred_at")
    + " RETURNING id, seen_count, status"
)
_FOLD = "UPDATE memories SET " + _REPEAT.format(added="?", seen="?", occurred="?") + " WHERE id = ?"

Key = tuple[str, str, str]  # (project, category, normalized hash)


def memory_row(
    project: str,
    kind: str,
    category: str,
    text: str,
    digest: str,
    status: str,
    importance: int,
    scope: str,
    shareable: int,
    source: str,
    note: str | None,
    token_count: int | None,
    tokenizer: str | None,
    now: str,
    occurred: str | None,
    seen: int = 1,
    batch: int | None = None,
) -> tuple[Any, ...]:
    """A new memory's row, as :meth:`MemoryRows.upsert` and :meth:`MemoryRows.insert_many` take it."""
    return (
        project,
        kind,
        category,
        text,
        digest,
        status,
        importance,
        scope,
        shareable,
        source,
        note,
        token_count,
        tokenizer,
        now,
        now,
        now,
        occurred,
        seen,
        batch,
    )


class MemoryRows(MemoryReads):
    """Statements on memories, forgotten, memory_outcomes, insert_triggers_paused; reached as ``store.tables.memories``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # Project-wide (host/projects.py, host/portable.py)

    def export_rows(self, project: str) -> Iterator[dict[str, Any]]:
        """Every memory of ``project``, of every status, by id."""
        return self.db.stream("SELECT * FROM memories WHERE project = ? ORDER BY id", [project])

    def export_forgotten(self, project: str) -> Iterator[dict[str, Any]]:
        """The tombstones of ``project``'s forgotten memories, by memory id."""
        return self.db.query(
            "SELECT * FROM forgotten WHERE project = ? ORDER BY memory_id", [project]
        )

    def packs_used(self, project: str) -> set[str]:
        """The packs whose categories the project's memories use."""
        return {
            row[0]
            for row in self.db.execute(
                "SELECT DISTINCT c.pack FROM memories m JOIN categories c ON c.name = m.category "
                "WHERE m.project = ?",
                [project],
            )
        }

    def relink(self, memory_id: int, successor: int | None, merged_from: str | None) -> None:
        """Set an imported memory's ``superseded_by`` and ``merged_from`` (ids already mapped)."""
        self.db.execute(
            "UPDATE memories SET superseded_by = ?, merged_from = ? WHERE id = ?",
            [successor, merged_from, memory_id],
        )

    def project_counts(self) -> list[tuple[str, str, int, str | None]]:
        """(project, status, memories, latest updated_at) for every project and status."""
        return self.db.execute(
            """SELECT project, status, count(*), max(updated_at) FROM memories
               GROUP BY project, status"""
        ).fetchall()

    def repeats_between(self, source: str, target: str) -> list[tuple[int, int]]:
        """(source id, target id) of each memory of ``source`` that ``target`` holds too
        (same category, same normalized text), by source id."""
        return self.db.execute(
            """SELECT s.id, t.id FROM memories s JOIN memories t
               ON t.project = ? AND t.category = s.category AND t.normalized_hash = s.normalized_hash
               WHERE s.project = ? ORDER BY s.id""",
            [target, source],
        ).fetchall()

    def add_seen(self, source_id: int, target_id: int) -> None:
        """Add memory ``source_id``'s seen count to ``target_id``'s (a fold, as a repeat would)."""
        self.db.execute(
            """UPDATE memories SET seen_count = seen_count +
               (SELECT seen_count FROM memories WHERE id = ?) WHERE id = ?""",
            [source_id, target_id],
        )

    def delete_one(self, memory_id: int) -> None:
        """Delete one memory row (what pointed at it was repointed first)."""
        self.db.execute("DELETE FROM memories WHERE id = ?", [memory_id])

    def unlink_successors(self, project: str) -> None:
        """Clear ``superseded_by`` on the project's memories (before they are deleted)."""
        self.db.execute("UPDATE memories SET superseded_by = NULL WHERE project = ?", [project])

    # Used by the store layer: writing (store/memories.py, store/writing/).

    def upsert(self, row: Sequence[Any]) -> tuple[int, int, str]:
        """Write one memory's row (:func:`memory_row`) or fold it into its key's: ``(id, seen_count, status)``."""
        found = self.db.conn.execute(_UPSERT, row).fetchone()
        return int(found[0]), int(found[1]), str(found[2])

    def insert_many(self, rows: Iterable[Sequence[Any]]) -> dict[Key, int] | None:
        """Insert new memories' rows (:func:`memory_row`), one ``executemany``.

        Returns the new ids by key where the engine gives them back from the
        same statement (PostgreSQL: ``postgres/memories.py``), else ``None``
        (SQLite: the caller finds them).
        """
        self.db.conn.executemany(_INSERT, rows)
        return None

    def fold_many(self, folds: Iterable[tuple[int, str, str | None, int]]) -> None:
        """Fold repeats into existing rows: ``(added, now, occurred_at, id)`` each, as the upsert does."""
        self.db.conn.executemany(_FOLD, folds)

    def pause_triggers(self) -> None:
        """Pause the per-row insert triggers of ``memories`` (inside the caller's transaction)."""
        self.db.conn.execute("INSERT INTO insert_triggers_paused (id) VALUES (1)")

    def resume_triggers(self) -> None:
        """Let the insert triggers run again."""
        self.db.conn.execute("DELETE FROM insert_triggers_paused")

    def max_id(self) -> int:
        """The largest memory id (0 for none)."""
        (found,) = self.db.conn.execute("SELECT coalesce(max(id), 0) FROM memories").fetchone()
        return int(found)

    def next_batch(self) -> int:
        """A batch label no rows have yet: one past the largest (from the partial index),
        else one below the least. Only equality matters (``search/episodes.py``): two rows
        share a label when one ``write_many`` call wrote both. Ids are no label: at
        SQLite's largest rowid they are picked at random."""
        high, low = self.db.conn.execute(
            "SELECT max(batch), min(batch) FROM memories WHERE batch IS NOT NULL"
        ).fetchone()
        if high is None:
            return 1
        return int(high) + 1 if high < _MAX_INTEGER else int(low) - 1

    def ids_after(self, before: int) -> tuple[int | None, int]:
        """``(max(id), count)`` of the memories with an id above ``before``."""
        last, added = self.db.conn.execute(
            "SELECT max(id), count(*) FROM memories WHERE id > ?", [before]
        ).fetchone()
        return last, int(added)

    def by_keys(self, keys: Iterable[Key], chunk: int) -> dict[Key, tuple[int, int, str]]:
        """``key -> (id, seen_count, status)`` of the rows that exist, one query per group and chunk."""
        groups: dict[tuple[str, str], set[str]] = {}
        for project, category, digest in keys:
            groups.setdefault((project, category), set()).add(digest)
        found: dict[Key, tuple[int, int, str]] = {}
        conn = self.db.conn
        for (project, category), digests in groups.items():
            ordered = sorted(digests)
            for start in range(0, len(ordered), chunk):
                part = ordered[start : start + chunk]
                marks = ", ".join("?" * len(part))
                for digest, row_id, seen, status in conn.execute(
                    f"""SELECT normalized_hash, id, seen_count, status FROM memories
                        WHERE project = ? AND category = ? AND normalized_hash IN ({marks})""",
                    [project, category, *part],
                ):
                    found[(project, category, digest)] = (row_id, seen, status)
        return found

    def forgotten_id(self, project: str, digest: str) -> int | None:
        """The memory whose text of this hash was forgotten in the project (not undone), or ``None``."""
        row = self.db.conn.execute(
            """SELECT memory_id FROM forgotten
               WHERE project = ? AND normalized_hash = ? AND undone_at IS NULL""",
            [project, digest],
        ).fetchone()
        return None if row is None else int(row[0])

    def forgotten_ids(
        self, digests: Mapping[str, Iterable[str]], chunk: int
    ) -> dict[tuple[str, str], int]:
        """``(project, hash) -> memory_id`` of the forgotten texts among ``digests`` (by project), first id kept."""
        forgotten: dict[tuple[str, str], int] = {}
        conn = self.db.conn
        for project, wanted in digests.items():
            ordered = sorted(wanted)
            for start in range(0, len(ordered), chunk):
                part = ordered[start : start + chunk]
                marks = ", ".join("?" * len(part))
                for digest, memory_id in conn.execute(
                    f"""SELECT normalized_hash, memory_id FROM forgotten
                        WHERE project = ? AND normalized_hash IN ({marks}) AND undone_at IS NULL
                        ORDER BY memory_id""",
                    [project, *part],
                ):
                    forgotten.setdefault((project, digest), memory_id)
        return forgotten

    def any_forgotten(self, project: str) -> bool:
        """Whether any text of the project is forgotten (and not undone)."""
        row = self.db.conn.execute(
            "SELECT 1 FROM forgotten WHERE project = ? AND undone_at IS NULL LIMIT 1", [project]
        ).fetchone()
        return row is not None

    # Used by the store layer: reading and changing (store/memories.py).

    def by_id(self, memory_id: int) -> dict[str, Any] | None:
        """A memory's row by id, or ``None``."""
        rows = list(self.db.query("SELECT * FROM memories WHERE id = ?", [memory_id]))
        return rows[0] if rows else None

    def by_ids(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The rows of these memories, by id (the ones that exist)."""
        return {
            row["id"]: row
            for row in self.db.query(
                "SELECT * FROM memories WHERE id IN (SELECT value FROM json_each(?))",
                [json.dumps(list(ids))],
            )
        }

    def by_key(self, project: str, category: str, digest: str) -> dict[str, Any] | None:
        """The row of a key (any status), or ``None``."""
        rows = list(
            self.db.query(
                """SELECT * FROM memories WHERE project = ? AND category = ?
                   AND normalized_hash = ?""",
                [project, category, digest],
            )
        )
        return rows[0] if rows else None

    def clash(self, project: str, category: str, digest: str, memory_id: int) -> int | None:
        """Another memory of the key than ``memory_id``, or ``None``."""
        row = self.db.execute(
            """SELECT id FROM memories WHERE project = ? AND category = ?
               AND normalized_hash = ? AND id != ?""",
            [project, category, digest, memory_id],
        ).fetchone()
        return None if row is None else int(row[0])

    def select(
        self, where: str, order: str, params: Sequence[Any], paged: bool
    ) -> Iterable[dict[str, Any]]:
        """Rows matching ``where`` (the caller's conditions, values bound) in ``order``; ``paged``: ``LIMIT ? OFFSET ?`` follow."""
        sql = f"SELECT * FROM memories WHERE {where} ORDER BY {order}"
        if paged:
            return self.db.query(sql + " LIMIT ? OFFSET ?", params)
        return self.db.stream(sql, params)  # a whole project's rows: a batch at a time

    def count(self, project: str, status: str) -> int:
        """How many memories of a project have a status (read from an index)."""
        row = self.db.execute(
            "SELECT count(*) FROM memories WHERE project = ? AND status = ?", [project, status]
        ).fetchone()
        return int(row[0])

    def counts(self, project: str) -> Iterable[tuple[str, str, int]]:
        """``(category, status, n)`` of a project's memories."""
        return self.db.execute(
            """SELECT category, status, count(*) AS n FROM memories
               WHERE project = ? GROUP BY category, status""",
            [project],
        ).fetchall()

    def set_columns(self, memory_id: int, changes: Mapping[str, Any]) -> None:
        """Set these columns of a memory (names from the caller's code, values bound)."""
        assignments = ", ".join(f"{column} = ?" for column in changes)
        self.db.execute(
            f"UPDATE memories SET {assignments} WHERE id = ?", [*changes.values(), memory_id]
        )

    def supersede(self, source_id: int, target_id: int, now: str) -> None:
        """Fold one memory into another: the target gains its seen count and id, the source is superseded."""
        source = self.db.execute(
            "SELECT seen_count FROM memories WHERE id = ?", [source_id]
        ).fetchone()
        merged = self.db.execute(
            "SELECT merged_from FROM memories WHERE id = ?", [target_id]
        ).fetchone()[0]
        ids = sorted({*json.loads(merged or "[]"), source_id})
        self.db.execute(
            """UPDATE memories SET seen_count = seen_count + ?, merged_from = ?, updated_at = ?
               WHERE id = ?""",
            [source[0], json.dumps(ids), now, target_id],
        )
        self.db.execute(
            """UPDATE memories SET status = 'superseded', superseded_by = ?, updated_at = ?
               WHERE id = ?""",
            [target_id, now, source_id],
        )

    def archive(self, memory_id: int, status: str, now: str) -> None:
        """Archive a memory that still has ``status``."""
        self.db.execute(
            """UPDATE memories SET status = 'archived', archived_at = ?, updated_at = ?
               WHERE id = ? AND status = ?""",
            [now, now, memory_id, status],
        )

    def count_retrievals(self, ids: Iterable[int], now: str) -> None:
        """One more retrieval for each memory (each id once), one ``executemany``."""
        self.db.conn.executemany(
            """UPDATE memories SET retrieval_count = retrieval_count + 1, last_retrieved_at = ?
               WHERE id = ?""",
            [(now, memory_id) for memory_id in ids],
        )

    def add_outcome(
        self, project: str, memory_id: int, good: bool, source: str, note: str | None, at: str
    ) -> None:
        """Record that a memory helped (``good``) or misled."""
        self.db.execute(
            """INSERT INTO memory_outcomes (project, memory_id, good, source, note, at)
               VALUES (?, ?, ?, ?, ?, ?)""",
            [project, memory_id, int(good), source, note, at],
        )

    def outcome_counts(self, memory_id: int) -> tuple[int, int]:
        """How many good and bad outcomes were reported for a memory."""
        row = self.db.execute(
            "SELECT coalesce(sum(good), 0), coalesce(sum(1 - good), 0) FROM memory_outcomes "
            "WHERE memory_id = ?",
            [memory_id],
        ).fetchone()
        return int(row[0]), int(row[1])

    # Used by the store layer: forgetting (store/forget/).

    def contents(self, ids: Sequence[int]) -> list[str]:
        """The texts of these memories."""
        return [
            str(row[0])
            for row in self.db.execute(
                f"SELECT content FROM memories WHERE id IN ({', '.join('?' for _ in ids)})", ids
            )
        ]

    def to_forget(self, memory_id: int) -> tuple[Any, ...] | None:
        """``(id, project, scope, shareable, category, content, normalized_hash)`` of a memory, or ``None``."""
        row = self.db.execute(
            "SELECT id, project, scope, shareable, category, content, normalized_hash "
            "FROM memories WHERE id = ?",
            [memory_id],
        ).fetchone()
        return None if row is None else tuple(row)

    def forget(
        self,
        memory_id: int,
        project: str,
        category: str,
        digest: str,
        reason: str,
        mark: str,
        now: str,
    ) -> None:
        """Tombstone a memory's hash and empty its row (its hash becomes ``mark``)."""
        self.db.execute(
            """INSERT INTO forgotten (memory_id, project, category, normalized_hash, reason,
                   forgotten_at) VALUES (?, ?, ?, ?, ?, ?)
               ON CONFLICT (memory_id) DO UPDATE SET normalized_hash = excluded.normalized_hash,
                   reason = excluded.reason, forgotten_at = excluded.forgotten_at,
                   undone_at = NULL""",
            [memory_id, project, category, digest, reason, now],
        )
        self.db.execute(
            """UPDATE memories SET content = '', normalized_hash = ?, status = 'archived',
                   archived_at = COALESCE(archived_at, ?), updated_at = ?, token_count = 0,
                   note = NULL, pinned = 0, shareable = 0, scope = 'project'
               WHERE id = ?""",
            [mark, now, now, memory_id],
        )

    def holding(self, project: str, text: str, memory_id: int) -> list[int]:
        """Ids of the project's other memories whose text holds ``text``."""
        return [
            int(row[0])
            for row in self.db.execute(
                "SELECT id FROM memories WHERE project = ? AND id != ? AND instr(content, ?) > 0 "
                "ORDER BY id",
                [project, memory_id, text],
            )
        ]

    def texts_not_like(self, project: str, not_like: str) -> Iterable[tuple[int, str]]:
        """``(id, content)`` of the project's memories whose hash is not like ``not_like``, by id."""
        return self.db.execute(
            "SELECT id, content FROM memories WHERE project = ? AND normalized_hash NOT LIKE ? "
            "ORDER BY id",
            [project, not_like],
        )

    def lift_tombstone(self, memory_id: int, project: str, now: str) -> bool:
        """Mark a tombstone undone; whether there was one standing."""
        cursor = self.db.execute(
            "UPDATE forgotten SET undone_at = ? WHERE memory_id = ? AND project = ? "
            "AND undone_at IS NULL",
            [now, memory_id, project],
        )
        return cursor.rowcount == 1

    def tombstones(self, project: str, memory_id: int | None = None) -> Iterable[dict[str, Any]]:
        """The project's tombstone rows (or one memory's), oldest first."""
        sql = "SELECT * FROM forgotten WHERE project = ?"
        params: list[Any] = [project]
        if memory_id is not None:
            sql += " AND memory_id = ?"
            params.append(memory_id)
        return self.db.query(sql + " ORDER BY forgotten_at, memory_id", params)

    # Used by the areas

    def activate(self, memory_id: int, now: str) -> None:
        """Make a memory active (a held or pending one accepted)."""
        self.db.conn.execute(
            "UPDATE memories SET status = 'active', updated_at = ? WHERE id = ?", [now, memory_id]
        )

    def reactivate(self, memory_id: int, now: str) -> None:
        """Bring an archived memory back: active, no longer archived."""
        self.db.execute(
            """UPDATE memories SET status = 'active', archived_at = NULL, updated_at = ?
               WHERE id = ?""",
            [now, memory_id],
        )

    def hold(self, memory_id: int) -> None:
        """Hold a memory for review: pending."""
        self.db.conn.execute("UPDATE memories SET status = 'pending' WHERE id = ?", [memory_id])

    def seen_again(self, memory_id: int, now: str) -> None:
        """Count one more sighting of a memory, seen ``now``."""
        self.db.conn.execute(
            "UPDATE memories SET seen_count = seen_count + 1, last_seen_at = ? WHERE id = ?",
            [now, memory_id],
        )

    def archive_pending(self, memory_id: int, now: str) -> None:
        """Archive a memory still pending review (rejected); any other status is left."""
        self.db.execute(
            """UPDATE memories SET status = 'archived', archived_at = ?, updated_at = ?
               WHERE id = ? AND status = 'pending'""",
            [now, now, memory_id],
        )

    def archive_category(self, category: str, now: str) -> int:
        """Archive every active or pending memory of a retired category; how many."""
        cursor = self.db.execute(
            """UPDATE memories SET status = 'archived', archived_at = ?, updated_at = ?
               WHERE category = ? AND status IN ('active', 'pending')""",
            [now, now, category],
        )
        return cursor.rowcount

    def set_kind(self, category: str, kind: str) -> None:
        """Give every memory of ``category`` the category's new kind."""
        self.db.execute("UPDATE memories SET kind = ? WHERE category = ?", [kind, category])

    def move_category(self, memory_id: int, category: str, kind: str, now: str) -> None:
        """Move a memory to a renamed category (and its kind)."""
        self.db.execute(
            "UPDATE memories SET category = ?, kind = ?, updated_at = ? WHERE id = ?",
            [category, kind, now, memory_id],
        )


_MAX_INTEGER = 2**63 - 1
