"""The owner of proposals, proposal_events, proposal_applications: every statement that touches them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class ProposalRows:
    """Statements on proposals, proposal_events, proposal_applications; reached as ``store.tables.proposals``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
