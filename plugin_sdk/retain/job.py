"""The Retain Job: observations in the inbox become graph state, in six steps.

For each observation in the inbox (status ``queued``), in arrival order,
inside one savepoint (a batch of observations shares one transaction; an
observation that fails rolls back alone and is marked ``failed`` with the
error):

1. **resolve** every entity it names (actors, fact subjects, relation ends);
2. **deduplicate**: a replayed id never reaches the job (``observations.py``
   keeps one row per id); the *content* pass looks for a memory of the same
   actors that says the same thing (same normalized text in any category, or
   at least :data:`NEAR_DUPLICATE` word overlap among the
   :data:`DEDUP_WINDOW` latest) and reinforces it instead of writing a new
   one. The fast route skips this pass;
3. **schema_fit** (0..1) from the ``schema_fit`` hook (built in: ``fit.py``),
   which picks the route (``routing.py``): dark, normal or fast;
4. **conflicts**: each fact whose subject already has a different value for
   the same predicate is recorded as a conflict; both facts are kept;
5. **write**: unknown entities are created provisional (their half-life times
   the route's factor); known provisional ones become active on a non-dark
   route; facts are stored; then the handler chosen by (category, target
   namespace) writes the memory and the relations (``handlers.py``);
6. **strength**: the entities are seen again (their decay clock restarts),
   take the observation's sentiment as emotional tag when it is stronger than
   theirs, get their strength recomputed, and gather the observation's
   impact; an entity whose impact reaches the pack's threshold has its
   Compiled Truth regenerated after the batch commits (``truth.py``).

On the dark route nothing is strengthened: the memory is ``pending``, facts
are ``held``, relations wait in the observation, and steps 6's effects happen
when a person accepts it (``dark_matter.py``).

Idempotent by observation id: an observation is processed once; a replay of
the same file adds nothing to the inbox, and a run with an empty inbox writes
nothing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import MemsdkError
from plugin_sdk.grid.consolidation import ENTITY_STRENGTH, ensure_math
from plugin_sdk.grid.entities import Entity as EntityRecord
from plugin_sdk.grid.policy import Grid, grid, pinned
from plugin_sdk.redact import redact
from plugin_sdk.retain import routing
from plugin_sdk.retain.fit import measure
from plugin_sdk.retain.handlers import RetainContext, dispatch, registered_handlers
from plugin_sdk.retain.observations import from_document
from plugin_sdk.retain.truth import add_impact, due, regenerate_many
from plugin_sdk.store.normalize import normalize, normalized_hash

if TYPE_CHECKING:
    from plugin_sdk.grid.entities import Entity
    from plugin_sdk.plugin.records import Observation
    from plugin_sdk.store.connection import Store

BATCH_SIZE = 200
DEDUP_WINDOW = 200  # latest memories of the actors the content pass compares with
NEAR_DUPLICATE = 0.8  # word-set overlap (Jaccard) that counts as the same content
MIN_WORDS = 4  # shorter texts are only duplicates when their normalized text is equal
Progress = Callable[[int, int], None]
_WORD = re.compile(r"\w+")


@attrs.define
class RetainReport:
    """What a run did."""

    processed: int = 0
    routes: dict[str, int] = attrs.field(factory=lambda: dict.fromkeys(routing.ROUTES, 0))
    duplicates: int = 0
    conflicts: int = 0
    entities_created: int = 0
    failed: list[tuple[str, str]] = attrs.field(factory=list)
    truths: list[str] = attrs.field(factory=list)
    remaining: int = 0

    def to_dict(self) -> dict[str, Any]:
        data = attrs.asdict(self)
        data["failed"] = [{"id": i, "error": e} for i, e in self.failed]
        return data


def retain(
    store: Store,
    *,
    limit: int | None = None,
    batch_size: int = BATCH_SIZE,
    retry_failed: bool = False,
    progress: Progress | None = None,
    batched: bool = True,
) -> RetainReport:
    """Run the Retain Job over the store's observation inbox (see the module docstring).

    ``batched=False`` takes the reference path (see :class:`RetainJob`).
    """
    job = RetainJob(store, batched=batched)
    if retry_failed:
        job.retry_failed()
    total = job.inbox_count()
    if limit is not None:
        total = min(total, limit)
    report = RetainReport()
    while limit is None or report.processed < limit:
        size = batch_size if limit is None else min(batch_size, limit - report.processed)
        with store.atomic():
            handled = job.run_batch(size, report)
        if not handled:
            break
        report.truths += job.regenerate_due()
        if progress:
            progress(report.processed, total)
    report.remaining = job.inbox_count()
    return report


class RetainJob:
    """The job on one store's project; reads the policy, grid and handlers once.

    ``batched`` (the default) runs a batch with the grid pinned (``grid()``
    answers from memory for the hooks and helpers), one plain savepoint per
    observation, and the observations' truth impacts gathered in memory and
    stored once per batch (one statement per batch instead of one per entity
    per observation). ``batched=False`` is the reference path, one observation
    at a time through the store's own helpers; both end in the same state (a
    test and ``bench/bench_retain.py`` check it).
    """

    def __init__(self, store: Store, *, batched: bool = True) -> None:
        self.store = store
        self.project = store.project
        self.batched = batched
        self.policy = routing.policy(store)
        self.grid = grid(store)
        self.handlers = registered_handlers(store)
        self._impacts: dict[int, tuple[str, float, int]] | None = None
        ensure_math(store.db.conn)

    def inbox_count(self) -> int:
        """Observations of the project waiting in the inbox."""
        row = self.store.db.execute(
            "SELECT count(*) FROM observations WHERE project = ? AND status = 'queued'",
            [self.project],
        ).fetchone()
        return int(row[0])

    def retry_failed(self) -> int:
        """Put the project's failed observations back in the inbox."""
        with self.store.atomic():
            cursor = self.store.db.execute(
                """UPDATE observations SET status = 'queued', error = NULL
                   WHERE project = ? AND status = 'failed'""",
                [self.project],
            )
        return cursor.rowcount

    def run_batch(self, size: int, report: RetainReport) -> int:
        """Process up to ``size`` observations from the inbox (call inside a transaction)."""
        rows = self.store.db.conn.execute(
            """SELECT id, document FROM observations WHERE project = ? AND status = 'queued'
               ORDER BY rowid LIMIT ?""",
            [self.project, size],
        ).fetchall()
        if not self.batched:
            for ident, document in rows:
                self._one(ident, document, report, self.store.atomic)
            return len(rows)
        self._impacts = {}
        try:
            with pinned(self.store, self.grid):
                for ident, document in rows:
                    self._one(ident, document, report, self._savepoint)
            self._store_impacts()
        finally:
            self._impacts = None
        return len(rows)

    def _one(
        self,
        ident: str,
        document: str,
        report: RetainReport,
        savepoint: Callable[[], AbstractContextManager[Any]],
    ) -> None:
        observation = from_document(json.loads(document))
        gathered: dict[int, tuple[str, float]] | None = {} if self._impacts is not None else None
        try:
            with savepoint():
                self.process(observation, report, gathered)
        except Exception as error:  # one observation's failure must not stop the rest
            message = redact(f"{type(error).__name__}: {error}")
            self.store.db.conn.execute(
                """UPDATE observations SET status = 'failed', error = ?, processed_at = ?
                   WHERE project = ? AND id = ?""",
                [message, self.store.now(), self.project, observation.id],
            )
            report.failed.append((observation.id, message))
        else:
            if gathered and self._impacts is not None:
                for entity_id, (project, impact) in gathered.items():
                    _, total, seen = self._impacts.get(entity_id, (project, 0.0, 0))
                    self._impacts[entity_id] = (project, total + impact, seen + 1)
        report.processed += 1

    @contextmanager
    def _savepoint(self) -> Iterator[None]:
        conn = self.store.db.conn
        conn.execute("SAVEPOINT retain_observation")
        try:
            yield
        except BaseException:
            conn.execute("ROLLBACK TO retain_observation")
            conn.execute("RELEASE retain_observation")
            raise
        conn.execute("RELEASE retain_observation")

    def _store_impacts(self) -> None:
        """The batch's gathered impacts, one upsert per entity (see :func:`add_impact`)."""
        if not self._impacts:
            return
        now = self.store.now()
        self.store.db.conn.executemany(
            """INSERT INTO truth_impacts (entity_id, project, impact, observations, updated_at)
               VALUES (?, ?, ?, ?, ?)
               ON CONFLICT (entity_id) DO UPDATE SET impact = impact + excluded.impact,
                   observations = observations + excluded.observations,
                   updated_at = excluded.updated_at""",
            [
                (entity_id, project, impact, seen, now)
                for entity_id, (project, impact, seen) in sorted(self._impacts.items())
            ],
        )

    def process(
        self,
        observation: Observation,
        report: RetainReport,
        gathered: dict[int, tuple[str, float]] | None = None,
    ) -> None:
        """The six steps for one observation (call inside a transaction).

        With ``gathered``, step 6's impacts are put there (entity id -> its
        project and the impact) for the caller to store, instead of stored now.
        """
        store = self.store
        names = observation.names()
        known = {name: self._find(name) for name in names}  # 1. resolve
        fit = self.fit(observation, known)  # 3. schema_fit
        route = self.policy.route(fit)
        factor = self.policy.factor(route)
        held = route == "dark"
        duplicate = None if route == "fast" else self.duplicate(observation, known)  # 2.
        entities: dict[str, Entity] = {}
        created: set[str] = set()
        for name in names:  # 5. entities
            entity = known[name]
            if entity is None:
                entity = self._create(name, factor)
                created.add(name)
            elif entity.status == "provisional" and not held:
                entity = store.entities.update(entity.id, status="active")
            entities[name] = entity
        new_conflicts = record_facts(store, observation, entities, held)  # 4. conflicts
        context = RetainContext(
            store=store,
            observation=observation,
            entities=entities,
            schema_fit=fit,
            route=route,
            half_life_factor=factor,
            duplicate_of=duplicate,
            grid=self.grid,
        )
        handler = dispatch(self.handlers, observation.category, observation.target)
        handler.handle(context)  # 5. memory and relations
        link_observation(store, observation, entities, created, held)
        if not held:
            reinforce(store, observation, entities, new_conflicts, self.grid, gathered)  # 6.
        store.db.execute(
            """UPDATE observations SET status = ?, schema_fit = ?, route = ?, handler = ?,
                   memory_id = ?, duplicate = ?, half_life_days = ?, deferred = ?,
                   processed_at = ?, error = NULL
               WHERE project = ? AND id = ?""",
            [
                "dark" if held else "retained",
                fit,
                route,
                handler.name,
                context.memory_id,
                int(context.memory_id is not None and not context.memory_created),
                context.half_life_days,
                context.deferred_json(),
                store.now(),
                self.project,
                observation.id,
            ],
        )
        report.routes[route] += 1  # counted last: a failed observation counts as failed only
        report.conflicts += sum(new_conflicts.values())
        report.entities_created += len(created)
        report.duplicates += int(context.memory_id is not None and not context.memory_created)

    def fit(self, observation: Observation, known: Mapping[str, Entity | None]) -> float:
        """schema_fit from the hook, checked to be a number in 0..1."""
        value = self.store.plugins.hook.schema_fit(
            store=self.store, observation=observation, entities=known
        )
        if value is None:
            value = measure(self.store, observation, known)
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or math.isnan(value)
            or not 0 <= value <= 1
        ):
            raise MemsdkError(
                f"the schema_fit hook returned {value!r}; it must be a number in 0..1"
            )
        return float(value)

    def duplicate(self, observation: Observation, known: Mapping[str, Entity | None]) -> int | None:
        """The content dedup pass: a memory of the same actors saying the same thing."""
        ids = [e.id for e in (known[name] for name in observation.actors) if e is not None]
        if not ids:
            return None
        digest = normalized_hash(observation.text)
        words = set(_WORD.findall(normalize(observation.text)))
        rows = self.store.db.execute(
            f"""SELECT DISTINCT m.id, m.normalized_hash, m.token_count FROM memory_entities l
                JOIN memories m ON m.id = l.memory_id
                WHERE l.entity_id IN ({", ".join("?" * len(ids))})
                  AND m.status IN ('active', 'pending')
                ORDER BY m.id DESC LIMIT ?""",
            [*ids, DEDUP_WINDOW],
        ).fetchall()
        for memory_id, other_hash, _tokens in rows:
            if other_hash == digest:
                return int(memory_id)
        if len(words) < MIN_WORDS:
            return None
        # Word sets this far apart in size cannot reach the overlap: skip their text.
        tokens = self.store.tokenizer.count(observation.text)
        low, high = tokens * NEAR_DUPLICATE, tokens / NEAR_DUPLICATE
        for memory_id, _hash, other_tokens in rows:
            if other_tokens is not None and not low <= other_tokens <= high:
                continue
            (content,) = self.store.db.execute(
                "SELECT content FROM memories WHERE id = ?", [memory_id]
            ).fetchone()
            other = set(_WORD.findall(normalize(content)))
            if len(words & other) / len(words | other) >= NEAR_DUPLICATE:
                return int(memory_id)
        return None

    def regenerate_due(self) -> list[str]:
        """Regenerate the Compiled Truth of every entity whose impact reached the threshold."""
        found = due(self.store, self.policy.truth_impact_threshold, project=self.project)
        return [written.entity for written in regenerate_many(self.store, found)] if found else []

    def _find(self, name: str) -> Entity | None:
        cursor = self.store.db.conn.execute(
            "SELECT * FROM entities WHERE project = ? AND name = ? COLLATE NOCASE",
            [self.project, name],
        )
        row = cursor.fetchone()
        if row is None:
            return None
        values = dict(zip([column[0] for column in cursor.description], row, strict=True))
        return EntityRecord(**{**values, "pinned": bool(values["pinned"])})

    def _create(self, name: str, factor: float) -> Entity:
        entity = self.store.entities.add(name, status="provisional", project=self.project)
        if factor != 1.0 and not entity.pinned:
            self.store.db.execute(
                "UPDATE entities SET half_life_days = ? WHERE id = ?",
                [entity.half_life_days * factor, entity.id],
            )
            entity = self.store.entities.get(entity.id)
        return entity


