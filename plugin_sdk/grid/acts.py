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
    params: list[Any] = [project or store.project]
    condition = ""
    if actor is not None:
        condition = " AND e.id = ?"
        params.append(store.entities.get(actor).id)
    rows = store.db.query(
        f"""SELECT e.name, c.act, count(*) AS n FROM memory_entities l
            JOIN entities e ON e.id = l.entity_id
            JOIN memories m ON m.id = l.memory_id
            JOIN memory_cells c ON c.memory_id = l.memory_id
            WHERE l.role = 'actor' AND e.project = ? AND m.status = 'active'
              AND c.act IS NOT NULL{condition}
            GROUP BY e.name, c.act ORDER BY e.name""",
        params,
    )
    result: dict[str, dict[str, int]] = {}
    for row in rows:
        result.setdefault(row["name"], dict.fromkeys(ACTS, 0))[row["act"]] = row["n"]
    return result


def predominant(counts: dict[str, int], *, share: float = 0.5) -> str | None:
    """The act holding more than ``share`` of an actor's interactions, if one does."""
    total = sum(counts.values())
    if not total:
        return None
    act, n = max(counts.items(), key=lambda item: (item[1], -ACTS.index(item[0])))
    return act if n / total > share else None
