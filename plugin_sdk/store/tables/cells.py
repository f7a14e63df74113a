"""The owner of memory_cells, grid_overrides, grid_history: every statement that touches them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class CellRows:
    """Statements on memory_cells, grid_overrides, grid_history; reached as ``store.tables.cells``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
