"""``expand``: one level down from a line of the block, within a token budget.

``expand(store, id)`` shows what a memory stands for: the active members of
every composite it heads (``plugin_sdk.composites.groups``), in order: a
fragment header's details, a group's memories or (in a large store's map)
its groups, a cause's causes, an alternative's peers; only members the
store's project may read (``plugin_sdk/store/visibility.py``). A member that itself
heads composites says so in its id bracket (``- [ID: 22 memories] ...``), so
the next expand is one call away: the map is walked a level at a time. A
memory that heads nothing expands to itself.

With a ``budget``, members are taken in order while the whole rendered text
fits; the rest are listed in ``left_out``, never skipping one to take a later
one (a procedure's steps keep their order). The budget is a hard cap on the
exact count of the text. Each member shown counts one retrieval.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from plugin_sdk.composites.groups import NOUNS, groups, notes
from plugin_sdk.errors import NotFound
from plugin_sdk.model.boundary import entry

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


@attrs.define
class Expansion:
    """What one expand shows, rendered within an optional budget."""

    text: str
    tokens: int
    shown: list[int]
    left_out: list[int]


def expand(
    store: Store, memory_id: int, *, budget: int | None = None, count_retrievals: bool = True
) -> Expansion:
    """One level below a memory, in order, within ``budget`` tokens; see the module docstring.

    ``count_retrievals=False`` leaves retrieval counts alone (for tools that
    walk the map without showing it to a model).
    """
    memory = store.memories.get(memory_id)  # NotFound behind the project wall
    found = groups(store, memory_id, store.project)
    if memory.status != "active" and not any(members for _, members in found):
        raise NotFound(f"memory {memory_id} is {memory.status}; nothing to expand")
    if not found:
        found = [("", [memory_id])]
    ids = list(dict.fromkeys(m for _, members in found for m in members))
    texts = _texts(store, ids)
    annotated = notes(store, ids)
    counter = store.tokenizer
    opening, closing = f'<memory-details of="{memory_id}">', "</memory-details>"
    lines = [opening]
    used = counter.count(opening + "\n") + counter.count(closing)
    shown: list[int] = []
    left: list[int] = []
    seen: set[int] = set()
    for kind, members in found:
        heading = f"## {len(members)} {NOUNS[kind][1]}" if len(found) > 1 else ""
        for member in members:
            if member in seen:
                continue
            seen.add(member)
            line = entry(member, texts[member], annotated.get(member, ("", ""))[1])
            if heading:
                line, heading = f"{heading}\n{line}", ""
            cost = counter.count(line + "\n")
            if budget is not None and (left or used + cost > budget):
                left.append(member)
                continue
            lines.append(line)
            shown.append(member)
            used += cost
    text = "\n".join([*lines, closing]) if shown else ""
    tokens = counter.count(text) if text else 0
    while budget is not None and tokens > budget and shown:
        # Line counts add up for the built-in tokenizer; any other may differ.
        left.insert(0, shown.pop())
        lines.pop()
        text = "\n".join([*lines, closing]) if shown else ""
        tokens = counter.count(text)
    if count_retrievals:
        store.memories.record_retrievals(shown)
    return Expansion(text, tokens, shown, left)


def _texts(store: Store, ids: list[int]) -> dict[int, str]:
    found: dict[int, str] = {}
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        found.update(store.tables.memories.texts(part))
    return found
