"""Built-in dreamer task ``retain``: the Retain Job over the observation inbox (``plugin_sdk/retain/job.py``)."""

from __future__ import annotations

from typing import Any

from plugin_sdk import hookimpl
from plugin_sdk.grid.policy import has_grid
from plugin_sdk.plugin.records import DreamerTask
from plugin_sdk.retain.job import RetainJob, RetainReport


def run(context: Any) -> int:
    store = context.store
    if not inbox_count(store):
        return 0
    job = RetainJob(store)
    with context.batch():
        handled = job.run_batch(context.batch_size, RetainReport())
        context.save(None, handled)
    job.regenerate_due()  # after the commit: the model is never called inside a transaction
    return handled


def inbox_count(store: Any) -> int:
    if not has_grid(store):
        return 0
    row = store.db.execute(
        "SELECT count(*) FROM observations WHERE project = ? AND status = 'queued'",
        [store.project],
    ).fetchone()
    return int(row[0])


@hookimpl
def register_dreamer_tasks(register: Any) -> None:
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
