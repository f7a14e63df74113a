"""Injection benchmark: latency against its floor and a naive injector, budget use, coverage.

Profiles (seeded, so two runs build the same stores):

- ``seed``: the starting profile, a production-sized store: 482 active memories over
  the six ``ops`` categories, 230 of them OPS-rules-like (the pack's first
  intent category), with long SOPs and config dossiers among them;
- ``1k``, ``10k``, ``100k``: that many memories over the same categories.

Each store is built as a host would: written in batches, long memories
fragmented into headers and details, then the dreamer's ``map`` task run
(theme headers). Then, in the same run:

- **inject**: ``inject(store, budget=4000)``, median of ``--reps`` calls;
- **floor**: one indexed read of the candidate rows (the columns any ranking
  by category, importance and recency needs: id, category, kind, importance,
  token count, seen count, last seen, pinned) plus one tokenization of the
  injected text: the least any injector must do;
- **naive**: an injector that tokenizes every memory on every call (no
  cached counts) and packs whole memories by priority and importance;
- **budget use**: tokens used / budget;
- **coverage**: the share of active memories reachable from the injected text
  directly or by one ``expand``, against the **monolith baseline**: the same
  memories unfragmented and unmapped, ranked as a plain memory list would be
  (pinned, then importance, then id) and packed whole into the same budget.

Run from the repository root::

    .venv/bin/python bench/bench_inject.py                 # all profiles
    .venv/bin/python bench/bench_inject.py --profiles seed 1k
    .venv/bin/python bench/bench_inject.py --json
"""

from __future__ import annotations

import argparse
import contextlib
import json
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

from plugin_sdk import Store, resolve_pack
from plugin_sdk.composites.fragment import fragment
from plugin_sdk.errors import CompositeError
from plugin_sdk.stages.dreamer import Dreamer
from plugin_sdk.stages.inject import inject

BUDGET = 4000
PROJECT = "bench"
LONG_CHARS = 600
PROFILES = {"seed": 482, "1k": 1_000, "10k": 10_000, "100k": 100_000}
REPS = {"seed": 21, "1k": 21, "10k": 9, "100k": 5}
NAIVE_REPS = {"seed": 9, "1k": 9, "10k": 3, "100k": 1}


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


def build(path: Path, items: list[dict[str, Any]], *, structured: bool) -> Store:
    store = Store(path, project=PROJECT)
    store.packs.install(resolve_pack("ops"))
    for start in range(0, len(items), 5000):
        store.memories.write_many(items[start : start + 5000])
    if structured:
        for row in store.db.execute(
            "SELECT id FROM memories WHERE project = ? AND status = 'active' AND length(content) >= ?",
            [PROJECT, LONG_CHARS],
        ).fetchall():
            with contextlib.suppress(CompositeError):  # nothing to split: stays whole
                fragment(store, row[0])
        Dreamer(store).run("map")
    return store


def timed(fn: Any, reps: int) -> tuple[float, Any]:
    samples, result = [], None
    for _ in range(reps):
        start = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), result


def floor(store: Store, text: str) -> float:
    """One indexed read of the candidate rows (the columns a ranking needs) + one count."""
    start = time.perf_counter()
    store.db.execute(
        """SELECT id, category, kind, importance, token_count, seen_count, last_seen_at, pinned
           FROM memories WHERE project = ? AND status = 'active'""",
        [PROJECT],
    ).fetchall()
    store.tokenizer.count(text)
    return time.perf_counter() - start


def naive_inject(store: Store, budget: int) -> str:
    """Tokenize every memory, every call; pack whole memories by priority and importance."""
    counter = store.tokenizer
    rows = store.db.execute(
        """SELECT m.id, m.category, m.content FROM memories m JOIN categories c ON c.name = m.category
           WHERE m.project = ? AND m.status = 'active' ORDER BY c.priority, m.importance DESC, m.id""",
        [PROJECT],
    ).fetchall()
    lines, used = ["<memory>"], 2
    for memory_id, category, content in rows:
        line = f"- [{memory_id}] ({category}) {content}"
        cost = counter.count(line)
        if used + cost <= budget:
            lines.append(line)
            used += cost
    lines.append("</memory>")
    return "\n".join(lines)


def monolith_coverage(store: Store, budget: int) -> tuple[float, int]:
    """Whole memories ranked pinned, importance, id, packed greedily: share shown."""
    rows = store.db.execute(
        """SELECT id, content, token_count FROM memories WHERE project = ? AND status = 'active'
           ORDER BY pinned DESC, importance DESC, id""",
        [PROJECT],
    ).fetchall()
    used, shown = 2, 0
    for _memory_id, _content, tokens in rows:
        cost = tokens + 6
        if used + cost <= budget:
            used += cost
            shown += 1
    return shown / len(rows), len(rows)


