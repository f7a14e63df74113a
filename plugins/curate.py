"""Built-in dreamer task ``curate``: merge near-duplicates inside one category.

A memory's near-duplicates are active memories of the same project and
category whose word sets overlap by at least ``SIMILARITY`` (Jaccard). Content
memories are merged into the most detailed one (the longest text; the older on
a tie), with the host's model writing the merged text when there is one.
A model that answers ``<keep-separate/>`` keeps the group apart. Intent
memories are never merged by the dreamer: it files a proposal for a person
instead. Merging across categories never happens: candidates come from
the memory's own category only. Nor across projects: another project's shared
memory (readable here, read-only) is never a source or a target.

Near-duplicates whose values differ (numbers, versions, hosts, dates, quoted
text, and polarity: enabled/disabled, may/may not, ... see
``value_conflicts.values``) are never merged, with or without a
model: each is recorded as an open memory conflict with the group's target,
and both memories stay active. Merged text from the model that drops one of
the group's values, or flips a polarity (``polarity.flips``), is not used
(the target keeps its own text). Values and
conflict records come from ``plugin_sdk.retain`` (``value_conflicts``: the
memory counterpart of the Retain Job's conflicts, which no front door
exports).

Its candidates come from the store's MinHash index
(``plugin_sdk.store.search`` ``neardup``: word-set signatures banded for
locality-sensitive hashing), which no front door exports.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable

from plugin_sdk.errors import DuplicateMemory
from plugin_sdk.plugin import (
    DreamerTask,
    Memory,
    Prompt,
    Store,
    TaskContext,
    dreamer_curate,
    hookimpl,
)
from plugin_sdk.retain import polarity, value_conflicts
from plugin_sdk.store.search import neardup as curate_index

SIMILARITY = 0.8
_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text) if len(w) > 1}


def similarity(a: str, b: str) -> float:
    left, right = words(a), words(b)
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


def near_duplicates(store: Store, batch: list[Memory], project: str) -> dict[int, list[Memory]]:
    """For each memory of ``batch``: the active memories of ``project`` and its category at
    ``SIMILARITY`` or more, by id.

    Candidates come from the MinHash index (``plugin_sdk/store/search/neardup.py``), refreshed by
    :func:`run` before a batch; each is then checked exactly.
    """
    by_id = {m.id: m for m in batch}
    return {
        i: [
            other
            for other in others
            if other.status == "active"
            and other.project == project  # another project's shared memory is read-only here
            and other.category == by_id[i].category
            and similarity(by_id[i].content, other.content) >= SIMILARITY
        ]
        for i, others in curate_index.neighbours(store, batch, SIMILARITY, words).items()
    }


KEEP_SEPARATE = "<keep-separate/>"


def _merged_text(store: Store, group: list[Memory]) -> tuple[bool, str | None]:
    """Whether to merge, and the merged text (None: keep the target's text).

    Without a model the group is merged by similarity alone; a model may
    answer ``<keep-separate/>`` (no merge) or write the merged text.
    """
    listing = "\n\n".join(f"[{m.id}] {m.content}" for m in group)
    reply = store.plugins.hook.model_complete(
        prompt=Prompt("curate", dreamer_curate(store), [{"role": "user", "content": listing}])
    )
    if reply is None or not reply.strip():
        return True, None
    if KEEP_SEPARATE in reply:
        return False, None
    text = str(reply.strip())
    own = group[0].content
    kept = value_conflicts.values(own, polarity=False) <= value_conflicts.values(
        text, polarity=False
    )
    if not kept or polarity.flips(own, text):
        return True, None  # the model's text lost a value or flipped a meaning: keep the target's
    return True, text


def run(context: TaskContext) -> int:
    store = context.store
    batch = store.memories.list(
        project=context.project, after_id=context.cursor or 0, limit=context.batch_size
    )
    if not batch:
        return 0
    curate_index.refresh(store, words)  # what was written or changed since the last batch
    plans = []  # decided before the transaction: a model call must not hold the write lock
    disputes: list[tuple[int, int]] = []
    claimed: set[int] = set()
    found = near_duplicates(
        store, [m for m in batch if m.project == context.project], context.project
    )
    for memory in batch:
        if memory.id in claimed or memory.project != context.project:
            continue
        dupes = [m for m in found.get(memory.id, []) if m.id not in claimed]
        if not dupes:
            continue
        group = sorted([memory, *dupes], key=lambda m: (-len(m.content), m.id))
        same = value_conflicts.values(group[0].content)
        disputes += [
            (group[0].id, m.id) for m in group[1:] if value_conflicts.values(m.content) != same
        ]
        group = [m for m in group if value_conflicts.values(m.content) == same]
        claimed.update(m.id for m in group)
        if len(group) < 2:
            continue
        merge, text = _merged_text(store, group) if memory.kind == "content" else (True, None)
        if merge:
            plans.append((group, text))
    with context.batch():
        for target_id, other_id in disputes:
            value_conflicts.record(store, target_id, other_id, source="dreamer:curate")
        for group, text in plans:
            target, sources = group[0], [m.id for m in group[1:]]
            if target.kind == "intent":
                context.propose(
                    "memory_entry",
                    f"{len(group)} {target.category} directives say the same thing",
                    [m.id for m in group],
                    {
                        "action": "merge",
                        "category": target.category,
                        "into": target.id,
                        "sources": sources,
                    },
                )
                continue
            if text and text != target.content:
                # If the merged text exists already, keep the target's own text.
                with contextlib.suppress(DuplicateMemory):
                    store.memories.update(target.id, content=text)
            store.memories.merge(sources, into=target.id)
        context.save(batch[-1].id, len(batch))
    return len(batch)


def total(store: Store) -> int:
    return store.memories.count()


@hookimpl
def register_dreamer_tasks(register: Callable[[DreamerTask], None]) -> None:
    register(
        DreamerTask(
            name="curate",
            description="Merge near-duplicate memories within each category.",
            run=run,
            schedule="daily",
            batch_size=50,
            total=total,
        )
    )
