"""The owner of entities, memory_entities: every statement that touches them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class EntityRows:
    """Statements on entities, memory_entities; reached as ``store.tables.entities``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
