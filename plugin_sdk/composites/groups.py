"""What a memory stands for: the composites it heads, as the block and ``expand`` show them.

A memory may head composites of all four types. One expand of it shows the
active members of each, in this order: the ``sequence`` (its details), the
``theme`` (a group: memories, or further groups in a map), the ``cause``
composites (what led to it) and the ``alternatives`` (its peers), each in
member order. :func:`notes` says so in a few words for a line of the
block (``9 details``, ``12 groups, 480 memories``, ``3 causes``,
``4 alternatives``); :func:`reach` walks the same edges to count what a block
reaches directly, after one expand and after two (the coverage per depth).

A theme the ``map`` dreamer task built carries its sizes in its ``layout``
(``{"map": {"level": 1, "groups": 12, "memories": 480}}``), kept current by
that task, so annotating a group reads one row, not its subtree. The store
keeps each ranked memory's annotation current (``toc_rank.note``, by
triggers), so the injector reads it with the ranking. That note is the
owner's view, one per memory; another project reading a shared head gets
its note computed at read time with the visibility rule
(``READER_NOTE_SQL`` in ``store/tables/composites/toc.py``), never a count of members it cannot see.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

ORDER = ("sequence", "theme", "cause", "alternatives")
NOUNS = {
    "sequence": ("detail", "details"),
    "theme": ("memory", "memories"),
    "cause": ("cause", "causes"),
    "alternatives": ("alternative", "alternatives"),
}
CHUNK = 500


def notes(store: Store, heads: list[int], project: str | None = None) -> dict[int, tuple[str, str]]:
    """For each id that heads a composite with members ``project`` may see: (first type, words).

    ``words`` is what the block writes inside the id bracket: for a head of
    ``project`` (default: the store's) the same SQL the store's ranking keeps
    (``toc_rank.note``, one per memory); for another project's shared head,
    computed now, counting only the members ``project`` may read
    (``READER_NOTE_SQL`` in ``store/tables/composites/toc.py``), so the wall does not tell how many are behind it.
    """
    project = project or store.project
    result: dict[int, tuple[str, str]] = {}
    for start in range(0, len(heads), CHUNK):
        part = heads[start : start + CHUNK]
        rows = store.tables.composites.notes(part, project)
        result.update((head, (kind, note)) for head, kind, note in rows if kind and note)
    return result


def groups(store: Store, head: int, project: str) -> list[tuple[str, list[int]]]:
    """The composites ``head`` heads, in expand order, with the members ``project`` may see.

    Each comes with its active members that the project may read, in order
    (possibly none: a composite whose members are all behind the wall).
    """
    rows = store.tables.composites
    kinds = rows.types_headed_by(head)
    by_id: dict[int, tuple[str, list[int]]] = {cid: (kind, []) for cid, kind in kinds.items()}
    for composite_id, member in rows.readable_members_headed_by(head, project):
        by_id[composite_id][1].append(member)
    return sorted(by_id.values(), key=lambda group: ORDER.index(group[0]))


def reach(store: Store, project: str, shown: list[int], depth: int = 2) -> list[set[int]]:
    """Active memories ``project`` may read reached from ``shown``: directly, then by expands.

    Entry ``k`` is everything reached with at most ``k`` expands (cumulative).
    An expand of a memory shows the readable active members of every
    composite it heads.
    """
    reached = _active(store, project, shown)
    levels = [set(reached)]
    frontier = set(reached)
    for _ in range(depth):
        found: set[int] = set()
        heads = sorted(frontier)
        for start in range(0, len(heads), CHUNK):
            part = heads[start : start + CHUNK]
            found.update(store.tables.composites.readable_members_of_heads(part, project))
        frontier = found - reached
        reached |= frontier
        levels.append(set(reached))
    return levels


def _active(store: Store, project: str, ids: list[int]) -> set[int]:
    found: set[int] = set()
    for start in range(0, len(ids), CHUNK):
        part = ids[start : start + CHUNK]
        found.update(store.tables.memories.readable_active_ids(part, project))
    return found
