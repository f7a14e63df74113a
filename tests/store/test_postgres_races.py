"""Races of several processes on one store, on both engines: one wins cleanly, nothing is lost or doubled.

SQLite's one writer makes every check-then-act sequence safe; on PostgreSQL
the store's write lock (a transaction-level advisory lock, taken by
``store.atomic()``) and the migration lock must give the same outcome
(``docs/postgres.md``, "Concurrency"). Each test starts real processes
(``multiprocessing``, spawn), lines them up on a barrier so they act at the
same moment, and runs on a SQLite file and on a PostgreSQL schema
(``store_location``). ``tests/test_concurrency.py`` runs the first open, the
double merge, concurrent approvals, many writers and two inits with a pack
the same way; here: two dreamers, two Retain Job runs, and a writer killed
inside its transaction.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import queue
import signal
import time
import traceback
from typing import Any

from plugin_sdk import Store, hookimpl, validate_pack
from plugin_sdk.plugin.records import DreamerTask
from plugin_sdk.retain.job import retain
from plugin_sdk.retain.observations import observe
from plugin_sdk.stages.dreamer import Dreamer
from plugin_sdk.store.doctor import doctor
from plugin_sdk.testing import fresh_plugin_manager, grid_section, pack_document

PROJECT = "harbour"
LOG = "HARBOUR_LOG"
CONTEXT = multiprocessing.get_context("spawn")
ITEMS = 12
RETAIN = {
    "dark_matter_below": 0.0,  # every observation takes the normal route: a memory each
    "fast_track_above": 1.0,
    "dark_matter_half_life_factor": 0.5,
    "fast_track_half_life_factor": 1.5,
    "truth_impact_threshold": 3.0,
}
HARBOUR = validate_pack(
    pack_document("harbour", "1.0.0", {LOG: "content"}, grid=grid_section(), retain=RETAIN),
    source="test",
)


class HeldTask:
    """A dreamer task that records each item of ``items`` once, two a batch.

    Before its first batch it waits for ``go``: the parent sets it once the
    other dreamer has answered, so that one asked while this one's lease was
    surely held (outside any transaction: the write lock is free meanwhile).
    """

    def __init__(self, go) -> None:
        self.go = go

    @hookimpl
    def register_dreamer_tasks(self, register):
        register(DreamerTask(name="record", description="Record each item.", run=self.run))

    def run(self, context) -> int:
        self.go.wait(timeout=120)
        db = context.store.db
        ids = [
            row[0]
            for row in db.execute(
                "SELECT id FROM items WHERE id > ? ORDER BY id LIMIT 2", [context.cursor or 0]
            )
        ]
        if not ids:
            return 0
        with context.batch():
            for item in ids:
                db.execute("INSERT INTO handled (item, owner) VALUES (?, ?)", [item, context.owner])
            context.save(ids[-1], len(ids))
        return len(ids)


def open_store(path: str, *plugins: tuple[str, object]) -> Store:
    return Store(path, project=PROJECT, plugins=fresh_plugin_manager(*plugins))


def run_all(target, argument_lists: list[tuple], *, go=None) -> list[tuple[str, str]]:
    """Run ``target(barrier, queue, *args)`` in one process per argument tuple; their results.

    ``go`` (an event), when given, is set once the first result is in (or after a minute).
    """
    barrier = CONTEXT.Barrier(len(argument_lists))
    results = CONTEXT.Queue()
    processes = [
        CONTEXT.Process(target=target, args=(barrier, results, *args)) for args in argument_lists
    ]
    for process in processes:
        process.start()
    out = []
    if go is not None:
        with contextlib.suppress(queue.Empty):
            out.append(results.get(timeout=60))
        go.set()
    out += [results.get(timeout=180) for _ in processes[len(out) :]]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    return out


def _report(results, action) -> None:
    try:
        results.put(("ok", json.dumps(action())))
    except Exception as error:  # the parent asserts on what each process saw
        results.put((type(error).__name__, f"{error}\n{traceback.format_exc()}"))


# Processes (top level, so spawn can find them)


def _dream(barrier, results, path, go):
    with open_store(path, ("record", HeldTask(go))) as store:
        dreamer = Dreamer(store)
        barrier.wait()
        _report(results, lambda: [dreamer.owner, dreamer.run("record")[0].handled])


def _retain(barrier, results, path):
    with open_store(path) as store:
        barrier.wait()
        _report(results, lambda: retain(store, batch_size=3).processed)


def _hold_then_wait(path, ready):
    """Write inside a transaction, say so, then wait there to be killed."""
    with open_store(path) as store, store.atomic():
        store.memories.write("written by a process killed before its commit", LOG)
        ready.set()
        time.sleep(120)


# Tests


def test_two_dreamers_in_two_processes_have_one_runner(store_location):
    path = store_location("dream.db")
    with open_store(path) as store:
        store.db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY)")
        store.db.execute("CREATE TABLE handled (item INTEGER NOT NULL, owner TEXT NOT NULL)")
        with store.atomic():
            for item in range(1, ITEMS + 1):
                store.db.execute("INSERT INTO items (id) VALUES (?)", [item])
    go = CONTEXT.Event()
    results = run_all(_dream, [(path, go), (path, go)], go=go)
    assert sorted(status for status, _ in results) == ["TaskBusy", "ok"], results
    winner, count = json.loads(next(detail for status, detail in results if status == "ok"))
    assert count == ITEMS
    busy = next(detail for status, detail in results if status == "TaskBusy")
    assert winner in busy  # the loser names who holds the lease
    with open_store(path) as store:
        rows = list(store.db.execute("SELECT item, owner FROM handled ORDER BY item"))
        assert [item for item, _ in rows] == list(range(1, ITEMS + 1))  # each once, none lost
        assert {owner for _, owner in rows} == {winner}
        [state] = store.db.query("SELECT * FROM dreamer_state WHERE task = 'record'")
        assert state["lease_owner"] is None and state["passes"] == 1


def test_two_retain_runs_in_two_processes_retain_each_observation_once(store_location):
    path = store_location("retain.db")
    skippers = [f"world:skipper-{n}" for n in range(4)]
    lines = [
        json.dumps(
            {
                "id": f"obs-{i}",
                "source": "logbook",
                "timestamp": "2026-05-01T06:00:00Z",
                "category": LOG,
                "actors": [skippers[i % len(skippers)]],
                "topic": "berths",
                # words of their own: no two observations are near-duplicates
                "payload_typed": {"text": f"ketch{i} moored{i} at berth{i} before tide{i}"},
            }
        )
        for i in range(30)
    ]
    with open_store(path) as store:
        store.packs.install(HARBOUR)
        assert len(observe(store, lines).queued) == len(lines)
    results = run_all(_retain, [(path,), (path,)])
    assert [status for status, _ in results] == ["ok", "ok"], results
    assert sum(json.loads(detail) for _, detail in results) == len(lines)  # each run its share
    with open_store(path) as store:
        states = list(store.db.execute("SELECT status, count(*) FROM observations GROUP BY 1"))
        assert states == [("retained", len(lines))]
        texts = [row[0] for row in store.db.execute("SELECT content FROM memories")]
        assert sorted(texts) == sorted(json.loads(line)["payload_typed"]["text"] for line in lines)
        names = [row[0] for row in store.db.execute("SELECT name FROM entities ORDER BY name")]
        assert names == skippers  # each entity created once, by whichever run saw it first
    assert doctor(path).ok


def test_a_writer_killed_inside_its_transaction_holds_nothing_and_loses_only_its_own_write(
    store_location,
):
    path = store_location("killed.db")
    with open_store(path) as store:
        store.packs.install(HARBOUR)
        store.memories.write("written before", LOG)
    ready = CONTEXT.Event()
    holder = CONTEXT.Process(target=_hold_then_wait, args=(path, ready))
    holder.start()
    try:
        assert ready.wait(timeout=120), "the holder never began its transaction"
    finally:
        holder.kill()  # SIGKILL: no rollback, no close
        holder.join(timeout=60)
    assert holder.exitcode == -signal.SIGKILL
    with open_store(path) as store:
        started = time.monotonic()
        with store.atomic():
            store.memories.write("written after", LOG)
        waited = time.monotonic() - started
        texts: list[Any] = sorted(
            row[0] for row in store.db.execute("SELECT content FROM memories")
        )
    assert texts == ["written after", "written before"]
    # Far below one lock wait (5 s): the dead process's lock went with it.
    assert waited < 2.5, waited
