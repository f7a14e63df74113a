"""Built-in dreamer task ``classify``: keep importance, scope, shareable and grid cells current."""

from __future__ import annotations

from typing import Any

from plugin_sdk import hookimpl
from plugin_sdk.grid.cells import decide, place
from plugin_sdk.grid.policy import has_grid
from plugin_sdk.plugin.records import DreamerTask
from plugin_sdk.stages.classify import apply
from plugin_sdk.stages.dreamer import active_memories


def run(context: Any) -> int:
    store = context.store
    ids = [
        row["id"]
        for row in store.db.query(
            "SELECT id FROM memories WHERE project = ? AND status = 'active' AND id > ? ORDER BY id LIMIT ?",
            [context.project, context.cursor or 0, context.batch_size],
        )
    ]
    if not ids:
        return 0
    memories = [store.memories.get(memory_id) for memory_id in ids]
    decisions = [store.plugins.hook.classify_memory(store=store, memory=m) for m in memories]
    cells = [(m.id, decide(store, m)) for m in memories] if has_grid(store) else []
    with context.batch():
        for memory, decision in zip(memories, decisions, strict=True):
            apply(store, memory, decision)
        place(store, cells)
        context.save(ids[-1], len(ids))
    return len(ids)


@hookimpl
def register_dreamer_tasks(register: Any) -> None:
    register(
        DreamerTask(
            name="classify",
            description="Rate importance, scope and shareable of active memories; place them on the grid.",
            run=run,
            schedule="daily",
            batch_size=100,
            total=active_memories,
        )
    )