def record_facts(
    store: Store, observation: Observation, entities: Mapping[str, Entity], held: bool
) -> dict[int, int]:
    """Store the observation's facts and the conflicts they make; new conflicts per entity."""
    new_conflicts: dict[int, int] = {}
    now = store.now()
    for fact in observation.facts:
        subject = entities[fact.subject]
        value = normalize(fact.object)
        others = store.db.execute(
            """SELECT object_norm, max(id), min(object) FROM facts
               WHERE entity_id = ? AND predicate = ? AND status IN ('active', 'held')
                 AND object_norm != ?
               GROUP BY object_norm ORDER BY object_norm""",
            [subject.id, fact.predicate, value],
        ).fetchall()
        cursor = store.db.execute(
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
            inserted = store.db.execute(
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


def link_observation(
    store: Store,
    observation: Observation,
    entities: Mapping[str, Entity],
    created: set[str],
    held: bool,
) -> None:
    """Record which entities the observation is about (and which it created)."""
    actors = set(observation.actors)
    store.db.conn.executemany(
        """INSERT OR IGNORE INTO entity_observations (entity_id, project, observation_id, role,
               category, topic, at, created, held) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        [
            (
                entity.id,
                entity.project,
                observation.id,
                "actor" if name in actors else "subject",
                observation.category,
                observation.topic,
                observation.timestamp,
                int(name in created),
                int(held),
            )
            for name, entity in entities.items()
        ],
    )


def impacts(
    policy: Grid,
    observation: Observation,
    entities: Mapping[str, Entity],
    conflicts: Mapping[int, int],
) -> dict[int, float]:
    """Each entity's impact from one observation.

    ``impact = m × (1 + facts about it + relations touching it) + its new conflicts``,
    where ``m`` is the grid's multiplier for the observation's sentiment.
    """
    multiplier = policy.emotions.get(observation.sentiment, 1.0)
    by_name = dict.fromkeys(entities, 0)
    for fact in observation.facts:
        by_name[fact.subject] += 1
    for relation in observation.relations:
        by_name[relation.source] += 1
        by_name[relation.target] += 1
    result = {entities[name].id: multiplier * (1 + n) for name, n in by_name.items()}
    for entity_id, n in conflicts.items():
        result[entity_id] = result.get(entity_id, 0.0) + n
    return result


def open_conflicts_of(store: Store, project: str, observation_id: str) -> dict[int, int]:
    """Open conflicts made by an observation's facts, per entity (for an accepted one)."""
    rows = store.db.execute(
        """SELECT c.entity_id, count(*) FROM facts f JOIN conflicts c ON c.fact_id = f.id
           WHERE f.project = ? AND f.observation_id = ? AND c.status = 'open'
           GROUP BY c.entity_id""",
        [project, observation_id],
    ).fetchall()
    return {int(entity_id): int(n) for entity_id, n in rows}


def reinforce(
    store: Store,
    observation: Observation,
    entities: Mapping[str, Entity],
    conflicts: Mapping[int, int],
    policy: Grid | None = None,
    gathered: dict[int, tuple[str, float]] | None = None,
) -> None:
    """Step 6: seen again, emotional tag, strength now, and the observation's impact.

    The impact is added to the store, or to ``gathered`` when given (the
    batched Retain Job stores a whole batch's impacts at once).
    """
    policy = policy or grid(store)
    now = store.now()
    ids = sorted({entity.id for entity in entities.values()})
    marks = ", ".join("?" * len(ids))
    store.db.execute(
        f"UPDATE entities SET last_seen_at = ?, updated_at = ? WHERE id IN ({marks})",
        [now, now, *ids],
    )
    weight = policy.emotions.get(observation.sentiment)
    if weight is not None:
        for entity in entities.values():
            if (
                weight > entity.emotional_multiplier
                and entity.emotional_tag != observation.sentiment
            ):
                store.entities.update(entity.id, emotional_tag=observation.sentiment)
    store.db.execute(
        f"""UPDATE entities AS e SET strength = {ENTITY_STRENGTH}, strength_at = :stamp
            WHERE e.id IN ({", ".join(f":id{i}" for i in range(len(ids)))})""",
        {"stamp": now, **{f"id{i}": entity_id for i, entity_id in enumerate(ids)}},
    )
    by_id = {entity.id: entity for entity in entities.values()}
    for entity_id, impact in impacts(policy, observation, entities, conflicts).items():
        if gathered is None:
            add_impact(store, by_id[entity_id], impact)
        else:
            gathered[entity_id] = (by_id[entity_id].project, impact)


def end_state(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """What a Retain Job run leaves behind, clock-free, to compare two runs on the same input.

    Memories, entities, relations, facts, conflicts, the links between them,
    the observations' outcomes and the gathered truth impacts; times and
    strengths (which depend on the clock) are left out, and so are Compiled
    Truth versions (a batched run may write fewer).
    """
    queries = {
        "memories": """SELECT id, content, category, status, seen_count, normalized_hash
                       FROM memories ORDER BY id""",
        "memory_cells": """SELECT memory_id, memory_type, referent, act, signal, half_life_days
                           FROM memory_cells ORDER BY memory_id""",
        "memory_entities": "SELECT memory_id, entity_id, role FROM memory_entities ORDER BY 1, 2, 3",
        "entities": """SELECT id, name, type, status, half_life_days, emotional_tag,
                              emotional_multiplier FROM entities ORDER BY id""",
        "relations": """SELECT source_id, target_id, type, weight, evidence_count
                        FROM relations ORDER BY 1, 2, 3""",
        "facts": """SELECT id, entity_id, predicate, object, object_norm, observation_id, status
                    FROM facts ORDER BY id""",
        "conflicts": """SELECT entity_id, kind, predicate, fact_id, other_fact_id, pair, detail,
                               status FROM conflicts ORDER BY id""",
        "entity_observations": """SELECT entity_id, observation_id, role, category, topic,
                                         created, held FROM entity_observations ORDER BY 1, 2""",
        "observations": """SELECT id, status, schema_fit, route, handler, memory_id, duplicate,
                                  half_life_days, deferred, error FROM observations ORDER BY id""",
        "truth_impacts": """SELECT entity_id, round(impact, 9), observations FROM truth_impacts
                            WHERE impact > 0 ORDER BY entity_id""",
    }
    return {name: store.db.conn.execute(sql).fetchall() for name, sql in queries.items()}
