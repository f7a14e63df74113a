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

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import NotFound
from plugin_sdk.grid.entities import Entity as EntityRecord
from plugin_sdk.plugin.records import Prompt
from plugin_sdk.store.tables.queues.observations import RECENT

if TYPE_CHECKING:
    from plugin_sdk.grid.entities import Entity
    from plugin_sdk.store.connection import Store

RECENT_OBSERVATIONS = RECENT  # ObservationRows.prune keeps these
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
    return [CompiledTruth(**row) for row in store.tables.truths.history(entity.id)]


def regenerate(store: Store, key: int | str, *, impact: float = 0.0) -> CompiledTruth | None:
    """Write a new version of the entity's Compiled Truth; ``None`` when the text is unchanged."""
    entity = store.entities.get(key)
    written = regenerate_many(store, [(entity.id, impact)])
    return written[0] if written else None


def regenerate_many(
    store: Store, entities: list[tuple[int, float]], texts: Mapping[str, str] | None = None
) -> list[CompiledTruth]:
    """Regenerate several entities' truths: (entity id, impact) pairs; the new versions.

    ``texts``: observation id -> text, of observations the caller has read
    (passed to :func:`digests`).

    Every text is written (the model asked) first, outside any transaction;
    then one transaction stores the versions and resets the impacts. The
    digests are read for all the entities at once (:func:`digests`), and the
    versions written with a statement per table where one does.
    """
    found = _entities(store, [entity_id for entity_id, _ in entities])
    drafts = digests(store, list(found.values()), texts)
    ask = store.plugins.hook.model_complete
    asking = bool(ask.get_hookimpls())
    written: list[tuple[Entity, float, str, str]] = []
    for entity_id, impact in entities:
        entity = found.get(entity_id)
        if entity is None:
            raise NotFound(f"no entity with id {entity_id}")
        text = drafts[entity_id]
        reply = (
            ask(prompt=Prompt("compiled-truth", SYSTEM, [{"role": "user", "content": text}]))
            if asking
            else None
        )
        if isinstance(reply, str) and reply.strip():
            written.append((entity, impact, reply.strip(), "model"))
        else:
            written.append((entity, impact, text, "digest"))
    now = store.now()
    new: list[CompiledTruth] = []
    owner = store.tables.truths
    with store.atomic():
        owner.reset_impacts([entity.id for entity, *_ in written], now)
        latest = _latest(store, [entity.id for entity, *_ in written])
        superseded: list[tuple[int, int]] = []
        pointed: list[tuple[int, int]] = []
        for entity, impact, markdown, written_by in written:
            previous = latest.get(entity.id)
            if previous is not None and previous[2] == markdown:
                continue
            version = previous[1] + 1 if previous else 1
            new_id = owner.insert(
                (entity.project, entity.id, version, markdown, written_by, impact, now)
            )
            if previous is not None:
                superseded.append((new_id, previous[0]))
            pointed.append((new_id, entity.id))
            latest[entity.id] = (new_id, version, markdown)
            new.append(
                CompiledTruth(
                    id=new_id,
                    entity_id=entity.id,
                    entity=entity.name,
                    version=version,
                    markdown=markdown,
                    written_by=written_by,
                    impact=impact,
                    created_at=now,
                    superseded_by=None,
                )
            )
        owner.supersede(superseded)
        store.tables.entities.point_truths(pointed)
    return new


def _latest(store: Store, entity_ids: list[int]) -> dict[int, tuple[int, int, str]]:
    """entity id -> (id, version, markdown) of its current truth, for those that have one."""
    found: dict[int, tuple[int, int, str]] = {}
    for chunk in _chunks(sorted(set(entity_ids))):
        for entity_id, truth_id, version, markdown in store.tables.entities.truths(chunk):
            found[int(entity_id)] = (int(truth_id), int(version), markdown)
    return found


def add_impact(store: Store, entity: Entity, impact: float) -> None:
    """Gather an observation's impact on an entity (inside the caller's transaction)."""
    store.tables.truths.add_impact(entity.id, entity.project, impact, store.now())


def due(store: Store, threshold: float, *, project: str | None = None) -> list[tuple[int, float]]:
    """(entity id, impact) of the entities whose gathered impact reached ``threshold``."""
    return store.tables.truths.due(project or store.project, threshold)


