"""The owner of session_meta, injections, dreamer_state, transcript_imports: every statement that touches them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class SessionRows:
    """Statements on session_meta, injections, dreamer_state, transcript_imports; reached as ``store.tables.sessions``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
