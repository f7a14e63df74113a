"""The owner of memories, forgotten, memory_outcomes, insert_triggers_paused: every statement that touches them.

The reads the areas make over memories are in ``memory_reads.py`` (reached
through the same object). Writes are made inside the caller's transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plugin_sdk.store.tables.memory_reads import MemoryReads

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class MemoryRows(MemoryReads):
    """Statements on memories, forgotten, memory_outcomes, insert_triggers_paused; reached as ``store.tables.memories``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

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