def pending_impact(store: Store, key: int | str) -> float:
    entity = store.entities.get(key)
    return store.tables.truths.impact(entity.id)


# The digest

CHUNK = 500  # entity ids per IN (...) list


def digest(store: Store, entity: Entity) -> str:
    """The deterministic markdown digest of an entity (see the module docstring)."""
    return digests(store, [entity])[entity.id]


def digests(
    store: Store, entities: list[Entity], texts: Mapping[str, str] | None = None
) -> dict[int, str]:
    """The digest of each entity, by id; each part read for all of them at once.

    ``texts``: observation id -> text, known to the caller (see :func:`_observations`).
    """
    ids = sorted({entity.id for entity in entities})
    facts = _facts(store, ids)
    conflicts = _conflicts(store, ids)
    relations = _relations(store, entities)
    observations = _observations(store, ids, texts)
    found = {}
    for entity in entities:
        lines = [f"# {entity.name}", ""]
        tag = entity.emotional_tag or "none"
        lines.append(
            f"- {entity.memory_type}.{entity.referent}, {entity.status}"
            + (", pinned" if entity.pinned else f", half-life {entity.half_life_days:g} days")
            + f", emotional tag {tag}"
        )
        lines += facts.get(entity.id, [])
        lines += conflicts.get(entity.id, [])
        lines += relations.get(entity.id, [])
        lines += observations.get(entity.id, [])
        found[entity.id] = "\n".join(lines).rstrip() + "\n"
    return found


def _facts(store: Store, ids: list[int]) -> dict[int, list[str]]:
    """Active facts grouped by predicate and normalized value, per entity."""
    # entity -> (predicate, value) -> [first object, count, latest, sources], in (at, id) order
    groups: dict[int, dict[tuple[str, str], list[Any]]] = {}
    for chunk in _chunks(ids):
        for entity_id, predicate, value, obj, at, source in store.tables.facts.active(chunk):
            by_value = groups.get(entity_id)
            if by_value is None:
                by_value = groups[entity_id] = {}
            group = by_value.get((predicate, value))
            if group is None:
                by_value[(predicate, value)] = [obj, 1, at, [source]]
                continue
            if obj < group[0]:
                group[0] = obj
            group[1] += 1
            group[2] = at  # read in (at, id) order: the latest so far
            group[3].append(source)
    found = {}
    for entity_id, by_value in groups.items():
        rows = sorted(by_value.items(), key=lambda item: item[0][1])  # value
        rows.sort(key=lambda item: item[1][2], reverse=True)  # latest first
        rows.sort(key=lambda item: item[0][0])  # predicate
        values: dict[str, int] = {}
        for (predicate, _), _group in rows:
            values[predicate] = values.get(predicate, 0) + 1
        lines = ["", "## Facts", ""]
        for (predicate, _), (obj, n, latest, sources) in rows:
            mark = " (conflicting values)" if values[predicate] > 1 else ""
            times = "observation" if n == 1 else "observations"
            lines.append(
                f"- **{predicate}**: {obj}{mark}; {n} {times}, "
                f"latest {latest} ({', '.join(sources)})"
            )
        found[entity_id] = lines
    return found


def _conflicts(store: Store, ids: list[int]) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for chunk in _chunks(ids):
        for (
            entity_id,
            ident,
            predicate,
            new,
            new_source,
            new_status,
            old,
            old_source,
        ) in store.tables.facts.open_conflicts(chunk):
            lines = found.setdefault(entity_id, ["", "## Open conflicts", ""])
            held = " (held for review)" if new_status == "held" else ""
            lines.append(
                f"- conflict {ident}, {predicate}: {old!r} ({old_source}) "
                f"vs {new!r} ({new_source}){held}"
            )
    return found


