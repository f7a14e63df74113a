"""Retain Job benchmark: observations per second, against baselines timed in the same run.

A seeded generator writes a stream of observations over a few thousand
entities of the built-in ``ops`` pack's namespaces (people, projects, agents'
root causes, concepts, and a share of vendors no namespace rule covers, so
dark matter happens), with Zipf-like popularity, favourite topics per entity,
facts with competing values (so conflicts happen), relations, sentiments and
near-duplicate texts. Each measurement runs on a fresh store file (WAL on
disk) with the ``ops`` pack installed and the stream observed (``observe`` is
timed too), then times the Retain Job alone, truth regenerations included:

- **memsdk**: ``retain(store)``, batches of ``BATCH_SIZE`` (500) observations per transaction,
  one savepoint per observation, a batch's entities read in one query, step
  6 and the outcomes written once per batch, Compiled Truth once per entity
  per batch (``docs/retain.md``); fast-track skips the content dedup pass.
- **baseline, no batching**: the same job with one transaction per observation
  (``run_batch(1)`` each in its own transaction; truths still regenerated
  every ``BATCH_SIZE`` observations, as memsdk does), on the first ``--baseline-n``
  observations; memsdk is timed on the same prefix.
- **reference path**: ``retain(store, batched=False)``, one observation at a
  time through the store's helpers (one timed run); the script checks that it
  ends in the same memories, entities, relations, facts, conflicts and
  observation outcomes as the batched job (``end_state``);
- **observe baselines**, interleaved with observe on a fresh store run by
  run: parsing plus ``jsonschema`` on every line, as observe validated before
  the compiled check (validation only, no store, on the prefix), and a floor:
  ``json.loads`` and one ``executemany`` of the same rows into the inbox table
  with plain ``sqlite3`` (no checks, no hashing); plus observe's Python heap
  peak on the whole stream;
- **ablation, no fast-track**: ``fast_track_above = 1.0``, so every observation
  takes the content dedup pass, on the whole stream.

Every figure is the median of ``--reps`` runs; the script prints Python,
SQLite, the machine and its load average.

Run from the repository root (full default run: about 10 minutes on 2 cores)::

    .venv/bin/python bench/bench_retain.py
    .venv/bin/python bench/bench_retain.py --n 4000 --entities 800 --reps 1   # quick look
    .venv/bin/python bench/bench_retain.py --json > retain.json
    .venv/bin/python bench/bench_retain.py --observe-only         # observe and its baselines only
"""

from __future__ import annotations

import argparse
import itertools
import json
import sqlite3
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from random import Random
from typing import Any

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import environment, load_average

from plugin_sdk import Store, resolve_pack
from plugin_sdk.grid.policy import grid
from plugin_sdk.retain import job as retain_module
from plugin_sdk.retain.end_state import end_state
from plugin_sdk.retain.job import BATCH_SIZE, RetainJob, RetainReport, retain
from plugin_sdk.retain.observations import _validator, check_document, observe, parse_line

PROJECT = "bench"
GOAL = 2_000  # observations/s on the full stream (issue 19)
START = datetime(2026, 1, 1, tzinfo=timezone.utc)
PACK = "ops"

# Namespace shares: what the ops pack's rules classify, and vendors they do not.
KINDS = [
    ("world:person", 0.40),
    ("world:project", 0.22),
    ("agent:claude:rc", 0.14),
    ("concept", 0.12),
    ("vendor", 0.12),  # no namespace rule: dark matter on first sight
]
PREDICATES = ["role", "owner", "status", "region", "version", "tier", "oncall", "language"]
SENTIMENTS = [("neutral", 0.80), ("positive", 0.10), ("negative", 0.07), ("critical", 0.03)]
WORDS = str.split(
    """deploy rollback failover latency replica shard cache queue backlog cluster node
pod quota budget release migration schema index vacuum certificate rotation alert page
incident postmortem runbook config flag canary traffic region zone disk memory cpu gpu
throughput retry timeout lock deadlock lag snapshot backup restore audit token secret
policy owner review ticket sprint roadmap design draft spec contract vendor invoice"""
)


