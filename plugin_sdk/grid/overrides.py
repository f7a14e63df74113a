"""Per-store overrides of grid values, with their history (like criteria overrides).

A pack sets each cell's half-life and emotional multiplier, each emotion's
multiplier and each relation type's σ. A person may override any of them for
one store; the override wins over every pack until it is cleared with
:func:`reset`, and a pack upgrade changes only the default under it. Every
change is a row of ``grid_history`` (source, when, old, new, note).

Keys name one value:

- ``cells.<memory type>.<referent>.half_life_days``
- ``cells.<memory type>.<referent>.emotional_multiplier``
- ``emotions.<tag>``
- ``relations.<type>.sigma_days``

An override applies from the moment it is set: to entities placed or moved
from then on (an entity keeps the half-life it was given), to memory strength
at the next consolidation pass, and to relation weights at once.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import GridError

if TYPE_CHECKING:
    from plugin_sdk.grid.policy import Grid
    from plugin_sdk.store.connection import Store

_KEY = re.compile(
    r"^(?:cells\.(?P<cell>[a-z]+\.[a-z]+)\.(?P<field>half_life_days|emotional_multiplier)"
    r"|emotions\.(?P<tag>[\w-]+)|relations\.(?P<relation>[\w-]+)\.sigma_days)$"
)


@attrs.frozen
class GridEvent:
    id: int
    key: str
    source: str  # "override" | "reset"
    old_value: float | None
    new_value: float | None
    note: str | None
    at: str

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def overrides(store: Store) -> dict[str, float]:
    """The store's grid overrides, key -> value."""
    return store.tables.cells.overrides.all()


def apply(policy: Grid, found: dict[str, float]) -> Grid:
    """``policy`` with the overrides in ``found`` applied (keys it does not have are skipped)."""
    if not found:
        return policy
    cells = dict(policy.cells)
    emotions = dict(policy.emotions)
    relations = dict(policy.relations)
    for key, value in found.items():
        match = _KEY.match(key)
        if match is None:
            continue
        if match["cell"] and match["cell"] in cells:
            changes: dict[str, Any] = {match["field"]: value}
            cells[match["cell"]] = attrs.evolve(cells[match["cell"]], **changes)
        elif match["tag"] and match["tag"] in emotions:
            emotions[match["tag"]] = value
        elif match["relation"] and match["relation"] in relations:
            relations[match["relation"]] = attrs.evolve(
                relations[match["relation"]], sigma_days=value
            )
    return attrs.evolve(policy, cells=cells, emotions=emotions, relations=relations)


def value_of(policy: Grid, key: str) -> float:
    """The effective value of a key in ``policy``; :class:`GridError` if the grid has no such key."""
    match = _KEY.match(key)
    if match is not None:
        if match["cell"] in policy.cells:
            return float(getattr(policy.cells[match["cell"]], match["field"]))
        if match["tag"] in policy.emotions:
            return policy.emotions[match["tag"]]
        if match["relation"] in policy.relations:
            return policy.relations[match["relation"]].sigma_days
    raise GridError(
        f"no grid value {key!r}; keys are cells.TYPE.REFERENT.half_life_days, "
        "cells.TYPE.REFERENT.emotional_multiplier, emotions.TAG, relations.TYPE.sigma_days "
        "(memsdk grid show lists them)"
    )


def set_value(store: Store, key: str, value: float, *, note: str | None = None) -> float:
    """Override one grid value for this store; the value it had before."""
    from plugin_sdk.grid.policy import grid

    if not value > 0:
        raise GridError(f"a grid value must be above 0, not {value!r}")
    with store.atomic():
        old = value_of(grid(store), key)
        store.tables.cells.overrides.set(key, float(value), store.now())
        _record(store, key, "override", old, float(value), note)
    return old


def reset(store: Store, key: str | None = None) -> list[str]:
    """Clear one override (or all): the packs' value applies again; the keys cleared."""
    from plugin_sdk.grid.policy import grid

    with store.atomic():
        found = overrides(store)
        keys = [key] if key is not None else list(found)
        if key is not None and key not in found:
            value_of(grid(store), key)  # an unknown key is an error, a known one a no-op
            return []
        for name in keys:
            store.tables.cells.overrides.delete(name)
        after = grid(store)
        for name in keys:
            _record(store, name, "reset", found[name], value_of(after, name), None)
    return keys


def history(store: Store, key: str | None = None) -> list[GridEvent]:
    """Every recorded change, oldest first (optionally of one key)."""
    return [GridEvent(**row) for row in store.tables.cells.overrides.history(key)]


def _record(
    store: Store, key: str, source: str, old: float | None, new: float | None, note: str | None
) -> None:
    store.tables.cells.overrides.record(key, source, old, new, note, store.now())
