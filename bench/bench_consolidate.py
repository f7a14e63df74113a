"""Consolidation benchmark: the dreamer's ``consolidate`` pass against a naive per-row loop.

A store with ``--n`` entities (default 1,000,000) spread over every grid cell,
with random ages (0 to 400 days since last seen), outcomes, retrieval counts,
emotional multipliers and 1% pinned, plus ``--relations`` edges (default
200,000) over the pack's relation types. Then, in the same run and on the same
rows, ``--reps`` times each (median kept):

- **consolidate**: ``Dreamer(store).run("consolidate")``: id-ranged batches of
  5,000, each one ``UPDATE`` SQLite computes itself, cursor committed with each
  batch (resumable), progress per batch;
- **naive**: the obvious loop: read every row into Python, compute
  ``strength.strength()`` (and ``weight_temporal()``) per row, one ``UPDATE``
  per row, one transaction.

Reports rows per second for both, their ratio, the Python heap peak of each
(``tracemalloc``; bounded memory is the point of batching), and checks that
both wrote the same values (max relative difference over all entity rows).
The timed runs go without ``tracemalloc``: it slows Python-heavy code (the
naive loop) about 2.5x and SQLite-bound code (the pass) not at all, so timing
under it inflated the ratio (the figures before 2026-12-01 were taken that
way). The heap peaks come from one more, untimed run of each.

Run from the repository root::

    .venv/bin/python bench/bench_consolidate.py                # 1M entities, 3 reps
    .venv/bin/python bench/bench_consolidate.py --n 100000     # quick look
    .venv/bin/python bench/bench_consolidate.py --json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
import tracemalloc
from datetime import datetime, timedelta, timezone
from pathlib import Path
from random import Random
from typing import Any

from plugin_sdk import Store, resolve_pack
from plugin_sdk.grid import consolidation
from plugin_sdk.grid.policy import grid
from plugin_sdk.grid.strength import days_between, strength, weight_temporal
from plugin_sdk.stages.dreamer import Dreamer
from plugin_sdk.store.models import CELLS
from plugin_sdk.store.tables.grid import entities as entity_rows
from plugin_sdk.store.tables.grid import relations as relation_rows

NOW = datetime(2026, 11, 29, tzinfo=timezone.utc)
PROJECT = "bench"


def build(path: Path, n: int, relations: int, seed: int) -> None:
    rng = Random(seed)
    store = Store(path, project=PROJECT, clock=lambda: NOW)
    store.packs.install(resolve_pack("ops"))
    policy = grid(store)
    emotions = list(policy.emotions.values())
    types = sorted(policy.relations)
    rows = []
    for i in range(n):
        cell = CELLS[i % len(CELLS)]
        memory_type, referent = cell.split(".")
        seen = (NOW - timedelta(days=rng.uniform(0, 400))).isoformat(timespec="microseconds")
        rows.append(
            (
                PROJECT,
                f"bench:{memory_type}:{referent}:e{i}",
                "bench",
                memory_type,
                memory_type,
                referent,
                rng.uniform(0.5, 2.0),
                int(rng.random() < 0.01),
                rng.randrange(0, 20),
                rng.randrange(0, 20),
                rng.randrange(0, 200),
                policy.cells[cell].half_life_days,
                rng.choice(emotions),
                seen,
                seen,
                seen,
            )
        )
    edges = set()
    while len(edges) < relations:
        a, b = rng.randrange(1, n + 1), rng.randrange(1, n + 1)
        if a != b:
            edges.add((a, b, rng.choice(types)))
    when = lambda: (NOW - timedelta(days=rng.uniform(0, 400))).isoformat(timespec="microseconds")  # noqa: E731
    with store.atomic():
        store.db.conn.executemany(
            """INSERT INTO entities (project, name, type, subtype, memory_type, referent,
                   base_strength, pinned, positive_outcomes, negative_outcomes, retrieval_count,
                   half_life_days, emotional_multiplier, created_at, updated_at, last_seen_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            rows,
        )
        store.db.conn.executemany(
            """INSERT INTO relations (project, source_id, target_id, type, created_at,
                   updated_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?)""",
            [(PROJECT, a, b, kind, t, t, t) for a, b, kind in edges for t in [when()]],
        )
    store.close()


