"""The owner of observations, entity_observations: every statement that touches them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class ObservationRows:
    """Statements on observations, entity_observations; reached as ``store.tables.observations``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