def _relations(store: Store, entities: list[Entity]) -> dict[int, list[str]]:
    """Relations out (in the entity's project) and in, per entity."""
    rows: dict[int, list[tuple[str, str, str, int]]] = {}
    by_project: dict[str, set[int]] = {}
    for entity in entities:
        by_project.setdefault(entity.project, set()).add(entity.id)
    relations = store.tables.relations
    for project, ids in by_project.items():
        for chunk in _chunks(sorted(ids)):
            for entity_id, type_, other, evidence in relations.outgoing(project, chunk):
                rows.setdefault(entity_id, []).append((type_, "out", other, evidence))
    for chunk in _chunks(sorted({entity.id for entity in entities})):
        for entity_id, type_, other, evidence in relations.incoming(chunk):
            rows.setdefault(entity_id, []).append((type_, "in", other, evidence))
    found = {}
    for entity_id, edges in rows.items():
        edges.sort(key=lambda edge: (edge[0], edge[1] != "out", edge[2]))  # type, out first, other
        lines = ["", "## Relations", ""]
        for type_, direction, other, evidence in edges:
            arrow = "->" if direction == "out" else "<-"
            lines.append(f"- {type_} {arrow} {other} (evidence {evidence})")
        found[entity_id] = lines
    return found


def _observations(
    store: Store, ids: list[int], texts: Mapping[str, str] | None
) -> dict[int, list[str]]:
    """Each entity's latest observations (at most :data:`RECENT_OBSERVATIONS`).

    One query per entity: it walks the entity's links newest first along an
    index and stops after the few it needs (measured faster than one compound
    statement for many entities). ``texts``: observation id -> text, of
    observations the caller has read (the Retain Job, of those it retained):
    then the links alone are read (the link keeps the observation's
    timestamp, category and topic), and the texts not there are read for all
    the entities at once, by observation id (the documents of the others are
    not parsed again).
    """
    owner = store.tables.observations
    latest: dict[int, list[Any]] = {}
    if texts:
        missing: dict[str, set[str]] = {}  # project -> observation ids
        for entity_id in ids:
            links = latest[entity_id] = owner.latest_links(entity_id, RECENT_OBSERVATIONS)
            for link in links:
                if link[0] not in texts:
                    missing.setdefault(link[4], set()).add(link[0])
        read = _texts(store, missing)
        for entity_id in ids:
            rows = []
            for ident, timestamp, category, topic, project in latest[entity_id]:
                text = texts.get(ident)
                if text is None:
                    text = read.get((project, ident))
                if text is None:  # no such observation: as the joined query would
                    rows = owner.latest(entity_id, RECENT_OBSERVATIONS)
                    break
                rows.append((ident, timestamp, category, topic, text))
            latest[entity_id] = rows
    else:
        for entity_id in ids:
            latest[entity_id] = owner.latest(entity_id, RECENT_OBSERVATIONS)
    found = {}
    written: dict[tuple[Any, ...], str] = {}  # an observation's line, for each entity it names
    for entity_id in ids:
        rows = latest[entity_id]
        if not rows:
            continue
        lines = ["", "## Latest observations", ""]
        for row in rows:
            line = written.get(row)
            if line is None:
                ident, timestamp, category, topic, raw = row
                text = " ".join(raw.split())
                if len(text) > EXCERPT:
                    text = text[: EXCERPT - 1].rstrip() + "…"
                line = written[row] = f"- {timestamp} {category}, {topic}: {text} ({ident})"
            lines.append(line)
        found[entity_id] = lines
    return found


def _texts(store: Store, wanted: Mapping[str, set[str]]) -> dict[tuple[str, str], str]:
    """(project, observation id) -> text, of the observations wanted that exist."""
    found = {}
    for project, idents in wanted.items():
        ordered = sorted(idents)
        for start in range(0, len(ordered), CHUNK):
            chunk = ordered[start : start + CHUNK]
            for ident, text in store.tables.observations.texts(project, chunk):
                found[(project, ident)] = text
    return found


def _marks(chunk: list[int]) -> str:
    return ", ".join("?" * len(chunk))


def _chunks(ids: list[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), CHUNK):
        yield ids[start : start + CHUNK]


def _by_id(store: Store, truth_id: int) -> CompiledTruth:
    row = store.tables.truths.by_id(truth_id)
    if row is None:
        raise NotFound(f"no compiled truth with id {truth_id}")
    return CompiledTruth(**row)


def _entities(store: Store, entity_ids: list[int]) -> dict[int, Entity]:
    """Entities by id, straight from the connection (those that exist)."""
    found = {}
    for chunk in _chunks(sorted(set(entity_ids))):
        for row in store.tables.entities.by_ids(chunk):
            found[int(row["id"])] = EntityRecord(**{**row, "pinned": bool(row["pinned"])})
    return found
