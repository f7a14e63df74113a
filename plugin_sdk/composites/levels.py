"""The map's shape: how many levels each category needs, and the groups at each level.

The block (about :data:`BLOCK_BUDGET` tokens) must reach every active memory
within two expands of at most :data:`EXPAND_BUDGET` tokens each, however
large the store. So a category is shown in one of these ways, the fewest
levels that let every category's top level fit the block together
(:func:`plan`; the largest category gets a level more first):

- level 0: its memories directly (a small category needs no header);
- level 1: **groups** (leaves) of memories, each of whose expand fits
  :data:`LEAF_FILL` tokens, shown as one header line each, with the
  category's fragment headers (whose details are one expand further) and its
  memories too long to share an expand beside them;
- level 2 and up: groups of the level below (and fragment headers at the
  first such level), each expand again within :data:`NODE_FILL` tokens.

So at level 1 and 2 every memory is at most two expands from the block, and
each level more adds one. A run of one short item gets no group of its
own; a memory too long to share an expand keeps one (its header line stands
for it, as its text would not fit the level above). Within a category, memories are ordered so that
those sharing their commonest terms sit together (:func:`order`), and cut
into contiguous groups of about equal size (:func:`chunk`). Everything here
is deterministic: the same memories give the same map.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from plugin_sdk.composites.labels import contrast
from plugin_sdk.composites.titles import title

BLOCK_BUDGET = 4000
EXPAND_BUDGET = 2000
TOP_SHARE = 0.75  # of the block, for the top level of every category together
LEAF_FILL = 1800  # of an expand, for a group's lines (the rest: frame and estimate error)
NODE_FILL = 1800
LINE = 5  # tokens of a line's frame in an expand, besides its text
HEAD_LINE = 22  # tokens of a group's header line, as planned before labels exist
MAX_LEVELS = 6
SHORT_LINE = 3 * HEAD_LINE  # an item this short stands for itself rather than in a group of one


@attrs.define
class Unit:
    """A memory the map places: its line cost, terms, and details when it is a fragment header."""

    id: int
    cost: int
    terms: set[str]
    details: int = 0  # > 0: heads a sequence of that many details (placed a level higher)
    entities: set[str] = attrs.field(factory=set)
    text: str = ""  # its content, for a group's title (``titles.py``)


@attrs.define
class Group:
    """A group of the map: its level (1 = a leaf of memories) and members in order."""

    level: int
    members: list[Unit | Group]
    label: list[str] = attrs.field(factory=list)  # its distinctive terms (placement, layout)
    title: str = ""  # what its header says: a phrase from its central member
    cost: int = HEAD_LINE  # its header line's tokens, once labelled
    id: int = 0  # its header memory, once written
    composite: int = 0  # its theme composite, once written
    stale: bool = False  # its members changed since it was labelled

    def units(self) -> Iterator[Unit]:
        for member in self.members:
            if isinstance(member, Unit):
                yield member
            else:
                yield from member.units()

    @property
    def memories(self) -> int:
        return sum(1 + unit.details for unit in self.units())

    @property
    def groups(self) -> int:
        return sum(isinstance(m, Group) for m in self.members)

    def members_cost(self) -> int:
        return sum(m.cost for m in self.members)

    def walk(self) -> Iterator[Group]:
        """This group and every group below it, children first."""
        for member in self.members:
            if isinstance(member, Group):
                yield from member.walk()
        yield self


@attrs.frozen
class Stats:
    """What :func:`plan` needs of a category: line costs of its memories and fragment headers."""

    plain: int  # tokens of the lines of its memories that head no sequence
    headers: int  # tokens of the lines of its fragment headers


def top_cost(stats: Stats, levels: int) -> int:
    """Tokens the category's top level takes in the block with ``levels`` levels."""
    if levels == 0:
        return stats.plain + stats.headers
    cost = math.ceil(stats.plain / LEAF_FILL) * HEAD_LINE + stats.headers
    for _ in range(levels - 1):
        cost = math.ceil(cost / NODE_FILL) * HEAD_LINE
    return cost


