"""The owner of composites, composite_members, composite_events: every statement that touches them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class CompositeRows:
    """Statements on composites, composite_members, composite_events; reached as ``store.tables.composites``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