def reset(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("UPDATE entities SET strength = NULL, strength_at = NULL")
        db.execute("UPDATE relations SET weight_temporal = 1.0")
        db.execute("DELETE FROM dreamer_state")


def run_consolidate(path: Path) -> float:
    store = Store(path, project=PROJECT, clock=lambda: NOW)
    start = time.perf_counter()
    Dreamer(store).run("consolidate")
    elapsed = time.perf_counter() - start
    store.close()
    return elapsed


def run_naive(path: Path) -> float:
    store = Store(path, project=PROJECT, clock=lambda: NOW)
    sigma = {r.name: r.sigma_days for r in grid(store).relations.values()}
    now = store.now()
    start = time.perf_counter()
    db = store.db.conn
    with store.atomic():
        rows = db.execute(
            """SELECT id, base_strength, last_seen_at, half_life_days, positive_outcomes,
                      negative_outcomes, retrieval_count, emotional_multiplier, pinned
               FROM entities WHERE project = ?""",
            [PROJECT],
        ).fetchall()
        for row in rows:
            value = strength(
                base_strength=row[1],
                days=days_between(row[2], now),
                half_life_days=row[3],
                positive=row[4],
                negative=row[5],
                retrieval_count=row[6],
                emotional_multiplier=row[7],
                pinned=bool(row[8]),
            )
            db.execute(
                "UPDATE entities SET strength = ?, strength_at = ? WHERE id = ?",
                [value, now, row[0]],
            )
        edges = db.execute(
            "SELECT id, type, last_seen_at FROM relations WHERE project = ?", [PROJECT]
        ).fetchall()
        for edge_id, kind, seen in edges:
            db.execute(
                "UPDATE relations SET weight_temporal = ? WHERE id = ?",
                [weight_temporal(days_between(seen, now), sigma[kind]), edge_id],
            )
    elapsed = time.perf_counter() - start
    store.close()
    return elapsed


def run_floor(path: Path) -> float:
    """Only read every row and evaluate the pass's formulas, writing nothing.

    What a pass that reads these rows and computes each one's value spends
    at least: the naive loop's time over this is the most such a pass could
    gain (reading less, say a covering index, is another design).
    """
    store = Store(path, project=PROJECT, clock=lambda: NOW)
    consolidation.prepare(store)
    params = {"stamp": store.now(), "project": PROJECT}
    db = store.db.conn
    start = time.perf_counter()
    db.execute(
        f"SELECT max({entity_rows.STRENGTH}) FROM entities AS e WHERE +e.project = :project",
        params,
    ).fetchone()
    db.execute(
        f"""SELECT max({relation_rows.WEIGHT}) FROM relations AS r
            JOIN temp.consolidate_sigma AS s ON s.type = r.type WHERE +r.project = :project""",
        params,
    ).fetchone()
    elapsed = time.perf_counter() - start
    store.close()
    return elapsed


def strengths(path: Path) -> list[float]:
    with sqlite3.connect(path) as db:
        return [row[0] for row in db.execute("SELECT strength FROM entities ORDER BY id")]


def peak_heap(fn: Any, path: Path) -> int:
    """The Python heap peak (bytes) of one untimed run of ``fn`` under tracemalloc."""
    reset(path)
    tracemalloc.start()
    fn(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--relations", type=int, default=200_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "consolidate.db"
        started = time.perf_counter()
        build(path, args.n, args.relations, args.seed)
        build_s = time.perf_counter() - started
        rows = args.n + args.relations
        load_start = load()
        bulk, naive, floor = [], [], []
        for rep in range(args.reps):
            reset(path)
            bulk.append(run_consolidate(path))
            ours = strengths(path)
            reset(path)
            naive.append(run_naive(path))
            theirs = strengths(path)
            floor.append(run_floor(path))
            print(
                f"  run {rep + 1}/{args.reps}: consolidate {bulk[-1]:.2f} s, naive {naive[-1]:.2f} s,"
                f" read-and-compute floor {floor[-1]:.2f} s, load {load()}",
                file=sys.stderr,
                flush=True,
            )
        bulk_peak = peak_heap(run_consolidate, path)
        naive_peak = peak_heap(run_naive, path)
        worst = max(
            (0.0 if a == b else abs(a - b) / abs(b)) if math.isfinite(b) else float(a != b)
            for a, b in zip(ours, theirs, strict=True)
        )
    result = {
        "entities": args.n,
        "relations": args.relations,
        "build_s": round(build_s, 1),
        "consolidate_s": round(statistics.median(bulk), 3),
        "naive_s": round(statistics.median(naive), 3),
        "consolidate_rows_per_s": round(rows / statistics.median(bulk)),
        "naive_rows_per_s": round(rows / statistics.median(naive)),
        "speedup": round(statistics.median(naive) / statistics.median(bulk), 2),
        "floor_s": round(statistics.median(floor), 3),
        "naive_over_floor": round(statistics.median(naive) / statistics.median(floor), 2),
        "consolidate_peak_mib": round(bulk_peak / 2**20, 1),
        "naive_peak_mib": round(naive_peak / 2**20, 1),
        "max_relative_difference": worst,
        "runs": {"consolidate": bulk, "naive": naive, "floor": floor},
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_start": load_start,
        "load_end": load(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{args.n:,} entities + {args.relations:,} relations (built in {build_s:.0f} s)")
    print(
        f"consolidate: {result['consolidate_s']} s, {result['consolidate_rows_per_s']:,} rows/s,"
        f" Python heap peak {result['consolidate_peak_mib']} MiB"
    )
    print(
        f"naive loop:  {result['naive_s']} s, {result['naive_rows_per_s']:,} rows/s,"
        f" Python heap peak {result['naive_peak_mib']} MiB"
    )
    print(
        f"consolidate is {result['speedup']}x the naive loop (medians of {args.reps}, timed"
        " without tracemalloc; heap peaks from one untimed run each)"
    )
    print(
        f"read-and-compute floor (every row read, the formulas evaluated, nothing written):"
        f" {result['floor_s']} s; the naive loop is {result['naive_over_floor']}x it, the most"
        " any pass that computes every row could gain"
    )
    print(f"same values: max relative difference {worst:.2e}")
    print(f"Python {result['python']}, SQLite {result['sqlite']}, {result['machine']}")
    print(f"load average (1/5/15 min) at start {load_start}, at end {result['load_end']}")


if __name__ == "__main__":
    main()
