"""Compiled Truth: an entity's durable, versioned summary in markdown.

Each regeneration writes a new version; the version it replaces gets
``superseded_by`` set to it, and the entity's ``truth_id`` points at the
newest, so the whole chain reads from version 1 onwards (:func:`history`).
Observations are transient; a Compiled Truth is what stays.

**Who writes it.** The host's model, when one answers ``model_complete``
(purpose ``compiled-truth``): it is given the entity's digest and asked to
rewrite it as a short summary that keeps every fact, conflict and relation.
Without a model (or with an empty reply), the digest itself is the truth:
deterministic markdown of the entity's active facts (grouped by predicate,
conflicting values marked), its open conflicts, its relations and its latest
observations. ``written_by`` says which.

**When.** The Retain Job adds each retained observation's *impact* to every
entity it is about (see ``job.py``); once an entity's gathered impact
reaches the pack's ``retain.truth_impact_threshold`` the job regenerates its
truth once at the end of the batch (however many times the batch crossed the
threshold), and the impact starts again from 0. A regeneration whose text
equals the current version's adds no version (the impact still resets). The
model is never called inside a transaction: with a model the truths are
written after the batch commits; without one (digests only) the batched job
writes them in the batch's own transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import NotFound
from plugin_sdk.grid.entities import Entity as EntityRecord
from plugin_sdk.plugin.records import Prompt

if TYPE_CHECKING:
    from plugin_sdk.grid.entities import Entity
    from plugin_sdk.store.connection import Store

RECENT_OBSERVATIONS = 10
EXCERPT = 160
SYSTEM = (
    "You maintain the compiled truth of one entity in an agent's long-term memory: a short "
    "markdown summary of what is currently known about it. Rewrite the digest you are given "
    "into that summary. Keep every fact, every open conflict (say both values; do not pick "
    "one) and every relation; add nothing that is not in the digest. Start with a level-1 "
    "heading naming the entity. Reply with the markdown only."
)


@attrs.frozen
class CompiledTruth:
    id: int
    entity_id: int
    entity: str
    version: int
    markdown: str
    written_by: str
    impact: float
    created_at: str
    superseded_by: int | None

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def current(store: Store, key: int | str) -> CompiledTruth | None:
    """The entity's newest Compiled Truth, or ``None`` if it has none yet."""
    entity = store.entities.get(key)
    if entity.truth_id is None:
        return None
    return _by_id(store, entity.truth_id)


def history(store: Store, key: int | str) -> list[CompiledTruth]:
    """Every version of the entity's Compiled Truth, oldest first (the superseded_by chain)."""
    entity = store.entities.get(key)
    rows = _rows(
        store,
        f"""{_SELECT} WHERE t.entity_id = ? ORDER BY t.version""",
        [entity.id],
    )
    return [CompiledTruth(**row) for row in rows]


def regenerate(store: Store, key: int | str, *, impact: float = 0.0) -> CompiledTruth | None:
    """Write a new version of the entity's Compiled Truth; ``None`` when the text is unchanged."""
    entity = store.entities.get(key)
    written = regenerate_many(store, [(entity.id, impact)])
    return written[0] if written else None


