"""The reads over composites that the block, expand, the map, recall and ranking make.

Part of the owner of composites and composite_members (``composites.py``;
reached as ``store.tables.composites``). An ``ids`` argument longer than
``CHUNK`` is the caller's to split; ``readable_sql`` is the cross-project wall.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plugin_sdk.store.tables.composites.toc import (
    HEAD_SQL,
    NOTE_SQL,
    POSTGRES_NOTE_SQL,
    READER_HEAD_SQL,
    READER_NOTE_SQL,
)
from plugin_sdk.store.visibility import readable_sql

if TYPE_CHECKING:
    from plugin_sdk.store.locking import StoreDatabase


class CompositeReads:
    """Reads joining composites, their members and the members' memories."""

    db: StoreDatabase

    def notes(self, heads: list[int], project: str) -> list[tuple[int, str | None, str | None]]:
        """``(id, first type, words)`` for each of ``heads``: the annotation the block writes.

        For a head of ``project`` the SQL the ranking keeps (``toc_rank.note``);
        for another project's shared head, counting only what ``project`` may read.
        """
        note = POSTGRES_NOTE_SQL if self.db.engine == "postgresql" else NOTE_SQL
        return self.db.execute(
            f"""SELECT m.id,
                   CASE WHEN m.project = ? THEN {HEAD_SQL.format(head="m.id")}
                        ELSE {READER_HEAD_SQL.format(head="m.id")} END,
                   CASE WHEN m.project = ? THEN {note.format(head="m.id")}
                        ELSE {READER_NOTE_SQL.format(head="m.id")} END
                FROM memories m WHERE m.id IN ({",".join("?" * len(heads))})""",
            [project, project, project, project, *heads],
        ).fetchall()

    def readable_member_ids(self, composite_id: int, project: str) -> list[int]:
        """The members of a composite ``project`` may read (or already gone), by position."""
        return [
            r[0]
            for r in self.db.execute(
                f"""SELECT d.member_memory_id FROM composite_members d
                    LEFT JOIN memories m ON m.id = d.member_memory_id
                    WHERE d.composite_id = ? AND (m.id IS NULL OR {readable_sql("m")})
                    ORDER BY d.position""",
                [composite_id, project],
            )
        ]

    def readable_ids_headed_by(self, memory_id: int, project: str) -> list[int]:
        """Composites headed by ``memory_id`` when ``project`` may read it, oldest first."""
        return [
            r[0]
            for r in self.db.execute(
                f"""SELECT c.id FROM composites c JOIN memories m ON m.id = c.head_memory_id
                    WHERE c.head_memory_id = ? AND {readable_sql("m")} ORDER BY c.id""",
                [memory_id, project],
            )
        ]

    def readable_ids_with_member(self, memory_id: int, project: str) -> list[int]:
        """Composites ``memory_id`` belongs to when ``project`` may read it and their head."""
        return [
            r[0]
            for r in self.db.execute(
                f"""SELECT d.composite_id FROM composite_members d
                    JOIN composites c ON c.id = d.composite_id
                    JOIN memories m ON m.id = c.head_memory_id
                    JOIN memories x ON x.id = d.member_memory_id
                    WHERE d.member_memory_id = ? AND {readable_sql("m")} AND {readable_sql("x")}
                    ORDER BY d.composite_id""",
                [memory_id, project, project],
            )
        ]

    def types_headed_by(self, head: int) -> dict[int, str]:
        """Composite id -> type, for the composites ``head`` heads, oldest first."""
        return dict(
            self.db.execute(
                "SELECT id, type FROM composites WHERE head_memory_id = ? ORDER BY id", [head]
            ).fetchall()
        )

    def readable_members_headed_by(self, head: int, project: str) -> list[tuple[int, int]]:
        """``(composite id, member)`` of ``head``'s composites: active members ``project`` may read, in order."""
        return self.db.execute(
            f"""SELECT d.composite_id, d.member_memory_id FROM composites c
                JOIN composite_members d ON d.composite_id = c.id
                JOIN memories m ON m.id = d.member_memory_id AND m.status = 'active'
                WHERE c.head_memory_id = ? AND {readable_sql("m")} ORDER BY c.id, d.position""",
            [head, project],
        ).fetchall()

    def readable_members_of_heads(self, heads: list[int], project: str) -> set[int]:
        """Active members ``project`` may read of every composite one of ``heads`` heads."""
        return {
            row[0]
            for row in self.db.execute(
                f"""SELECT d.member_memory_id FROM composites c
                    JOIN composite_members d ON d.composite_id = c.id
                    JOIN memories m ON m.id = d.member_memory_id
                    WHERE m.status = 'active' AND {readable_sql("m")}
                      AND c.head_memory_id IN ({",".join("?" * len(heads))})""",
                [project, *heads],
            )
        }

    def map_themes(
        self, project: str, category: str, source: str
    ) -> list[tuple[int, int, str | None, str | None, str]]:
        """``(id, head, layout, stale_since, head's text)`` of the themes headed by
        ``category``'s active memories from ``source`` (the map's groups), oldest first."""
        return self.db.execute(
            """SELECT c.id, c.head_memory_id, c.layout, c.stale_since, h.content FROM composites c
               JOIN memories h ON h.id = c.head_memory_id
               WHERE h.project = ? AND h.category = ? AND h.source = ? AND h.status = 'active'
                 AND c.type = 'theme' ORDER BY c.id""",
            [project, category, source],
        ).fetchall()

    def heads_among(self, ids: list[int]) -> list[tuple[int, int]]:
        """``(head, member)`` for sequences and themes headed by one of ``ids`` with members among them."""
        marks = ",".join("?" * len(ids))
        return self.db.execute(
            f"""SELECT c.head_memory_id, d.member_memory_id FROM composites c
                JOIN composite_members d ON d.composite_id = c.id
                WHERE c.type IN ('sequence', 'theme') AND c.head_memory_id IN ({marks})
                  AND d.member_memory_id IN ({marks})
                ORDER BY c.id, d.position""",
            [*ids, *ids],
        ).fetchall()

    def sequence_neighbours(self, ids_json: str) -> list[tuple[int, int]]:
        """``(member, live neighbour)`` one position apart in a sequence, once each, in order
        (``ids_json``: the members as a JSON list)."""
        return self.db.execute(
            """SELECT DISTINCT x.member_memory_id, y.member_memory_id FROM composite_members x
               JOIN composites c ON c.id = x.composite_id AND c.type = 'sequence'
               JOIN composite_members y ON y.composite_id = x.composite_id
                   AND abs(y.position - x.position) = 1
               JOIN memories m ON m.id = y.member_memory_id AND m.status = 'active'
               WHERE x.member_memory_id IN (SELECT value FROM json_each(?))
               ORDER BY x.member_memory_id, y.member_memory_id""",
            [ids_json],
        ).fetchall()

    def sequence_steps(self, ids_json: str) -> list[tuple[int, int]]:
        """``(member, live neighbour)`` one position apart in each sequence they share
        (a pair per sequence; ``ids_json``: the members as a JSON list)."""
        return self.db.execute(
            """SELECT x.member_memory_id, y.member_memory_id FROM composite_members x
               JOIN composites c ON c.id = x.composite_id AND c.type = 'sequence'
               JOIN composite_members y ON y.composite_id = x.composite_id
                   AND abs(y.position - x.position) = 1
               JOIN memories m ON m.id = y.member_memory_id AND m.status = 'active'
               WHERE x.member_memory_id IN (SELECT value FROM json_each(?))""",
            [ids_json],
        ).fetchall()

    def live_heads_of(self, ids_json: str) -> list[tuple[int, int]]:
        """``(head, member)`` for each of the members (a JSON list) in a sequence or theme
        whose head is active."""
        return self.db.execute(
            """SELECT c.head_memory_id, d.member_memory_id FROM composite_members d
               JOIN composites c ON c.id = d.composite_id AND c.type IN ('sequence', 'theme')
               JOIN memories m ON m.id = c.head_memory_id AND m.status = 'active'
               WHERE d.member_memory_id IN (SELECT value FROM json_each(?))""",
            [ids_json],
        ).fetchall()
