"""The owner of reference_sets, reference_set_items: every statement that touches them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class RefsetRows:
    """Statements on reference_sets, reference_set_items; reached as ``store.tables.refsets``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
