"""The owner of memories, forgotten, memory_outcomes, insert_triggers_paused: every statement that touches them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class MemoryRows:
    """Statements on memories, forgotten, memory_outcomes, insert_triggers_paused; reached as ``store.tables.memories``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
