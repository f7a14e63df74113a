"""The owner of memory_vectors, vector_state, vector_changes: every statement that touches them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class VectorRows:
    """Statements on memory_vectors, vector_state, vector_changes; reached as ``store.tables.vectors``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