def regenerate_many(store: Store, entities: list[tuple[int, float]]) -> list[CompiledTruth]:
    """Regenerate several entities' truths: (entity id, impact) pairs; the new versions.

    Every text is written (the model asked) first, outside any transaction;
    then one transaction stores the versions and resets the impacts.
    """
    texts = []
    ask = store.plugins.hook.model_complete
    asking = bool(ask.get_hookimpls())
    for entity_id, impact in entities:
        entity = _entity(store, entity_id)
        text = digest(store, entity)
        reply = (
            ask(prompt=Prompt("compiled-truth", SYSTEM, [{"role": "user", "content": text}]))
            if asking
            else None
        )
        if isinstance(reply, str) and reply.strip():
            texts.append((entity, impact, reply.strip(), "model"))
        else:
            texts.append((entity, impact, text, "digest"))
    now = store.now()
    new_ids = []
    with store.atomic():
        for entity, impact, markdown, written_by in texts:
            store.db.conn.execute(
                "UPDATE truth_impacts SET impact = 0, observations = 0, updated_at = ? "
                "WHERE entity_id = ?",
                [now, entity.id],
            )
            row = store.db.conn.execute(
                "SELECT truth_id FROM entities WHERE id = ?", [entity.id]
            ).fetchone()
            latest = _by_id(store, row[0]) if row and row[0] is not None else None
            if latest is not None and latest.markdown == markdown:
                continue
            cursor = store.db.conn.execute(
                """INSERT INTO compiled_truths (project, entity_id, version, markdown, written_by,
                       impact, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)""",
                [
                    entity.project,
                    entity.id,
                    latest.version + 1 if latest else 1,
                    markdown,
                    written_by,
                    impact,
                    now,
                ],
            )
            new_id = int(cursor.lastrowid or 0)
            if latest is not None:
                store.db.conn.execute(
                    "UPDATE compiled_truths SET superseded_by = ? WHERE id = ?", [new_id, latest.id]
                )
            store.db.conn.execute(
                "UPDATE entities SET truth_id = ? WHERE id = ?", [new_id, entity.id]
            )
            new_ids.append(new_id)
    return [_by_id(store, truth_id) for truth_id in new_ids]


def add_impact(store: Store, entity: Entity, impact: float) -> None:
    """Gather an observation's impact on an entity (inside the caller's transaction)."""
    store.db.conn.execute(
        """INSERT INTO truth_impacts (entity_id, project, impact, observations, updated_at)
           VALUES (?, ?, ?, 1, ?)
           ON CONFLICT (entity_id) DO UPDATE SET impact = impact + excluded.impact,
               observations = observations + 1, updated_at = excluded.updated_at""",
        [entity.id, entity.project, impact, store.now()],
    )


def due(store: Store, threshold: float, *, project: str | None = None) -> list[tuple[int, float]]:
    """(entity id, impact) of the entities whose gathered impact reached ``threshold``."""
    rows = store.db.conn.execute(
        """SELECT entity_id, impact FROM truth_impacts WHERE project = ? AND impact >= ?
           ORDER BY entity_id""",
        [project or store.project, threshold],
    ).fetchall()
    return [(int(entity_id), float(impact)) for entity_id, impact in rows]


def pending_impact(store: Store, key: int | str) -> float:
    entity = store.entities.get(key)
    row = store.db.conn.execute(
        "SELECT impact FROM truth_impacts WHERE entity_id = ?", [entity.id]
    ).fetchone()
    return float(row[0]) if row else 0.0


# The digest


def digest(store: Store, entity: Entity) -> str:
    """The deterministic markdown digest of an entity (see the module docstring)."""
    lines = [f"# {entity.name}", ""]
    tag = entity.emotional_tag or "none"
    lines.append(
        f"- {entity.memory_type}.{entity.referent}, {entity.status}"
        + (", pinned" if entity.pinned else f", half-life {entity.half_life_days:g} days")
        + f", emotional tag {tag}"
    )
    lines += _facts(store, entity)
    lines += _conflicts(store, entity)
    lines += _relations(store, entity)
    lines += _observations(store, entity)
    return "\n".join(lines).rstrip() + "\n"


def _facts(store: Store, entity: Entity) -> list[str]:
    rows = list(
        _rows(
            store,
            """SELECT predicate, object_norm, min(object) AS object, count(*) AS n,
                      max(at) AS latest, group_concat(observation_id, ', ') AS sources
               FROM (SELECT * FROM facts WHERE entity_id = ? AND status = 'active'
                     ORDER BY at, id)
               GROUP BY predicate, object_norm ORDER BY predicate, latest DESC, object_norm""",
            [entity.id],
        )
    )
    if not rows:
        return []
    values: dict[str, int] = {}
    for row in rows:
        values[row["predicate"]] = values.get(row["predicate"], 0) + 1
    lines = ["", "## Facts", ""]
    for row in rows:
        mark = " (conflicting values)" if values[row["predicate"]] > 1 else ""
        times = "observation" if row["n"] == 1 else "observations"
        lines.append(
            f"- **{row['predicate']}**: {row['object']}{mark}; {row['n']} {times}, "
            f"latest {row['latest']} ({row['sources']})"
        )
    return lines


