"""Built-in dreamer task ``map``: group standalone memories under theme headers.

The header map has two layers: theme headers -> category headers -> details.
This task builds the theme layer so that a small injection can reach most of
a large store by one expand. For each category (one per batch), it takes the
active memories that belong to no theme and are not details of a fragment,
and groups them by their most shared term: each memory goes to the term of
its text that the most other ungrouped memories of the category share (ties:
alphabetical; terms that look like identifiers, with digits or ``-_.:/``,
count double). A group of at least :data:`MIN_GROUP` memories becomes a
``theme`` composite headed by a new header memory ``CATEGORY: term`` in the
same category; an existing theme header for the same term gains the new
members instead. What is left goes to ``CATEGORY: other``, so every memory of
a mapped category is one expand away from a header.

The grouping is deterministic and needs no model; it reads no category names
from code. Directives grouped under a theme header are still injected
directly when the budget allows (see the injection plugin).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from plugin_sdk.plugin import DreamerTask, Store, TaskContext, hookimpl

MIN_GROUP = 3
OTHER = "other"
MAX_GROUP = 40
HEADER_IMPORTANCE = 60
_TERM = re.compile(r"[a-z][a-z0-9_.:/-]{2,}[a-z0-9]")
STOPWORDS = frozenset(
    """about above after again against also always because been before being below between
    both cannot could does doing down during each every from further have having here into
    itself just more most must never once only other ought over same should some such than
    that their them then there these they this those through under until very were what when
    where which while whom with would your the and for are but not you all any can had her
    was one our out use used uses using via per its it's don't isn't need needs first last
    next new old memory memories time times week weeks day days hour hours minute minutes
    still goes going get gets got make makes made take takes took run runs ran without
    within across until since like want wants know known keep kept back well many much""".split()  # noqa: SIM905
)


def terms(text: str) -> set[str]:
    return {t.strip(".:/-") for t in _TERM.findall(text.lower())} - STOPWORDS


def _weight(term: str, df: int) -> float:
    return df * (2.0 if any(not ch.isalpha() for ch in term) else 1.0)


def _existing_terms(store: Store, category: str) -> set[str]:
    prefix = _header_prefix(category)
    return {
        memory.content.removeprefix(prefix)
        for composite in store.composites.all(type="theme")
        for memory in [store.memories.get(composite.head)]
        if memory.category == category and memory.content.startswith(prefix)
    }


def _header_prefix(category: str) -> str:
    return f"{category}: "


def run(context: TaskContext) -> int:
    store = context.store
    names = store.category_names()
    index = context.cursor or 0
    if index >= len(names):
        return 0
    category = names[index]
    grouped = _map_category(store, context.project, category)
    with context.batch():
        context.save(index + 1, max(1, grouped))
    return max(1, grouped)


def _grouped(store: Store) -> set[int]:
    """Ids that already belong to a group: details of fragments, members and heads of themes.

    Read from the composite tables directly: no facade lists every member of
    every composite of a type (``store.composites.all`` reads one project's
    composites one at a time).
    """
    rows = store.db.execute(
        """SELECT d.member_memory_id FROM composite_members d
           JOIN composites c ON c.id = d.composite_id
           WHERE c.type IN ('sequence', 'theme')
           UNION SELECT head_memory_id FROM composites WHERE type = 'theme'"""
    ).fetchall()
    return {row[0] for row in rows}


def _map_category(store: Store, project: str, category: str) -> int:
    grouped = _grouped(store)
    vocab = {
        memory.id: terms(memory.content)
        for memory in store.memories.iter(project=project, category=category)
        if memory.id not in grouped
    }
    df = Counter(term for words in vocab.values() for term in words)
    groups: dict[str, list[int]] = {}
    for memory_id, words in vocab.items():
        shared = [t for t in words if df[t] >= MIN_GROUP]
        best = min(shared, key=lambda t: (-_weight(t, df[t]), t)) if shared else OTHER
        groups.setdefault(best, []).append(memory_id)
    small = [term for term, members in groups.items() if term != OTHER and len(members) < MIN_GROUP]
    for term in small:
        if term not in _existing_terms(store, category):
            groups.setdefault(OTHER, []).extend(groups.pop(term))
    existing = {
        memory.content.removeprefix(_header_prefix(category)): composite
        for composite in store.composites.all(type="theme")
        for memory in [store.memories.get(composite.head)]
        if memory.category == category and memory.content.startswith(_header_prefix(category))
    }
    count = 0
    with store.atomic():
        for term, members in sorted(groups.items()):
            if term in existing:
                composite = existing[term]
                room = MAX_GROUP - len(composite.members)
                for member in members[: max(0, room)]:
                    store.composites.add(composite.id, member)
                    count += 1
                continue
            if len(members) < (2 if term == OTHER else MIN_GROUP):
                continue
            for start in range(0, len(members), MAX_GROUP):
                chunk = members[start : start + MAX_GROUP]
                if len(chunk) < 2:
                    break
                label = term if start == 0 else f"{term} ({start // MAX_GROUP + 1})"
                header = store.memories.write(
                    f"{_header_prefix(category)}{label}",
                    category,
                    project=project,
                    importance=HEADER_IMPORTANCE,
                    source="dreamer:map",
                )
                store.composites.create("theme", header.id, chunk)
                count += len(chunk)
    return count


def total(store: Store) -> int:
    return len(store.category_names())


@hookimpl
def register_dreamer_tasks(register: Callable[[DreamerTask], None]) -> None:
    register(
        DreamerTask(
            name="map",
            description="Group standalone memories under theme headers (one category per batch).",
            run=run,
            schedule="daily",
            batch_size=1,
            total=total,
        )
    )