def run_profile(profile: str, tmp: Path, seed: int) -> dict[str, Any]:
    categories = []
    with Store(tmp / f"{profile}-probe.db", project=PROJECT) as probe:
        probe.packs.install(resolve_pack("ops"))
        categories = probe.category_names()
    items = items_for(profile, categories, seed)
    log(f"[{profile}] building the structured store ({len(items)} memories)...")
    started = time.perf_counter()
    store = build(tmp / f"{profile}.db", items, structured=True)
    build_s = time.perf_counter() - started
    log(f"[{profile}] built in {build_s:.1f}s; building the monolith store...")
    mono = build(tmp / f"{profile}-mono.db", items, structured=False)
    inject(store, budget=BUDGET)  # warm caches and the tokenizer
    inject_s, result = timed(lambda: inject(store, budget=BUDGET), REPS[profile])
    floor_s = statistics.median(floor(store, result.text) for _ in range(REPS[profile]))
    naive_s, naive_text = timed(lambda: naive_inject(store, BUDGET), NAIVE_REPS[profile])
    mono_cov, mono_active = monolith_coverage(mono, BUDGET)
    shown_categories = (
        {
            row[0]
            for row in store.db.execute(
                f"SELECT DISTINCT category FROM memories WHERE id IN ({','.join('?' * len(result.shown))})",
                result.shown,
            )
        }
        if result.shown
        else set()
    )
    again = inject(store, budget=BUDGET)
    out = {
        "profile": profile,
        "memories_written": len(items),
        "active": result.active,
        "headers_and_standalone": result.candidates,
        "build_s": build_s,
        "inject_ms": inject_s * 1000,
        "floor_ms": floor_s * 1000,
        "inject_over_floor": inject_s / floor_s,
        "naive_ms": naive_s * 1000,
        "naive_over_inject": naive_s / inject_s,
        "tokens": result.tokens,
        "budget_use": result.tokens / BUDGET,
        "coverage": result.coverage,
        "monolith_coverage": mono_cov,
        "monolith_active": mono_active,
        "categories_shown": len(shown_categories),
        "categories": len(categories),
        "identical_twice": again.text == result.text,
        "naive_tokens": store.tokenizer.count(naive_text),
    }
    store.close()
    mono.close()
    return out


def report(results: list[dict[str, Any]], env: dict[str, Any]) -> str:
    lines = [
        f"memsdk injection benchmark, budget {BUDGET} tokens ({env['python']}, SQLite {env['sqlite']}, "
        f"{env['machine']}, {env['cpus']} cpus)",
        "",
        f"{'profile':<8} {'active':>7} {'inject':>9} {'floor':>9} {'x floor':>8} {'naive':>10} "
        f"{'naive/inj':>9} {'budget':>7} {'coverage':>9} {'monolith':>9} {'cats':>5}",
    ]
    for r in results:
        lines.append(
            f"{r['profile']:<8} {r['active']:>7} {r['inject_ms']:>7.1f}ms {r['floor_ms']:>7.1f}ms "
            f"{r['inject_over_floor']:>7.2f}x {r['naive_ms']:>8.1f}ms {r['naive_over_inject']:>8.1f}x "
            f"{r['budget_use']:>6.0%} {r['coverage']:>9.1%} {r['monolith_coverage']:>9.1%} "
            f"{r['categories_shown']:>2}/{r['categories']}"
        )
    lines.append("")
    lines.append(
        "inject, floor, naive: medians. x floor = inject / floor; naive/inj = naive / inject."
    )
    lines.append(
        "coverage: active memories reachable directly or by one expand; monolith: the same"
    )
    lines.append("memories whole, ranked pinned > importance > id, packed into the same budget.")
    lines.append(
        "Byte-identical on a second call: "
        + ", ".join(f"{r['profile']} {'yes' if r['identical_twice'] else 'NO'}" for r in results)
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", nargs="+", choices=list(PROFILES), default=list(PROFILES))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    env = {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "machine": platform.machine(),
        "cpus": __import__("os").cpu_count(),
    }
    with tempfile.TemporaryDirectory(prefix="memsdk-bench-inject-") as tmp:
        results = [run_profile(profile, Path(tmp), args.seed) for profile in args.profiles]
    if args.json:
        print(json.dumps({"environment": env, "results": results}, indent=2))
    else:
        print(report(results, env))


if __name__ == "__main__":
    main()
