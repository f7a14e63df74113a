"""Injection benchmark: the table of contents at every store size, against its floor.

Profiles (seeded, so two runs build the same stores):

- ``seed``: a production-sized store: 482 memories over the six ``ops``
  categories, 230 of them OPS-rules-like (the pack's first intent category),
  with long SOPs and config dossiers among them;
- ``1k``, ``10k``, ``100k``, ``1m``: that many memories over the same categories
  (``1m`` is the generated profile for the speed goal; its build is slow and
  reported on its own).

Each store is built as a host would: written in batches, long memories
fragmented into headers and details, then the dreamer's ``map`` task run
(the groups and their levels). Then, in the same run:

- **inject**: ``inject(store, budget=4000)``, median of repeated calls (the
  text; the account is computed lazily and timed separately as ``account``).
  A repeated block's exact count comes from the store's count cache; **fresh**
  times the same call as after a change to one line (the block's count and
  that line's forgotten: the line is tokenized, the other lines' cached
  counts summed), **new process** the same with this process's memo of line
  counts emptied, **cold** with every cached count forgotten;
- the timed calls run with Python's garbage collector paused (as ``timeit``
  does), collecting between repetitions (then one untimed inject and floor warm
  the caches again), so a full collection that a previous call's garbage set
  off does not land in one call's time;
- **floor**: a read of the text of the rows the block shows, by id, and one
  tokenization of that text: the least any injector showing those rows must do;
- **budget use**: tokens used / budget, at 1,000, 2,000 and 4,000 tokens;
- **coverage per depth**: the share of active memories the block reaches
  directly, after one expand and after two. For ``seed`` to ``100k`` it is
  *walked*: every header the block shows is expanded with the advertised
  expand budget (2,000 tokens), then every header those expands show; a
  memory counts only if an expand within that budget actually showed it.
  For ``1m`` it is read from the structure (the account), to three expands;
- **monolith** (seed to 100k): the same memories unfragmented and unmapped,
  ranked as a plain memory list would be (pinned, then importance, then id)
  and packed whole into the same budget: the share shown.

Run from the repository root::

    .venv/bin/python bench/bench_inject.py                    # seed 10k 100k
    .venv/bin/python bench/bench_inject.py --profiles 1m      # the generated 1M store
    .venv/bin/python bench/bench_inject.py --json
    .venv/bin/python bench/bench_inject.py --profiles 100k --db 'postgresql://memsdk@/memsdk?host=/tmp/pg'
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from random import Random
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import Generator
from places import Places, server_version

from plugin_sdk import Store, resolve_pack
from plugin_sdk.composites.fragment import fragment
from plugin_sdk.composites.groups import reach
from plugin_sdk.errors import CompositeError
from plugin_sdk.stages.dreamer import Dreamer
from plugin_sdk.stages.expand import expand
from plugin_sdk.stages.inject import inject
from plugin_sdk.store.tokens import clear_memo, forget_counts, segments

BUDGET = 4000
EXPAND_BUDGET = 2000
PROJECT = "bench"
LONG_CHARS = 600
PROFILES = {"seed": 482, "1k": 1_000, "10k": 10_000, "100k": 100_000, "1m": 1_000_000}
REPS = {"seed": 51, "1k": 51, "10k": 51, "100k": 51, "1m": 31}
WALKED = ("seed", "1k", "10k", "100k")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def items_for(profile: str, categories: list[str], seed: int) -> list[dict[str, Any]]:
    """Generated memories; ~3% are long SOPs (numbered steps) or dossiers (key = value lines)."""
    n = PROFILES[profile]
    gen = Generator(categories, seed)
    rng = Random(seed)
    first = categories[0]
    weights = [230 / 482] + [(252 / 482) / (len(categories) - 1)] * (len(categories) - 1)
    items, seen = [], set()
    while len(items) < n:
        index = (
            rng.choices(range(len(categories)), weights)[0]
            if profile == "seed"
            else rng.randrange(len(categories))
        )
        if rng.random() < 0.03:
            steps = rng.randint(5, 12)
            if index == 0 or rng.random() < 0.5:
                body = "\n".join(
                    f"{k}. {gen.sentence(index).capitalize()}." for k in range(1, steps + 1)
                )
                content = f"SOP: {gen.sentence(index)}\n{body}"
            else:
                body = "\n".join(
                    f"{gen.noun(index)}_{k} = {rng.randint(1, 4096)}" for k in range(steps)
                )
                content = f"Config for {gen.sentence(index)}\n{body}"
        else:
            content = gen.text(index)
        key = (index, content.lower())
        if key in seen:
            continue
        seen.add(key)
        items.append(
            {
                "content": content,
                "category": categories[index],
                "importance": rng.randint(5, 95),
                "source": "bench",
            }
        )
    items[0]["category"] = first
    return items


def build(
    path: str | Path, items: list[dict[str, Any]], *, structured: bool
) -> tuple[Store, dict[str, float]]:
    """The store, and seconds spent writing, fragmenting and mapping."""
    times: dict[str, float] = {}
    started = time.perf_counter()
    store = Store(path, project=PROJECT)
    store.packs.install(resolve_pack("ops"))
    for start in range(0, len(items), 5000):
        store.memories.write_many(items[start : start + 5000])
    times["write_s"] = time.perf_counter() - started
    if structured:
        started = time.perf_counter()
        for row in store.db.execute(
            "SELECT id FROM memories WHERE project = ? AND status = 'active' AND length(content) >= ?",
            [PROJECT, LONG_CHARS],
        ).fetchall():
            with contextlib.suppress(CompositeError):  # nothing to split: stays whole
                fragment(store, row[0])
        times["fragment_s"] = time.perf_counter() - started
        started = time.perf_counter()
        Dreamer(store).run("map")
        times["map_s"] = time.perf_counter() - started
    if store.db.engine == "postgresql":
        store.db.execute("ANALYZE")  # what autovacuum does after a bulk load
    return store, times


def floor(store: Store, shown: list[int]) -> float:
    """Read the text of the shown rows by id and tokenize it once: the least an injector does."""
    start = time.perf_counter()
    rows = store.db.execute(
        f"SELECT id, content FROM memories WHERE id IN ({','.join('?' * len(shown))})", shown
    ).fetchall()
    store.tokenizer.count("\n".join(f"- [{row[0]}] {row[1]}" for row in rows))
    return time.perf_counter() - start


def _timed(store: Store) -> float:
    start = time.perf_counter()
    inject(store, budget=BUDGET)
    return time.perf_counter() - start


def walk(store: Store, shown: list[int], depth: int = 2) -> tuple[list[int], int, int]:
    """Active memories reached with at most 0..depth expands of EXPAND_BUDGET tokens each.

    Only what an expand within the budget actually showed counts. Also
    returns how many expands were made and how many left something out.
    """
    active = {
        row[0]
        for row in store.db.execute(
            "SELECT id FROM memories WHERE project = ? AND status = 'active'", [PROJECT]
        )
    }
    reached = set(shown) & active
    levels = [len(reached)]
    frontier = sorted(reached)
    expands = clipped = 0
    for _ in range(depth):
        heads: set[int] = set()
        for start in range(0, len(frontier), 500):
            part = frontier[start : start + 500]
            heads.update(
                row[0]
                for row in store.db.execute(
                    "SELECT head_memory_id FROM composites WHERE head_memory_id IN "
                    f"({','.join('?' * len(part))})",
                    part,
                )
            )
        found: set[int] = set()
        for head in sorted(heads):
            result = expand(store, head, budget=EXPAND_BUDGET, count_retrievals=False)
            expands += 1
            clipped += bool(result.left_out)
            found.update(m for m in result.shown if m in active)
        frontier = sorted(found - reached)
        reached |= found
        levels.append(len(reached))
    return levels, expands, clipped


def monolith_coverage(store: Store, budget: int) -> float:
    """Whole memories ranked pinned, importance, id, packed greedily: share shown."""
    rows = store.db.execute(
        """SELECT token_count FROM memories WHERE project = ? AND status = 'active'
           ORDER BY pinned DESC, importance DESC, id""",
        [PROJECT],
    ).fetchall()
    used, shown = 2, 0
    for (tokens,) in rows:
        cost = tokens + 6
        if used + cost <= budget:
            used += cost
            shown += 1
    return shown / len(rows)


def run_profile(
    profile: str,
    places: Places,
    seed: int,
    keep: Path | None = None,
    walked: tuple[str, ...] = WALKED,
) -> dict[str, Any]:
    probe_place = places.new(f"{profile}-probe.db")
    with Store(probe_place, project=PROJECT) as probe:
        probe.packs.install(resolve_pack("ops"))
        categories = probe.category_names()
    places.remove(probe_place)
    items = items_for(profile, categories, seed)
    path: str | Path = keep / f"{profile}.db" if keep else places.new(f"{profile}.db")
    if keep and Path(path).exists():
        log(f"[{profile}] reusing {path}")
        store, times = (
            Store(path, project=PROJECT),
            {"write_s": 0.0, "fragment_s": 0.0, "map_s": 0.0},
        )
    else:
        log(f"[{profile}] building the structured store ({len(items)} memories)...")
        store, times = build(path, items, structured=True)
    log(f"[{profile}] built: " + ", ".join(f"{k} {v:.1f}" for k, v in times.items()))
    result = inject(store, budget=BUDGET)  # warm caches and the tokenizer
    samples, floors, fresh, restarted, cold = [], [], [], [], []
    lines = segments(result.text)
    gc.disable()  # as timeit does: garbage is collected between the timed calls
    for rep in range(REPS[profile]):  # interleaved, so load changes hit all alike
        gc.collect()
        # untimed: the collection left the CPU caches cold, for both alike
        floor(store, inject(store, budget=BUDGET).shown)
        start = time.perf_counter()
        result = inject(store, budget=BUDGET)  # warm: the block's count is cached
        samples.append(time.perf_counter() - start)
        floors.append(floor(store, result.shown))
        # fresh: as after a change to one line (a memory edited, a group relabelled):
        # the block's count and that line's are unknown; the line is tokenized.
        forget_counts(store, [result.text, lines[(7 * rep) % len(lines)]])
        fresh.append(_timed(store))
        # the same in a new process: this process's memo of line counts is empty,
        # the store's table has them.
        forget_counts(store, [result.text, lines[(7 * rep + 3) % len(lines)]])
        clear_memo()
        restarted.append(_timed(store))
        forget_counts(store)  # cold: no count cached anywhere, every line tokenized
        cold.append(_timed(store))
    gc.enable()
    inject_s, floor_s = statistics.median(samples), statistics.median(floors)
    fresh_s = statistics.median(fresh)
    start = time.perf_counter()
    accounted = inject(store, budget=BUDGET)
    active = accounted.active  # the first read of the account
    account_s = time.perf_counter() - start
    again = inject(store, budget=BUDGET)
    use = {b: inject(store, budget=b).tokens / b for b in (1000, 2000, BUDGET)}
    out: dict[str, Any] = {
        "profile": profile,
        "memories_written": len(items),
        "active": active,
        **times,
        "build_s": sum(times.values()),
        "inject_ms": inject_s * 1000,
        "inject_p90_ms": statistics.quantiles(samples, n=10)[-1] * 1000,
        "floor_ms": floor_s * 1000,
        "inject_over_floor": inject_s / floor_s,
        "fresh_ms": fresh_s * 1000,
        "fresh_over_floor": fresh_s / floor_s,
        "fresh_min_ms": min(fresh) * 1000,
        "restarted_ms": statistics.median(restarted) * 1000,
        "restarted_over_floor": statistics.median(restarted) / floor_s,
        "cold_ms": statistics.median(cold) * 1000,
        "cold_over_floor": statistics.median(cold) / floor_s,
        "cold_min_ms": min(cold) * 1000,
        "inject_min_ms": min(samples) * 1000,
        "floor_min_ms": min(floors) * 1000,
        "min_over_min": min(samples) / min(floors),
        "account_ms": account_s * 1000,
        "tokens": result.tokens,
        "budget_use": {str(b): u for b, u in use.items()},
        "shown": len(result.shown),
        "identical_twice": again.text == result.text,
        "text": result.text,
    }
    if profile in walked:
        log(f"[{profile}] walking every expand...")
        levels, expands, clipped = walk(store, result.shown, 2)
        out["coverage_by_depth"] = [n / active for n in levels]
        out["expands"] = expands
        out["expands_clipped"] = clipped
        out["coverage_from"] = "walked"
        log(f"[{profile}] building the monolith store...")
        mono_place = places.new(f"{profile}-mono.db")
        mono, _ = build(mono_place, items, structured=False)
        out["monolith_coverage"] = monolith_coverage(mono, BUDGET)
        mono.close()
        places.remove(mono_place)
    else:
        levels = [len(x) for x in reach(store, PROJECT, result.shown, 3)]
        out["coverage_by_depth"] = [n / active for n in levels]
        out["coverage_from"] = "structure"
    store.close()
    if not keep:
        places.remove(str(path))
    return out


def report(results: list[dict[str, Any]], env: dict[str, Any]) -> str:
    lines = [
        f"memsdk injection benchmark, budget {BUDGET} tokens, expands of {EXPAND_BUDGET} "
        f"({env['python']}, SQLite {env['sqlite']}, {env['machine']}, {env['cpus']} cpus)",
        f"load average at start {env['load_start']}, at end {env['load_end']}",
        f"engine: {env['engine']}",
        "",
        f"{'profile':<8} {'active':>9} {'inject':>8} {'p90':>8} {'floor':>8} {'x floor':>7} "
        f"{'use@1k':>7} {'use@2k':>7} {'use@4k':>7}  coverage after 0 / 1 / 2 (/ 3) expands",
    ]
    for r in results:
        use = r["budget_use"]
        cover = " / ".join(f"{c:.1%}" for c in r["coverage_by_depth"])
        lines.append(
            f"{r['profile']:<8} {r['active']:>9,} {r['inject_ms']:>6.1f}ms "
            f"{r['inject_p90_ms']:>6.1f}ms {r['floor_ms']:>6.2f}ms {r['inject_over_floor']:>6.2f}x "
            f"{use['1000']:>7.1%} {use['2000']:>7.1%} {use[str(BUDGET)]:>7.1%}  {cover} "
            f"({r['coverage_from']})"
        )
    lines += [
        "",
        "fresh: as after a change to one line of the block (the block's cached count and",
        "that line's forgotten): that line is tokenized, the others' counts summed, the",
        "new counts recorded; median and fastest, and against the floor. new process: the",
        "same with this process's memo of line counts empty (they come from the store).",
        "cold: every cached count forgotten, every line tokenized:",
    ]
    for r in results:
        lines.append(
            f"  {r['profile']:<6} fresh {r['fresh_ms']:.2f} ms ({r['fresh_over_floor']:.2f}x floor), "
            f"fastest {r['fresh_min_ms']:.2f} ms ({r['fresh_min_ms'] / r['floor_min_ms']:.2f}x); "
            f"new process {r['restarted_ms']:.2f} ms ({r['restarted_over_floor']:.2f}x); "
            f"cold {r['cold_ms']:.2f} ms ({r['cold_over_floor']:.2f}x)"
        )
    lines += ["", "fastest of the interleaved calls (less sensitive to a busy machine):"]
    for r in results:
        lines.append(
            f"  {r['profile']:<6} inject {r['inject_min_ms']:.2f} ms, floor {r['floor_min_ms']:.2f} ms, "
            f"{r['min_over_min']:.2f}x"
        )
    lines += ["", "build (s): write / fragment / map / total; account: its first read (ms)"]
    for r in results:
        extra = (
            f"; {r['expands']} expands walked, {r['expands_clipped']} over the expand budget; "
            f"monolith shows {r['monolith_coverage']:.1%}"
            if "expands" in r
            else ""
        )
        lines.append(
            f"  {r['profile']:<6} {r['write_s']:.1f} / {r['fragment_s']:.1f} / {r['map_s']:.1f} / "
            f"{r['build_s']:.1f}; account {r['account_ms']:.0f} ms{extra}"
        )
    lines.append("")
    lines.append("inject, floor: medians of interleaved calls; x floor = inject / floor.")
    lines.append(
        "Byte-identical on a second call: "
        + ", ".join(f"{r['profile']} {'yes' if r['identical_twice'] else 'NO'}" for r in results)
    )
    return "\n".join(lines)


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--profiles", nargs="+", choices=list(PROFILES), default=["seed", "10k", "100k"]
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--block", help="write the last profile's block to this file")
    parser.add_argument(
        "--keep", type=Path, help="keep (and reuse) the built stores in this folder"
    )
    parser.add_argument(
        "--db", help="a postgresql:// URL: each store in a fresh schema there, dropped after"
    )
    parser.add_argument(
        "--no-walk",
        action="store_true",
        help="coverage from the structure for every profile (no walk, no monolith store)",
    )
    args = parser.parse_args(argv)
    if args.db and args.keep:
        parser.error("--keep keeps SQLite files; it does not go with --db")
    env = {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_start": _load(),
        "engine": server_version(args.db) if args.db else f"SQLite {sqlite3.sqlite_version}",
    }
    walked = () if args.no_walk else WALKED
    with (
        tempfile.TemporaryDirectory(prefix="memsdk-bench-inject-") as tmp,
        Places(tmp, args.db) as places,
    ):
        results = [
            run_profile(profile, places, args.seed, args.keep, walked) for profile in args.profiles
        ]
    env["load_end"] = _load()
    if args.block:
        Path(args.block).write_text(results[-1]["text"] + "\n", encoding="utf-8")
    for r in results:
        r.pop("text")
    if args.json:
        print(json.dumps({"environment": env, "results": results}, indent=2))
    else:
        print(report(results, env))


if __name__ == "__main__":
    main()
