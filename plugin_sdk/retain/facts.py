"""Step 4 of the Retain Job: an observation's facts, and the conflicts they make.

Each fact is stored (``held`` on the dark route, else ``active``); a fact
whose subject already has a different value (normalized) for the same
predicate, among its active and held facts, is recorded as a conflict with
each such value (the newest fact of that value); both facts are kept. A
conflict of the same pair of values on the same subject and predicate is
recorded once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from plugin_sdk.store.normalize import normalize

if TYPE_CHECKING:
    from plugin_sdk.grid.entities import Entity
    from plugin_sdk.plugin.records import Observation
    from plugin_sdk.store.connection import Store


def record_facts(
    store: Store, observation: Observation, entities: Mapping[str, Entity], held: bool
) -> dict[int, int]:
    """Store the observation's facts and the conflicts they make; new conflicts per entity."""
    new_conflicts: dict[int, int] = {}
    if not observation.facts:
        return new_conflicts
    conn = store.db.conn
    now = store.now()
    for fact in observation.facts:
        subject = entities[fact.subject]
        value = normalize(fact.object)
        others = conn.execute(
            """SELECT object_norm, max(id), min(object) FROM facts
               WHERE entity_id = ? AND predicate = ? AND status IN ('active', 'held')
                 AND object_norm != ?
               GROUP BY object_norm ORDER BY object_norm""",
            [subject.id, fact.predicate, value],
        ).fetchall()
        cursor = conn.execute(
            """INSERT INTO facts (project, entity_id, predicate, object, object_norm,
                   observation_id, status, at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            [
                subject.project,
                subject.id,
                fact.predicate,
                fact.object,
                value,
                observation.id,
                "held" if held else "active",
                observation.timestamp,
                now,
            ],
        )
        fact_id = int(cursor.lastrowid or 0)
        for other_value, other_id, other_object in others:
            inserted = conn.execute(
                """INSERT OR IGNORE INTO conflicts (project, entity_id, kind, predicate, fact_id,
                       other_fact_id, pair, detail, created_at)
                   VALUES (?, ?, 'fact', ?, ?, ?, ?, ?, ?)""",
                [
                    subject.project,
                    subject.id,
                    fact.predicate,
                    fact_id,
                    other_id,
                    json.dumps(sorted([value, other_value]), ensure_ascii=False),
                    f"{subject.name} {fact.predicate}: {other_object!r} (fact {other_id}) "
                    f"vs {fact.object!r} (observation {observation.id})",
                    now,
                ],
            )
            if inserted.rowcount:
                new_conflicts[subject.id] = new_conflicts.get(subject.id, 0) + inserted.rowcount
    return new_conflicts


def open_conflicts_of(store: Store, project: str, observation_id: str) -> dict[int, int]:
    """Open conflicts made by an observation's facts, per entity (for an accepted one)."""
    rows = store.db.conn.execute(
        """SELECT c.entity_id, count(*) FROM facts f JOIN conflicts c ON c.fact_id = f.id
           WHERE f.project = ? AND f.observation_id = ? AND c.status = 'open'
           GROUP BY c.entity_id""",
        [project, observation_id],
    ).fetchall()
    return {int(entity_id): int(n) for entity_id, n in rows}
