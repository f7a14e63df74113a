"""The owner of reference_sets, reference_set_items: every statement that touches them.

A frozen set is written once and never changed: only a forget empties an
item's text (``store/forget.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class RefsetRows:
    """Statements on reference_sets, reference_set_items; reached as ``store.tables.refsets``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # Project-wide (host/projects.py, host/portable.py)

    def delete_project(self, project: str) -> int:
        """Delete the reference sets of composites headed by the project's memories; how many."""
        return int(
            self.db.execute(
                """DELETE FROM reference_sets WHERE composite_id IN (SELECT id FROM composites
                   WHERE head_memory_id IN (SELECT id FROM memories WHERE project = ?))""",
                [project],
            ).rowcount
        )

    def insert(
        self,
        composite_id: int,
        type: str,
        head: int,
        note: str | None,
        items: Iterable[tuple[int, str, str]],
    ) -> int:
        """Store a set and its items (``(memory_id, normalized_hash, content)``, in order),
        created now (inside a transaction); the set's id."""
        cursor = self.db.execute(
            """INSERT INTO reference_sets (composite_id, type, head_memory_id, note, created_at)
               VALUES (?, ?, ?, ?, ?)""",
            [composite_id, type, head, note, self.store.now()],
        )
        set_id = int(cursor.lastrowid or 0)
        for position, (memory_id, normalized_hash, content) in enumerate(items):
            self.db.execute(
                "INSERT INTO reference_set_items VALUES (?, ?, ?, ?, ?)",
                [set_id, position, memory_id, normalized_hash, content],
            )
        return set_id

    def forget_memory(self, memory_id: int, placeholder: str) -> int:
        """Empty the items of a forgotten memory (its hash becomes ``placeholder``); how many.

        The one change a frozen set ever takes (``store/forget``)."""
        return int(
            self.db.execute(
                "UPDATE reference_set_items SET content = '', normalized_hash = ? "
                "WHERE memory_id = ?",
                [placeholder, memory_id],
            ).rowcount
        )

    def by_id(self, set_id: int, project: str) -> dict[str, Any] | None:
        """A set whose head belongs to ``project``, or None."""
        return next(
            iter(
                self.db.query(
                    """SELECT r.* FROM reference_sets r JOIN memories m ON m.id = r.head_memory_id
                       WHERE r.id = ? AND m.project = ?""",
                    [set_id, project],
                )
            ),
            None,
        )

    def items(self, set_id: int) -> list[dict[str, Any]]:
        """A set's items in order: ``memory_id``, ``normalized_hash``, ``content``."""
        return list(
            self.db.query(
                """SELECT memory_id, normalized_hash, content FROM reference_set_items
                   WHERE set_id = ? ORDER BY position""",
                [set_id],
            )
        )