def plan(categories: Mapping[str, Stats], budget: int) -> dict[str, int]:
    """Levels per category so that every top level fits ``budget`` tokens together."""
    levels = dict.fromkeys(categories, 0)
    while sum(top_cost(categories[c], n) for c, n in levels.items()) > budget:
        shrinking = [
            (-top_cost(categories[c], n), c)
            for c, n in levels.items()
            if n < MAX_LEVELS and top_cost(categories[c], n + 1) < top_cost(categories[c], n)
        ]
        if not shrinking:
            break
        levels[min(shrinking)[1]] += 1
    return levels


def order(units: Sequence[Unit], df: Mapping[str, int]) -> list[Unit]:
    """Units sorted so that those sharing their commonest terms sit together."""

    def key(unit: Unit) -> tuple[Any, ...]:
        shared = sorted(
            (t for t in unit.terms | unit.entities if df.get(t, 0) >= 2), key=lambda t: (-df[t], t)
        )[:4]
        return (not shared, shared, unit.id)

    return sorted(units, key=key)


def chunk(items: Sequence[Unit | Group], fill: int) -> list[list[Unit | Group]]:
    """Contiguous runs of about equal cost, each at most ``fill`` (an item over it stands alone)."""
    total = sum(item.cost for item in items)
    if not items:
        return []
    count = max(1, math.ceil(total / fill))
    target = total / count
    runs: list[list[Unit | Group]] = [[]]
    cost = 0
    for item in items:
        full = cost + item.cost > fill or (cost + item.cost / 2 > target and len(runs) < count)
        if runs[-1] and full:
            runs.append([])
            cost = 0
        runs[-1].append(item)
        cost += item.cost
    return runs


def build(
    units: Sequence[Unit],
    levels: int,
    df: Mapping[str, int],
    header_cost: Callable[[str], int],
) -> list[Unit | Group]:
    """The category's top level for ``levels`` levels: units, groups, or both.

    ``header_cost(title)`` gives the tokens of a group's header line with that
    title (labels and titles are chosen here, against the category's ``df``).
    """
    ordered = order(units, df)
    if levels == 0:
        return list(ordered)
    total = len(units)
    plain = [u for u in ordered if not upper(u, levels)]
    place = {u.id: n for n, u in enumerate(ordered)}
    layer = _groups(1, chunk(plain, LEAF_FILL))
    _label(layer, df, total, header_cost)
    # Fragment headers (and memories too long to share an expand) join the
    # level above the leaves, in their own place.
    layer += [u for u in ordered if upper(u, levels)]
    layer.sort(key=lambda item: place[_first(item).id])
    for level in range(2, levels + 1):
        layer = _groups(level, chunk(layer, NODE_FILL))
        _label(layer, df, total, header_cost)
    return layer


def _groups(level: int, runs: list[list[Unit | Group]]) -> list[Unit | Group]:
    """A group per run; a run of one short item needs no header: it stands for itself."""
    return [
        run[0] if len(run) == 1 and run[0].cost <= SHORT_LINE else Group(level, run) for run in runs
    ]


def upper(unit: Unit, levels: int) -> bool:
    """Whether a memory belongs a level above the leaves: a fragment header does.

    Its details are one expand further, so its line sits beside the groups.
    (A memory too long to share an expand stays a leaf's member: alone in its
    group if need be, that group's header standing for it.)
    """
    return bool(unit.details)


def _first(item: Unit | Group) -> Unit:
    return item if isinstance(item, Unit) else next(item.units())


def _label(
    layer: list[Unit | Group],
    df: Mapping[str, int],
    total: int,
    header_cost: Callable[[str], int],
) -> None:
    groups = [g for g in layer if isinstance(g, Group)]
    counted = []
    boosted: set[str] = set()
    for group in groups:
        units = list(group.units())
        counts: Counter[str] = Counter()
        for unit in units:
            counts.update(unit.terms | unit.entities)
            boosted |= unit.entities
        counted.append((len(units), counts))
    taken = {m.title for g in groups for m in g.members if isinstance(m, Group)}
    for group, words in zip(groups, contrast(counted, df, total, boosted=boosted), strict=True):
        group.label = words
        group.title = title([(u.terms, u.text) for u in group.units()], df, total, taken=taken)
        taken.add(group.title)
        group.cost = header_cost(group.title)
