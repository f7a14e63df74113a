"""Dreamer benchmark: every dreamer task on N generated memories, and curate's old candidate step.

Generates ``--n`` memories (default 10,000) over two content categories and one
intent category: sentences of 12-24 words from a Zipf-distributed synthetic
vocabulary of 5,000 words, with ``--dupes`` (default 5%) planted
near-duplicates (one word changed or added: Jaccard >= 0.8 with their
original) and ``--swaps`` (default 1%) polarity-swapped pairs (``enabled``
against ``disabled``: near-duplicate words, differing values, which curate
records as conflicts and never merges). Then, on the same store:

- **old curate candidates** (the baseline): the candidate step curate used
  before issue 28 (a ranked ``OR`` search of the memory's 16 longest words, 20
  hits, then the exact check), timed on ``--old-sample`` memories (default
  1,000) and extrapolated to all N (stated in the output);
- **each dreamer task**: ``Dreamer(store).run(name)`` in name order, wall time
  per task and their sum; curate's time includes building its MinHash index
  for every memory (``plugin_sdk/store/search/neardup.py``).

Prints the load average (``os.getloadavg()``) before and after, and each
task's CPU time (``time.process_time()``) beside its wall time: on a shared
machine the wall time includes waiting for a core, the CPU time does not.

Run from the repository root::

    .venv/bin/python bench/bench_dreamer.py --n 10000
    .venv/bin/python bench/bench_dreamer.py --n 100000 --old-sample 300
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from random import Random

from plugin_sdk import Dreamer, Store, validate_pack
from plugin_sdk.testing import fresh_plugin_manager, pack_document

PROJECT = "bench"
CATEGORIES = {"SERVICE_NOTES": "content", "CONFIG_VALUES": "content", "TEAM_RULES": "intent"}


def vocabulary(rng: Random, size: int = 5000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    return sorted(words)


def generate(n: int, dupes: float, swaps: float, seed: int) -> list[dict[str, str]]:
    rng = Random(seed)
    vocab = vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(vocab))]
    names = sorted(CATEGORIES)
    items: list[dict[str, str]] = []
    while len(items) < n:
        category = names[len(items) % len(names)]
        text = " ".join(rng.choices(vocab, weights, k=rng.randint(12, 24)))
        roll = rng.random()
        if roll < swaps and len(items) + 2 <= n:
            items.append({"content": f"{text} is enabled", "category": category})
            items.append({"content": f"{text} is disabled", "category": category})
            continue
        items.append({"content": text, "category": category})
        if roll < swaps + dupes and len(items) < n:
            parts = text.split()
            parts[rng.randrange(len(parts))] = rng.choice(vocab)
            items.append(
                {"content": " ".join(parts) + " " + rng.choice(vocab), "category": category}
            )
    return items


def build(path: Path, items: list[dict[str, str]]) -> Store:
    store = Store(path, project=PROJECT, plugins=fresh_plugin_manager())
    store.packs.install(validate_pack(pack_document("bench", "1.0.0", CATEGORIES), source="bench"))
    for start in range(0, len(items), 5000):
        store.memories.write_many(items[start : start + 5000])
    return store


def old_candidates(store: Store, sample: int) -> tuple[float, int]:
    """Seconds per memory of the pre-issue-28 candidate step, and pairs found."""
    from plugin_sdk_plugins.curate import SIMILARITY, similarity, words

    memories = list(store.memories.iter(project=PROJECT, limit=sample))
    found = 0
    start = time.perf_counter()
    for memory in memories:
        terms = sorted(words(memory.content), key=lambda w: (-len(w), w))[:16]
        query = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        hits = store.memories.search(
            query, project=PROJECT, category=memory.category, limit=20, raw=True
        )
        found += sum(
            1
            for hit in hits
            if hit.memory.id != memory.id
            and similarity(memory.content, hit.memory.content) >= SIMILARITY
        )
    return (time.perf_counter() - start) / max(len(memories), 1), found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--dupes", type=float, default=0.05)
    parser.add_argument("--swaps", type=float, default=0.01)
    parser.add_argument("--old-sample", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        store = build(Path(tmp) / "bench.db", generate(args.n, args.dupes, args.swaps, args.seed))
        built = time.perf_counter() - start
        per_memory, _ = old_candidates(store, args.old_sample)
        print(f"build {built:.1f} s, old candidates {per_memory * 1000:.1f} ms", file=sys.stderr)
        dreamer = Dreamer(store)
        tasks: dict[str, float] = {}
        cpu: dict[str, float] = {}
        for name in sorted(dreamer.tasks):
            start, start_cpu = time.perf_counter(), time.process_time()
            dreamer.run(name)
            tasks[name] = time.perf_counter() - start
            cpu[name] = time.process_time() - start_cpu
            print(
                f"{name}: {tasks[name]:.2f} s ({cpu[name]:.2f} s CPU)", file=sys.stderr, flush=True
            )
        merged = store.memories.count(project=PROJECT, status="superseded")
        disputes = int(store.db.execute("SELECT count(*) FROM memory_conflicts").fetchone()[0])
    result = {
        "n": args.n,
        "build_s": round(built, 2),
        "tasks_s": {k: round(v, 2) for k, v in tasks.items()},
        "all_tasks_s": round(sum(tasks.values()), 2),
        "tasks_cpu_s": {k: round(v, 2) for k, v in cpu.items()},
        "all_tasks_cpu_s": round(sum(cpu.values()), 2),
        "old_curate_candidates_ms_per_memory": round(per_memory * 1000, 2),
        "old_curate_sample": min(args.old_sample, args.n),
        "old_curate_candidates_s_extrapolated": round(per_memory * args.n, 1),
        "curate_speedup": round(per_memory * args.n / tasks["curate"], 1),
        "merged": merged,
        "conflicts": disputes,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:>40}: {value}")


if __name__ == "__main__":
    main()
