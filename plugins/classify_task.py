"""Built-in dreamer task ``classify``: keep importance, scope, shareable and grid cells current.

The task is the dreamer's face of the classify stage: each batch runs that
stage's own two steps, :func:`~plugin_sdk.stages.classify.decide_batch` (the
hooks, and so the model, outside any transaction) and
:func:`~plugin_sdk.stages.classify.write_batch` (inside the batch's
transaction), so a dreamer pass and ``memsdk classify`` store the same
decisions. Those two are stage internals rather than plugin API, hence the
import from ``plugin_sdk.stages.classify``; a third-party task would call
the ``classify_memory`` hook instead.
"""

from __future__ import annotations

from collections.abc import Callable

from plugin_sdk.plugin import DreamerTask, Store, TaskContext, hookimpl
from plugin_sdk.stages.classify import decide_batch, write_batch


def run(context: TaskContext) -> int:
    store = context.store
    memories = store.memories.list(
        project=context.project, after_id=context.cursor or 0, limit=context.batch_size
    )
    if not memories:
        return 0
    decisions = decide_batch(store, memories)
    with context.batch():
        write_batch(store, decisions)
        context.save(memories[-1].id, len(memories))
    return len(memories)


def total(store: Store) -> int:
    return store.memories.count()


@hookimpl
def register_dreamer_tasks(register: Callable[[DreamerTask], None]) -> None:
    register(
        DreamerTask(
            name="classify",
            description="Rate importance, scope and shareable of active memories; place them on the grid.",
            run=run,
            schedule="daily",
            batch_size=100,
            total=total,
        )
    )
