"""Store benchmark: bulk writes with deduplication, and search latency.

What it measures, each against a baseline run in the same process:

- **writes**: ``store.memories.write_many`` in batches (one transaction per
  batch) of N generated memories, a fraction of which are repeats that
  deduplication must fold. Baseline: plain ``sqlite3`` ``executemany`` of the
  same rows (text hashed and token-counted beforehand, untimed) with an upsert
  (``INSERT ... ON CONFLICT DO UPDATE SET seen_count = seen_count + 1 ...``),
  one transaction per batch of the same size, into a store file memsdk
  created (its tables, indexes and triggers, the full-text index fed by its
  trigger), on a connection with memsdk's settings (foreign keys,
  ``synchronous``, page cache, checkpoint interval), so the ratio compares
  the code and not the settings. Each runs ``--ratio-reps`` times into fresh files, interleaved;
  medians. The two end states are compared (rows, seen counts, indexed rows).
  Also: one ``store.memories.write`` call (one transaction) per memory on the
  first items of the stream (commit-bound), how much of the bulk write time
  the tokenizer and the dedup hash would take, and the Python heap peak
  (``tracemalloc``) of an untimed ``write_many`` run over all N.
- **search**: ``store.memories.search(q, limit=10)`` (FTS5, bm25) over the
  store the bulk write built. Baseline: a naive scan,
  ``... WHERE project = ? AND status = 'active' AND content LIKE '%w%' ... LIMIT 10``
  with one ``LIKE`` per query word. Each query is timed ``--reps`` times and
  its minimum kept; medians and p95 are taken over the queries.

Stores are files in a temporary directory (WAL on disk, not ``:memory:``).
With ``--db postgresql://…`` each store is a fresh schema of that database
instead (dropped after), and the write baseline is psycopg ``executemany`` of
the same rows with the same upsert into a bare table (the same columns and
unique key; no triggers, no full-text column), one transaction per batch;
the end states compared are rows and seen counts. Beside it, as SQLite's, the
like-for-like baselines into memsdk's own schema (a fresh migrated store:
triggers, full-text columns, GIN index), on a connection with memsdk's
settings (``jit``, ``gin_pending_list_limit``), same batches, one transaction
each (``--own-baselines``): ``executemany`` of the same upsert, and ``copy``,
each batch ``COPY``-ed to a staging table then upserted in one statement (a
key's repeats inside the batch counted first); their end states are compared
on rows, seen counts and ``search_stats``. The own-schema ratio measures the
code, as SQLite's does; the bare-table ratio the code and the schema. The search baseline is the
same ``LIKE`` scan (``ILIKE`` on PostgreSQL).
The text generator is seeded, so two runs with the same flags write the
same memories and run the same queries.

Run from the repository root (full default run: about 6 minutes on 2 busy cores)::

    .venv/bin/python bench/bench_store.py
    .venv/bin/python bench/bench_store.py --n 20000 --queries 50 --ratio-reps 3   # quick look
    .venv/bin/python bench/bench_store.py --json > store.json       # results as JSON
    .venv/bin/python bench/bench_store.py --db 'postgresql://memsdk@/memsdk?host=/tmp/pg'
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from bisect import bisect_right
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from importlib import metadata
from itertools import accumulate
from pathlib import Path
from random import Random
from string import Formatter
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from places import Places, server_version

from plugin_sdk import Store, resolve_pack
from plugin_sdk.store.normalize import normalize, normalized_hash

PACK = "ops"
PROJECT = "bench"


def split_words(text: str) -> list[str]:
    return text.split()


# Word pools. Frequencies inside each pool follow a Zipf law over a seeded
# shuffle, so some words are everywhere and most are rare, as in real notes.
SERVICES = split_words(
    """nginx postgres redis kafka etcd consul vault haproxy envoy prometheus grafana
loki tempo alertmanager clickhouse elasticsearch rabbitmq memcached minio keycloak argocd
jenkins gitlab-runner coredns cert-manager ingress-nginx litellm vllm triton airflow spark
flink zookeeper cassandra mongodb mysql pgbouncer patroni traefik istio linkerd fluent-bit
vector otel-collector thanos velero harbor nats temporal sentry"""
)
# In-house services: DOMAIN-ROLE, e.g. billing-api, ledger-worker.
DOMAINS = split_words(
    """billing ledger checkout search catalog payments identity notify reports
inventory pricing shipping fraud media profile orders invoices audit export quota"""
)
ROLES = split_words("api worker cron gateway sync consumer indexer web")
HOST_PREFIXES = split_words(
    """web api db cache queue worker edge auth search batch ingest gw gpu build
mon log"""
)
ENVS = split_words("prod stg dev qa dr lab")
REGIONS = split_words("eu-west-1 eu-central-1 us-east-2 us-west-2 ap-south-1 fra1 ams3 nbg1")
VERBS = [  # (past, base)
    ("restarted", "restart"),
    ("upgraded", "upgrade"),
    ("rolled back", "roll back"),
    ("drained", "drain"),
    ("resized", "resize"),
    ("rotated", "rotate"),
    ("patched", "patch"),
    ("migrated", "migrate"),
    ("scaled", "scale"),
    ("failed over", "fail over"),
    ("throttled", "throttle"),
    ("evicted", "evict"),
    ("reindexed", "reindex"),
    ("vacuumed", "vacuum"),
    ("pinned", "pin"),
    ("disabled", "disable"),
    ("enabled", "enable"),
    ("redeployed", "redeploy"),
    ("cordoned", "cordon"),
    ("paused", "pause"),
    ("rebuilt", "rebuild"),
    ("purged", "purge"),
    ("promoted", "promote"),
    ("snapshotted", "snapshot"),
    ("benchmarked", "benchmark"),
    ("tuned", "tune"),
    ("capped", "cap"),
    ("moved", "move"),
    ("renewed", "renew"),
    ("silenced", "silence"),
]
NOUNS = split_words(
    """disk latency replica certificate quota pool timeout heap connection queue backlog
