"""Exceptions raised by memsdk.

Every error a user can cause derives from :class:`MemsdkError`; the command
line prints its message as one line and exits non-zero. Messages name what was
wrong and where, and an operation that raises has written nothing.
"""

from __future__ import annotations

from collections.abc import Iterable


class MemsdkError(Exception):
    """Base class for errors caused by input, configuration or store state."""


class StoreError(MemsdkError):
    """The store file cannot be opened or used as it is."""


class SchemaTooNew(StoreError):
    """The store was migrated by a newer memsdk than this one."""


class NotFound(MemsdkError, LookupError):
    """No row with the given id or name."""


class UnknownCategory(MemsdkError, ValueError):
    """A category that the store does not have (or has retired)."""

    def __init__(self, category: str, known: Iterable[str], *, where: str = "") -> None:
        self.category = category
        self.known = sorted(known)
        listing = ", ".join(self.known) if self.known else "none: install a pack first"
        prefix = f"{where}: " if where else ""
        super().__init__(
            f"{prefix}unknown category {category!r}; this store's categories are: {listing}"
        )


class DuplicateMemory(MemsdkError, ValueError):
    """An update would make a memory identical to another one in its category."""

    def __init__(self, memory_id: int, other_id: int) -> None:
        self.memory_id = memory_id
        self.other_id = other_id
        super().__init__(
            f"memory {memory_id} would duplicate memory {other_id} "
            "(same project, category and normalized text); nothing was changed"
        )


class PackError(MemsdkError, ValueError):
    """A pack document is malformed; names the file and the path inside it."""

    def __init__(self, source: str, message: str, path: str = "") -> None:
        self.source = source
        self.path = path
        self.reason = message
        where = f"{source} at {path}" if path else source
        super().__init__(f"invalid pack {where}: {message}")


class PackConflict(MemsdkError, ValueError):
    """A pack cannot be installed or upgraded as asked (already there, name clash)."""


class MigrationRequired(PackConflict):
    """A pack upgrade adds, removes or renames categories and needs a mapping."""


class GridError(MemsdkError, ValueError):
    """A name, cell, emotional tag or relation type the store's grid does not have."""
