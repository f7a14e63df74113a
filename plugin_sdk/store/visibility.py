"""Projects as a wall: which memories a project may read, and which it may change.

One store holds many projects. A project **owns** its memories: only the
owning project may change one (update, archive, forget, merge, fragment, link
it to entities, put it in a composite). A project may **read** its own
memories and, from every other project, the memories that are both
user-wide and safe to share: ``scope = 'global' AND shareable = 1``. Those
are visible to search, recall, inject and expand everywhere; nothing else of
another project is visible at all.

An id of another project's memory that the project may not read is
:class:`~plugin_sdk.errors.NotFound`, worded exactly as an id that does not
exist, so the wall does not tell whether it is there. A shared memory of
another project is readable; changing it from here is refused with
:class:`~plugin_sdk.errors.ReadOnlyMemory`, which names its project.

:func:`readable_sql` is the rule as SQL, for every query that reads
memories for a project (search and its successors use it too).
"""

from __future__ import annotations

from typing import Any

from plugin_sdk.errors import NotFound, ReadOnlyMemory

#: What makes another project's memory readable: user-wide and marked shareable.
SHARED_SQL = "scope = 'global' AND shareable = 1"


def readable_sql(alias: str = "m") -> str:
    """The read rule as an SQL condition with one ``?`` for the reading project.

    ``readable_sql("m")`` is ``(m.project = ? OR (m.scope = 'global' AND m.shareable = 1))``.
    """
    prefix = f"{alias}." if alias else ""
    return f"({prefix}project = ? OR ({prefix}scope = 'global' AND {prefix}shareable = 1))"


def is_shared(row: Any) -> bool:
    """Whether a memory (a :class:`~plugin_sdk.store.models.Memory` or a row) is shared."""
    scope, shareable = _get(row, "scope"), _get(row, "shareable")
    return scope == "global" and bool(shareable)


def readable(row: Any, project: str) -> bool:
    """Whether ``project`` may read this memory."""
    return _get(row, "project") == project or is_shared(row)


def not_found(memory_id: object, where: str) -> NotFound:
    """The one message for an id that is absent or behind the wall."""
    return NotFound(f"no memory with id {memory_id} in {where}")


def check_owner(row: Any, project: str, *, doing: str) -> None:
    """Refuse a change of a memory ``project`` does not own.

    Another project's memory that ``project`` may not even read is
    :class:`NotFound`; a shared one is :class:`ReadOnlyMemory`.
    """
    owner = _get(row, "project")
    if owner == project:
        return
    memory_id = _get(row, "id")
    if not is_shared(row):
        raise not_found(memory_id, f"project {project!r}")
    raise ReadOnlyMemory(
        f"memory {memory_id} is shared from project {owner!r}; "
        f"only that project can {doing} it (it is read-only in {project!r})"
    )


def _get(row: Any, field: str) -> Any:
    return row[field] if isinstance(row, dict) else getattr(row, field)
