"""The owner of facts, conflicts, memory_conflicts: every statement that touches them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class FactRows:
    """Statements on facts, conflicts, memory_conflicts; reached as ``store.tables.facts``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
