"""Built-in cell classifiers: model-backed when the host's model answers, rule-based otherwise."""

from __future__ import annotations

import json

from plugin_sdk.plugin import (
    ACTS,
    MEMORY_TYPES,
    REFERENTS,
    CellDecision,
    Prompt,
    Store,
    grid,
    hookimpl,
    rule_cell,
)


@hookimpl(tryfirst=True)
def classify_cell(
    store: Store, text: str, category: str | None, interaction: bool
) -> CellDecision | None:
    policy = grid(store)
    act_part = (
        f', "act": one of {list(ACTS)} (the illocutionary act of what was said)'
        if interaction
        else ""
    )
    prompt = Prompt(
        "classify-cell",
        "You place one memory of an agent on a grid. Reply with JSON only: "
        f'{{"memory_type": one of {list(MEMORY_TYPES)}, "referent": one of {list(REFERENTS)}'
        f"{act_part}}}. memory_type: episodic for events that happened at a time, semantic "
        "for facts true about the world, procedural for how to do things. referent: who or "
        "what it is about: self (the operator, the user), agent (AI agents), other (people, "
        "organisations), object (projects, systems, artefacts, places), abstract (concepts, "
        "values, principles).",
        [
            {
                "role": "user",
                "content": (f"Category {category}\n\n" if category else "Entity name: ") + text,
            }
        ],
    )
    reply = store.plugins.hook.model_complete(prompt=prompt)
    if reply is None:
        return None  # no model: the rule-based classifier decides
    try:
        data = json.loads(reply.strip().removeprefix("```json").removesuffix("```"))
        if data["memory_type"] not in MEMORY_TYPES:
            raise ValueError(f"memory_type {data['memory_type']!r}")
        if data["referent"] not in REFERENTS:
            raise ValueError(f"referent {data['referent']!r}")
        act = data["act"] if interaction else None
        if interaction and act not in ACTS:
            raise ValueError(f"act {act!r}")
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        fallback = rule_cell(policy, text, category, interaction)
        return CellDecision(
            fallback.memory_type,
            fallback.referent,
            fallback.act,
            f"{fallback.signal} (model reply unusable: {type(error).__name__})",
        )
    return CellDecision(data["memory_type"], data["referent"], act, "model")


@hookimpl(trylast=True, specname="classify_cell")
def classify_cell_rules(
    store: Store, text: str, category: str | None, interaction: bool
) -> CellDecision:
    return rule_cell(grid(store), text, category, interaction)
