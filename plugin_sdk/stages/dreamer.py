"""The dreamer: background maintenance tasks, bounded, resumable and leased.

Plugins register tasks (``register_dreamer_tasks``). ``Dreamer(store).run()``
runs them for the store's project, one bounded batch at a time:

- **Resumable.** A task's place (its cursor) is saved in ``dreamer_state`` in
  the same transaction as the batch's writes (:meth:`TaskContext.batch`). A
  run killed mid-batch rolls that batch back whole; the next run resumes
  from the last committed batch, so no work is repeated or lost.
- **Leased.** A run takes a lease on (task, project) before working and renews
  it with every batch; any other Dreamer (another host, another process, or
  another ``Dreamer`` object in the same process: the owner is
  ``host:pid:instance``) finds the task busy until the lease expires. A lease
  held by a process of this host that no longer exists is taken over at once.
- **Bounded.** Each ``task.run(context)`` call handles at most
  ``task.batch_size`` items; ``max_batches`` bounds a whole run. A run that
  stops early leaves the cursor where it is.
- **Progress.** ``progress(task, done, total)`` is called after each batch.

A full pass ends when ``task.run`` returns 0: the cursor resets and
``passes`` goes up by one.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import LeaseLost, MemsdkError, NotFound, TaskBusy
from plugin_sdk.plugin.records import DreamerTask
from plugin_sdk.proposals.filing import propose
from plugin_sdk.redact import redact
from plugin_sdk.store.file import tuning

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

LEASE_SECONDS = 300
# While a run lasts, its connection may keep this much of the store in memory
# (pages it reads, no more). Curate's index and the memories table outgrow the
# store's own 64 MiB past about 30,000 memories, and a pass reads them in id
# order, not by locality: docs/benchmarks.md, "Dreamer at scale", round six.
RUN_CACHE_KIB = 262144
Progress = Callable[[DreamerTask, int, int | None], None]


def default_owner() -> str:
    """A new lease owner: ``host:pid:instance``, unique to each Dreamer object."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


@attrs.define
class TaskContext:
    """What a task's ``run`` sees: the store, its place, and how to save progress."""

    store: Store
    task: DreamerTask
    project: str
    cursor: Any
    done: int
    owner: str
    lease_seconds: int
    _saved: bool = False

    @property
    def batch_size(self) -> int:
        return self.task.batch_size

    @contextmanager
    def batch(self) -> Iterator[TaskContext]:
        """One transaction for the batch's writes and :meth:`save`."""
        self._saved = False
        with self.store.atomic():
            yield self
            if not self._saved:
                raise MemsdkError(f"dreamer task {self.task.name!r} did not save its cursor")

    def save(self, cursor: Any, handled: int) -> None:
        """Record the new place (inside :meth:`batch`); renews the lease."""
        until = _iso(self.store.clock() + timedelta(seconds=self.lease_seconds))
        saved = self.store.tables.sessions.save_cursor(
            self.task.name, self.project, self.owner, json.dumps(cursor), handled, until
        )
        if not saved:
            raise LeaseLost(
                f"dreamer task {self.task.name!r}: the lease was taken over; batch rolled back"
            )
        self.cursor = cursor
        self.done += handled
        self._saved = True

    def propose(
        self, diff_type: str, rationale: str, evidence: list[int], diff: dict[str, Any]
    ) -> int | None:
        """File a proposal for a person (for changes the dreamer must not make itself)."""
        return propose(
            self.store,
            diff_type=diff_type,
            rationale=rationale,
            evidence=evidence,
            diff=diff,
            source=f"dreamer:{self.task.name}",
            project=self.project,
        )


@attrs.define
class RunReport:
    task: str
    batches: int = 0
    handled: int = 0
    finished_pass: bool = False
    error: str | None = None


