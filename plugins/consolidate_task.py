"""Built-in dreamer task ``consolidate``: strength and relation weights, in bulk.

The work itself is the grid's consolidation pass
(``plugin_sdk/grid/consolidation.py``: its phases, bulk ``UPDATE`` batches
and counts); this task only schedules it, one bounded batch per run. Those
phases are the grid's internals, not plugin API, hence the import from
``plugin_sdk.grid.consolidation``.
"""

from __future__ import annotations

from collections.abc import Callable

from plugin_sdk.grid.consolidation import PHASES, batch, counts, prepare
from plugin_sdk.plugin import DreamerTask, Store, TaskContext, has_grid, hookimpl


def run(context: TaskContext) -> int:
    store = context.store
    if not has_grid(store):
        return 0  # nothing to consolidate against: no installed pack has a grid
    cursor = context.cursor or {"phase": PHASES[0], "after": 0, "as_of": store.now()}
    prepare(store)
    phase, after = cursor["phase"], cursor["after"]
    while True:
        with context.batch():
            last, updated = batch(
                store,
                phase,
                project=context.project,
                after=after,
                size=context.batch_size,
                as_of=cursor["as_of"],
            )
            if last != after:
                context.save({**cursor, "phase": phase, "after": last}, updated)
                return max(updated, 1)  # a batch of rows left untouched still moves on
            following = PHASES.index(phase) + 1
            if following == len(PHASES):
                context.save(None, 0)
                return 0
            phase, after = PHASES[following], 0
            cursor = {**cursor, "phase": phase, "after": 0}
            context.save(cursor, 0)


def total(store: Store) -> int:
    if not has_grid(store):
        return 0
    found = counts(store)
    return found["entities"] + found["relations"] + found["memories"]


@hookimpl
def register_dreamer_tasks(register: Callable[[DreamerTask], None]) -> None:
    register(
        DreamerTask(
            name="consolidate",
            description="Recompute entity and memory strength and relation weights (decay).",
            run=run,
            schedule="daily",
            batch_size=5000,
            total=total,
        )
    )
