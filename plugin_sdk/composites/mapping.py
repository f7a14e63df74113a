"""The map of a category in the store: build it, keep it current, relabel what drifted.

:func:`map_category` brings one category's map up to date
(``plugin_sdk.composites.levels`` decides its shape):

- **Build** when the category has no map of the levels the store now needs,
  or when more than :data:`REBUILD_SHARE` of its memories are new to the
  map: the old groups are dissolved and new ones written. A group is a
  ``theme`` composite headed by a header memory (source
  :data:`MAP_SOURCE`) whose text is the group's label; its ``layout``
  records ``{"map": {level, groups, memories, members, cost, terms}}``. A
  header whose label is unchanged keeps its id (writing the same label finds
  it); headers no longer needed are archived.
- **Update** otherwise: a new memory joins the leaf whose label shares most
  of its terms and that has room; a new fragment header joins the level above
  the leaves. Members that left (archived, merged away) are dropped. Every
  group that changed, or was marked stale (a member changed: see
  ``Composites.mark_stale``), gets its sizes and label again, and so do the
  groups above it. If no leaf has room, the category is built afresh.

A header's text is the group's title, a phrase from its most central member
(``titles.py``); with the host's model, a short summary it writes
(``model_complete``, purpose ``map_label``), with the group's distinctive
terms (``labels.py``, kept in the layout and used to place new memories) and
the title as hints.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

from plugin_sdk.composites.labels import entity_term, label, terms
from plugin_sdk.composites.levels import (
    BLOCK_BUDGET,
    LEAF_FILL,
    LINE,
    TOP_SHARE,
    Group,
    Stats,
    Unit,
    build,
    plan,
    upper,
)
from plugin_sdk.composites.titles import title
from plugin_sdk.errors import DuplicateMemory
from plugin_sdk.plugin.records import Prompt
from plugin_sdk.store.normalize import normalized_hash

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

MAP_SOURCE = "dreamer:map"
HEADER_IMPORTANCE = 60
REBUILD_SHARE = 0.2
SUMMARY_WORDS = 8


def map_category(store: Store, project: str, category: str) -> int:
    """Bring one category's map up to date; return how many memories it now places."""
    levels = plan(_stats(store, project), _top_budget(store, project))[category]
    units = {u.id: u for u in _units(store, project, category)}
    df = Counter(t for u in units.values() for t in u.terms | u.entities)
    top = _existing(store, project, category, units)
    mapped = {u.id for g in top for u in g.units()}
    new = [
        u
        for uid, u in units.items()
        if uid not in mapped and not (levels == 1 and upper(u, levels))
    ]
    level = max((g.level for g in top), default=0)
    if levels == 0 and not top:
        return 0
    empty = any(not g.members for root in top for g in root.walk())
    if level != levels or empty or len(new) > REBUILD_SHARE * max(len(mapped), 1):
        return _rebuild(store, project, category, levels, list(units.values()), df, top)
    touched = _place(top, new, levels)
    if touched is None:
        return _rebuild(store, project, category, levels, list(units.values()), df, top)
    _update(store, project, category, top, touched, df, len(units))
    return len(units)


def _top_budget(store: Store, project: str) -> int:
    pinned = store.tables.memories.pinned_cost(project, LINE)
    return max(0, int(BLOCK_BUDGET * TOP_SHARE) - int(pinned))


def _stats(store: Store, project: str) -> dict[str, Stats]:
    plain: Counter[str] = Counter()
    headers: Counter[str] = Counter()
    names = set(store.category_names())
    for _, category, content, tokens, details in store.tables.memories.map_units(
        project, MAP_SOURCE
    ):
        (headers if details else plain)[category] += _cost(content, tokens, details)
    return {name: Stats(plain[name], headers[name]) for name in sorted(names)}


def _cost(content: str, tokens: int, details: int) -> int:
    return tokens + LINE + content.count("\n") + (3 if details else 0)


def _units(store: Store, project: str, category: str) -> list[Unit]:
    entities: dict[int, set[str]] = {}
    for memory_id, name in store.tables.entities.links.names_in_category(project, category):
        entities.setdefault(memory_id, set()).add(entity_term(name))
    rows = store.tables.memories.map_units(project, MAP_SOURCE, category)
    return [
        Unit(
            memory_id,
            _cost(content, tokens, details),
            terms(content),
            details,
            entities.get(memory_id, set()),
            content,
        )
        for memory_id, _, content, tokens, details in rows
    ]


def _existing(store: Store, project: str, category: str, units: dict[int, Unit]) -> list[Group]:
    """The category's map as it is stored, top level first (members that left are dropped)."""
    rows = store.tables.composites.map_themes(project, category, MAP_SOURCE)
    groups: dict[int, Group] = {}
    members: dict[int, list[int]] = {}
    for composite_id, head, layout, stale, content in rows:
        data = (json.loads(layout) if layout else {}).get("map") or {}
        group = Group(int(data.get("level", 1)), [], list(data.get("terms", [])), content)
        group.id, group.composite = head, composite_id
        group.cost = int(data.get("line", group.cost))
        group.stale = bool(stale)
        groups[head] = group
        members[head] = store.tables.composites.member_ids(composite_id)
    children = set()
    for head, group in groups.items():
        for member in members[head]:
            if member in groups:
                group.members.append(groups[member])
                children.add(member)
            elif member in units:
                group.members.append(units[member])
            else:
                group.stale = True  # a member left the map (archived, merged away)
    return [g for head, g in groups.items() if head not in children]