class Stream:
    """The seeded observation stream."""

    def __init__(
        self, n: int, entities: int, categories: list[str], relations: list[str], seed: int
    ) -> None:
        self.rng = Random(seed)
        self.categories = categories
        self.relations = relations
        self.names = self._entities(entities)
        weights = [1 / (rank + 1) ** 0.8 for rank in range(len(self.names))]
        self.cumulative = []
        total = 0.0
        for w in weights:
            total += w
            self.cumulative.append(total)
        self.topics = [f"topic {i}: {' '.join(self.rng.sample(WORDS, 2))}" for i in range(400)]
        self.favourites = {name: self.rng.sample(range(len(self.topics)), 3) for name in self.names}
        self.documents: list[dict[str, Any]] = []
        for i in range(n):
            self.documents.append(self._observation(i))

    def _entities(self, count: int) -> list[str]:
        names = [f"{self._weighted(KINDS)}:e{i:05d}" for i in range(count)]
        self.rng.shuffle(names)
        return names

    def _pick(self) -> str:
        x = self.rng.random() * self.cumulative[-1]
        lo, hi = 0, len(self.cumulative) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self.cumulative[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        return self.names[lo]

    def _weighted(self, table: list[tuple[str, float]]) -> str:
        roll, acc = self.rng.random(), 0.0
        for value, share in table:
            acc += share
            if roll <= acc:
                return value
        return table[-1][0]

    def _observation(self, i: int) -> dict[str, Any]:
        rng = self.rng
        actors = list(dict.fromkeys(self._pick() for _ in range(rng.choice([1, 1, 2, 3]))))
        target = actors[0]
        favourite = rng.random() < 0.7
        topic = self.topics[
            rng.choice(self.favourites[target]) if favourite else rng.randrange(len(self.topics))
        ]
        if i > 50 and rng.random() < 0.05:  # a near-duplicate of an earlier observation
            earlier = self.documents[rng.randrange(len(self.documents))]
            actors = earlier["actors"]
            words = earlier["payload_typed"]["text"].split()
            words[rng.randrange(len(words))] = rng.choice(WORDS)
            text = " ".join(words)
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))).capitalize()
            text += f", about {target}."
        payload: dict[str, Any] = {"text": text}
        if rng.random() < 0.3:
            predicate = rng.choice(PREDICATES)
            payload["facts"] = [
                {"subject": target, "predicate": predicate, "object": f"v{rng.randrange(4)}"}
            ]
        if rng.random() < 0.3:
            other = self._pick()
            if other != target:
                payload["relations"] = [
                    {"source": target, "type": rng.choice(self.relations), "target": other}
                ]
        return {
            "id": f"obs-{i:06d}",
            "source": "bench",
            "timestamp": (START + timedelta(minutes=7 * i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "category": rng.choice(self.categories),
            "actors": actors,
            "topic": topic,
            "sentiment": self._weighted(SENTIMENTS),
            "payload_typed": payload,
        }

    def lines(self, n: int | None = None) -> list[str]:
        return [json.dumps(d) for d in self.documents[:n]]


def fresh_store(tmp: Path, label: str, lines: list[str]) -> tuple[Store, float]:
    """A new store file with the ops pack and ``lines`` observed; the observe time."""
    path = tmp / f"{label}-{time.monotonic_ns()}.db"
    store = Store(path, project=PROJECT)
    store.packs.install(resolve_pack(PACK))
    started = time.perf_counter()
    report = observe(store, lines)
    elapsed = time.perf_counter() - started
    if report.bad:
        raise SystemExit(f"generated observations were refused: {report.bad[:3]}")
    return store, elapsed


def run_memsdk(store: Store) -> RetainReport:
    return retain(store)


#: Round 3's default batch size, measured beside the default for the trade-off.
SMALL_BATCH = 200
#: Seconds each batch took in the last run of a label (about how long it held the write lock).
HOLDS: dict[str, list[float]] = {}


def timed_batches(label: str, batch_size: int) -> Callable[[Store], RetainReport]:
    """``retain(store, batch_size=...)``, noting how long each batch took (from its progress calls)."""

    def runner(store: Store) -> RetainReport:
        marks = [time.perf_counter()]
        report = retain(
            store,
            batch_size=batch_size,
            progress=lambda done, total: marks.append(time.perf_counter()),
        )
        HOLDS[label] = [end - start for start, end in itertools.pairwise(marks)]
        return report

    return runner


def run_reference(store: Store) -> RetainReport:
    return retain(store, batched=False)


def run_unbatched(store: Store) -> RetainReport:
    job = RetainJob(store, batched=False)
    report = RetainReport()
    handled = 0
    while True:
        with store.atomic():
            if not job.run_batch(1, report):
                break
        handled += 1
        if handled % BATCH_SIZE == 0:
            report.truths += job.regenerate_due()
    report.truths += job.regenerate_due()
    return report


def run_no_fast_track(store: Store) -> RetainReport:
    job = RetainJob(store)
    job.policy = attrs.evolve(job.policy, fast_track_above=1.0)
    report = RetainReport()
    while True:
        with store.atomic():
            if not job.run_batch(BATCH_SIZE, report):
                break
        report.truths += job.regenerate_due()
    return report


class TruthTimer:
    """Times the Compiled Truth regenerations inside a run (wraps ``regenerate_many``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.original = retain_module.regenerate_many

    def __enter__(self) -> TruthTimer:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return self.original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        retain_module.regenerate_many = timed  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        retain_module.regenerate_many = self.original  # type: ignore[assignment]


def measure(
    tmp: Path, label: str, lines: list[str], runner: Callable[[Store], RetainReport], reps: int
) -> dict[str, Any]:
    rates, observe_rates, reports = [], [], []
    state: dict[str, Any] = {}
    for rep in range(reps):
        store, observe_seconds = fresh_store(tmp, label, lines)
        try:
            with TruthTimer() as truths_timer:
                started = time.perf_counter()
                report = runner(store)
                seconds = time.perf_counter() - started
            truths = store.db.execute("SELECT count(*) FROM compiled_truths").fetchone()[0]
            state = end_state(store)
        finally:
            store.close()
        if report.failed:
            raise SystemExit(f"{label}: observations failed: {report.failed[:3]}")
        rates.append(len(lines) / seconds)
        observe_rates.append(len(lines) / observe_seconds)
        reports.append(
            {
                **report.to_dict(),
                "truth_versions": truths,
                "seconds": seconds,
                "truth_seconds": truths_timer.seconds,
            }
        )
        log(f"  {label} run {rep + 1}/{reps}: {len(lines) / seconds:,.0f} observations/s")
    return {
        "observations": len(lines),
        "rate": statistics.median(rates),
        "rates": rates,
        "observe_rate": statistics.median(observe_rates),
        "end_state": state,
        "report": reports[rates.index(statistics.median(rates))] if reps % 2 else reports[0],
        "batch_ms": _holds(label),
    }


def _holds(label: str) -> dict[str, float] | None:
    held = HOLDS.pop(label, None)
    if not held:
        return None
    return {"median": statistics.median(held) * 1000, "max": max(held) * 1000, "batches": len(held)}


def peak_heap(tmp: Path, lines: list[str], runner: Callable[[Store], RetainReport]) -> float:
    """The Python heap peak (MiB, tracemalloc) of one untimed run (tracemalloc slows Python)."""
    store, _ = fresh_store(tmp, "peak", lines)
    try:
        tracemalloc.start()
        runner(store)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    finally:
        store.close()
    return round(peak / 2**20, 1)


def observe_baseline(lines: list[str]) -> float:
    """Lines per second through parse + jsonschema (what every line paid before the compiled check)."""
    validator = _validator()
    started = time.perf_counter()
    for text in lines:
        document = parse_line(text)
        list(validator.iter_errors(document))
        check_document(document)
    return len(lines) / (time.perf_counter() - started)


def observe_floor(tmp: Path, lines: list[str]) -> float:
    """Lines per second for the least observe could do: ``json.loads`` and one ``executemany``.

    The same rows go into the inbox table of a fresh store (its schema, WAL,
    the store's pragmas), with plain ``sqlite3``, in one transaction; no
    validation, no hashing, no lookups.
    """
    path = tmp / f"floor-{time.monotonic_ns()}.db"
    Store(path, project=PROJECT).close()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA foreign_keys = ON")
    try:
        started = time.perf_counter()
        rows = []
        for text in lines:
            d = json.loads(text)
            rows.append(
                (PROJECT, d["id"], "queued", d["source"], d.get("source_ref"), d["timestamp"],
                 d["category"], d["topic"], d.get("sentiment", "neutral"), d.get("correlation"),
                 "", None, "2026-01-01T00:00:00Z", text)
            )  # fmt: skip
        db.execute("BEGIN")
        db.executemany(
            """INSERT INTO observations (project, id, status, source, source_ref, timestamp,
                   category, topic, sentiment, correlation, content_hash, error, received_at,
                   document) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            rows,
        )
        db.execute("COMMIT")
        return len(lines) / (time.perf_counter() - started)
    finally:
        db.close()


def observe_figures(tmp: Path, lines: list[str], prefix: list[str], reps: int) -> dict[str, Any]:
    """observe against its two baselines, interleaved run by run (medians), and its heap peak.

    - the jsonschema-only baseline validates ``prefix`` (it is slow);
    - the floor and observe take the whole stream, each on a fresh store.
    """
    jsonschema_rates, floor_rates, observe_rates = [], [], []
    for rep in range(reps):
        jsonschema_rates.append(observe_baseline(prefix))
        floor_rates.append(observe_floor(tmp, lines))
        store, seconds = fresh_store(tmp, "observe", lines)
        store.close()
        observe_rates.append(len(lines) / seconds)
        log(
            f"  observe run {rep + 1}/{reps}: {observe_rates[-1]:,.0f} lines/s, floor "
            f"{floor_rates[-1]:,.0f}, jsonschema-only {jsonschema_rates[-1]:,.0f}"
        )
    path = tmp / f"observe-peak-{time.monotonic_ns()}.db"
    store = Store(path, project=PROJECT)
    store.packs.install(resolve_pack(PACK))
    try:
        tracemalloc.start()
        observe(store, lines)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    finally:
        store.close()
    return {
        "lines": len(lines),
        "rate": statistics.median(observe_rates),
        "rates": observe_rates,
        "floor_rate": statistics.median(floor_rates),
        "floor_rates": floor_rates,
        "jsonschema_rate": statistics.median(jsonschema_rates),
        "jsonschema_rates": jsonschema_rates,
        "jsonschema_lines": len(prefix),
        "peak_heap_mib": round(peak / 2**20, 1),
    }


def same_state(batched: dict[str, Any], reference: dict[str, Any]) -> list[str]:
    """Tables where the batched and the reference runs differ (an empty list: the same)."""
    ours, theirs = batched.pop("end_state"), reference.pop("end_state")
    return [table for table in theirs if ours.get(table) != theirs[table]] or []


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "environment": environment(args.dir or tempfile.gettempdir()),
        "args": vars(args),
    }
    with tempfile.TemporaryDirectory(prefix="memsdk-bench-retain-", dir=args.dir) as tmp_name:
        tmp = Path(tmp_name)
        probe = Store(tmp / "probe.db", project=PROJECT)
        probe.packs.install(resolve_pack(PACK))
        categories = probe.category_names()
        relations = sorted(grid(probe).relations)
        probe.close()
        log(f"generating {args.n:,} observations over {args.entities:,} entities ...")
        stream = Stream(args.n, args.entities, categories, relations, args.seed)
        lines = stream.lines()
        prefix = stream.lines(args.baseline_n)
        results["stream"] = {
            "observations": len(lines),
            "entities": args.entities,
            "with_facts": sum("facts" in d["payload_typed"] for d in stream.documents),
            "with_relations": sum("relations" in d["payload_typed"] for d in stream.documents),
        }
        log("observe: against jsonschema on every line, and the json.loads + executemany floor")
        results["observe"] = observe_figures(tmp, lines, prefix, args.reps)
        if args.observe_only:
            results["environment"]["loadavg_end"] = load_average()
            return results
        log("memsdk, whole stream")
        results["memsdk"] = measure(
            tmp, "memsdk", lines, timed_batches("memsdk", BATCH_SIZE), args.reps
        )
        log("reference path (batched=False), whole stream")
        results["reference"] = measure(tmp, "reference", lines, run_reference, 1)
        results["same_end_state"] = same_state(results["memsdk"], results["reference"])
        log("Python heap peaks (untimed runs under tracemalloc)")
        results["memsdk"]["peak_heap_mib"] = peak_heap(tmp, lines, run_memsdk)
        results["reference"]["peak_heap_mib"] = peak_heap(tmp, lines, run_reference)
        log(f"ablation: {SMALL_BATCH} observations per transaction, whole stream")
        results["small_batches"] = measure(
            tmp, "small", lines, timed_batches("small", SMALL_BATCH), args.reps
        )
        log("ablation: no fast-track, whole stream")
        results["no_fast_track"] = measure(tmp, "nofast", lines, run_no_fast_track, args.reps)
        for measured in (results["memsdk"], results["reference"]):
            measured.pop("end_state", None)
        log(f"memsdk, first {len(prefix):,}")
        results["memsdk_prefix"] = measure(tmp, "prefix", prefix, run_memsdk, args.reps)
        log(f"baseline: one transaction per observation, first {len(prefix):,}")
        results["unbatched"] = measure(tmp, "unbatched", prefix, run_unbatched, args.reps)
        for measured in (
            results["no_fast_track"],
            results["small_batches"],
            results["memsdk_prefix"],
            results["unbatched"],
        ):
            measured.pop("end_state", None)
    results["environment"]["loadavg_end"] = load_average()
    return results


def observe_report(results: dict[str, Any]) -> str:
    """The observe figures alone (``--observe-only``)."""
    env, ob = results["environment"], results["observe"]
    return "\n".join(
        [
            "memsdk observe benchmark",
            f"  {env['date']}; memsdk {env['memsdk']} ({env['commit']}), python {env['python']}, "
            f"sqlite {env['sqlite']}; {env['cpu']}, os.cpu_count() = {env['cpu_count']}",
            f"  load average (1/5/15 min) at start {env['loadavg_start']}, "
            f"at end {env['loadavg_end']}",
            f"observe, {ob['lines']:,} lines (medians of {len(ob['rates'])}, interleaved)",
            f"  observe                                {ob['rate']:>9,.0f} lines/s"
            f"  (Python heap peak {ob['peak_heap_mib']} MiB)",
            f"  floor: json.loads + one executemany    {ob['floor_rate']:>9,.0f} lines/s"
            f"  observe is {ob['rate'] / ob['floor_rate']:.2f}x of it",
            f"  jsonschema on every line (first {ob['jsonschema_lines']:,})"
            f"  {ob['jsonschema_rate']:>6,.0f} lines/s"
            f"  observe is {ob['rate'] / ob['jsonschema_rate']:.1f}x of it",
        ]
    )


def report(results: dict[str, Any]) -> str:
    if "memsdk" not in results:
        return observe_report(results)
    env, stream = results["environment"], results["stream"]
    m, nf = results["memsdk"], results["no_fast_track"]
    mp, ub = results["memsdk_prefix"], results["unbatched"]
    ref, differ = results["reference"], results["same_end_state"]
    ob = results["observe"]
    small = results["small_batches"]
    r = m["report"]
    lines = [
        "memsdk retain benchmark",
        f"  {env['date']}; memsdk {env['memsdk']} ({env['commit']}), python {env['python']}, "
        f"sqlite {env['sqlite']}, sqlite-utils {env['sqlite_utils']}",
        f"  {env['platform']}, {env['cpu']}, os.cpu_count() = {env['cpu_count']}",
        f"  load average (1/5/15 min) at start {env['loadavg_start']}, at end {env['loadavg_end']}",
        "",
        f"Stream: {stream['observations']:,} observations over {stream['entities']:,} entities "
        f"({stream['with_facts']:,} with a fact, {stream['with_relations']:,} with a relation); "
        f"medians of {results['args']['reps']} runs",
        f"  observe (validate + queue, one transaction)  {m['observe_rate']:>9,.0f} observations/s",
        f"  retain, memsdk ({BATCH_SIZE} per transaction)         {m['rate']:>9,.0f} observations/s"
        f"  ({r['seconds']:.1f} s, of which Compiled Truth {r['truth_seconds']:.1f} s)",
        f"    routes: fast {r['routes']['fast']:,}, normal {r['routes']['normal']:,}, "
        f"dark {r['routes']['dark']:,}; duplicates folded {r['duplicates']:,}; "
        f"conflicts {r['conflicts']:,}; entities created {r['entities_created']:,}; "
        f"compiled truth versions {r['truth_versions']:,}",
        f"    each batch (the write lock is held about this long): {_hold_text(m['batch_ms'])}",
        f"  ablation: {SMALL_BATCH} per transaction (round 3's default)"
        f"  {small['rate']:,.0f} observations/s; each batch {_hold_text(small['batch_ms'])}",
        f"  ablation: no fast-track (every observation takes the dedup pass)"
        f"  {nf['rate']:,.0f} observations/s",
        f"  baseline: one transaction per observation, first {ub['observations']:,}"
        f"  {ub['rate']:,.0f} observations/s",
        f"  memsdk on that same prefix                   {mp['rate']:>9,.0f} observations/s",
        f"  reference path (batched=False), whole stream {ref['rate']:>9,.0f} observations/s; "
        f"end state {'the same' if not differ else 'DIFFERS in ' + ', '.join(differ)}",
        f"  Python heap peak, retain on the whole stream  {m['peak_heap_mib']} MiB "
        f"(reference {ref['peak_heap_mib']} MiB)",
        f"  observe, measured alone (medians of {len(ob['rates'])})       {ob['rate']:>9,.0f} lines/s"
        f"  (Python heap peak {ob['peak_heap_mib']} MiB on {ob['lines']:,} lines)",
        f"  observe floor: json.loads + one executemany  {ob['floor_rate']:>9,.0f} lines/s"
        " (plain sqlite3, same rows, no checks)",
        f"  observe baseline: jsonschema on every line   "
        f"{ob['jsonschema_rate']:>9,.0f} lines/s (validation only, first {ob['jsonschema_lines']:,})",
        "",
        f"  issue 19's goal, {GOAL:,} observations/s on this stream: "
        + ("reached" if m["rate"] >= GOAL else f"not reached ({m['rate'] / GOAL:.0%} of it)"),
        "",
        "Summary                                     result    baseline    ratio",
        f"  batched vs one transaction per observation  {mp['rate']:>6,.0f}    {ub['rate']:>8,.0f}"
        f"    {mp['rate'] / ub['rate']:.1f}x",
        f"  fast-track on vs off (whole stream)         {m['rate']:>6,.0f}    {nf['rate']:>8,.0f}"
        f"    {m['rate'] / nf['rate']:.2f}x",
        f"  batched vs reference path (whole stream)    {m['rate']:>6,.0f}    {ref['rate']:>8,.0f}"
        f"    {m['rate'] / ref['rate']:.2f}x",
        f"  observe vs jsonschema-only validation       {ob['rate']:>6,.0f}"
        f"    {ob['jsonschema_rate']:>8,.0f}    {ob['rate'] / ob['jsonschema_rate']:.1f}x",
        f"  observe vs json.loads + executemany floor   {ob['rate']:>6,.0f}"
        f"    {ob['floor_rate']:>8,.0f}    {ob['rate'] / ob['floor_rate']:.2f}x",
    ]
    return "\n".join(lines)


def _hold_text(held: dict[str, float] | None) -> str:
    if held is None:
        return "not timed"
    return (
        f"median {held['median']:.0f} ms, max {held['max']:.0f} ms ({held['batches']:.0f} batches)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="observations (default 20000)")
    parser.add_argument("--entities", type=int, default=3_000, help="entities (default 3000)")
    parser.add_argument(
        "--baseline-n",
        type=int,
        default=4_000,
        help="observations for the one-transaction-per-observation baseline (default 4000)",
    )
    parser.add_argument("--reps", type=int, default=3, help="runs per figure, median kept")
    parser.add_argument("--seed", type=int, default=20260701, help="generator seed")
    parser.add_argument("--dir", default=None, help="where the temporary stores go")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--observe-only", action="store_true", help="measure observe alone (a minute or so)"
    )
    args = parser.parse_args(argv)
    results = run(args)
    print(json.dumps(results, indent=2) if args.json else report(results))


if __name__ == "__main__":
    main()
