"""The owner of memories_fts, search_settings, token_counts: every statement that touches them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class SearchRows:
    """Statements on memories_fts, search_settings, token_counts; reached as ``store.tables.search``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
