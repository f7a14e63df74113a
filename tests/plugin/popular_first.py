"""A third-party plugin, written only against ``plugin_sdk.plugin``: what gets used comes first.

``tests/plugin/test_third_party_plugin.py`` registers it on a plugin manager and runs
it through the real stages, and checks that it imports nothing else from
memsdk.

- ``injection_rank``: memories retrieved more often are shown first (then the
  older first), whatever the built-in would have chosen. The retrieval counts
  come from ``store.memories.list``.
- ``historian_admit``: a category that holds :data:`QUOTA` active memories
  already takes no more from the historian: the fact is quarantined, for a
  person to curate the category first; any other fact is left to the
  built-in.
- The dreamer task ``pin-popular`` pins the memories retrieved at least
  :data:`PIN_AT` times, one batch of ids at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from plugin_sdk.plugin import (
    Admission,
    Candidate,
    DreamerTask,
    Fact,
    Store,
    TaskContext,
    hookimpl,
)

PIN_AT = 3
QUOTA = 3


@hookimpl
def injection_rank(store: Store, candidates: Sequence[Candidate]) -> list[Candidate]:
    retrieved = {
        memory.id: memory.retrieval_count
        for memory in store.memories.list(min_retrievals=1, order="retrievals", limit=None)
    }
    return sorted(candidates, key=lambda c: (-retrieved.get(c.memory_id, 0), c.memory_id))


@hookimpl
def historian_admit(store: Store, fact: Fact) -> Admission | None:
    held = store.memories.list(category=fact.category, limit=QUOTA)
    if len(held) < QUOTA:
        return None  # not ours to decide
    return Admission(
        "quarantine", f"{fact.category} holds {QUOTA} active memories already; curate it first"
    )


def pin_popular(context: TaskContext) -> int:
    store = context.store
    batch = store.memories.list(
        project=context.project, after_id=context.cursor or 0, limit=context.batch_size
    )
    if not batch:
        return 0
    with context.batch():
        for memory in batch:
            if memory.retrieval_count >= PIN_AT and not memory.pinned:
                store.memories.update(memory.id, pinned=True)
        context.save(batch[-1].id, len(batch))
    return len(batch)


def active(store: Store) -> int:
    return store.memories.count()


@hookimpl
def register_dreamer_tasks(register: Callable[[DreamerTask], None]) -> None:
    register(
        DreamerTask(
            name="pin-popular",
            description="Pin the memories retrieved most often.",
            run=pin_popular,
            batch_size=2,
            total=active,
        )
    )
