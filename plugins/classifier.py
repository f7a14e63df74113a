"""Built-in classifiers: model-backed when the host's model answers, rule-based otherwise."""

from __future__ import annotations

import json

from plugin_sdk.plugin import (
    Category,
    Classification,
    Memory,
    Prompt,
    Store,
    header_of,
    hookimpl,
    inherit_from_header,
    rule_classification,
)

SCOPES = ("project", "global")


@hookimpl(tryfirst=True)
def classify_memory(store: Store, memory: Memory) -> Classification | None:
    if not store.plugins.hook.model_complete.get_hookimpls():
        return None  # no model: the rule-based classifier decides
    category = (
        store.category(memory.category) if memory.category in store.category_names() else None
    )
    context = criteria_text(category) if category else "(category not active)"
    header = header_of(store, memory)
    if header is not None:
        context += (
            f"\n\nIt is a detail under the header [{header.id}] "
            f"({header.scope}): {' '.join(header.content.split())}"
        )
    prompt = Prompt(
        "classify",
        "You rate one memory of an agent. Reply with JSON only: "
        '{"importance": 1-100, "scope": "project" or "global", "shareable": true or false}. '
        "importance: how much worse the agent does without it; scope: global if it holds "
        "beyond this project; shareable: safe and useful for teammates (no secrets, no "
        "personal data).",
        [
            {
                "role": "user",
                "content": f"Category {memory.category}: {context}\n\nMemory:\n{memory.content}",
            }
        ],
    )
    reply = store.plugins.hook.model_complete(prompt=prompt)
    if reply is None:
        return None  # no model: the rule-based classifier decides
    try:
        data = json.loads(reply.strip().removeprefix("```json").removesuffix("```"))
        importance = data["importance"]
        if (
            isinstance(importance, bool)
            or not isinstance(importance, int)
            or not 1 <= importance <= 100
        ):
            raise ValueError(f"importance {importance!r} is not 1..100")
        if data["scope"] not in SCOPES:
            raise ValueError(f"scope {data['scope']!r} is not one of {SCOPES}")
        if not isinstance(data["shareable"], bool):
            raise ValueError("shareable is not true/false")
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        fallback = rule_classification(store, memory)
        return Classification(
            fallback.importance,
            fallback.scope,
            fallback.shareable,
            f"rules (model reply unusable: {type(error).__name__})",
        )
    decision = Classification(importance, data["scope"], data["shareable"], "model")
    return inherit_from_header(store, memory, decision)


def criteria_text(category: Category) -> str:
    """The category's criteria as the classifier's model reads them."""
    parts = [category.value("definition")]
    for field, title in (
        ("positive_examples", "Typical"),
        ("negative_examples", "Not this category"),
        ("exclusions", "Excluded"),
    ):
        values = category.value(field) if field in category.criteria else None
        if values:
            parts.append(f"{title}: " + "; ".join(values))
    return "\n".join(parts)


@hookimpl(trylast=True, specname="classify_memory")
def classify_memory_rules(store: Store, memory: Memory) -> Classification:
    return rule_classification(store, memory)
