"""Frozen reference sets: a read-time snapshot of a composite.

``freeze(store, composite_id)`` stores the head and each member's id,
normalized hash and exact text at that moment and returns the set's id, which
a host hands to a delegated sub-agent. ``read(store, set_id)`` returns exactly
what was frozen, however the live composite and its memories change later.
Only a memory that is forgotten leaves a frozen set: its item stays, with
the text emptied (``store/forget/__init__.py``).

Both work within the store's project: a composite of another project cannot
be frozen, nor its sets read (:class:`~plugin_sdk.errors.NotFound`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import NotFound
from plugin_sdk.store.limits import check_id

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


@attrs.frozen
class ReferenceSet:
    id: int
    composite_id: int
    type: str
    head: int
    items: list[dict[str, Any]]
    note: str | None
    created_at: str

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def freeze(store: Store, composite_id: int, *, note: str | None = None) -> int:
    """Snapshot a composite; return the reference set's id."""
    composite = store.composites.get(composite_id)
    store.memories.own(composite.head, doing="freeze the composites of")
    with store.atomic():
        members = [store.memories.get(member) for member in composite.members]
        set_id = store.tables.refsets.insert(
            composite.id,
            composite.type,
            composite.head,
            note,
            [(memory.id, memory.normalized_hash, memory.content) for memory in members],
        )
    return set_id


def read(store: Store, set_id: int) -> ReferenceSet:
    """A frozen set, exactly as it was frozen."""
    check_id(set_id, "reference set")
    row = store.tables.refsets.by_id(set_id, store.project)
    if row is None:
        raise NotFound(f"no reference set with id {set_id} in project {store.project!r}")
    items = store.tables.refsets.items(set_id)
    return ReferenceSet(
        id=row["id"],
        composite_id=row["composite_id"],
        type=row["type"],
        head=row["head_memory_id"],
        items=items,
        note=row["note"],
        created_at=row["created_at"],
    )
