"""Built-in dreamer task ``sync-headers``: keep headers true when their details change.

A change to a detail (edit, archive, merge) marks its sequence stale. For each
stale sequence, with the host's model: a new summary is written to the header
(an intent header is never rewritten by the dreamer: a proposal is filed
instead). Without a model: a proposal in the approval queue asks a person to look at
the header (its diff carries ``"review": true``).
Either way the sequence is no longer stale.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from plugin_sdk.errors import DuplicateMemory
from plugin_sdk.plugin import DreamerTask, Memory, Prompt, Store, TaskContext, hookimpl


def _summary(store: Store, header: Memory, details: list[Memory]) -> str | None:
    listing = "\n".join(f"- {d.content}" for d in details)
    prompt = Prompt(
        "header_sync",
        "Rewrite the one-line summary (at most 25 words) of these details for a table of "
        "contents. The old summary may be out of date. Reply with the summary only.",
        [{"role": "user", "content": f"Old summary: {header.content}\n\nDetails:\n{listing}"}],
    )
    reply = store.plugins.hook.model_complete(prompt=prompt)
    return " ".join(reply.split()) if reply and reply.strip() else None


def run(context: TaskContext) -> int:
    store = context.store
    stale = store.composites.stale(type="sequence")[: context.batch_size]
    if not stale:
        return 0
    plans = []
    for composite in stale:
        header = store.memories.get(composite.head)
        details = [store.memories.get(m) for m in composite.members]
        live = [d for d in details if d.status == "active"]
        summary = _summary(store, header, live)
        plans.append((composite, header, summary))
    with context.batch():
        for composite, header, summary in plans:
            if summary is not None and header.kind == "content":
                with contextlib.suppress(DuplicateMemory):
                    store.memories.update(header.id, content=summary)
            else:
                context.propose(
                    "memory_entry",
                    "a detail of this header changed; its summary may be out of date",
                    [header.id, *composite.members],
                    {
                        "action": "update",
                        "id": header.id,
                        "content": summary or header.content,
                        "review": summary is None,
                    },
                )
            store.composites.clear_stale(composite.id)
        context.save(None, len(plans))
    return len(plans)


@hookimpl
def register_dreamer_tasks(register: Callable[[DreamerTask], None]) -> None:
    register(
        DreamerTask(
            name="sync-headers",
            description="Refresh headers whose details changed (or flag them for review).",
            run=run,
            schedule="hourly",
            batch_size=20,
            total=lambda store: len(store.composites.stale(type="sequence")),
        )
    )