shard index snapshot backup migration deploy rollout node pod namespace volume partition
leader follower lag throughput error-rate memory cpu budget alert runbook dashboard ticket
key token secret route endpoint gateway cache eviction retention compaction checkpoint wal
autovacuum cronjob schedule window firewall subnet dns record ttl load-balancer health-check
probe limit request embedding model context prompt batch gpu vram kernel driver firmware raid
inode mount filesystem log trace metric span histogram cluster upstream downstream consumer
producer offset topic bucket lifecycle policy role binding webhook sidecar image registry
tag manifest chart release branch pipeline runner artifact lockfile dependency"""
)
ADJECTIVES = split_words(
    """slow stale full degraded flaky noisy healthy pinned deprecated manual nightly
weekly temporary permanent critical minor intermittent new old primary secondary read-only
hot cold large small idle busy partial orphaned"""
)
PEOPLE = split_words("alice bob priya chen marta omar kofi lena yusuf ines tomas aiko")
FILLER = split_words(
    """the a an on after before when because with from to in of and but so then until
during without via for is was not only all every each it this that at by if as"""
)
UNITS = split_words("ms s m h GiB MiB KiB % rps qps req/s")
TICKET_PREFIXES = split_words("PLAT OPS INC SRE DATA")

TEMPLATES = [
    "{service} on {host} {verb} after {noun} hit {number}",
    "{person} {verb} {service} to {version} in {env} ({ticket})",
    "{noun} {filler} {service} is {adj} since {date}; {verb_base} the {noun} every {number}",
    "set {noun} to {number} for {service} on {host}",
    "root cause: {adj} {noun} in {service} {version}, fixed by {commit}",
    "never {verb_base} {service} during the {noun} window; follow runbook {ticket}",
    "{service} {noun} in {region} is {adj}; {person} {verb} it on {date}",
    "{host} runs {service} {version} with {noun} {number} and {noun} {number}",
    "if {noun} on {host} goes above {number}, {verb_base} {service} first and page {person}",
    "{ticket}: {adj} {noun} {filler} {service}, {verb} {noun} and {verb} {noun}",
    "measured {noun} of {number} on {host} against {number} on {host}",
    "the {adj} {noun} of {service} lives at {host}:{port} in {region}",
    "{person} says {service} {version} breaks {noun} {filler} {adj} {noun}",
    "after {commit} the {noun} of {service} dropped from {number} to {number}",
    "{verb_base} {noun} with {service} only from {host}, never from {host}",
    "{service} needs {noun} {number} {filler} {noun} {number} {filler} {adj} {noun}",
]
QUERY_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]*[A-Za-z0-9]")
STRIP = ".,;:()`'\""


class Pool:
    """Words drawn with Zipf (1/rank) frequencies over a seeded shuffle."""

    def __init__(self, words: Sequence[Any], rng: Random) -> None:
        self.words = list(words)
        rng.shuffle(self.words)
        self.cum = list(accumulate(1 / (rank + 1) for rank in range(len(self.words))))
        self.total = self.cum[-1]

    def pick(self, rng: Random) -> Any:
        return self.words[bisect_right(self.cum, rng.random() * self.total)]


class Generator:
    """A seeded stream of memory texts over the store's categories, with repeats."""

    def __init__(self, categories: list[str], seed: int) -> None:
        self.rng = Random(seed)
        rng = self.rng
        self.categories = categories
        in_house = [f"{domain}-{role}" for domain in DOMAINS for role in ROLES]
        self.services = Pool(SERVICES + in_house, rng)
        self.cast: dict[str, list[str]] = {}
        self.hosts = Pool(HOST_PREFIXES, rng)
        self.envs = Pool(ENVS, rng)
        self.regions = Pool(REGIONS, rng)
        self.verbs = Pool(VERBS, rng)
        self.adjectives = Pool(ADJECTIVES, rng)
        self.people = Pool(PEOPLE, rng)
        self.filler = Pool(FILLER, rng)
        self.units = Pool(UNITS, rng)
        self.tickets = Pool(TICKET_PREFIXES, rng)
        # Each category gets its own bias: a topic share of the nouns and a
        # preferred subset of the sentence templates.
        self.topic_nouns = [Pool(rng.sample(NOUNS, len(NOUNS) // 3), rng) for _ in categories]
        self.all_nouns = Pool(NOUNS, rng)
        # A template as (literal text, slot name or None) pairs.
        parsed = [
            [(literal, field) for literal, field, _, _ in Formatter().parse(template)]
            for template in TEMPLATES
        ]
        self.templates = [Pool(rng.sample(parsed, 6), rng) for _ in categories]
        self.slots: dict[str, Callable[[int], str]] = {
            "service": lambda c: self.from_cast("service", lambda: self.services.pick(rng)),
            "host": lambda c: self.from_cast("host", self.host),
            "env": lambda c: self.envs.pick(rng),
            "region": lambda c: self.regions.pick(rng),
            "verb": lambda c: self.verbs.pick(rng)[0],
            "verb_base": lambda c: self.verbs.pick(rng)[1],
            "noun": lambda c: self.noun(c),
            "adj": lambda c: self.adjectives.pick(rng),
            "person": lambda c: self.from_cast("person", lambda: self.people.pick(rng)),
            "filler": lambda c: self.filler.pick(rng),
            "number": lambda c: f"{int(rng.paretovariate(1.2) * 10)}{self.units.pick(rng)}",
            "version": lambda c: f"{rng.randint(0, 17)}.{rng.randint(0, 30)}.{rng.randint(0, 12)}",
            "ticket": lambda c: f"{self.tickets.pick(rng)}-{rng.randint(100, 9999)}",
            "date": lambda c: f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "commit": lambda c: f"{rng.getrandbits(28):07x}",
            "port": lambda c: str(rng.choice((80, 443, 5432, 6379, 8080, 9090, 9092, 2379))),
        }

    def from_cast(self, slot: str, draw: Callable[[], str]) -> str:
        """Mostly the text's own few services, hosts and people; sometimes another."""
        cast = self.cast.setdefault(slot, [])
        if not cast or (len(cast) < 3 and self.rng.random() < 0.15) or self.rng.random() < 0.1:
            cast.append(draw())
            return cast[-1]
        return self.rng.choice(cast)

    def host(self) -> str:
        rng = self.rng
        return f"{self.hosts.pick(rng)}-{rng.randint(1, 40):02d}.{self.envs.pick(rng)}"

    def noun(self, category: int) -> str:
        pool = self.topic_nouns[category] if self.rng.random() < 0.6 else self.all_nouns
        return pool.pick(self.rng)

    def sentence(self, category: int) -> str:
        parts = []
        for literal, slot in self.templates[category].pick(self.rng):
            parts.append(literal)
            if slot:
                parts.append(self.slots[slot](category))
        return "".join(parts)

    def text(self, category: int) -> str:
        rng = self.rng
        # Mostly 10-120 words; a few long ones (runbooks, postmortems).
        long = rng.random() < 0.02
        target = rng.randint(200, 600) if long else int(rng.triangular(10, 121, 25))
        self.cast = {}
        words: list[str] = []
        while len(words) < target:
            sentence = self.sentence(category)
            words.extend((sentence[0].upper() + sentence[1:] + ".").split())
        text = " ".join(words[:target])
        return text if text.endswith(".") else text + "."

    def variant(self, text: str) -> str:
        """The same memory for deduplication: only case, whitespace, trailing period differ."""
        rng = self.rng
        out = text
        while out == text:
            change = rng.randrange(6)
            if change == 0:
                out = out.upper()
            elif change == 1:
                out = out.lower()
            elif change == 2:
                words = out.split(" ")
                i = rng.randrange(len(words))
                words[i] = words[i].swapcase()
                out = " ".join(words)
            elif change == 3:
                spaces = [i for i, ch in enumerate(out) if ch == " "]
                if spaces:
                    i = rng.choice(spaces)
                    out = out[:i] + rng.choice(("  ", "\n", " \t ", "\n\n")) + out[i + 1 :]
            elif change == 4:
                out = out[:-1] if out.endswith(".") else out + "."
            else:
                out = rng.choice(("  ", "\n", "\t")) + out + rng.choice(("  ", "\n", " "))
        return out

    def items(self, n: int, repeat_fraction: float) -> tuple[list[dict[str, Any]], int]:
        """``n`` memories, ``round(n * repeat_fraction)`` of them repeats of earlier ones."""
        rng = self.rng
        n_repeats = round(n * repeat_fraction)
        if n_repeats >= n:
            raise SystemExit("--repeat-fraction must leave at least one original memory")
        repeat_at = set(rng.sample(range(1, n), n_repeats))
        seen: set[tuple[str, str]] = set()
        originals: list[dict[str, Any]] = []
        items: list[dict[str, Any]] = []
        for position in range(n):
            if position in repeat_at:
                source = rng.choice(originals)
                item = dict(source, content=self.variant(source["content"]))
            else:
                category = rng.randrange(len(self.categories))
                while True:  # the originals must be distinct after normalization
                    content = self.text(category)
                    key = (self.categories[category], normalize(content))
                    if key not in seen:
                        seen.add(key)
                        break
                item = {
                    "content": content,
                    "category": self.categories[category],
                    "importance": rng.randint(5, 95),
                    "source": "bench",
                }
                originals.append(item)
            items.append(item)
        return items, n_repeats

    def queries(self, items: list[dict[str, Any]], count: int) -> list[str]:
        """``count`` queries of 1-3 content words taken from the generated texts."""
        rng = self.rng
        scaffolding = re.sub(r"\{\w+\}", " ", " ".join(TEMPLATES))
        skip = set(FILLER) | {w.strip(STRIP).lower() for w in scaffolding.split()}
        queries = []
        while len(queries) < count:
            text = rng.choice(items)["content"]
            stop = set(skip)
            words = []
            for raw in text.split():
                word = raw.strip(STRIP)
                if QUERY_WORD.fullmatch(word) and word.lower() not in stop:
                    stop.add(word.lower())  # once per query
                    words.append(word)
            if not words:
                continue
            k = min(len(words), rng.choices((1, 2, 3), weights=(4, 4, 2))[0])
            picks = sorted(rng.sample(range(len(words)), k))
            queries.append(" ".join(words[i] for i in picks))
        return queries


# Measurement helpers


def open_store(path: str | Path) -> Store:
    store = Store(path, project=PROJECT)
    if not store.packs.installed():
        store.packs.install(resolve_pack(PACK))
    store.tokenizer.count("warm up")  # loading the encoding is a one-off cost
    return store


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bulk_write(
    path: str, items: list[dict[str, Any]], batch: int
) -> tuple[float, list[float], int, int, Store]:
    store = open_store(path)
    results = []
    batch_times = []
    start = time.perf_counter()
    for first in range(0, len(items), batch):
        t0 = time.perf_counter()
        results.extend(store.memories.write_many(items[first : first + batch]))
        batch_times.append(time.perf_counter() - t0)
    elapsed = time.perf_counter() - start
    created = sum(1 for r in results if r.created)
    return elapsed, batch_times, created, len(results) - created, store


# What the plain-sqlite3 baseline runs: memsdk's own upsert, without RETURNING
# (``executemany`` returns no rows).
PLAIN_UPSERT = """
INSERT INTO memories (
    project, kind, category, content, normalized_hash, status, importance, scope,
    shareable, source, note, token_count, tokenizer, created_at, updated_at, last_seen_at,
    occurred_at
) VALUES (?, ?, ?, ?, ?, 'active', ?, 'project', 0, ?, NULL, ?, ?, ?, ?, ?, NULL)
ON CONFLICT (project, category, normalized_hash) DO UPDATE SET
    seen_count = seen_count + 1,
    last_seen_at = excluded.last_seen_at,
    occurred_at = coalesce(occurred_at, excluded.occurred_at)
"""


def plain_rows(path: str, items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The rows write_many would write, as parameters of :data:`PLAIN_UPSERT` (untimed)."""
    with open_store(path) as store:
        kinds = dict(store.db.conn.execute("SELECT name, kind FROM categories").fetchall())
        count, name, now = store.tokenizer.count, store.tokenizer.name, store.now()
    rows = []
    for item in items:
        text = item["content"].strip()
        category = item["category"]
        rows.append(
            (
                PROJECT,
                kinds[category],
                category,
                text,
                normalized_hash(text),
                item["importance"],
                item["source"],
                count(text),
                name,
                now,
                now,
                now,
            )
        )
    return rows


def end_state(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """Rows, the sum of seen counts and the rows in the full-text index."""
    rows, seen = conn.execute("SELECT count(*), sum(seen_count) FROM memories").fetchone()
    (indexed,) = conn.execute("SELECT count(*) FROM memories_fts_docsize").fetchone()
    return rows, seen, indexed


def pg_end_state(store: Store) -> tuple[int, int]:
    """Rows and the sum of seen counts (what the bare-table baseline can be compared on)."""
    rows, seen = store.db.execute("SELECT count(*), sum(seen_count) FROM memories").fetchone()
    return int(rows), int(seen)


#: The PostgreSQL baseline's bare table: the columns the upsert writes, its unique key.
PG_PLAIN_TABLE = """
CREATE TABLE plain_memories (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project TEXT NOT NULL, kind TEXT NOT NULL, category TEXT NOT NULL, content TEXT NOT NULL,
    normalized_hash TEXT NOT NULL, status TEXT NOT NULL, importance BIGINT NOT NULL,
    scope TEXT NOT NULL, shareable BIGINT NOT NULL, source TEXT, note TEXT,
    token_count BIGINT, tokenizer TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    last_seen_at TEXT NOT NULL, occurred_at TEXT, seen_count BIGINT NOT NULL DEFAULT 1,
    UNIQUE (project, category, normalized_hash)
)
"""
PG_PLAIN_UPSERT = (
    PLAIN_UPSERT.replace("INSERT INTO memories", "INSERT INTO plain_memories")
    .replace("?", "%s")
    .replace("seen_count = seen_count + 1", "seen_count = plain_memories.seen_count + 1")
    .replace("coalesce(occurred_at,", "coalesce(plain_memories.occurred_at,")
)


def pg_plain_write(
    places: Places, rows: list[tuple[Any, ...]], batch: int
) -> tuple[float, tuple[int, int]]:
    """Plain psycopg: ``executemany`` of the upsert per batch, one transaction each, bare table."""
    import psycopg

    place = places.new("plain")
    try:
        with psycopg.connect(place) as conn:
            conn.execute(PG_PLAIN_TABLE)
            conn.commit()
            start = time.perf_counter()
            for first in range(0, len(rows), batch):
                with conn.cursor() as cursor:
                    cursor.executemany(PG_PLAIN_UPSERT, rows[first : first + batch])
                conn.commit()
            elapsed = time.perf_counter() - start
            count, seen = conn.execute(
                "SELECT count(*), sum(seen_count) FROM plain_memories"
            ).fetchone()
            return elapsed, (int(count), int(seen))
    finally:
        places.remove(place)


#: The own-schema baseline's upsert: :data:`PLAIN_UPSERT` into memsdk's ``memories``
#: (PostgreSQL reads a bare column of the ``DO UPDATE`` as ambiguous, so qualified).
PG_OWN_UPSERT = (
    PLAIN_UPSERT.replace("?", "%s")
    .replace("seen_count = seen_count + 1", "seen_count = memories.seen_count + 1")
    .replace("coalesce(occurred_at,", "coalesce(memories.occurred_at,")
)
#: The columns of a :func:`plain_rows` row, in order (the COPY form's staging table).
PG_ROW_COLUMNS = (
    "project text, kind text, category text, content text, normalized_hash text, "
    "importance bigint, source text, token_count bigint, tokenizer text, created_at text, "
    "updated_at text, last_seen_at text"
)
_ROW_NAMES = [column.split()[0] for column in PG_ROW_COLUMNS.split(", ")]
#: The COPY form: a batch copied into a staging table, then the same upsert in one
#: statement. One statement cannot update a row twice, so a key's repeats inside
#: the batch are counted first (its first row kept, ``seen_count`` = how many),
#: and a repeat of an earlier batch's row adds that count: the same end state.
PG_OWN_COPY_UPSERT = """
INSERT INTO memories (
    project, kind, category, content, normalized_hash, status, importance, scope,
    shareable, source, note, token_count, tokenizer, created_at, updated_at, last_seen_at,
    occurred_at, seen_count
) SELECT project, kind, category, content, normalized_hash, 'active', importance, 'project',
    0, source, NULL, token_count, tokenizer, created_at, updated_at, last_seen_at, NULL, n
FROM (
    SELECT DISTINCT ON (project, category, normalized_hash) *,
        count(*) OVER (PARTITION BY project, category, normalized_hash) AS n
    FROM plain_batch ORDER BY project, category, normalized_hash, position
) AS first_seen ORDER BY position
ON CONFLICT (project, category, normalized_hash) DO UPDATE SET
    seen_count = memories.seen_count + excluded.seen_count,
    last_seen_at = excluded.last_seen_at,
    occurred_at = coalesce(memories.occurred_at, excluded.occurred_at)
"""
#: memsdk's connection settings the own-schema baseline copies (``postgres/database.py``).
PG_SETTINGS = ("jit", "gin_pending_list_limit")


def pg_own_state(conn: Any) -> tuple[int, int, int, int]:
    """Rows, the sum of seen counts, and the full-text counts (``search_stats``: rows, total length)."""
    rows, seen = conn.execute("SELECT count(*), sum(seen_count) FROM memories").fetchone()
    indexed, total = conn.execute("SELECT rows, total_len FROM search_stats").fetchone()
    return int(rows), int(seen), int(indexed), int(total)


def pg_own_write(
    places: Places, rows: list[tuple[Any, ...]], batch: int, method: str
) -> tuple[float, tuple[int, int, int, int]]:
    """Plain psycopg into a fresh memsdk store (its triggers, generated columns, GIN index).

    ``method`` ``executemany``: :data:`PG_OWN_UPSERT` per batch; ``copy``: each
    batch ``COPY``-ed to a staging table, then :data:`PG_OWN_COPY_UPSERT`. One
    transaction a batch, on a connection with memsdk's settings (:data:`PG_SETTINGS`).
    """
    import psycopg

    place = places.new(f"own-{method}")
    try:
        with open_store(place) as store:  # the schema memsdk creates, migrated, pack installed
            settings = {
                name: store.db.execute(f"SHOW {name}").fetchone()[0] for name in PG_SETTINGS
            }
        with psycopg.connect(place) as conn:
            for name, value in settings.items():
                conn.execute(f"SELECT set_config('{name}', %s, false)", [value])
            if method == "copy":
                conn.execute(
                    f"CREATE TEMP TABLE plain_batch (position bigint, {PG_ROW_COLUMNS}) "
                    "ON COMMIT DELETE ROWS"
                )
            conn.commit()
            copy_sql = f"COPY plain_batch (position, {', '.join(_ROW_NAMES)}) FROM STDIN"
            start = time.perf_counter()
            for first in range(0, len(rows), batch):
                chunk = rows[first : first + batch]
                with conn.cursor() as cursor:
                    if method == "copy":
                        with cursor.copy(copy_sql) as copy:
                            for position, row in enumerate(chunk):
                                copy.write_row((position, *row))
                        cursor.execute(PG_OWN_COPY_UPSERT)
                    else:
                        cursor.executemany(PG_OWN_UPSERT, chunk)
                conn.commit()
            elapsed = time.perf_counter() - start
            return elapsed, pg_own_state(conn)
    finally:
        places.remove(place)


def plain_write(
    path: str, rows: list[tuple[Any, ...]], batch: int
) -> tuple[float, tuple[int, int, int]]:
    """Plain sqlite3: ``executemany`` per batch, one transaction each, into a memsdk store file."""
    with open_store(path) as store:  # the schema memsdk creates, triggers included
        settings = connection_settings(store.db.conn)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for name, value in settings.items():  # as memsdk's connection has them
            conn.execute(f"PRAGMA {name} = {value}")
        start = time.perf_counter()
        for first in range(0, len(rows), batch):
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(PLAIN_UPSERT, rows[first : first + batch])
            conn.execute("COMMIT")
        elapsed = time.perf_counter() - start
        return elapsed, end_state(conn)
    finally:
        conn.close()
        remove_store(path)


#: The connection settings the plain baseline copies from memsdk's connection,
#: so the ratio compares the code, not the settings.
SETTINGS = ("foreign_keys", "synchronous", "cache_size", "wal_autocheckpoint")


def connection_settings(conn: sqlite3.Connection) -> dict[str, int]:
    return {name: int(conn.execute(f"PRAGMA {name}").fetchone()[0]) for name in SETTINGS}


def remove_store(path: str | Path) -> None:
    for name in (Path(path), Path(f"{path}-wal"), Path(f"{path}-shm")):
        name.unlink(missing_ok=True)


def heap_peak(places: Places, items: list[dict[str, Any]], batch: int) -> float:
    """Python heap peak (MiB, tracemalloc) of an untimed write_many run over ``items``."""
    path = places.new("heap.db")
    with open_store(path) as store:
        write_many = store.memories.write_many
        tracemalloc.start()
        try:
            for first in range(0, len(items), batch):
                write_many(items[first : first + batch])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    places.remove(path)
    return peak / 2**20


def single_writes(path: str, items: list[dict[str, Any]]) -> float:
    with open_store(path) as store:
        write = store.memories.write
        start = time.perf_counter()
        for item in items:
            write(
                item["content"],
                item["category"],
                importance=item["importance"],
                source=item["source"],
            )
        return time.perf_counter() - start


def batched_writes(path: str, items: list[dict[str, Any]], batch: int) -> float:
    with open_store(path) as store:
        start = time.perf_counter()
        for first in range(0, len(items), batch):
            store.memories.write_many(items[first : first + batch])
        return time.perf_counter() - start


def like_sql(words: int) -> str:
    likes = " AND content LIKE ?" * words
    return f"SELECT * FROM memories WHERE project = ? AND status = 'active'{likes} LIMIT 10"


def environment(tmp: str) -> dict[str, Any]:
    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    try:
        commit = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=7"],  # dirty: uncommitted edits
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = ""
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "memsdk": version("memsdk"),
        "commit": commit,
        "sqlite_utils": version("sqlite-utils"),
        "tiktoken": version("tiktoken"),
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "tmpdir": tmp,
        "loadavg_start": load_average(),
    }


def load_average() -> list[float] | None:
    """1, 5 and 15-minute load averages: other work on the machine skews the figures."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def run(args: argparse.Namespace) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="memsdk-bench-", dir=args.dir) as tmp,
        Places(tmp, args.db) as places,
    ):
        env = environment(tmp)
        env["engine"] = places.engine
        env["server"] = server_version(args.db) if args.db else f"SQLite {env['sqlite']}"
        pg = args.db is not None
        log(
            f"python {env['python']}, {env['server']}, {env['platform']}, "
            f"{env['cpu_count']} cpus; stores in {args.db or tmp}"
        )
        probe_place = places.new("probe.db")
        with open_store(probe_place) as probe:
            categories = probe.category_names()
        places.remove(probe_place)
        gen = Generator(categories, args.seed)
        t0 = time.perf_counter()
        items, n_repeats = gen.items(args.n, args.repeat_fraction)
        queries = gen.queries(items, args.queries)
        words = [len(item["content"].split()) for item in items]
        log(f"generated {args.n:,} memories in {time.perf_counter() - t0:.1f} s")

        # Writes: write_many and the plain-sqlite3 baseline, interleaved; the
        # first write_many store is kept for the checks and the search.
        rows_place = places.new("rows.db")
        rows_plain = plain_rows(rows_place, items)
        places.remove(rows_place)
        log(
            f"bulk write: write_many and the {'psycopg' if pg else 'plain sqlite3'} executemany baseline, {args.batch:,} per "
            f"transaction, {args.ratio_reps} runs each, interleaved ..."
        )
        many_s: list[float] = []
        plain_s: list[float] = []
        plain_states = set()
        # PostgreSQL's like-for-like baselines: into memsdk's own schema, by method.
        own = args.own_baselines if pg else []
        own_s: dict[str, list[float]] = {method: [] for method in own}
        own_states: set[tuple[int, int, int, int]] = set()
        store = None
        for rep in range(args.ratio_reps):
            order = ["many", "plain", *own]
            for which in order if rep % 2 == 0 else reversed(order):
                if which in own_s:
                    log(f"  own-schema baseline ({which}), run {rep + 1} ...")
                    seconds, own_state = pg_own_write(places, rows_plain, args.batch, which)
                    own_s[which].append(seconds)
                    own_states.add(own_state)
                    continue
                if which == "plain":
                    if pg:
                        seconds, state = pg_plain_write(places, rows_plain, args.batch)
                    else:
                        seconds, state = plain_write(
                            places.new(f"plain-{rep}.db"), rows_plain, args.batch
                        )
                    plain_s.append(seconds)
                    plain_states.add(state)
                    continue
                log(f"  write_many, run {rep + 1} ...")
                path = places.new(f"bulk-{rep}.db")
                run_s, run_batches, run_created, run_folded, run_store = bulk_write(
                    path, items, args.batch
                )
                many_s.append(run_s)
                if store is None:
                    store = run_store
                    batch_times, created, folded = run_batches, run_created, run_folded
                else:
                    run_store.close()
                    places.remove(path)
        assert store is not None
        elapsed = statistics.median(many_s)
        many_state = pg_end_state(store) if pg else end_state(store.db.conn)
        many_own_state = pg_own_state(store.db) if own else None
        rows, seen = many_state[:2]
        checks = {
            "folded == generated repeats": folded == n_repeats,
            "created == originals": created == args.n - n_repeats,
            "rows in store == created": rows == created,
            "sum(seen_count) == n": seen == args.n,
            "the baseline ends in the same rows, seen counts (and index, SQLite)": plain_states
            == {many_state},
        }
        if own:
            checks["the own-schema baselines end in the same rows, seen counts, search_stats"] = (
                own_states == {many_own_state}
            )
        if not all(checks.values()):
            failed = ", ".join(name for name, ok in checks.items() if not ok)
            raise SystemExit(
                f"DEDUP CHECK FAILED ({failed}): generated {n_repeats:,} repeats, "
                f"write_many folded {folded:,} and created {created:,}; store has {rows:,} rows, "
                f"seen_count sum {seen:,}; write_many (rows, seen, indexed) {many_state}, "
                f"baseline {sorted(plain_states)}; own-schema: write_many {many_own_state}, "
                f"baselines {sorted(own_states)}"
            )
        heap_mib = math.nan
        if not args.no_heap:
            log(f"heap: write_many of all {args.n:,} under tracemalloc (untimed) ...")
            heap_mib = heap_peak(places, items, args.batch)
        per_batch_rate = [
            len(items[i * args.batch : (i + 1) * args.batch]) / t for i, t in enumerate(batch_times)
        ]
        texts = [item["content"].strip() for item in items]
        count = store.tokenizer.count
        t0 = time.perf_counter()
        for text in texts:
            count(text)
        tokenizer_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for text in texts:
            normalized_hash(text)
        hash_s = time.perf_counter() - t0

        sample = items[: min(args.baseline_n, args.n)]
        log(
            f"baseline: write() per memory on the first {len(sample):,}, {args.write_reps} runs ..."
        )
        single_s = []
        sample_s = []
        for rep in range(args.write_reps):
            place = places.new(f"single-{rep}.db")
            single_s.append(single_writes(place, sample))
            places.remove(place)
            place = places.new(f"sample-{rep}.db")
            sample_s.append(batched_writes(place, sample, args.batch))
            places.remove(place)
        single_rate = len(sample) / statistics.median(single_s)
        sample_many_rate = len(sample) / statistics.median(sample_s)
        bulk_rate = args.n / elapsed
        plain_rate = args.n / statistics.median(plain_s)
        write = {
            "n": args.n,
            "batch": args.batch,
            "repeats_generated": n_repeats,
            "created": created,
            "folded": folded,
            "words_median": statistics.median(words),
            "words_max": max(words),
            "bulk_seconds": elapsed,
            "bulk_seconds_runs": many_s,
            "bulk_rate": bulk_rate,
            "plain_seconds_runs": plain_s,
            "plain_rate": plain_rate,
            "ratio_bulk_vs_plain": bulk_rate / plain_rate,
            "own_seconds_runs": own_s,
            "own_rates": {m: args.n / statistics.median(t) for m, t in own_s.items()},
            "own_ratios": {m: bulk_rate * statistics.median(t) / args.n for m, t in own_s.items()},
            "ratio_reps": args.ratio_reps,
            "heap_peak_mib": heap_mib,
            "bulk_batch_rate_median": statistics.median(per_batch_rate),
            "bulk_first_batch_rate": per_batch_rate[0],
            "bulk_last_batch_rate": per_batch_rate[-1],
            "tokenizer": store.tokenizer.name,
            "tokenizer_seconds": tokenizer_s,
            "tokenizer_share": tokenizer_s / elapsed,
            "hash_seconds": hash_s,
            "hash_share": hash_s / elapsed,
            "baseline_n": len(sample),
            "baseline_runs": args.write_reps,
            "baseline_single_seconds": single_s,
            "baseline_single_rate": single_rate,
            "sample_write_many_seconds": sample_s,
            "sample_write_many_rate": sample_many_rate,
            "ratio_bulk_vs_single": bulk_rate / single_rate,
            "ratio_same_sample": sample_many_rate / single_rate,
        }

        # Search on the bulk store.
        if pg:
            store.db.execute("ANALYZE")  # what autovacuum does after a bulk load
            quoted_count = (
                "SELECT count(*) FROM memories WHERE status = 'active' "
                "AND search @@ plainto_tsquery('memsdk', memsdk_words(?))"
            )
        else:
            store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            quoted_count = "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?"
        log(f"search: {len(queries)} queries x {args.reps} runs, search() and LIKE scan ...")
        search = store.memories.search
        execute = store.db.execute
        for query in queries[:10]:  # warm the page cache and statement cache
            search(query, limit=10)
        per_query = []
        for query in queries:
            words_q = query.split()
            sql = like_sql(len(words_q))
            params = [PROJECT, *(f"%{w}%" for w in words_q)]
            fts_best = like_best = math.inf
            for _ in range(args.reps):
                t0 = time.perf_counter()
                hits = search(query, limit=10)
                t1 = time.perf_counter()
                found = execute(sql, params).fetchall()
                t2 = time.perf_counter()
                fts_best = min(fts_best, t1 - t0)
                like_best = min(like_best, t2 - t1)
            matched = query if pg else store.db.quote_fts(query)
            matches = execute(quoted_count, [matched]).fetchone()[0]
            if not hits or not found:
                raise SystemExit(
                    f"query {query!r} found nothing (FTS {len(hits)}, LIKE {len(found)}); "
                    "every query is taken from a stored text and must find it"
                )
            per_query.append(
                {
                    "query": query,
                    "fts_ms": fts_best * 1e3,
                    "like_ms": like_best * 1e3,
                    "fts_matches": matches,
                    "fts_hits": len(hits),
                    "like_hits": len(found),
                }
            )
        store.close()
        env["loadavg_end"] = load_average()

    fts = [q["fts_ms"] for q in per_query]
    like = [q["like_ms"] for q in per_query]
    buckets = []
    for label, low, high in (
        ("<= 10 matches", 0, 10),
        ("11-1,000", 11, 1000),
        ("> 1,000", 1001, math.inf),
    ):
        chosen = [q for q in per_query if low <= q["fts_matches"] <= high]
        if chosen:
            f = statistics.median(q["fts_ms"] for q in chosen)
            lk = statistics.median(q["like_ms"] for q in chosen)
            buckets.append(
                {
                    "bucket": label,
                    "queries": len(chosen),
                    "fts_ms": f,
                    "like_ms": lk,
                    "ratio": lk / f,
                }
            )
    search_result = {
        "store_rows": created,
        "queries": len(per_query),
        "reps": args.reps,
        "fts_median_ms": statistics.median(fts),
        "fts_p95_ms": percentile(fts, 0.95),
        "like_median_ms": statistics.median(like),
        "like_p95_ms": percentile(like, 0.95),
        "ratio_median": statistics.median(like) / statistics.median(fts),
        "ratio_p95": percentile(like, 0.95) / percentile(fts, 0.95),
        "by_match_count": buckets,
        "per_query": per_query,
    }
    return {
        "environment": env,
        "params": vars(args),
        "write": write,
        "search": search_result,
    }


def times(ratio: float) -> str:
    """A ratio as ``12.3x``; below 1, with two decimals (``0.03x``)."""
    return f"{ratio:.1f}x" if ratio >= 1 else f"{ratio:.2f}x"


def report(results: dict[str, Any]) -> str:
    env, w, s = results["environment"], results["write"], results["search"]
    pg = env.get("engine") == "postgresql"
    plain = "psycopg executemany, bare table" if pg else "plain sqlite3 executemany"
    plain_short = "psycopg baseline" if pg else "plain sqlite3"
    plain_note = (
        "same rows and upsert, hashed and counted beforehand; bare table, same batches"
        if pg
        else "same rows, hashed and counted beforehand; same schema, triggers and batches"
    )
    index = "tsvector search" if pg else "FTS5 search"
    lines = [
        "memsdk store benchmark" + (" (PostgreSQL)" if pg else ""),
        f"  {env['date']}; memsdk {env['memsdk']} ({env['commit'] or 'no git'}), "
        f"python {env['python']}, sqlite {env['sqlite']}, sqlite-utils {env['sqlite_utils']}, "
        f"tiktoken {env['tiktoken']}",
        f"  engine: {env.get('server', 'SQLite ' + env['sqlite'])}",
        f"  {env['platform']}, {env['cpu']}, os.cpu_count() = {env['cpu_count']}",
        f"  load average (1/5/15 min) at start {env['loadavg_start']}, at end {env['loadavg_end']}",
        "",
        f"Writes: {w['n']:,} memories ({w['repeats_generated']:,} repeats; "
        f"{w['words_median']:.0f} words median, {w['words_max']:,} max)",
        f"  write_many, {w['batch']:,} per transaction  {w['bulk_rate']:>10,.0f} memories/s"
        f"  ({w['bulk_seconds']:.1f} s, median of {w['ratio_reps']}; first run per batch: median "
        f"{w['bulk_batch_rate_median']:,.0f}/s, first {w['bulk_first_batch_rate']:,.0f}/s, "
        f"last {w['bulk_last_batch_rate']:,.0f}/s)",
        f"  baseline: {plain} {w['plain_rate']:>10,.0f} memories/s"
        f"  ({plain_note}; median of {w['ratio_reps']}, interleaved)",
        f"  write_many / {plain_short:<21} {times(w['ratio_bulk_vs_plain']):>10}"
        f"  (same end state: rows, seen counts{'' if pg else ', indexed rows'}: OK)",
    ]
    for method, rate in w.get("own_rates", {}).items():
        lines += [
            f"  baseline: psycopg {method}, own schema {rate:>8,.0f} memories/s"
            f"  (fresh migrated store: triggers, generated columns, GIN; median of {w['ratio_reps']})",
            f"  write_many / own-schema {method:<11} {times(w['own_ratios'][method]):>9}"
            "  (same end state: rows, seen counts, search_stats: OK)",
        ]
    lines += [
        f"  Python heap peak, write_many of all {w['n']:,}: {w['heap_peak_mib']:.1f} MiB"
        f"  (tracemalloc, untimed run)",
        f"  rows created / folded              {w['created']:>10,} / {w['folded']:,}"
        f"  (folded == generated repeats: OK)",
        f"  of which tokenizer.count           {w['tokenizer_seconds']:>10.1f} s"
        f"  ({w['tokenizer_share']:.0%} of the bulk write time)",
        f"  of which normalize + sha256        {w['hash_seconds']:>10.1f} s"
        f"  ({w['hash_share']:.0%})",
        f"  baseline: write(), 1 per transaction {w['baseline_single_rate']:>8,.0f} memories/s"
        f"  (first {w['baseline_n']:,} items, fresh store, median of {w['baseline_runs']})",
        f"  write_many on that same sample     {w['sample_write_many_rate']:>10,.0f} memories/s"
        f"  (median of {w['baseline_runs']})",
        "",
        f"Search: the bulk-write store ({s['store_rows']:,} rows), {s['queries']} queries of "
        f"1-3 words, min of {s['reps']} runs per query, then median / p95 over queries",
        "                                 median       p95",
        f"  {index + '(q, limit=10)':<26} {s['fts_median_ms']:>8.2f} ms {s['fts_p95_ms']:>8.2f} ms",
        f"  baseline: LIKE scan        {s['like_median_ms']:>8.2f} ms {s['like_p95_ms']:>8.2f} ms",
        "  by how many memories the FTS query matches (medians; FTS ranks every match,",
        "  LIKE stops at the first 10 rows it meets, so common words favour LIKE):",
    ]
    for b in s["by_match_count"]:
        lines.append(
            f"    {b['bucket']:<15} {b['queries']:>4} queries  FTS {b['fts_ms']:>8.2f} ms"
            f"  LIKE {b['like_ms']:>8.2f} ms  LIKE/FTS {times(b['ratio']):>7}"
        )
    lines += [
        "",
        "Summary                                   result      baseline     ratio",
        f"  write rate (memories/s)            {w['bulk_rate']:>11,.0f}"
        f" {w['plain_rate']:>13,.0f}"
        f"  {times(w['ratio_bulk_vs_plain']):>7}  write_many / {plain_short}",
        *(
            f"  write rate (memories/s)            {w['bulk_rate']:>11,.0f}"
            f" {rate:>13,.0f}  {times(w['own_ratios'][method]):>7}  write_many / own-schema {method}"
            for method, rate in w.get("own_rates", {}).items()
        ),
        f"  write rate (memories/s)            {w['bulk_rate']:>11,.0f}"
        f" {w['baseline_single_rate']:>13,.0f}"
        f"  {times(w['ratio_bulk_vs_single']):>7}  write_many / write()",
        f"  write rate, same {w['baseline_n']:,} items      {w['sample_write_many_rate']:>11,.0f}"
        f" {w['baseline_single_rate']:>13,.0f}  {times(w['ratio_same_sample']):>7}",
        f"  search median (ms)                 {s['fts_median_ms']:>11.2f}"
        f" {s['like_median_ms']:>13.2f}  {times(s['ratio_median']):>7}  LIKE / FTS",
        f"  search p95 (ms)                    {s['fts_p95_ms']:>11.2f}"
        f" {s['like_p95_ms']:>13.2f}  {times(s['ratio_p95']):>7}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories to write (default 100000)")
    parser.add_argument("--batch", type=int, default=1000, help="memories per write_many call")
    parser.add_argument(
        "--repeat-fraction", type=float, default=0.10, help="share of repeats (default 0.10)"
    )
    parser.add_argument(
        "--ratio-reps",
        type=int,
        default=3,
        help="runs each of write_many and the plain-sqlite3 baseline, interleaved (median)",
    )
    parser.add_argument(
        "--baseline-n", type=int, default=5000, help="items for the write() baseline"
    )
    parser.add_argument(
        "--write-reps", type=int, default=3, help="runs of the write baseline (median)"
    )
    parser.add_argument("--queries", type=int, default=200, help="search queries (default 200)")
    parser.add_argument("--reps", type=int, default=3, help="timings per query (minimum kept)")
    parser.add_argument("--seed", type=int, default=20260501, help="generator seed")
    parser.add_argument("--dir", default=None, help="where the temporary stores go")
    parser.add_argument(
        "--db",
        help="a postgresql:// URL: each store in a fresh schema there (default: SQLite files)",
    )
    parser.add_argument(
        "--own-baselines",
        type=lambda text: [m for m in text.split(",") if m],
        default=["executemany", "copy"],
        help="PostgreSQL: the psycopg baselines into memsdk's own schema, comma-separated "
        "(executemany, copy; default both; '' for none)",
    )
    parser.add_argument(
        "--no-heap",
        action="store_true",
        help="skip the untimed tracemalloc run (one write of all N)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    unknown = set(args.own_baselines) - {"executemany", "copy"}
    if unknown:
        parser.error(f"--own-baselines: unknown {', '.join(sorted(unknown))}")
    results = run(args)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(report(results))


if __name__ == "__main__":
    main()
