"""Retrieval benchmark: questions as typed, against memories of multi-session chats.

The dataset is ``bench/data/recall/recall.json`` (see its README): 12
conversations, 678 questions whose answers are known turns, split by
conversation into ``tune`` (choose parameters on it) and ``test`` (report on
it, never tune on it).

The harness uses only the public API, as a host would: a fresh store per
conversation with one small pack (one category), each turn written as one
memory ``"Speaker: text"`` with its session's date as ``occurred_at``
through ``store.memories.write_many``; then per question

- **search**: ``store.memories.search(question, limit=20)``; a hit at k: an
  evidence turn among the first k memories returned;
- **recall**: ``recall(store, question, budget=1500)``; a hit: an evidence
  turn's memory inside the block (r@k counts its position among the
  memories the block shows);
- **hybrid**: search with the built-in vector plugin answering
  ``search_candidates`` from memsdk's deterministic hash test embedder
  (``--hybrid``) or from all-MiniLM-L6-v2 (``--minilm``, ``bench/minilm.py``);

and two baselines in the same run, on the same stores: plain FTS5 with the
AND of all the question's words (``sqlite_utils.Database.quote_fts``: what
search did before), and plain FTS5 with an OR of its content words, ranked
by bm25 alone.

Reported: recall@1/5/10/20 and MRR, overall and per question type, with the
ratio of each method to the OR baseline; "in list" is the share of
questions with an evidence turn anywhere in what the method returned (for
recall: inside the block).

    .venv/bin/python bench/bench_recall.py                 # test split
    .venv/bin/python bench/bench_recall.py --split tune    # for tuning
    .venv/bin/python bench/bench_recall.py --db 'postgresql://memsdk@/memsdk?host=/tmp/pg'
    .venv/bin/python bench/bench_recall.py --speed 100000  # latency at 100k memories
    .venv/bin/python bench/bench_recall.py --speed 100000 --db 'postgresql://memsdk@/memsdk?host=/tmp/pg'
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from random import Random
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from places import Places

from plugin_sdk import Store, recall, validate_pack
from plugin_sdk.store.search.engine import stopwords
from plugin_sdk.store.search.query import any_of, parse
from plugin_sdk.store.search.ranking import set_setting

DATA = Path(__file__).parent / "data" / "recall" / "recall.json"
KS = (1, 5, 10, 20)
CATEGORY = "CHAT"
PACK = {
    "format": 1,
    "name": "chat",
    "version": "1.0.0",
    "description": "One category for the turns of a conversation.",
    "categories": {
        CATEGORY: {
            "kind": "content",
            "priority": 10,
            "criteria": {
                "definition": "A turn of a conversation, as said.",
                "positive_examples": ["Maya: I start at the clinic on Monday"],
                "negative_examples": [],
                "exclusions": [],
            },
        }
    },
}


SETTINGS: dict[str, Any] = {}  # --set name=value: search settings for every store (tuning)
DATED = [True]  # --undated: the same turns written with no occurred_at
PLACES: list[Places] = []  # --db postgresql://…: each conversation's store a fresh schema there
#: FTS5 statements: on PostgreSQL these methods are left out (the table says so).
SQLITE_ONLY = ("fts_and (baseline)", "fts_or (baseline)", "and_first (measured)")
OFFTOPIC = Path(__file__).parent / "data" / "offtopic" / "prompts.txt"


def offtopic_prompts(split: str) -> list[str]:
    """The off-topic prompts of ``split``: odd prompts tune, even ones test (see the file)."""
    lines = [line.strip() for line in OFFTOPIC.read_text("utf-8").splitlines()]
    prompts = [line for line in lines if line and not line.startswith("#")]
    return prompts[0::2] if split == "tune" else prompts[1::2]


def build_store(conversation: dict[str, Any], plugins: Any = None) -> tuple[Store, dict[int, str]]:
    """A fresh store holding the conversation, and memory id -> turn id.

    In memory on SQLite; with ``--db``, in a new schema of that database.
    """
    place = PLACES[0].new("recall.db") if PLACES else ":memory:"
    store = Store(place, project="bench-recall", plugins=plugins)
    store.packs.install(validate_pack(PACK, source="bench_recall"))
    for name, value in SETTINGS.items():
        set_setting(store, name, value)
    items, turn_ids = [], []
    for session in conversation["sessions"]:
        for turn in session["turns"]:
            items.append(
                {
                    "content": f"{turn['speaker']}: {turn['text']}",
                    "category": CATEGORY,
                    **({"occurred_at": session["date"]} if DATED[0] else {}),
                }
            )
            turn_ids.append(turn["id"])
    results = store.memories.write_many(items)
    if plugins is not None:  # hybrid: embed every turn (the dreamer's embed task, all batches)
        from plugin_sdk import Dreamer

        Dreamer(store).run("embed")
    return store, {result.id: turn_id for result, turn_id in zip(results, turn_ids, strict=True)}


def fts_and(store: Store, question: str) -> list[int]:
    """Baseline: the AND of every word, quoted (sqlite-utils' quote_fts), bm25."""
    match = store.db.quote_fts(question)
    if not match.replace('"', "").strip():
        return []
    return _fts(store, match)


def fts_or(store: Store, question: str) -> list[int]:
    """Baseline: an OR of the content words, bm25 alone."""
    words = parse(question, stopwords(store, "en")).words
    return _fts(store, any_of(words)) if words else []


def _fts(store: Store, match: str) -> list[int]:
    sql = """SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?
             ORDER BY rank, rowid LIMIT 20"""
    try:
        return [row[0] for row in store.db.execute(sql, [match])]
    except Exception:  # a baseline that cannot parse a question finds nothing
        return []


def and_first(store: Store, question: str) -> list[int]:
    """The alternative to OR: the AND of the content words first (bm25), then search's list."""
    words = parse(question, stopwords(store, "en")).words
    first = _fts(store, " AND ".join(f'"{w}"' for w in words)) if words else []
    return list(dict.fromkeys([*first, *run_search(store, question)]))[:20]


def rm3(store: Store, question: str, docs: int = 3, terms: int = 2) -> list[int]:
    """Pseudo-relevance feedback, RM3-style (measured; not in search).

    The relevance model of the top ``docs`` hits: each word's probability in
    a hit (its count over the hit's length) weighted by the hit's share of
    the hits' scores; the ``terms`` most probable content words not in the
    question are added to it and the question searched again. Search takes
    no per-word weights, so the interpolation with the original query is
    the coverage term's: the question's own words stay the majority.
    """
    hits = store.memories.search(question, limit=docs)
    stop = stopwords(store, "en")
    asked = set(parse(question, stop).words)
    total = sum(max(hit.score, 0.0) for hit in hits) or 1.0
    model: dict[str, float] = {}
    for hit in hits:
        words = [w for w in parse(hit.memory.content, stop).words if len(w) > 2]
        for word in words:
            if word not in asked:
                model[word] = model.get(word, 0.0) + max(hit.score, 0.0) / total / len(words)
    extra = sorted(model, key=lambda w: (-model[w], w))[:terms]
    return run_search(store, " ".join([question, *extra]))


def run_search(store: Store, question: str) -> list[int]:
    return [hit.memory.id for hit in store.memories.search(question, limit=20)]


def run_recall(store: Store, question: str) -> list[int]:
    return list(recall(store, question, budget=1500).shown)


# Hybrid: the built-in vector plugin (``plugins/vector_search.py``) answers
# ``search_candidates`` from the vectors of the host's embedder; here the
# embedder is memsdk's deterministic test embedder (hashed character
# n-grams, no model), and every turn is embedded on write.
def hybrid_plugins(embedder: str = "hash") -> Any:
    from plugin_sdk.plugin import make_plugin_manager
    from plugin_sdk.testing import HashEmbedder

    plugins = make_plugin_manager()
    if embedder == "minilm":
        sys.path.insert(0, str(Path(__file__).parent))
        from minilm import MiniLMEmbedder

        if "model" not in _MINILM:
            _MINILM["model"] = MiniLMEmbedder(Path(tempfile.gettempdir()) / "memsdk-minilm.pkl")
        plugins.register(_MINILM["model"], name="minilm")
    else:
        plugins.register(HashEmbedder(dim=256), name="test-embedder")
    return plugins


_MINILM: dict[str, Any] = {}


METHODS: dict[str, Callable[[Store, str], list[int]]] = {
    "fts_and (baseline)": fts_and,
    "fts_or (baseline)": fts_or,
    "search": run_search,
    "recall(1500)": run_recall,
    "and_first (measured)": and_first,
    "rm3 (measured)": rm3,
}


def score(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    out = {f"r@{k}": sum(1 for r in ranks if r is not None and r <= k) / n for k in KS}
    out["mrr"] = sum(1 / r for r in ranks if r) / n
    out["found"] = sum(1 for r in ranks if r is not None) / n
    return out


def evaluate(
    split: str,
    methods: dict[str, Callable[[Store, str], list[int]]],
    plugins: Any = None,
    offtopic: list[str] | None = None,
) -> dict[str, Any]:
    """Ranks per method and question type; with ``offtopic``, also the share of those
    prompts (asked of every store of the split) that get a recall block."""
    data = json.loads(DATA.read_text("utf-8"))
    ranks: dict[str, dict[str, list[int | None]]] = {m: {} for m in methods}
    blocks: list[bool] = []
    for conversation in data["conversations"]:
        questions = [
            q
            for q in data["questions"]
            if q["conversation"] == conversation["id"] and q["split"] == split
        ]
        if not questions:
            continue
        store, turn_of = build_store(conversation, plugins)
        for question in questions:
            evidence = set(question["evidence"])
            for name, method in methods.items():
                got = [turn_of.get(i) for i in method(store, question["question"])]
                rank = next((n for n, t in enumerate(got, 1) if t in evidence), None)
                for key in ("all", question["type"]):
                    ranks[name].setdefault(key, []).append(rank)
        for prompt in offtopic or []:
            blocks.append(bool(recall(store, prompt, budget=1500, record=False).shown))
        store.close()
        for places in PLACES:
            places.close()  # the conversation's schema
    results = {m: {k: score(r) for k, r in by.items()} for m, by in ranks.items()}
    if offtopic:
        results["off-topic prompts with a block"] = sum(blocks) / len(blocks)
    return results


def print_table(results: dict[str, Any], split: str) -> None:
    base = results.get("fts_or (baseline)", {}).get("all", {}).get("r@10") or None
    print(f"split: {split}")
    columns = ("r@1", "r@5", "r@10", "r@20", "mrr", "found")
    print(
        f"{'method':<22}"
        + "".join(f"{c:>8}" for c in ("r@1", "r@5", "r@10", "r@20", "MRR", "in list"))
        + "   r@10 vs OR"
    )
    share = results.pop("off-topic prompts with a block", None)
    for name, by in results.items():
        row = by["all"]
        print(
            f"{name:<22}"
            + "".join(f"{row[c]:>8.3f}" for c in columns)
            + (f"   {row['r@10'] / base:>6.2f}x" if base else "")
        )
    print("\nr@10 per question type:")
    types = [t for t in next(iter(results.values())) if t != "all"]
    print(f"{'method':<22}" + "".join(f"{t:>11}" for t in types))
    for name, by in results.items():
        print(f"{name:<22}" + "".join(f"{by[t]['r@10']:>11.3f}" for t in types))
    if share is not None:
        print(f"\noff-topic prompts that get a recall block: {share:.3f} (goal: at most 0.10)")


def speed(size: int, queries: int, db: str | None = None, *, vacuum: bool = True) -> dict[str, Any]:
    """Search and recall latency on a store file of ``size`` memories made of the dataset's turns.

    ``db``: a ``postgresql://`` URL; the store is then a fresh schema there,
    dropped after. On PostgreSQL the store is measured as it is in use: after
    ``VACUUM ANALYZE``, the pass autovacuum makes within a minute of a bulk load
    (``autovacuum_naptime``; the insert threshold is 1,000 rows). ``vacuum=False``
    (``--no-vacuum``) measures it straight after the load, with ``ANALYZE`` only.

    Each turn is repeated with a serial number (``(note N)``), so every word
    recurs ``size / 1,649`` times and more, and ``note`` is in every memory.
    The common-word queries are made of such words. Each query is timed 3
    times and its minimum kept; medians and p95 are over the queries.
    """
    data = json.loads(DATA.read_text("utf-8"))
    turns = [
        (f"{t['speaker']}: {t['text']}", s["date"])
        for c in data["conversations"]
        for s in c["sessions"]
        for t in c["sessions"][0]["turns"] + s["turns"]
    ]
    rng = Random(14)
    folder = tempfile.TemporaryDirectory()
    places = Places(folder.name, db)
    store = Store(places.new("speed.db"), project="bench-speed")
    store.packs.install(validate_pack(PACK, source="bench_recall"))
    for name, value in SETTINGS.items():  # --set applies here too
        set_setting(store, name, value)
    batch = []
    for i in range(size):
        text, date = turns[i % len(turns)]
        batch.append({"content": f"{text} (note {i})", "category": CATEGORY, "occurred_at": date})
        if len(batch) == 5000:
            store.memories.write_many(batch)
            batch = []
    if batch:
        store.memories.write_many(batch)
    if db:  # the store's own tables: the database may hold other schemas
        tables = [
            row[0]
            for row in store.db.execute(
                "SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema()"
            )
        ]
        store.db.execute(("VACUUM ANALYZE " if vacuum else "ANALYZE ") + ", ".join(tables))
    questions = [q["question"] for q in data["questions"]]
    picked = rng.sample(questions, min(queries, len(questions)))
    common = ["what did you say about the note", "note", "Maya Tom note", "how are you doing today"]
    timings: dict[str, list[float]] = {
        "search": [],
        "search (common words)": [],
        "recall(1500)": [],
    }
    for question in picked:
        timings["search"].append(_time(store.memories.search, question, limit=20))
        timings["recall(1500)"].append(_time(recall, store, question, budget=1500, record=False))
    for question in common * max(1, queries // 20):
        timings["search (common words)"].append(_time(store.memories.search, question, limit=20))
    store.close()
    places.close()
    folder.cleanup()
    return {
        name: {
            "median_ms": round(statistics.median(values), 2),
            "p95_ms": round(sorted(values)[int(0.95 * (len(values) - 1))], 2),
        }
        for name, values in timings.items()
    }


def _time(call: Callable[..., object], *args: Any, **kwargs: Any) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        call(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "test"), default="test")
    parser.add_argument("--only", help="comma-separated method names to run")
    parser.add_argument("--speed", type=int, metavar="N", help="latency at N memories instead")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--no-vacuum",
        action="store_true",
        help="with --speed --db: measure straight after the load, before autovacuum's pass",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--hybrid", action="store_true", help="also search with hash vectors")
    parser.add_argument("--minilm", action="store_true", help="also search with MiniLM vectors")
    parser.add_argument("--undated", action="store_true", help="turns with no occurred_at")
    parser.add_argument(
        "--db",
        help="a postgresql:// URL: each store in a fresh schema there (quality runs leave out "
        "the FTS5 baselines)",
    )
    args = parser.parse_args(argv)
    for item in args.set:
        name, _, value = item.partition("=")
        SETTINGS[name] = json.loads(value) if value[:1].isdigit() or value[:1] == "-" else value
    if args.speed:
        result = speed(args.speed, args.queries, args.db, vacuum=not args.no_vacuum)
        print(json.dumps(result, indent=2) if args.json else _speed_text(args.speed, result))
        return 0
    methods = dict(METHODS)
    if args.only:
        wanted = set(args.only.split(","))
        methods = {
            k: v for k, v in methods.items() if k.split(" ")[0] in wanted or k.startswith("fts_or")
        }
    DATED[0] = not args.undated
    print("mode:", "undated (no occurred_at)" if args.undated else "dated")
    if args.db:
        PLACES.append(Places(tempfile.gettempdir(), args.db))
        methods = {k: v for k, v in methods.items() if k not in SQLITE_ONLY}
        print("engine: postgresql (FTS5 baselines left out)")
    try:
        results = evaluate(args.split, methods, offtopic=offtopic_prompts(args.split))
        for wanted, embedder in ((args.hybrid, "hash"), (args.minilm, "minilm")):
            if wanted:
                hybrid = evaluate(args.split, {"search": run_search}, hybrid_plugins(embedder))
                results[f"search ({embedder} hybrid)"] = hybrid["search"]
    finally:
        for places in PLACES:
            places.close()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_table(results, args.split)
    return 0


def _speed_text(size: int, result: dict[str, Any]) -> str:
    lines = [f"{size} memories"]
    for name, row in result.items():
        lines.append(
            f"{name:<24} median {row['median_ms']:>7.2f} ms   p95 {row['p95_ms']:>7.2f} ms"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
