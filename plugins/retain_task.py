"""Built-in dreamer task ``retain``: the Retain Job over the observation inbox.

The work itself is the Retain Job (``plugin_sdk/retain/job.py``, see
``docs/retain.md``); this task only schedules it, one bounded batch per run.
The job is the retain area's machinery, not plugin API (a plugin extends it
with ``register_retain_handlers`` and ``schema_fit``), hence the import from
``plugin_sdk.retain.job``. The inbox count reads the ``observations`` table,
which no facade covers.
"""

from __future__ import annotations

from collections.abc import Callable

from plugin_sdk.plugin import DreamerTask, Store, TaskContext, has_grid, hookimpl


def run(context: TaskContext) -> int:
    # Imported here: every process loads this plugin, few run the job.
    from plugin_sdk.retain.job import RetainJob, RetainReport

    store = context.store
    if not inbox_count(store):
        return 0
    job = RetainJob(store)
    with context.batch():
        handled = job.run_batch(context.batch_size, RetainReport())
        context.save(None, handled)
    job.regenerate_due()  # after the commit: the model is never called inside a transaction
    return handled


def inbox_count(store: Store) -> int:
    if not has_grid(store):
        return 0
    return store.tables.observations.queued_count(store.project)


@hookimpl
def register_dreamer_tasks(register: Callable[[DreamerTask], None]) -> None:
    register(
        DreamerTask(
            name="retain",
            description="Turn the observations in the inbox into entities, facts, relations and memories.",
            run=run,
            schedule="hourly",
            batch_size=200,
            total=inbox_count,
        )
    )