class Dreamer:
    """Runs the registered dreamer tasks on one store's project."""

    def __init__(
        self,
        store: Store,
        *,
        project: str | None = None,
        owner: str | None = None,
        lease_seconds: int = LEASE_SECONDS,
    ) -> None:
        self.store = store
        self.project = project or store.project
        self.owner = owner or default_owner()
        self.lease_seconds = lease_seconds
        self.tasks = registered_tasks(store)

    def status(self) -> list[dict[str, Any]]:
        """Every registered task with its stored state for this project."""
        rows = {row["task"]: row for row in self.store.tables.sessions.dreamer_states(self.project)}
        result = []
        for name, task in sorted(self.tasks.items()):
            row = rows.get(name, {})
            result.append(
                {
                    "task": name,
                    "description": task.description,
                    "schedule": task.schedule,
                    "status": row.get("status", "never run"),
                    "done": row.get("done", 0),
                    "passes": row.get("passes", 0),
                    "total": task.total(self.store) if task.total else None,
                    "lease_owner": row.get("lease_owner"),
                    "lease_until": row.get("lease_until"),
                    "finished_at": row.get("finished_at"),
                    "last_error": row.get("last_error"),
                }
            )
        return result

    def run(
        self,
        name: str | None = None,
        *,
        max_batches: int | None = None,
        progress: Progress | None = None,
    ) -> list[RunReport]:
        """Run one task (or all, by name) until its pass ends or ``max_batches``."""
        if name is not None and name not in self.tasks:
            known = ", ".join(sorted(self.tasks)) or "none"
            raise NotFound(f"no dreamer task {name!r}; registered tasks: {known}")
        names = [name] if name is not None else sorted(self.tasks)
        with tuning.at_least(self.store.db, cache_kib=RUN_CACHE_KIB, checkpoint_pages=0):
            return [self._run_task(self.tasks[n], max_batches, progress) for n in names]

    def _run_task(
        self, task: DreamerTask, max_batches: int | None, progress: Progress | None
    ) -> RunReport:
        context = self._acquire(task)
        report = RunReport(task.name)
        total = task.total(self.store) if task.total else None
        try:
            while max_batches is None or report.batches < max_batches:
                context._saved = False
                handled = task.run(context)
                if handled == 0:
                    self._finish(task)
                    report.finished_pass = True
                    break
                if not context._saved:
                    raise MemsdkError(f"dreamer task {task.name!r} did not save its cursor")
                report.batches += 1
                report.handled += handled
                if progress:
                    progress(task, context.done, total)
        except Exception as error:
            report.error = f"{type(error).__name__}: {error}"
            self._release(task, status="failed", error=report.error)
            raise
        except BaseException:
            self._release(task, status="idle")
            raise
        if not report.finished_pass:
            self._release(task, status="idle")
        return report

    def _acquire(self, task: DreamerTask) -> TaskContext:
        now = self.store.clock()
        until = _iso(now + timedelta(seconds=self.lease_seconds))
        with self.store.atomic():
            rows = self.store.tables.sessions
            owner, lease_until, cursor, done = rows.dreamer_lease(task.name, self.project)
            if (
                owner
                and owner != self.owner
                and lease_until
                and lease_until > _iso(now)
                and _alive(owner)
            ):
                raise TaskBusy(
                    f"dreamer task {task.name!r} is running in {owner} (lease until {lease_until})"
                )
            rows.take_lease(task.name, self.project, self.owner, until, _iso(now))
        return TaskContext(
            store=self.store,
            task=task,
            project=self.project,
            cursor=None if cursor is None else json.loads(cursor),
            done=done,
            owner=self.owner,
            lease_seconds=self.lease_seconds,
        )

    def _finish(self, task: DreamerTask) -> None:
        with self.store.atomic():
            self.store.tables.sessions.finish_pass(task.name, self.project, self.owner)

    def _release(self, task: DreamerTask, *, status: str, error: str | None = None) -> None:
        with self.store.atomic():
            self.store.tables.sessions.release(
                task.name,
                self.project,
                self.owner,
                status,
                None if error is None else redact(error),
            )


def registered_tasks(store: Store) -> dict[str, DreamerTask]:
    """Tasks from every plugin; a name registered twice is an error naming it."""
    tasks: dict[str, DreamerTask] = {}

    def register(task: DreamerTask) -> None:
        if not isinstance(task, DreamerTask):
            raise MemsdkError(
                f"register_dreamer_tasks: expected a DreamerTask, got {type(task).__name__}"
            )
        if task.name in tasks:
            raise MemsdkError(f"dreamer task {task.name!r} is registered twice")
        tasks[task.name] = task

    store.plugins.hook.register_dreamer_tasks(register=register)
    return tasks


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


def _alive(owner: str) -> bool:
    """False only when the owner is a process of this host that has exited."""
    host, pid = owner_process(owner)
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_process(owner: str) -> tuple[str, str]:
    """``(host, pid)`` of a lease owner, ``host:pid:instance`` (or ``host:pid`` before)."""
    parts = owner.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit():
        return parts[0], parts[1]
    host, _, pid = owner.rpartition(":")
    return host, pid
