"""Classify onto the grid: memory type, referent and (for interactions) the illocutionary act.

The ``classify_cell`` hook decides; two built-ins answer it
(``plugins/cell_classifier.py``): a model-backed classifier when the host's model
answers, else :func:`rule_cell` here, which reads only pack data:

- **votes per axis.** Each of the pack's cue patterns (``grid.cues``, regular
  expressions in RE2's syntax, case-insensitive, matched in linear time) that matches the text gives its value one
  vote; the category's usual cell (``grid.category_cells``) gives its memory
  type and referent one vote each (and wins their ties).
- **the winner** is the value with the most votes; a tie goes to the
  category's cell, then the grid's ``default_cell``, then axis order. With no
  vote at all on an axis the default cell's value is taken.
- **acts** (interaction memories only: those linked to an actor entity) are
  voted by ``grid.acts``; with no vote the act is ``assertive`` (a statement
  of how things are).

The signal says what decided: ``rules``, ``rules (default)`` when nothing
voted on either axis, or the model's.

:func:`place` writes decisions into ``memory_cells`` (one transaction per
call); ``acts.py`` reads the acts back per actor.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import re2

from plugin_sdk.grid.policy import Grid, has_grid
from plugin_sdk.plugin.records import CellDecision
from plugin_sdk.store.models import ACTS, DEFAULT_ACT, MEMORY_TYPES, REFERENTS
from plugin_sdk.store.patterns import compile_pattern

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store
    from plugin_sdk.store.models import Memory

CATEGORY_VOTES = 1


@lru_cache(maxsize=64)
def _patterns(patterns: tuple[str, ...]) -> tuple[Any, ...]:
    # RE2: matching in linear time, whatever a pack's pattern (store/patterns.py)
    return tuple(compile_pattern(p, ignore_case=True) for p in patterns)


@lru_cache(maxsize=64)
def _pattern_set(table: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[Any, list[str]]:
    """All of a vote table's patterns in one RE2 set (one pass over the text for all)."""
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = False
    found = re2.Set.SearchSet(options)
    owners: list[str] = []
    for value, patterns in table:
        _patterns(patterns)  # each one checked (a clear error for a bad one) and compiled
        for pattern in patterns:
            found.Add(pattern)
            owners.append(value)
    found.Compile()
    return found, owners


# A grid's vote tables in one RE2 set, by the grid's id (the grid kept alongside, so
# the id is not reused while the entry lives). A grid's tables are built with it and
# never changed after; they are read for every memory placed, and one pass over the
# text for all three tables costs a third of one per table.
_CUES: dict[int, tuple[Grid, _Cues]] = {}
AXES = ("memory_type", "referent")


class _Cues:
    """A grid's cue and act tables, compiled: each pattern's axis (0, 1, 2 = act) and value."""

    def __init__(self, policy: Grid) -> None:
        self.tables = (policy.cues.get(AXES[0], {}), policy.cues.get(AXES[1], {}), policy.acts)
        key = tuple(
            (value, tuple(patterns)) for table in self.tables for value, patterns in table.items()
        )
        # the set numbers the patterns in this order
        self.owners = [
            (axis, value)
            for axis, table in enumerate(self.tables)
            for value, patterns in table.items()
            for _ in patterns
        ]
        self.found: Any = _pattern_set(key)[0] if self.owners else None

    def votes(self, text: str) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
        """Per axis, per value, how many of its patterns match the text."""
        votes = (
            dict.fromkeys(self.tables[0], 0),
            dict.fromkeys(self.tables[1], 0),
            dict.fromkeys(self.tables[2], 0),
        )
        if self.found is not None:
            owners = self.owners
            for index in self.found.Match(text) or ():
                axis, value = owners[index]
                votes[axis][value] += 1
        return votes


def _cues(policy: Grid) -> _Cues:
    kept = _CUES.get(id(policy))
    if kept is not None and kept[0] is policy:
        return kept[1]
    cues = _Cues(policy)
    if len(_CUES) >= 64:
        _CUES.clear()
    _CUES[id(policy)] = (policy, cues)
    return cues


def _winner(votes: dict[str, int], order: Sequence[str], preferred: Sequence[str]) -> str:
    """The first preferred value among the leaders (in ``order``), else the first leader."""
    best = max(votes.values(), default=0)
    for value in preferred:
        if votes.get(value, 0) == best and value in order:
            return value
    for value in order:
        if votes.get(value, 0) == best:
            return value
    raise IndexError(f"no leader among {list(order)}")  # a vote for a value not in order


def rule_cell(policy: Grid, text: str, category: str | None, interaction: bool) -> CellDecision:
    """The rule-based decision (see the module docstring)."""
    hint = policy.category_cells.get(category) if category else None
    default_type, default_referent = policy.default_cell.split(".")
    type_votes, referent_votes, act_votes = _cues(policy).votes(text)
    prefer_type, prefer_referent = [default_type], [default_referent]
    if hint is not None:
        hint_type, hint_referent = hint.split(".")
        type_votes[hint_type] = type_votes.get(hint_type, 0) + CATEGORY_VOTES
        referent_votes[hint_referent] = referent_votes.get(hint_referent, 0) + CATEGORY_VOTES
        prefer_type.insert(0, hint_type)
        prefer_referent.insert(0, hint_referent)
        quiet = False
    else:
        quiet = not any(type_votes.values()) and not any(referent_votes.values())
    memory_type = _winner(type_votes, MEMORY_TYPES, prefer_type)
    referent = _winner(referent_votes, REFERENTS, prefer_referent)
    act = None
    if interaction:
        act = _winner(act_votes, ACTS, [DEFAULT_ACT])
    return CellDecision(memory_type, referent, act, "rules (default)" if quiet else "rules")


def is_interaction(store: Store, memory_id: int) -> bool:
    """Whether a memory is linked to an actor entity (said by or to someone)."""
    return store.tables.entities.links.has_actor(memory_id)


def decide(store: Store, memory: Memory) -> CellDecision:
    """Ask the ``classify_cell`` hook about one memory."""
    decision: CellDecision = store.plugins.hook.classify_cell(
        store=store,
        text=memory.content,
        category=memory.category,
        interaction=is_interaction(store, memory.id),
    )
    return decision


def place(store: Store, decisions: Sequence[tuple[int, CellDecision]]) -> int:
    """Write cell decisions for memories (one transaction); how many rows changed."""
    changed = 0
    rows = store.tables.cells
    with store.atomic():
        for memory_id, d in decisions:
            changed += rows.place(memory_id, d.memory_type, d.referent, d.act, d.signal)
    return changed


def classify_cells(store: Store, memories: Sequence[Memory]) -> int:
    """Place memories on the grid, if the store has one; how many rows changed."""
    if not memories or not has_grid(store):
        return 0
    return place(store, [(m.id, decide(store, m)) for m in memories])


def cell_of(store: Store, memory_id: int) -> dict[str, Any] | None:
    """A memory's row in ``memory_cells``, or ``None`` if it is not placed yet."""
    return store.tables.cells.of_memory(memory_id)
