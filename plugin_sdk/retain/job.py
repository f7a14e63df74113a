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
   Compiled Truth regenerated once per batch (``truth.py``): after the batch
   commits when a model writes truths, else (digests only) at the end of the
   batch's own transaction.

On the dark route nothing is strengthened: the memory is ``pending``, facts
are ``held``, relations wait in the observation, and steps 6's effects happen
when a person accepts it (``dark_matter.py``).

Each step lives in its own module: ``resolve.py`` (1), ``dedup.py`` (2),
``fit.py`` and ``routing.py`` (3), ``facts.py`` (4), ``handlers.py`` (5),
``strengthen.py`` (6); this module runs them.

Idempotent by observation id: an observation is processed once; a replay of
the same file adds nothing to the inbox, and a run with an empty inbox writes
nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import MemsdkError
from plugin_sdk.grid.policy import grid, pinned
from plugin_sdk.redact import redact
from plugin_sdk.retain import routing
from plugin_sdk.retain.dedup import Dedup
from plugin_sdk.retain.deferred import Deferred
from plugin_sdk.retain.facts import record_facts
from plugin_sdk.retain.fit import Topics, measure
from plugin_sdk.retain.handlers import DEFAULT, RetainContext, dispatch, registered_handlers
from plugin_sdk.retain.observations import from_document
from plugin_sdk.retain.resolve import Resolver
from plugin_sdk.retain.strengthen import (
    Gathered,
    flush,
    gather,
    link_observation,
    observation_links,
    reinforce,
)
from plugin_sdk.retain.truth import due, regenerate_many
from plugin_sdk.store.file import tuning
from plugin_sdk.store.tables.grid.cells import ensure_math

if TYPE_CHECKING:
    from plugin_sdk.grid.entities import Entity
    from plugin_sdk.plugin.records import Observation
    from plugin_sdk.store.connection import Store

# Observations per transaction. A batch holds the store's write lock while it runs:
# 500 took a median of about 250 ms (at most about 400 ms) on the benchmark's stream on
# 2 cores, 200 about 115 ms (at most about 240 ms) at 15 to 20% fewer observations a
# second; another writer waits that long at worst. --batch-size chooses.
BATCH_SIZE = 500
# The built-in plugins that answer schema_fit (with fit.measure) and classify_cell.
BUILTIN_FIT = "plugin_sdk_plugins.schema_fit"
BUILTIN_CELLS = "plugin_sdk_plugins.cell_classifier"
BUILTIN_VECTORS = "plugin_sdk_plugins.vector_search"  # embeds new memories; writes no memory
# While a run lasts, its connection keeps at least this many pages in memory and
# checkpoints the WAL at most this often (a batch dirties more pages than SQLite's
# defaults, 2 MiB of cache and a checkpoint every 1,000 pages, hold). The store opens
# its connections with the same values (store/connection.py); a host that lowered
# them gets these back for the run, and its own when the run ends.
RUN_CACHE_KIB = 65536
RUN_CHECKPOINT_PAGES = 10000
TOPICS_KEPT = 16384  # schema_fit's topic answers kept from batch to batch at most
TEXTS_KEPT = 4096  # retained observations' texts kept for the truth digests (oldest dropped)
Progress = Callable[[int, int], None]


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

    def copy(self) -> RetainReport:
        return attrs.evolve(
            self, routes=dict(self.routes), failed=list(self.failed), truths=list(self.truths)
        )


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
    with _tuned(store):
        _run(store, job, report, limit, batch_size, progress, total)
    report.remaining = job.inbox_count()
    return report


def _tuned(store: Store) -> AbstractContextManager[None]:
    """The connection's page cache and WAL checkpoint interval for a run (see above)."""
    return tuning.at_least(store.db, cache_kib=RUN_CACHE_KIB, checkpoint_pages=RUN_CHECKPOINT_PAGES)


def _run(
    store: Store,
    job: RetainJob,
    report: RetainReport,
    limit: int | None,
    batch_size: int,
    progress: Progress | None,
    total: int,
) -> None:
    while limit is None or report.processed < limit:
        size = batch_size if limit is None else min(batch_size, limit - report.processed)
        with store.atomic():
            handled = job.run_batch(size, report)
            if handled and job.truths_in_batch:
                report.truths += job.regenerate_due()
        if not handled:
            break
        if not job.truths_in_batch:
            report.truths += job.regenerate_due()
        job.batch_ended()
        if progress:
            progress(report.processed, total)