def _conflicts(store: Store, entity: Entity) -> list[str]:
    rows = list(
        _rows(
            store,
            """SELECT c.id, c.predicate, a.object AS new, a.observation_id AS new_source,
                      a.status AS new_status, b.object AS old, b.observation_id AS old_source
               FROM conflicts c JOIN facts a ON a.id = c.fact_id JOIN facts b ON b.id = c.other_fact_id
               WHERE c.entity_id = ? AND c.status = 'open' ORDER BY c.id""",
            [entity.id],
        )
    )
    if not rows:
        return []
    lines = ["", "## Open conflicts", ""]
    for row in rows:
        held = " (held for review)" if row["new_status"] == "held" else ""
        lines.append(
            f"- conflict {row['id']}, {row['predicate']}: {row['old']!r} ({row['old_source']}) "
            f"vs {row['new']!r} ({row['new_source']}){held}"
        )
    return lines


def _relations(store: Store, entity: Entity) -> list[str]:
    rows = list(
        _rows(
            store,
            """SELECT r.type, 'out' AS direction, e.name AS other, r.evidence_count
               FROM relations r JOIN entities e ON e.id = r.target_id
               WHERE r.project = ? AND r.source_id = ?
               UNION ALL
               SELECT r.type, 'in', e.name, r.evidence_count
               FROM relations r JOIN entities e ON e.id = r.source_id WHERE r.target_id = ?
               ORDER BY 1, 2 DESC, 3""",
            [entity.project, entity.id, entity.id],
        )
    )
    if not rows:
        return []
    lines = ["", "## Relations", ""]
    for row in rows:
        arrow = "->" if row["direction"] == "out" else "<-"
        lines.append(f"- {row['type']} {arrow} {row['other']} (evidence {row['evidence_count']})")
    return lines


def _observations(store: Store, entity: Entity) -> list[str]:
    rows = list(
        _rows(
            store,
            """SELECT o.id, o.timestamp, o.category, o.topic,
                      json_extract(o.document, '$.payload_typed.text') AS text
               FROM entity_observations l JOIN observations o
                    ON o.project = l.project AND o.id = l.observation_id
               WHERE l.entity_id = ? AND l.held = 0
               ORDER BY l.at DESC, l.observation_id DESC LIMIT ?""",
            [entity.id, RECENT_OBSERVATIONS],
        )
    )
    if not rows:
        return []
    lines = ["", "## Latest observations", ""]
    for row in rows:
        text = " ".join(row["text"].split())
        if len(text) > EXCERPT:
            text = text[: EXCERPT - 1].rstrip() + "…"
        lines.append(
            f"- {row['timestamp']} {row['category']}, {row['topic']}: {text} ({row['id']})"
        )
    return lines


_SELECT = """SELECT t.id, t.entity_id, e.name AS entity, t.version, t.markdown, t.written_by,
                    t.impact, t.created_at, t.superseded_by
             FROM compiled_truths t JOIN entities e ON e.id = t.entity_id"""


def _rows(store: Store, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    """Rows as dicts, straight from the connection (no savepoint per query)."""
    cursor = store.db.conn.execute(sql, params)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _by_id(store: Store, truth_id: int) -> CompiledTruth:
    rows = list(_rows(store, f"{_SELECT} WHERE t.id = ?", [truth_id]))
    if not rows:
        raise NotFound(f"no compiled truth with id {truth_id}")
    return CompiledTruth(**rows[0])


def _entity(store: Store, entity_id: int) -> Entity:
    """An entity by id, straight from the connection (:class:`NotFound` if gone)."""
    rows = _rows(store, "SELECT * FROM entities WHERE id = ?", [entity_id])
    if not rows:
        raise NotFound(f"no entity with id {entity_id}")
    return EntityRecord(**{**rows[0], "pinned": bool(rows[0]["pinned"])})
