"""Vector index benchmark: what vectors add to writing, and to search latency.

What it measures, each against a baseline run in the same process:

- **write cost**: N generated memories written with ``write_many`` (1,000 per
  transaction) into a fresh store, then the dreamer task ``embed`` run over
  them as it ships (batches of 64, each its own transaction). Baseline: the
  same writes into a fresh store with no embedder. The embedder answers from
  a pool of precomputed random unit vectors, so the figure is the index's
  cost (checking, normalising, storing, the sqlite-vec mirror), not a
  model's. Also: ``embed_on_write`` (each ``write`` embeds its memory at
  once) against plain ``write`` calls, on the first items.
- **search**: ``hybrid_search(q, limit=10)`` on one store of 10,000 and one
  of 100,000 memories, with the embedder registered (full text fused with
  the nearest vectors) and without it (full text only, the baseline), and
  ``store.vectors.nearest`` alone. Each query is timed ``--reps`` times and
  its minimum kept; medians and p95 over the queries.

The driver is the one sqlite-utils picked: the standard library's (vectors
scanned in Python) or, with ``memsdk[vec]`` installed, pysqlite3 with the
sqlite-vec mirror. Run it in both environments to compare::

    .venv/bin/python bench/bench_vectors.py
    .venv-vec/bin/python bench/bench_vectors.py
    .venv/bin/python bench/bench_vectors.py --sizes 10000 --queries 10   # quick look
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
from pathlib import Path
from random import Random
from typing import Any

from bench_store import Generator, environment, load_average, log, open_store, percentile

from plugin_sdk import Dreamer
from plugin_sdk.plugin.hookspecs import hookimpl
from plugin_sdk.plugin.records import Embeddings
from plugin_sdk.store import driver
from plugin_sdk.vectors.embed import embed
from plugin_sdk.vectors.fusion import hybrid_search


class PoolEmbedder:
    """Precomputed random unit vectors, picked by a hash of the text: no model cost."""

    def __init__(self, dim: int, size: int = 2048, seed: int = 7) -> None:
        rng = Random(seed)
        self.dim = dim
        self.pool = []
        for _ in range(size):
            vector = [rng.gauss(0.0, 1.0) for _ in range(dim)]
            norm = math.sqrt(sum(x * x for x in vector))
            self.pool.append([x / norm for x in vector])

    @hookimpl
    def model_embed(self, texts: list[str]) -> Embeddings:
        pool = self.pool
        vectors = [pool[hash(text) % len(pool)] for text in texts]
        return Embeddings(model=f"bench-pool/{self.dim}", vectors=vectors)


def fresh(path: Path, embedder: PoolEmbedder | None) -> Any:
    store = open_store(path)
    if embedder is not None:
        store.plugins.register(embedder, name="bench-embedder")
    return store


def write_all(store: Any, items: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    for first in range(0, len(items), 1000):
        store.memories.write_many(items[first : first + 1000])
    return time.perf_counter() - start


def write_cost(tmp: Path, items: list[dict[str, Any]], embedder: PoolEmbedder) -> dict[str, Any]:
    runs: dict[str, list[float]] = {"plain": [], "write": [], "embed": []}
    for run in range(3):
        with fresh(tmp / f"plain-{run}.db", None) as store:
            runs["plain"].append(write_all(store, items))
        with fresh(tmp / f"vec-{run}.db", embedder) as store:
            runs["write"].append(write_all(store, items))
            start = time.perf_counter()
            (report,) = Dreamer(store).run("embed")
            runs["embed"].append(time.perf_counter() - start)
            assert report.finished_pass and store.vectors.check() == []
            status = store.vectors.status()
    plain = statistics.median(runs["plain"])
    write = statistics.median(runs["write"])
    embed_pass = statistics.median(runs["embed"])
    sample = items[:1000]
    single: dict[str, float] = {}
    for name, embedder_or_none in (("write", None), ("embed_on_write", embedder)):
        with fresh(tmp / f"single-{name}.db", embedder_or_none) as store:
            store.vectors.embed_on_write = embedder_or_none is not None
            start = time.perf_counter()
            for item in sample:
                store.memories.write(item["content"], item["category"])
            single[name] = time.perf_counter() - start
    return {
        "n": len(items),
        "plain_s": plain,
        "write_s": write,
        "embed_s": embed_pass,
        "ratio": (write + embed_pass) / plain,
        "embed_per_memory_ms": 1000 * embed_pass / len(items),
        "single_n": len(sample),
        "single_write_s": single["write"],
        "single_embed_on_write_s": single["embed_on_write"],
        "single_ratio": single["embed_on_write"] / single["write"],
        "sqlite_vec": status["sqlite_vec"],
        "mirror": status["mirror_model"],
    }


def timed(fn: Any, reps: int) -> float:
    best = math.inf
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return 1000 * best


def search_latency(
    tmp: Path, items: list[dict[str, Any]], queries: list[str], embedder: PoolEmbedder, reps: int
) -> dict[str, Any]:
    with fresh(tmp / f"search-{len(items)}.db", embedder) as store:
        write_all(store, items)
        t0 = time.perf_counter()
        vectors = store.vectors
        after = 0
        while batch := vectors.missing(
            f"bench-pool/{embedder.dim}", embedder.dim, store.project, after=after, limit=2000
        ):
            got = embed(store, [text for _, text in batch])
            vectors.put(got, batch)
            after = batch[-1][0]
        build = time.perf_counter() - t0
        status = vectors.status()
        rows = sum(model["vectors"] for model in status["models"].values())
        results: dict[str, list[float]] = {"lexical": [], "hybrid": [], "nearest": []}
        for query in queries[:3]:  # warm the page and statement caches
            hybrid_search(store, query, limit=10)
        for query in queries:
            got = embed(store, [query], "query")
            results["nearest"].append(
                timed(
                    lambda got=got: vectors.nearest(got.model, got.vectors[0], store.project, 10),
                    reps,
                )
            )
            results["hybrid"].append(
                timed(lambda query=query: hybrid_search(store, query, limit=10), reps)
            )
        store.plugins.unregister(name="bench-embedder")
        for query in queries:
            results["lexical"].append(
                timed(lambda query=query: hybrid_search(store, query, limit=10), reps)
            )
    return {
        "memories": rows,
        "index_build_s": build,
        "sqlite_vec": status["sqlite_vec"],
        "mirror": status["mirror_model"],
        **{
            name: {
                "median_ms": statistics.median(values),
                "p95_ms": percentile(values, 0.95),
            }
            for name, values in results.items()
        },
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memsdk-bench-", dir=args.dir) as tmp_name:
        tmp = Path(tmp_name)
        env = environment(tmp_name)
        env["sqlite"] = driver.sqlite_version
        env["driver"] = driver.name
        with open_store(tmp / "probe.db") as probe:
            categories = probe.category_names()
        gen = Generator(categories, args.seed)
        largest = max([args.write_n, *args.sizes])
        items, _ = gen.items(largest, 0.0)
        queries = gen.queries(items, args.queries)
        embedder = PoolEmbedder(args.dim)
        log(f"driver {driver.name}, sqlite {driver.sqlite_version}; write cost at {args.write_n:,}")
        write = write_cost(tmp, items[: args.write_n], embedder)
        search = []
        for size in args.sizes:
            log(f"search at {size:,} memories, {len(queries)} queries x {args.reps} ...")
            search.append(search_latency(tmp, items[:size], queries, embedder, args.reps))
        env["loadavg_end"] = load_average()
        return {"environment": env, "dim": args.dim, "write": write, "search": search}


def report(results: dict[str, Any]) -> str:
    env, w = results["environment"], results["write"]
    lines = [
        "memsdk vector index benchmark",
        f"  {env['date']}; memsdk {env['memsdk']} ({env['commit']}), python {env['python']}, "
        f"driver {env['driver']}, sqlite {env['sqlite']}, sqlite-vec {w['sqlite_vec'] or 'not loaded'}",
        f"  {env['platform']}, {env['cpu']}, os.cpu_count() = {env['cpu_count']}",
        f"  load average (1/5/15 min) at start {env['loadavg_start']}, at end {env['loadavg_end']}",
        "",
        f"Write cost: {w['n']:,} memories, vectors of {results['dim']} float32, median of 3 runs",
        f"  baseline: write_many, no embedder        {w['plain_s']:8.2f} s",
        f"  write_many with the embedder registered  {w['write_s']:8.2f} s",
        f"  then the embed task (batches of 64)      {w['embed_s']:8.2f} s  "
        f"({w['embed_per_memory_ms']:.2f} ms per memory)",
        f"  writes + index / baseline                {w['ratio']:8.2f} x",
        f"  embed_on_write, {w['single_n']:,} single writes      {w['single_embed_on_write_s']:8.2f} s  "
        f"vs {w['single_write_s']:.2f} s plain write(): {w['single_ratio']:.2f} x",
        "",
        "Search: hybrid_search(q, limit=10), min of reps per query, median / p95 over queries (ms)",
        f"  {'memories':>9}  {'lexical only':>18}  {'hybrid':>18}  {'nearest() alone':>18}  index",
    ]
    for s in results["search"]:
        cells = [
            f"{s[name]['median_ms']:8.2f} / {s[name]['p95_ms']:7.2f}"
            for name in ("lexical", "hybrid", "nearest")
        ]
        where = "sqlite-vec" if s["mirror"] else "Python scan"
        lines.append(
            f"  {s['memories']:>9,}  {cells[0]:>18}  {cells[1]:>18}  {cells[2]:>18}  {where}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-n", type=int, default=10_000, help="memories for write cost")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", default=None, help="where the temporary stores go")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    results = run(args)
    print(json.dumps(results, indent=2) if args.json else report(results))


if __name__ == "__main__":
    main()
