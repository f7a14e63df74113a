"""The owner of composites, composite_members, composite_events: every statement that touches them.

The rules that go with the rows live here: members are written with
contiguous positions from 0 (:meth:`CompositeRows.replace_members`,
:meth:`CompositeRows.renumber`), the cursor is kept on a member after the
members change, and a composite is deleted with its members. Layouts and
event details are JSON text. Writes are made inside the caller's transaction.
The reads the block, recall and ranking make over composites are in
``composite_reads.py`` (reached through the same object).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from plugin_sdk.store.tables.composites.composite_reads import CompositeReads

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

MEMBERS_PER_STATEMENT = 300  # 900 parameters, below every SQLite build's limit (999)


class CompositeRows(CompositeReads):
    """Statements on composites, composite_members, composite_events; reached as ``store.tables.composites``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # Project-wide (host/projects.py, host/portable.py)

    def export_rows(self, project: str) -> Iterator[dict[str, Any]]:
        """The composites headed by ``project``'s memories, by id."""
        return self.db.stream(
            "SELECT * FROM composites WHERE id IN (SELECT id FROM composites WHERE head_memory_id "
            "IN (SELECT id FROM memories WHERE project = ?)) ORDER BY id",
            [project],
        )

    def export_events(self, project: str) -> Iterator[dict[str, Any]]:
        """The events of the composites headed by ``project``'s memories, by id."""
        return self.db.query(
            "SELECT * FROM composite_events WHERE composite_id IN (SELECT id FROM composites "
            "WHERE head_memory_id IN (SELECT id FROM memories WHERE project = ?)) ORDER BY id",
            [project],
        )

    def export_members(self, composite_id: int) -> list[tuple[int, int]]:
        """A composite's (member_memory_id, position), in order."""
        return self.db.execute(
            "SELECT member_memory_id, position FROM composite_members "
            "WHERE composite_id = ? ORDER BY position, member_memory_id",
            [composite_id],
        ).fetchall()

    def delete_project(self, project: str) -> dict[str, int]:
        """Delete the composites headed by the project's memories, their events, and the
        project's memberships (its reference sets go first); rows per table."""
        heads = "SELECT id FROM memories WHERE project = ?"
        owned = f"SELECT id FROM composites WHERE head_memory_id IN ({heads})"
        return {
            "composite_events": self.db.execute(
                f"DELETE FROM composite_events WHERE composite_id IN ({owned})", [project]
            ).rowcount,
            "composite_members": self.db.execute(
                f"DELETE FROM composite_members WHERE member_memory_id IN ({heads})", [project]
            ).rowcount,
            "composites": self.db.execute(
                f"DELETE FROM composites WHERE head_memory_id IN ({heads})", [project]
            ).rowcount,
        }

    # One composite

    def row(self, composite_id: int) -> dict[str, Any] | None:
        """A composite's row (``layout`` as JSON text), or None."""
        cursor = self.db.execute("SELECT * FROM composites WHERE id = ?", [composite_id])
        found = cursor.fetchone()
        if found is None:
            return None
        return dict(zip([d[0] for d in cursor.description], found, strict=True))

    def member_ids(self, composite_id: int) -> list[int]:
        """A composite's members in position order."""
        return [
            r[0]
            for r in self.db.execute(
                "SELECT member_memory_id FROM composite_members WHERE composite_id = ? ORDER BY position",
                [composite_id],
            )
        ]

    def size(self, composite_id: int) -> int:
        """How many members a composite has."""
        return int(
            self.db.execute(
                "SELECT count(*) FROM composite_members WHERE composite_id = ?", [composite_id]
            ).fetchone()[0]
        )

    def layout(self, composite_id: int) -> str | None:
        """A composite's layout (JSON text), or None."""
        row = self.db.execute("SELECT layout FROM composites WHERE id = ?", [composite_id])
        return row.fetchone()[0]

    def head_and_has(self, composite_id: int, member: int) -> tuple[int, bool]:
        """A composite's head, and whether ``member`` is one of its members."""
        head, has = self.db.execute(
            """SELECT head_memory_id, EXISTS (SELECT 1 FROM composite_members
               WHERE composite_id = ? AND member_memory_id = ?) FROM composites WHERE id = ?""",
            [composite_id, member, composite_id],
        ).fetchone()
        return int(head), bool(has)

    def events(self, composite_id: int) -> list[dict[str, Any]]:
        """A composite's events, oldest first (``detail`` as JSON text)."""
        return list(
            self.db.query(
                "SELECT * FROM composite_events WHERE composite_id = ? ORDER BY id", [composite_id]
            )
        )

    # Which composites

    def ids_headed_by(self, memory_id: int) -> list[int]:
        """Ids of the composites ``memory_id`` heads, oldest first."""
        rows = self.db.execute(
            "SELECT id FROM composites WHERE head_memory_id = ? ORDER BY id", [memory_id]
        )
        return [r[0] for r in rows.fetchall()]

    def ids_with_member(self, memory_id: int) -> list[int]:
        """Ids of the composites ``memory_id`` is a member of, oldest first."""
        rows = self.db.execute(
            "SELECT composite_id FROM composite_members WHERE member_memory_id = ? ORDER BY composite_id",
            [memory_id],
        )
        return [r[0] for r in rows.fetchall()]

    def ids_of_project(self, project: str, type: str | None = None) -> list[int]:
        """Ids of the composites whose head is a memory of ``project`` (of one type), oldest first."""
        sql = """SELECT c.id FROM composites c JOIN memories m ON m.id = c.head_memory_id
                 WHERE m.project = ?"""
        params: list[Any] = [project]
        if type is not None:
            sql += " AND c.type = ?"
            params.append(type)
        return [r[0] for r in self.db.execute(sql + " ORDER BY c.id", params).fetchall()]

    def stale_ids(self, project: str, type: str | None = None) -> list[int]:
        """Ids of ``project``'s stale composites (of one type), longest stale first."""
        rows = self.db.execute(
            """SELECT c.id FROM composites c JOIN memories m ON m.id = c.head_memory_id
               WHERE m.project = ? AND c.stale_since IS NOT NULL AND (? IS NULL OR c.type = ?)
               ORDER BY c.stale_since, c.id""",
            [project, type, type],
        )
        return [r[0] for r in rows.fetchall()]

    # Writing

    def insert(
        self, type: str, head: int, members: list[int], cyclic: bool, layout: str | None, now: str
    ) -> int:
        """Add a composite with its members at positions 0, 1, ...; return its id."""
        cursor = self.db.execute(
            """INSERT INTO composites (type, head_memory_id, cyclic, layout, created_at, updated_at)
               VALUES (?, ?, ?, ?, ?, ?)""",
            [type, head, int(cyclic), layout, now, now],
        )
        composite_id = int(cursor.lastrowid or 0)
        self._insert_members(composite_id, members)
        return composite_id

    def replace_members(self, composite_id: int, members: list[int], now: str) -> None:
        """Give a composite exactly ``members`` in order; the cursor stays on a member."""
        self.db.execute("DELETE FROM composite_members WHERE composite_id = ?", [composite_id])
        self._insert_members(composite_id, members)
        self.db.execute(
            "UPDATE composites SET cursor = MIN(cursor, ?), updated_at = ? WHERE id = ?",
            [max(0, len(members) - 1) if members else 0, now, composite_id],
        )

    def delete(self, composite_id: int) -> None:
        """Delete a composite and its memberships (its memories stay)."""
        self.db.execute("DELETE FROM composite_members WHERE composite_id = ?", [composite_id])
        self.db.execute("DELETE FROM composites WHERE id = ?", [composite_id])

    def drop_member(self, composite_id: int, member: int) -> int:
        """Remove one membership (positions are not closed up: :meth:`renumber`); rows removed."""
        return self.db.execute(
            "DELETE FROM composite_members WHERE composite_id = ? AND member_memory_id = ?",
            [composite_id, member],
        ).rowcount

    def repoint_member(self, composite_id: int, source: int, target: int) -> None:
        """The membership of ``source`` becomes one of ``target``, at the same position."""
        self.db.execute(
            """UPDATE composite_members SET member_memory_id = ?
               WHERE composite_id = ? AND member_memory_id = ?""",
            [target, composite_id, source],
        )

    def set_head(self, composite_id: int, head: int, now: str) -> None:
        """Give a composite a new head."""
        self.db.execute(
            "UPDATE composites SET head_memory_id = ?, updated_at = ? WHERE id = ?",
            [head, now, composite_id],
        )

    def renumber(self, composite_id: int) -> None:
        """Make the members' positions contiguous from 0, in their current order."""
        rows = self.db.execute(
            "SELECT member_memory_id FROM composite_members WHERE composite_id = ? ORDER BY position, member_memory_id",
            [composite_id],
        ).fetchall()
        for position, (member,) in enumerate(rows):
            self.db.execute(
                "UPDATE composite_members SET position = ? WHERE composite_id = ? AND member_memory_id = ?",
                [position, composite_id, member],
            )

    def settle_after_merge(self, composite_id: int, now: str) -> None:
        """After a merge changed its members: keep the cursor on a member, and mark a
        sequence or a group of the map stale (its header may no longer describe it)."""
        size = self.size(composite_id)
        self.db.execute(
            """UPDATE composites SET updated_at = ?,
                   cursor = CASE WHEN cyclic = 1 THEN cursor % MAX(?, 1) ELSE MIN(cursor, ?) END,
                   stale_since = CASE WHEN type = 'sequence' OR (type = 'theme'
                           AND json_extract(layout, '$.map') IS NOT NULL)
                       THEN COALESCE(stale_since, ?) ELSE stale_since END
               WHERE id = ?""",
            [now, size, size, now, composite_id],
        )

    def set_layout_after_drop(self, composite_id: int, layout: str | None, now: str) -> None:
        """After a member left: the new layout, and the cursor kept on a member."""
        self.db.execute(
            """UPDATE composites SET layout = ?, updated_at = ?,
                   cursor = MIN(cursor, MAX((SELECT count(*) FROM composite_members
                                             WHERE composite_id = ?) - 1, 0))
               WHERE id = ?""",
            [layout, now, composite_id, composite_id],
        )

    def set_layout(self, composite_id: int, layout: str, now: str) -> None:
        """Replace a composite's layout (JSON text)."""
        self.db.execute(
            "UPDATE composites SET layout = ?, updated_at = ? WHERE id = ?",
            [layout, now, composite_id],
        )

    def set_cursor(self, composite_id: int, cursor: int, now: str) -> None:
        """Put a composite's cursor at ``cursor``."""
        self.db.execute(
            "UPDATE composites SET cursor = ?, updated_at = ? WHERE id = ?",
            [cursor, now, composite_id],
        )

    def mark_stale(self, member_id: int, now: str) -> int:
        """Mark stale the sequences and groups of the map ``member_id`` belongs to; how many."""
        cursor = self.db.execute(
            """UPDATE composites SET stale_since = COALESCE(stale_since, ?)
               WHERE (type = 'sequence' OR (type = 'theme' AND json_extract(layout, '$.map')
                                            IS NOT NULL))
                 AND id IN
                   (SELECT composite_id FROM composite_members WHERE member_memory_id = ?)""",
            [now, member_id],
        )
        return int(cursor.rowcount)

    def clear_stale(self, composite_id: int, now: str) -> None:
        """A composite is no longer stale."""
        self.db.execute(
            "UPDATE composites SET stale_since = NULL, updated_at = ? WHERE id = ?",
            [now, composite_id],
        )

    def add_event(self, composite_id: int, event: str, detail: str, at: str) -> None:
        """Record one event (``detail`` as JSON text)."""
        self.db.execute(
            "INSERT INTO composite_events (composite_id, event, detail, at) VALUES (?, ?, ?, ?)",
            [composite_id, event, detail, at],
        )

    def _insert_members(self, composite_id: int, members: list[int]) -> None:
        # Many rows a statement: PostgreSQL's ranking triggers on composite_members run
        # once a statement (m030), so a composite of 40 members is refreshed once, not 40
        # times; SQLite's run per row either way.
        for start in range(0, len(members), MEMBERS_PER_STATEMENT):
            chunk = members[start : start + MEMBERS_PER_STATEMENT]
            values = ", ".join(["(?, ?, ?)"] * len(chunk))
            self.db.execute(
                f"INSERT INTO composite_members VALUES {values}",
                [
                    value
                    for position, member in enumerate(chunk, start)
                    for value in (composite_id, member, position)
                ],
            )
