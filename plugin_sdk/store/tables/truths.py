"""The owner of compiled_truths, truth_impacts: every statement that touches them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class TruthRows:
    """Statements on compiled_truths, truth_impacts; reached as ``store.tables.truths``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
