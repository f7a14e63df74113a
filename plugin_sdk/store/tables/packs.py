"""The owner of packs, categories, criteria, criteria_history: every statement that touches them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class PackRows:
    """Statements on packs, categories, criteria, criteria_history; reached as ``store.tables.packs``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