@attrs.define
class _Batch:
    """What the batched path keeps while it runs one batch."""

    kinds: dict[str, str]  # the active categories' kinds, read once per batch
    rows: Deferred  # links, cells and new memories' index rows, written at the batch's end
    gathered: Gathered = attrs.field(factory=Gathered)
    outcomes: list[tuple[Any, ...]] = attrs.field(factory=list)
    pending: Gathered | None = None  # the current observation's, added when it commits
    outcome: tuple[Any, ...] | None = None


class RetainJob:
    """The job on one store's project; reads the policy, grid and handlers once.

    ``batched`` (the default) runs a batch with the grid pinned (``grid()``
    answers from memory for the hooks and helpers), the batch's entities read
    in one query and kept in memory (``resolve.py``), the dedup pass's word
    sets and windows kept (``dedup.py``; the windows and schema_fit's topic
    answers from batch to batch while nothing else writes), one plain
    savepoint per observation, the links, cells and new memories' index rows
    gathered and written once per batch (``deferred.py``; at once for an
    observation a plugin's code handles), and the entities seen, truth
    impacts and observation outcomes gathered and stored once per batch.
    Should anything outside one observation fail in a
    batch, the batch is rolled back and run again on the reference path.
    ``batched=False`` is that reference path, one observation at a time
    through the store's own helpers; both end in the same state (a test and
    ``bench/bench_retain.py`` check it).
    """

    def __init__(self, store: Store, *, batched: bool = True) -> None:
        self.store = store
        self.project = store.project
        self.batched = batched
        self.policy = routing.policy(store)
        self.grid = grid(store)
        self.handlers = registered_handlers(store)
        self.resolver = Resolver(store)
        self.dedup = Dedup(store, remember=batched)
        self._batch: _Batch | None = None
        # No model to ask: the batch's truths are digests, written in its own transaction
        # (one commit per batch instead of two). With a model, after the batch commits.
        self.truths_in_batch = batched and not store.plugins.hook.model_complete.get_hookimpls()
        # Only the built-in schema_fit and classify_cell answer: the batched job asks
        # measure() directly, with the batch's topic answers, and may defer rows (a
        # plugin's hook may read any table: see _owned).
        hook = store.plugins.hook
        self.builtin_hooks = all(
            impl.function.__module__ == BUILTIN_FIT for impl in hook.schema_fit.get_hookimpls()
        ) and all(
            impl.function.__module__ == BUILTIN_CELLS for impl in hook.classify_cell.get_hookimpls()
        )
        # The dedup pass's windows (and the topic answers and texts below) are kept from
        # one batch to the next when nothing but the job writes in between: no other
        # connection (PRAGMA data_version), nothing else on this one (its total_changes,
        # e.g. a progress callback's write), no model and no plugin told of the memories
        # written (but the built-in vector index).
        self.keeps_windows = self.truths_in_batch and all(
            impl.function.__module__ == BUILTIN_VECTORS
            for written in (hook.memory_written, hook.memories_written)
            for impl in written.get_hookimpls()
        )
        self._quiet: tuple[int, int] | None = None  # see batch_ended
        self.topics = Topics(store)  # schema_fit's topic answers, kept as the windows are
        # observation id -> text, of the observations this job retained: the truth digests
        # read their latest observations' texts from here. Dropped with the windows: a
        # forget blanks an observation's document (and must blank its text here too).
        self.texts: dict[str, str] = {}
        ensure_math(store.db.conn)

    def inbox_count(self) -> int:
        """Observations of the project waiting in the inbox."""
        return self.store.tables.observations.queued_count(self.project)

    def retry_failed(self) -> int:
        """Put the project's failed observations back in the inbox."""
        with self.store.atomic():
            return self.store.tables.observations.requeue_failed(self.project)

    def run_batch(self, size: int, report: RetainReport) -> int:
        """Process up to ``size`` observations from the inbox (call inside a transaction)."""
        rows = self.store.tables.observations.queued(self.project, size)
        if not self.batched:
            for ident, document in rows:
                self._one(ident, document, report, self.store.atomic)
            return len(rows)
        before = report.copy()
        try:
            with self.store.savepoint("retain_batch"):  # its writes and events, or none
                self._run_batched(rows, report)
        except Exception:  # not one observation's fault: the batch again, the reference way
            attrs_restore(report, before)
            self.resolver.forget()
            self.dedup.forget()  # its windows may name memories the rollback took back
            self.dedup.written()  # and the links it gathered are gone with it
            self.topics = Topics(self.store)  # as are the links its topic answers were told of
            remember, self.dedup.remember = self.dedup.remember, False
            try:
                for ident, document in rows:
                    self._one(ident, document, report, self.store.atomic)
            finally:
                self.dedup.remember = remember
        return len(rows)

    def batch_ended(self) -> None:
        """Note, once a batch has committed, what the next batch checks before keeping its caches.

        ``PRAGMA data_version`` moves when another connection commits; the
        connection's ``total_changes`` when anything on it writes (a progress
        callback archiving a memory, say). A batch not preceded by this call
        keeps nothing.
        """
        self._quiet = self._state()

    def _state(self) -> tuple[int, int]:
        return tuning.change_marks(self.store.db)

    def _run_batched(self, rows: list[tuple[str, str]], report: RetainReport) -> None:
        parsed: list[tuple[str, str | Observation]] = []
        for ident, document in rows:
            try:
                parsed.append((ident, from_document(json.loads(document))))
            except Exception:  # read again (and failed alone, with its reason) in _one
                parsed.append((ident, document))
        self.resolver.forget()  # other writers may have changed entities between batches
        if not self.keeps_windows or self._quiet != self._state():
            self.dedup.forget()  # and memories
            self.topics = Topics(self.store)  # and observations
            self.texts.clear()  # and forget blanks observations
        elif len(self.topics) > TOPICS_KEPT:
            self.topics = Topics(self.store)
        self._quiet = None
        self.resolver.prefetch(
            name for _, item in parsed if not isinstance(item, str) for name in item.names()
        )
        batch = self._batch = _Batch(
            kinds=self.store.memories.active_kinds(), rows=Deferred(self.store, self.topics)
        )
        try:
            with pinned(self.store, self.grid):
                for ident, item in parsed:
                    self._one(ident, item, report, self._savepoint)
            self._write_rows(batch)
            flush(self.store, batch.gathered)
            self.store.tables.observations.set_outcomes(batch.outcomes)
        finally:
            self._batch = None

    def _one(
        self,
        ident: str,
        document: str | Observation,
        report: RetainReport,
        savepoint: Callable[[], AbstractContextManager[Any]],
    ) -> None:
        batch = self._batch
        try:
            observation = (
                from_document(json.loads(document)) if isinstance(document, str) else document
            )
            if batch is not None:  # outside the observation's savepoint
                if self._owned(observation):
                    batch.rows.pause()
                else:  # a plugin's code runs: the tables as the reference path has them
                    self._write_rows(batch)
                    self.topics = batch.rows.topics = Topics(self.store)
            with savepoint():
                self.process(observation, report)
        except Exception as error:  # one observation's failure must not stop the rest
            message = redact(f"{type(error).__name__}: {error}")
            self.store.tables.observations.set_failed(
                self.project, ident, message, self.store.now()
            )
            report.failed.append((ident, message))
            if batch is not None:
                batch.rows.drop()
                self.dedup.drop()
                self.resolver.forget()  # what it created or changed was rolled back
                self.dedup.forget()
        else:
            if batch is not None:
                batch.rows.commit()
                self.dedup.commit()
                if len(self.texts) >= TEXTS_KEPT:
                    del self.texts[next(iter(self.texts))]
                self.texts[observation.id] = observation.text
                if batch.pending is not None:
                    batch.gathered.add(batch.pending)
                if batch.outcome is not None:
                    batch.outcomes.append(batch.outcome)
        finally:
            if batch is not None:
                batch.pending = batch.outcome = None
        report.processed += 1

    def _write_rows(self, batch: _Batch) -> None:
        """Write the batch's deferred rows now (its end, or before a plugin's code runs)."""
        batch.rows.write()
        self.dedup.written()

    def _owned(self, observation: Observation) -> bool:
        """Whether only the job's own code handles the observation (no plugin's code runs).

        Then its links, cell and index rows may wait for the batch's end (``deferred.py``).
        """
        return (
            self.builtin_hooks
            and dispatch(self.handlers, observation.category, observation.target) is DEFAULT
        )

    def _savepoint(self) -> AbstractContextManager[None]:
        # Three plain statements (not a nested atomic()); a failed observation's
        # events (memory_written) roll back with its writes.
        return self.store.savepoint("retain_observation")

    def process(self, observation: Observation, report: RetainReport) -> None:
        """The six steps for one observation (call inside a transaction).

        Inside a batched run, step 6's seen marks and impacts and the
        observation's outcome are gathered for the batch instead of stored now.
        """
        store, batch = self.store, self._batch
        names = observation.names()
        find = self.resolver.find if batch is not None else self._find
        known = {name: find(name) for name in names}  # 1. resolve
        rows = batch.rows if batch is not None and batch.rows.paused else None
        fit = self.fit(observation, known, rows.topics if rows is not None else None)  # 3.
        route = self.policy.route(fit)
        factor = self.policy.factor(route)
        held = route == "dark"
        duplicate = (  # 2. dedup
            None
            if route == "fast"
            else self.dedup.duplicate(
                observation, [e.id for e in (known[n] for n in observation.actors) if e]
            )
        )
        entities: dict[str, Entity] = {}
        created: set[str] = set()
        for name in names:  # 5. entities
            entity = known[name]
            if entity is None:
                entity = self._create(name, factor)
                created.add(name)
            elif entity.status == "provisional" and not held:
                entity = self._activate(entity)
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
            lean=batch is not None,
            kinds=batch.kinds if batch is not None else None,
            batch_rows=rows,
            counted=self.dedup.counted,
        )
        handler = dispatch(self.handlers, observation.category, observation.target)
        handler.handle(context)  # 5. memory and relations
        if batch is not None and handler is not DEFAULT:
            self.resolver.forget()  # a plugin's handler may have changed entities
            self.dedup.forget()  # or memories
        elif batch is not None and context.memory_id is not None:
            # The memory's links (write_memory): the actors, and the facts' subjects.
            self.dedup.linked(
                context.memory_id,
                [entities[name].id for name in observation.actors]
                + [entities[fact.subject].id for fact in observation.facts],
                context.memory_row[:3] if context.memory_row is not None else None,
                unwritten=rows is not None,
            )
        if rows is not None:
            rows.link(observation_links(observation, entities, created, held))
        else:
            link_observation(store, observation, entities, created, held)
        if not held:  # 6.
            if batch is None:
                reinforce(store, observation, entities, new_conflicts, self.grid)
            else:
                batch.pending = gather(
                    store, observation, entities, new_conflicts, self.grid, self.resolver
                )
        outcome = (
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
        )
        if batch is None:
            store.tables.observations.set_outcome(outcome)
        else:
            batch.outcome = outcome
        report.routes[route] += 1  # counted last: a failed observation counts as failed only
        report.conflicts += sum(new_conflicts.values())
        report.entities_created += len(created)
        report.duplicates += int(context.memory_id is not None and not context.memory_created)

    def fit(
        self,
        observation: Observation,
        known: Mapping[str, Entity | None],
        topics: Topics | None = None,
    ) -> float:
        """schema_fit from the hook, checked to be a number in 0..1.

        ``topics``: the batch's topic answers; the built-in measure is then asked directly.
        """
        value = (
            self.store.plugins.hook.schema_fit(
                store=self.store, observation=observation, entities=known
            )
            if topics is None
            else None
        )
        if value is None:
            value = measure(self.store, observation, known, topics)
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

    def regenerate_due(self) -> list[str]:
        """Regenerate the Compiled Truth of every entity whose impact reached the threshold."""
        found = due(self.store, self.policy.truth_impact_threshold, project=self.project)
        if not found:
            return []
        written = regenerate_many(self.store, found, self.texts if self.batched else None)
        return [truth.entity for truth in written]

    def _find(self, name: str) -> Entity | None:
        return Resolver(self.store).find(name)

    def _create(self, name: str, factor: float) -> Entity:
        if self._batch is not None:
            return self.resolver.create(name, status="provisional", factor=factor)
        entity = self.store.entities.add(name, status="provisional", project=self.project)
        if factor != 1.0 and not entity.pinned:
            self.store.tables.entities.set_half_life(entity.id, entity.half_life_days * factor)
            entity = self.store.entities.get(entity.id)
        return entity

    def _activate(self, entity: Entity) -> Entity:
        if self._batch is None:
            return self.store.entities.update(entity.id, status="active")
        # What entities.update(status="active") writes, without reading the row again.
        multiplier = self.grid.multiplier(entity.cell, entity.emotional_tag)
        self.store.tables.entities.activate(entity.id, multiplier, self.store.now())
        return self.resolver.changed(
            attrs.evolve(entity, status="active", emotional_multiplier=multiplier)
        )


def attrs_restore(report: RetainReport, saved: RetainReport) -> None:
    """Put a report back as it was (a batch rolled back)."""
    for field in attrs.fields(RetainReport):
        setattr(report, field.name, getattr(saved, field.name))
