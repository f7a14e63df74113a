"""Built-in dreamer task ``map``: the table of contents of a large store, one category per batch.

Each batch brings one category's map up to date
(``plugin_sdk.composites.mapping.map_category``): groups of memories under
header memories, in as many levels as the store's size needs so that the
injected block reaches every active memory within two expands
(``plugin_sdk.composites.levels``). A small store gets no groups at all; a
category small enough to show whole gets none either. Labels are the
groups' distinctive terms (or a summary from the host's model), refreshed
when members change. The grouping is deterministic and reads no category
names from code.
"""

from __future__ import annotations

from collections.abc import Callable

from plugin_sdk.composites.mapping import map_category
from plugin_sdk.plugin import DreamerTask, Store, TaskContext, hookimpl


def run(context: TaskContext) -> int:
    store = context.store
    names = store.category_names()
    index = context.cursor or 0
    if index >= len(names):
        return 0
    placed = map_category(store, context.project, names[index])
    with context.batch():
        context.save(index + 1, max(1, placed))
    return max(1, placed)


def total(store: Store) -> int:
    return len(store.category_names())


@hookimpl
def register_dreamer_tasks(register: Callable[[DreamerTask], None]) -> None:
    register(
        DreamerTask(
            name="map",
            description="Group memories under headers, in levels (one category per batch).",
            run=run,
            schedule="daily",
            batch_size=1,
            total=total,
        )
    )
