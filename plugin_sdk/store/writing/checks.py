"""What a memory's fields must be before any write (``write``, ``write_many``, ``update``)."""

from __future__ import annotations

from plugin_sdk.errors import InvalidDocument, InvalidMemory
from plugin_sdk.store.limits import check_text


def check_content(content: str) -> str:
    """The text to store (stripped); :class:`InvalidMemory` if empty or out of the limits."""
    if not isinstance(content, str) or not content.strip():
        raise InvalidMemory("memory content is empty")
    try:
        check_text(content, "memory content")
    except InvalidDocument as error:
        raise InvalidMemory(str(error)) from error
    return content.strip()


def check_importance(importance: int) -> None:
    """:class:`InvalidMemory` unless ``importance`` is a whole number from 1 to 100."""
    if (
        isinstance(importance, bool)
        or not isinstance(importance, int)
        or not 1 <= importance <= 100
    ):
        raise InvalidMemory(f"importance must be a whole number from 1 to 100, got {importance!r}")
