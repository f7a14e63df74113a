"""The owner of memories, forgotten, memory_outcomes, insert_triggers_paused: every statement that touches them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class MemoryRows:
    """Statements on memories, forgotten, memory_outcomes, insert_triggers_paused; reached as ``store.tables.memories``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # Project-wide (host/projects.py, host/portable.py)

    def export_rows(self, project: str) -> Iterator[dict[str, Any]]:
        """Every memory of ``project``, of every status, by id."""
        return self.db.query("SELECT * FROM memories WHERE project = ? ORDER BY id", [project])

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
