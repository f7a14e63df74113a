"""Many processes, one store: writers wait, races have one winner, first opens agree.

Each test starts real processes (``multiprocessing``, spawn) on a real store
and lines them up on a barrier so they act at the same moment. Each runs on
both engines (``store_location``): a SQLite file, whose one writer makes
check-then-act safe, and a PostgreSQL schema, where the store's write lock
and the migration lock must give the same outcome (``docs/postgres.md``,
"Concurrency"). ``tests/store/test_postgres_races.py`` has the dreamer's and
the Retain Job's races.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from plugin_sdk import Store, validate_pack
from plugin_sdk.errors import MergeRefused, WrongStatus
from plugin_sdk.proposals import queue as q
from plugin_sdk.proposals.filing import propose
from plugin_sdk.store import driver, postgres
from plugin_sdk.store.doctor import doctor
from plugin_sdk.store.migrations import KNOWN
from plugin_sdk.testing import fresh_plugin_manager, pack_document

RULES = "HARBOUR_RULES"
CONTEXT = multiprocessing.get_context("spawn")


def open_store(path: str | Path) -> Store:
    return Store(path, project="harbour", plugins=fresh_plugin_manager())


def install(path: str) -> None:
    with open_store(path) as store:
        store.packs.install(
            validate_pack(pack_document("harbour", "1.0.0", {RULES: "content"}), source="t")
        )


def run_all(target, argument_lists: list[tuple]) -> list[tuple[str, str]]:
    """Run ``target(barrier, queue, *args)`` in one process per argument tuple; their results."""
    barrier = CONTEXT.Barrier(len(argument_lists))
    results = CONTEXT.Queue()
    processes = [
        CONTEXT.Process(target=target, args=(barrier, results, *args)) for args in argument_lists
    ]
    for process in processes:
        process.start()
    out = [results.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    return out


def _report(results, action) -> None:
    try:
        results.put(("ok", repr(action())))
    except Exception as error:  # the parent asserts on what each process saw
        results.put((type(error).__name__, f"{error}\n{traceback.format_exc()}"))


# Processes (top level, so spawn can find them)


def _open(barrier, results, path):
    barrier.wait()
    _report(results, lambda: open_store(path).schema_version)


def _merge(barrier, results, path, sources, target):
    with open_store(path) as store:
        barrier.wait()
        _report(results, lambda: store.memories.merge(sources, into=target).id)


def _approve(barrier, results, path, proposal_id, actor):
    with open_store(path) as store:
        barrier.wait()
        _report(results, lambda: q.approve(store, proposal_id, actor=actor).status)


def _write(barrier, results, path, worker, count):
    with open_store(path) as store:
        barrier.wait()

        def writes():
            for i in range(count):
                store.memories.write(f"worker {worker} note {i}", RULES)
                if i % 10 == 0:  # a shared text: deduplicated, seen by every worker
                    store.memories.write(f"shared note {i}", RULES)
            return count

        _report(results, writes)


# Tests


def migration_records(location: str) -> list[str]:
    """The names in the store's migration records, in the order they were applied."""
    if postgres.is_url(location):
        import psycopg

        with psycopg.connect(location) as conn:
            return [
                row[0] for row in conn.execute("SELECT name FROM _memsdk_migrations ORDER BY id")
            ]
    with contextlib.closing(driver.connect(location)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(KNOWN)
        return [row[0] for row in conn.execute("SELECT name FROM _sqlite_migrations ORDER BY id")]


def test_processes_opening_one_new_store_at_once_all_succeed(store_location):
    path = store_location("new.db")
    results = run_all(_open, [(path,)] * 6)
    assert [status for status, _ in results] == ["ok"] * 6, results
    assert migration_records(path) == KNOWN  # each step applied once
    assert doctor(path).ok


def test_two_merges_of_the_same_sources_into_different_targets_have_one_winner(store_location):
    path = store_location("merge.db")
    install(path)
    for round in range(3):
        with open_store(path) as store:
            ids = [store.memories.write(f"round {round} text {i}", RULES).id for i in range(8)]
        sources, one, two = ids[:6], ids[6], ids[7]
        results = run_all(_merge, [(path, sources, one), (path, sources, two)])
        assert sorted(status for status, _ in results) == ["MergeRefused", "ok"], results
        with open_store(path) as store:
            winner = int(next(detail for status, detail in results if status == "ok"))
            loser = two if winner == one else one
            assert {store.memories.get(s).superseded_by for s in sources} == {winner}
            assert store.memories.get(winner).seen_count == 7  # its own 1 + six sources
            assert store.memories.get(loser).seen_count == 1
            assert not store.memories.get(loser).merged_from
    assert doctor(path).ok


def test_a_lost_merge_says_why(store_location):
    path = store_location("merge.db")
    install(path)
    with open_store(path) as store:
        a, b, c = (store.memories.write(f"text {i}", RULES).id for i in range(3))
        store.memories.merge([a], into=b)
        with pytest.raises(MergeRefused, match=f"memory {a} is superseded"):
            store.memories.merge([a], into=c)


def test_concurrent_approvals_from_processes_apply_once(store_location):
    path = store_location("queue.db")
    install(path)
    with open_store(path) as store:
        proposal_id = propose(
            store,
            diff_type="memory_entry",
            rationale="r",
            evidence=[],
            diff={"action": "write", "category": RULES, "content": "Moor at the east quay."},
            source="test",
        )
    results = run_all(_approve, [(path, proposal_id, f"actor{i}") for i in range(4)])
    statuses = sorted(status for status, _ in results)
    assert statuses == ["WrongStatus"] * 3 + ["ok"], results
    with open_store(path) as store:
        [memory] = store.memories.list(category=RULES)
        assert memory.seen_count == 1  # applied once
        assert q.get(store, proposal_id).status == "applied"
    assert WrongStatus.__name__ == "WrongStatus"


def test_writers_in_many_processes_never_see_database_is_locked(store_location):
    path = store_location("writers.db")
    install(path)
    workers, count = 4, 150
    results = run_all(_write, [(path, w, count) for w in range(workers)])
    assert [status for status, _ in results] == ["ok"] * workers, results
    with open_store(path) as store:
        shared = count // 10
        assert store.memories.count() == workers * count + shared  # none lost, none doubled
        for i in range(0, count, 10):
            [hit] = store.memories.search(f'"shared note {i}"', raw=True)
            assert hit.memory.seen_count == workers
    assert doctor(path).ok


def test_two_inits_with_a_pack_at_once_both_succeed(store_location):
    path = store_location("init.db")
    env = {**os.environ, "MEMSDK_PROJECT": "harbour"}
    memsdk = str(Path(sys.executable).with_name("memsdk"))
    command = [memsdk, "init", "--db", path, "--pack", "dev"]
    runs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)]
    runs.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    outputs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    said = sorted(
        "already" if b"already installed" in out else "installed"
        for out, _ in outputs
        if b"ack dev 1" in out
    )
    assert said == ["already", "installed"], outputs
    with open_store(path) as store:
        assert [p.name for p in store.packs.installed()] == ["dev"]