def _place(top: list[Group], new: list[Unit], levels: int) -> set[int] | None:
    """Put new units into the map; the groups touched, or None when one does not fit."""
    groups = [g for t in top for g in t.walk()]
    leaves = [g for g in groups if g.level == 1]
    touched = {g.id for g in groups if g.stale}
    for unit in sorted(new, key=lambda u: u.id):
        if upper(unit, levels):
            if levels < 2:
                continue  # a fragment header or long memory at the top: shown in the block
            target = _best([g for g in groups if g.level == 2], unit, float("inf"))
        else:
            target = _best(leaves, unit, LEAF_FILL)
        if target is None:
            return None
        target.members.append(unit)
        touched.add(target.id)
    return touched


def _best(groups: list[Group], unit: Unit, fill: float) -> Group | None:
    room = [g for g in groups if g.members_cost() + unit.cost <= fill]
    if not room:
        return None
    return min(room, key=lambda g: (-len(unit.terms & set(g.label)), g.members_cost(), g.id))


def _update(
    store: Store,
    project: str,
    category: str,
    top: list[Group],
    touched: set[int],
    df: Counter[str],
    total: int,
) -> None:
    with store.atomic():
        for root in top:
            for group in root.walk():  # children first: sizes and labels flow upwards
                changed = group.id in touched or any(
                    isinstance(m, Group) and m.id in touched for m in group.members
                )
                if not changed:
                    continue
                touched.add(group.id)
                stored = store.composites.get(group.composite).members
                wanted = [m.id for m in group.members]
                if stored != wanted:
                    store.composites.set_members(group.composite, wanted)
                _relabel(store, project, category, group, df, total)
                store.composites.clear_stale(group.composite)


def _relabel(
    store: Store, project: str, category: str, group: Group, df: Counter[str], total: int
) -> None:
    units = list(group.units())
    group.label = label([u.terms for u in units], df, total, entities=[u.entities for u in units])
    taken = {m.title for m in group.members if isinstance(m, Group)}
    group.title = title([(u.terms, u.text) for u in units], df, total, taken=taken)
    text = _text(store, group)
    header = store.memories.get(group.id)
    if header.content != text:
        for suffix in ["", *(f" ({n})" for n in range(2, 50))]:
            try:
                store.memories.update(group.id, content=text + suffix)
                break
            except DuplicateMemory:
                continue
    _set_layout(store, group)


def _rebuild(
    store: Store,
    project: str,
    category: str,
    levels: int,
    units: list[Unit],
    df: Counter[str],
    old: list[Group],
) -> int:
    counter = store.tokenizer

    def header_cost(text: str) -> int:
        return counter.count(text) + 12

    top = build(units, levels, df, header_cost) if levels else []
    old_groups = [g for root in old for g in root.walk()]
    with store.atomic():
        for group in old_groups:
            store.composites.delete(group.composite)
        used: set[int] = set()
        for root in top:
            if isinstance(root, Group):
                for group in root.walk():
                    _write(store, project, category, group, used)
        for group in old_groups:
            if group.id not in used:
                store.memories.archive(group.id)
    return len(units) if levels else 0


def _write(store: Store, project: str, category: str, group: Group, used: set[int]) -> None:
    """Write a group's header (reusing one with the same label) and its theme composite."""
    text = _text(store, group)
    header = 0
    for suffix in ["", *(f" ({n})" for n in range(2, 100))]:
        found = store.tables.memories.source_by_hash(
            project, category, normalized_hash(text + suffix)
        )
        if found is None:
            header = store.memories.write(
                text + suffix,
                category,
                project=project,
                importance=HEADER_IMPORTANCE,
                source=MAP_SOURCE,
            ).id
            break
        if found[1] == MAP_SOURCE and found[0] not in used and found[2] in ("active", "archived"):
            header = found[0]
            if found[2] != "active":  # an earlier map's header with this label
                store.tables.memories.reactivate(header, store.now())
            break
    used.add(header)
    group.id = header
    members = [m.id for m in group.members]
    group.composite = store.composites.create("theme", group.id, members).id
    _set_layout(store, group)


def _set_layout(store: Store, group: Group) -> None:
    layout = {
        "map": {
            "level": group.level,
            "groups": group.groups,
            "memories": group.memories,
            "members": len(group.members),
            "cost": group.members_cost(),
            "line": group.cost,
            "terms": group.label,
        }
    }
    store.tables.composites.set_layout(group.composite, json.dumps(layout), store.now())


def _text(store: Store, group: Group) -> str:
    """A group's header text: a model's summary, else its title (never a list of terms)."""
    summary = _summary(store, group, group.label)
    if summary:
        return summary
    if group.title:
        return group.title
    first = next(group.units(), None)  # nothing distinctive: say how it starts
    text = store.memories.get(first.id).content if first else ""
    return " ".join(text.split()[:SUMMARY_WORDS]) + " ..."


def _summary(store: Store, group: Group, words: list[str]) -> str | None:
    hook = store.plugins.hook.model_complete
    if not hook.get_hookimpls():
        return None
    sample = [store.memories.get(u.id).content for u in list(group.units())[:12]]
    prompt = Prompt(
        "map_label",
        f"Name what this group of memories is about in at most {SUMMARY_WORDS} words, for a "
        "table of contents. Reply with the name only.",
        [
            {
                "role": "user",
                "content": f"Distinctive terms: {', '.join(words)}\n"
                f"Its most central memory begins: {group.title}\n\nMemories:\n"
                + "\n".join(f"- {' '.join(text.split())[:300]}" for text in sample),
            }
        ],
    )
    reply = hook(prompt=prompt)
    if not reply or not reply.strip():
        return None
    return " ".join(reply.split()[: SUMMARY_WORDS * 2])[:120]


def describe(group: Group) -> dict[str, Any]:
    """A group as data (for reports and tests)."""
    return {
        "id": group.id,
        "level": group.level,
        "label": group.label,
        "members": [m.id for m in group.members],
        "memories": group.memories,
    }
