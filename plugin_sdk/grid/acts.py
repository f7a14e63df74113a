"""Interaction typing by illocutionary act (Austin, Searle), read per actor.

Classify (``cells.py``) gives every interaction memory (one linked to an actor
entity) one of five acts: assertive, directive, commissive, expressive,
declarative. :func:`distribution` counts them per actor, so "predominantly
directive with agent X, expressive with person Y" is one call::

    from plugin_sdk.grid import acts
    for actor, counts in acts.distribution(store).items():
        print(actor, acts.predominant(counts), counts)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plugin_sdk.store.models import ACTS

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


def distribution(
    store: Store, *, actor: str | None = None, project: str | None = None
) -> dict[str, dict[str, int]]:
    """Per actor entity, how many active interaction memories carry each act.

    ``{"world:person:anya": {"expressive": 5, "directive": 1}, ...}``, every
    act present with 0 when absent; :func:`predominant` reads it.
    """
    entity_id = store.entities.get(actor).id if actor is not None else None
    rows = store.tables.entities.links.acts(project or store.project, entity_id)
    result: dict[str, dict[str, int]] = {}
    for row in rows:
        result.setdefault(row["name"], dict.fromkeys(ACTS, 0))[row["act"]] = row["n"]
    return result


STYLE_DEFAULTS: dict[str, Any] = {
    "min_interactions": 5,
    "dominant_share": 0.6,
    "pair_share": 0.75,
    "pair_min": 0.25,
    "pairs": [["directive", "expressive"]],
}


def style(counts: dict[str, int], thresholds: dict[str, Any] | None = None) -> tuple[str, ...]:
    """A contact's persistent style: one dominant act, or a pair of acts; ``()`` if none.

    ``thresholds`` are the pack's ``[grid.styles]`` (:data:`STYLE_DEFAULTS` for
    what it leaves out): at least ``min_interactions``; one act above
    ``dominant_share``; else the first listed pair whose acts together reach
    ``pair_share``, each at least ``pair_min`` (for example directives and
    expressions of feeling aimed at one contact).
    """
    rules = {**STYLE_DEFAULTS, **(thresholds or {})}
    total = sum(counts.values())
    if total < rules["min_interactions"]:
        return ()
    act = predominant(counts, share=rules["dominant_share"])
    if act is not None:
        return (act,)
    for first, second in rules["pairs"]:
        a, b = counts.get(first, 0) / total, counts.get(second, 0) / total
        if a + b >= rules["pair_share"] and min(a, b) >= rules["pair_min"]:
            return (first, second)
    return ()


def predominant(counts: dict[str, int], *, share: float = 0.5) -> str | None:
    """The act holding more than ``share`` of an actor's interactions, if one does."""
    total = sum(counts.values())
    if not total:
        return None
    act, n = max(counts.items(), key=lambda item: (item[1], -ACTS.index(item[0])))
    return act if n / total > share else None
