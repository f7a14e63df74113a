"""The owner of relations: every statement that touches them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class RelationRows:
    """Statements on relations; reached as ``store.tables.relations``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
