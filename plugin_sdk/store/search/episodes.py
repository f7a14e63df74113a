"""Episodes: which memories written next to each other belong to one sequence.

Two live memories of one project whose ids are at most ``reach`` apart are in
one episode (the turns of a conversation, the lines of a note) when

- both have an ``occurred_at`` and it is the same (one session's date, one
  transcript chunk's time), or
- one ``write_many`` call wrote both (the same ``batch``, migration
  ``m022``), unless both have an ``occurred_at`` and they differ (two
  sessions written in one call stay two episodes).

So a conversation written without any time keeps its order context through
the call that wrote it. Single ``write`` calls with no time (an agent's
separate facts) have no episode. Search's neighbour signal and recall's
context lines both read episodes from here; :func:`nearby` also gives the
length of every memory it read, for the neighbour signal's length prior.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

Row = tuple[str, str | None, int | None]  # project, occurred_at, batch


def together(a: Row, b: Row) -> bool:
    """Whether two memories written next to each other share an episode (rule above)."""
    if a[0] != b[0]:
        return False
    if a[1] is not None and b[1] is not None:
        return a[1] == b[1]
    return a[2] is not None and a[2] == b[2]


@attrs.frozen
class Nearby:
    """Episode neighbours of some memories, and the length of every memory read."""

    pairs: dict[int, list[tuple[int, int]]]  # memory -> (other id, distance)
    lengths: dict[int, int]  # characters of text, of the memories and those around them


def rows(store: Store, ids: set[int]) -> tuple[dict[int, Row], dict[int, int]]:
    """Project, ``occurred_at`` and ``batch`` of the live memories among ``ids``; their lengths."""
    known: dict[int, Row] = {}
    lengths: dict[int, int] = {}
    for memory_id, project, occurred_at, batch, length in store.db.execute(
        """SELECT id, project, occurred_at, batch, length(content) FROM memories
           WHERE id IN (SELECT value FROM json_each(?)) AND status = 'active'""",
        [json.dumps(sorted(ids))],
    ):
        known[memory_id] = (project, occurred_at, batch)
        lengths[memory_id] = length
    return known, lengths


def neighbours(store: Store, ids: set[int], reach: int = 2) -> dict[int, list[tuple[int, int]]]:
    """For each of ``ids``: ``(other id, distance)`` of its episode's memories within ``reach``."""
    return nearby(store, dict.fromkeys(ids, reach)).pairs


def nearby(store: Store, reaches: dict[int, int]) -> Nearby:
    """For each memory of ``reaches``, its neighbours within its own reach (one read),
    with the length of each live memory read (the memories and those around them)."""
    around = {i + s for i, reach in reaches.items() for s in range(-reach, reach + 1) if i + s > 0}
    known, lengths = rows(store, around | set(reaches))
    found: dict[int, list[tuple[int, int]]] = {}
    for memory_id in sorted(reaches):
        home = known.get(memory_id)
        if home is None:
            continue
        reach = reaches[memory_id]
        for step in (s for s in range(-reach, reach + 1) if s):
            other = known.get(memory_id + step)
            if other is not None and together(home, other):
                found.setdefault(memory_id, []).append((memory_id + step, abs(step)))
    return Nearby(found, lengths)
