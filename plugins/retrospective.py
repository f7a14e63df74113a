"""Built-in dreamer task ``retrospective``: propose standing rules from recurring facts.

It reads content memories of promotable categories that were seen at least
``RECURRING`` times. With the host's model, it asks (with the retrospective
prompt built from the store's criteria) which of them deserve a rule (a block
in a category that is not an intent one, or a piece that does not parse,
becomes a proposal to review by hand, with the reason); without
one, each recurring fact becomes a proposal to promote it to the store's first
intent category of the same pack. Either way the result is a proposal for a
person: intent memories are never written by the dreamer itself.
"""

from __future__ import annotations

from collections.abc import Callable

from plugin_sdk.plugin import (
    Category,
    DreamerTask,
    Memory,
    Prompt,
    Store,
    TaskContext,
    dreamer_retrospective,
    hookimpl,
    parse_tagged,
)

RECURRING = 2


def _candidates(store: Store, project: str, after: int, limit: int) -> list[Memory]:
    promotable = [c.name for c in store.categories() if c.promotable and c.kind == "content"]
    return store.memories.list(
        project=project, category=promotable, min_seen=RECURRING, after_id=after, limit=limit
    )


def run(context: TaskContext) -> int:
    store = context.store
    batch = _candidates(store, context.project, context.cursor or 0, context.batch_size)
    if not batch:
        return 0
    categories = store.categories()
    intent = [c for c in categories if c.kind == "intent"]
    proposals = []
    listing = "\n".join(f"[{m.id}] ({m.category}, seen {m.seen_count}x) {m.content}" for m in batch)
    reply = store.plugins.hook.model_complete(
        prompt=Prompt(
            "retrospective", dreamer_retrospective(store), [{"role": "user", "content": listing}]
        )
    )
    unreadable = None
    refused: list[tuple[str, str]] = []  # (why, text) of what the model gave that is no rule
    if reply is not None:
        names = {c.name for c in intent}
        parsed = parse_tagged(reply, store.category_names())
        for fact in parsed.facts:
            if fact.category in names:
                proposals.append((fact.category, fact.text, [m.id for m in batch], "the model"))
            else:
                refused.append((_not_a_rule(fact.category, categories), fact.text))
        if not parsed.facts and not parsed.empty and reply.strip():
            unreadable = reply  # kept for a person rather than dropped
        elif parsed.facts:
            refused += [(piece.reason, piece.text) for piece in parsed.malformed]
    else:
        for memory in batch:
            pack = next(c.pack for c in categories if c.name == memory.category)
            target = next((c for c in intent if c.pack == pack), None)
            if target is not None:
                proposals.append((target.name, memory.content, [memory.id], "recurrence"))
    with context.batch():
        for category, text, evidence, why in proposals:
            context.propose(
                "memory_entry",
                f"recurring fact proposed as a standing rule (by {why})",
                evidence,
                {"action": "write", "category": category, "content": text},
            )
        for why, text in refused:
            context.propose(
                "memory_entry",
                f"the model's retrospective reply gave a piece that is no standing rule ({why}); "
                "review it by hand",
                [m.id for m in batch],
                {"action": "review", "reply": text},
            )
        if unreadable is not None:
            context.propose(
                "memory_entry",
                "the model's retrospective reply could not be parsed; review it by hand",
                [m.id for m in batch],
                {"action": "review", "reply": unreadable},
            )
        context.save(batch[-1].id, len(batch))
    return len(batch)


def _not_a_rule(category: str, categories: list[Category]) -> str:
    """Why a block in ``category`` cannot be a proposed rule."""
    intent = ", ".join(c.name for c in categories if c.kind == "intent") or "none"
    known = next((c for c in categories if c.name == category), None)
    if known is None:
        return f"{category!r} is not a category of this store; its intent categories are {intent}"
    return f"{category!r} is a {known.kind} category; a rule goes in an intent category: {intent}"


@hookimpl
def register_dreamer_tasks(register: Callable[[DreamerTask], None]) -> None:
    register(
        DreamerTask(
            name="retrospective",
            description="Propose standing rules from facts that keep recurring.",
            run=run,
            schedule="weekly",
            batch_size=25,
        )
    )
