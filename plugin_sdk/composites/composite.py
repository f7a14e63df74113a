"""Composites: one primitive for memory relations (typed star groups).

A composite is a typed star: one **head** memory and ordered **members**.
Types are closed: ``sequence`` (an SOP chain), ``theme`` (a topical group),
``cause`` (a head and what led to it), ``alternatives`` (an unordered peer
set). A memory may head several composites and belong to many; the head is
never a member of its own composite (the DB refuses it). Composites key no
deduplication and pass no sharing gate: they sit outside the category
machinery, so they never change what counts as a duplicate or what may be
shared.

**Projects.** A composite belongs to its head's project, and all its
members are memories of that project: another project's memory (even a
shared one) cannot join. A composite whose head another project may not read
is not found from there; only its own project changes it (see
``store/visibility.py``).

Positions are contiguous from 0 in every composite, after every change. The
cursor is the read position of a cyclic composite (a rotation): ``peek``
reads it, ``advance`` moves it and wraps around when the composite is cyclic.

**Merge fate** (:meth:`Composites.repoint`, called by ``Memories.merge`` in
the merge's transaction): member rows pointing at a merged-away memory point
at the merge target instead; if the target is already a member, the row is
dropped (no duplicates); if the target heads that composite, the membership
is dropped and a ``membership-dropped`` event recorded. Composites headed by
a merged-away memory move to the target, dropping the target's own
membership in them (recorded the same way).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import CompositeError, NotFound
from plugin_sdk.store.limits import check_id
from plugin_sdk.store.visibility import readable

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

TYPES = ("sequence", "theme", "cause", "alternatives")


@attrs.frozen
class Composite:
    id: int
    type: str
    head: int
    members: list[int]
    cursor: int
    cyclic: bool
    stale_since: str | None
    layout: Any
    created_at: str
    updated_at: str

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


class Composites:
    """Composite operations on one store; reached as ``store.composites``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
        self.rows = store.tables.composites

    # Reading

    def get(self, composite_id: int) -> Composite:
        """A composite whose head the store's project may read; :class:`NotFound` otherwise."""
        check_id(composite_id, "composite")
        data = self.rows.row(composite_id)
        head = None if data is None else self._head_row(data["head_memory_id"])
        if data is None or head is None or not readable(head, self.store.project):
            raise NotFound(f"no composite with id {composite_id} in project {self.store.project!r}")
        # Only the members the project may read: the wall names nothing behind it.
        members = self.rows.readable_member_ids(composite_id, self.store.project)
        layout = None if data["layout"] is None else json.loads(data["layout"])
        if isinstance(layout, dict) and isinstance(layout.get("members"), list):
            hidden = set(self.rows.member_ids(composite_id)) - set(members)
            layout["members"] = [
                e for e in layout["members"] if not (isinstance(e, dict) and e.get("id") in hidden)
            ]
        return Composite(
            id=data["id"],
            type=data["type"],
            head=data["head_memory_id"],
            members=members,
            cursor=data["cursor"],
            cyclic=bool(data["cyclic"]),
            stale_since=data["stale_since"],
            layout=layout,
            created_at=data["created_at"],
            updated_at=data["updated_at"],
        )

    def by_head(self, memory_id: int) -> list[Composite]:
        """Composites headed by a memory the project may read (the injection path); else none.

        A head behind the wall heads nothing here, as an id that does not exist.
        """
        ids = self.rows.readable_ids_headed_by(memory_id, self.store.project)
        return [self.get(i) for i in ids]

    def by_member(self, memory_id: int) -> list[Composite]:
        """Composites a memory belongs to whose head the project may read (the provenance path)."""
        ids = self.rows.readable_ids_with_member(memory_id, self.store.project)
        return [self.get(i) for i in ids]

    def all(self, *, type: str | None = None) -> list[Composite]:
        """All composites of the store's project (by their head), oldest first."""
        if type is not None:
            _check_type(type)
        return [self.get(i) for i in self.rows.ids_of_project(self.store.project, type)]

    def events(self, composite_id: int) -> list[dict[str, Any]]:
        rows = self.rows.events(composite_id)
        return [{**row, "detail": json.loads(row["detail"])} for row in rows]

    # Changing

    def create(
        self,
        type: str,
        head: int,
        members: list[int] | tuple[int, ...] = (),
        *,
        cyclic: bool = False,
        layout: Any = None,
    ) -> Composite:
        """Create a composite with a head and ordered members."""
        _check_type(type)
        self._live(head)
        members = list(dict.fromkeys(members))
        for member in members:
            self._live(member)
            if member == head:
                raise CompositeError(f"memory {head} heads this composite and cannot be its member")
        now = self.store.now()
        with self.store.atomic():
            composite_id = self.rows.insert(
                type, head, members, cyclic, None if layout is None else json.dumps(layout), now
            )
        return self.get(composite_id)

    def add(self, composite_id: int, member: int, position: int | None = None) -> Composite:
        """Add a member at ``position`` (default: the end), shifting the rest."""
        current = self._owned(composite_id)
        self._live(member)
        if member == current.head:
            raise CompositeError(
                f"memory {member} heads composite {composite_id} and cannot be its member"
            )
        if member in current.members:
            raise CompositeError(f"memory {member} is already a member of composite {composite_id}")
        members = list(current.members)
        members.insert(len(members) if position is None else max(0, position), member)
        return self._set_members(composite_id, members)

    def remove(self, composite_id: int, member: int) -> Composite:
        """Remove a member; positions close up."""
        current = self._owned(composite_id)
        if member not in current.members:
            raise CompositeError(f"memory {member} is not a member of composite {composite_id}")
        return self._set_members(composite_id, [m for m in current.members if m != member])

    def reorder(self, composite_id: int, members: list[int]) -> Composite:
        """Give the members a new order; ``members`` must be a permutation of the current ones."""
        current = self._owned(composite_id)
        if sorted(members) != sorted(current.members) or len(set(members)) != len(members):
            raise CompositeError(
                f"reorder of composite {composite_id} must list each current member once: "
                f"{current.members}"
            )
        return self._set_members(composite_id, members)

    def set_members(self, composite_id: int, members: list[int]) -> Composite:
        """Give a composite exactly these members, in this order (each live, none its head)."""
        current = self.get(composite_id)
        members = list(dict.fromkeys(members))
        for member in members:
            self._live(member)
            if member == current.head:
                raise CompositeError(
                    f"memory {member} heads composite {composite_id} and cannot be its member"
                )
        return self._set_members(composite_id, members)

    def delete(self, composite_id: int) -> None:
        """Delete a composite; its memories stay."""
        self._owned(composite_id)
        with self.store.atomic():
            self.rows.delete(composite_id)

    # The cursor

    def peek(self, composite_id: int) -> int | None:
        """The member at the cursor (None for an empty composite or past the end)."""
        current = self.get(composite_id)
        if not current.members or current.cursor >= len(current.members):
            return None
        return current.members[current.cursor]

    def advance(self, composite_id: int) -> int | None:
        """Move the cursor one step and return the member there.

        A cyclic composite wraps around to its first member; a non-cyclic one
        stops past the end (``None``).
        """
        current = self._owned(composite_id)
        if not current.members:
            return None
        size = len(current.members)
        cursor = (current.cursor + 1) % size if current.cyclic else min(current.cursor + 1, size)
        self._set_cursor(composite_id, cursor)
        return self.peek(composite_id)

    def reset(self, composite_id: int) -> int | None:
        """Put the cursor back on the first member."""
        self._owned(composite_id)
        self._set_cursor(composite_id, 0)
        return self.peek(composite_id)

    # Lifecycle, called inside the transactions of store/memories.py

    def repoint(self, source_id: int, target_id: int) -> None:
        """Merge fate for one merged-away memory (see the module docstring)."""
        now = self.store.now()
        touched: set[int] = set()
        for composite_id in self.rows.ids_with_member(source_id):
            touched.add(composite_id)
            head, has_target = self.rows.head_and_has(composite_id, target_id)
            if head == target_id or has_target:
                self.rows.drop_member(composite_id, source_id)
                if head == target_id:
                    self._event(
                        composite_id,
                        "membership-dropped",
                        {
                            "member": source_id,
                            "merged_into": target_id,
                            "why": "the merge target heads this composite",
                        },
                    )
            else:
                self.rows.repoint_member(composite_id, source_id, target_id)
        for composite_id in self.rows.ids_headed_by(source_id):
            touched.add(composite_id)
            dropped = self.rows.drop_member(composite_id, target_id)
            self.rows.set_head(composite_id, target_id, now)
            self._event(composite_id, "head-moved", {"from": source_id, "to": target_id})
            if dropped:
                self._event(
                    composite_id,
                    "membership-dropped",
                    {
                        "member": target_id,
                        "why": "it became the head by a merge",
                    },
                )
        for composite_id in sorted(touched):
            self.rows.renumber(composite_id)
            # Keep the cursor on a member, and flag sequences: their header
            # may no longer describe what they hold.
            self.rows.settle_after_merge(composite_id, now)

    def drop_forgotten(self, memory_id: int) -> None:
        """A forgotten memory leaves every composite (called in the forget's transaction).

        Its memberships are dropped, with its piece in a fragment's layout;
        composites it heads are deleted (their members stay). Each is recorded
        as an event, without the text.
        """
        now = self.store.now()
        for composite_id in self.rows.ids_with_member(memory_id):
            self.rows.drop_member(composite_id, memory_id)
            layout = self.rows.layout(composite_id)
            if layout is not None:
                data = json.loads(layout)
                if isinstance(data, dict) and isinstance(data.get("members"), list):
                    data["members"] = [
                        e
                        for e in data["members"]
                        if not (isinstance(e, dict) and e.get("id") == memory_id)
                    ]
                    layout = json.dumps(data)
            self.rows.set_layout_after_drop(composite_id, layout, now)
            self.rows.renumber(composite_id)
            self._event(
                composite_id, "membership-dropped", {"member": memory_id, "why": "forgotten"}
            )
        for composite_id in self.rows.ids_headed_by(memory_id):
            self.rows.delete(composite_id)
            self._event(
                composite_id, "deleted", {"head": memory_id, "why": "its head was forgotten"}
            )

    def mark_stale(self, member_id: int) -> int:
        """Mark the composites whose summary a changed member may falsify as stale.

        Those are the sequences it is a detail of, and the groups of the map
        (themes with a ``map`` layout) it belongs to: their labels are
        refreshed by the ``map`` task, the sequences' headers by ``sync-headers``.
        """
        return self.rows.mark_stale(member_id, self.store.now())

    def stale(self, *, type: str | None = None) -> list[Composite]:
        """Stale composites of the store's project (of one type, if given), oldest first."""
        return [self.get(i) for i in self.rows.stale_ids(self.store.project, type)]

    def clear_stale(self, composite_id: int) -> None:
        self.rows.clear_stale(composite_id, self.store.now())

    # Helpers

    def _set_members(self, composite_id: int, members: list[int]) -> Composite:
        with self.store.atomic():
            self.rows.replace_members(composite_id, members, self.store.now())
        return self.get(composite_id)

    def _set_cursor(self, composite_id: int, cursor: int) -> None:
        with self.store.atomic():
            self.rows.set_cursor(composite_id, cursor, self.store.now())

    def _event(self, composite_id: int, event: str, detail: dict[str, Any]) -> None:
        self.rows.add_event(composite_id, event, json.dumps(detail), self.store.now())

    def _live(self, memory_id: int) -> None:
        """A memory of the store's project that may head or join a composite."""
        memory = self.store.memories.own(memory_id, doing="put in a composite")
        if memory.status in ("superseded", "quarantined"):
            raise CompositeError(
                f"memory {memory_id} is {memory.status} and cannot join a composite"
            )

    def _owned(self, composite_id: int) -> Composite:
        """A composite of the store's project (only its own project changes it)."""
        current = self.get(composite_id)
        self.store.memories.own(current.head, doing="change the composites of")
        return current

    def _head_row(self, memory_id: int) -> dict[str, Any] | None:
        row = self.store.tables.memories.visibility(memory_id)
        return None if row is None else {"project": row[0], "scope": row[1], "shareable": row[2]}


def _check_type(type: str) -> None:
    if type not in TYPES:
        raise CompositeError(f"unknown composite type {type!r}; types are {', '.join(TYPES)}")
