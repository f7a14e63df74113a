"""PostgreSQL's postings (``search_postings``, m031) stay those of the live memories.

Search reads a rare word's rows, their counts, lengths and read rule from
``search_postings`` (one row a live memory and lexeme), kept by statement
triggers on ``memories``. Whatever path changes memories (a write, a batch,
an edit, an archive, a forget, a change of scope, raw SQL, a delete), the
table must equal the postings derived afresh from the live rows, and search
must find what the GIN index and the heap give (the statement before m031).

Needs a server: ``MEMSDK_TEST_POSTGRES`` (``tests/conftest.py``).
"""

from __future__ import annotations

import contextlib
import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin_sdk import Store
from plugin_sdk.errors import DuplicateMemory, ForgottenText
from plugin_sdk.store import driver
from plugin_sdk.store import forget as forgetting
from plugin_sdk.store.postgres import search as pgsearch
from tests.conftest import POSTGRES_URL

pytestmark = pytest.mark.skipif(not POSTGRES_URL, reason="MEMSDK_TEST_POSTGRES is not set")

WORDS = ["cache", "deploy", "queue", "lease", "shard", "probe", "drain", "rotate", "token"]
PROJECT = "alpha"
_RAW = itertools.count()

POSTINGS = "SELECT lexeme, memory_id, tf, len, project, shared FROM search_postings"
DERIVED = """SELECT u.lexeme, m.id, cardinality(u.positions), m.search_len, m.project,
                    m.scope = 'global' AND m.shareable = 1
             FROM memories m CROSS JOIN LATERAL unnest(m.search) u WHERE m.status = 'active'"""


def postings(store: Store) -> list[tuple[Any, ...]]:
    return sorted(tuple(row) for row in store.db.conn.execute(POSTINGS))


def derived(store: Store) -> list[tuple[Any, ...]]:
    return sorted(tuple(row) for row in store.db.conn.execute(DERIVED))


def open_pg(postgres_templates: Any, made: list[str], ops_pack: Any) -> Store:
    url = postgres_templates.new()
    made.append(url)
    store = Store(url, project=PROJECT)
    store.packs.install(ops_pack)
    return store


def category(store: Store) -> str:
    return str(store.db.execute("SELECT name FROM categories ORDER BY name LIMIT 1").fetchone()[0])


texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("write"), texts),
        st.tuples(st.just("batch"), st.lists(texts, min_size=1, max_size=6)),
        st.tuples(st.just("edit"), st.integers(0, 20), texts),
        st.tuples(st.just("archive"), st.integers(0, 20)),
        st.tuples(st.just("forget"), st.integers(0, 20)),
        st.tuples(st.just("share"), st.integers(0, 20)),
        st.tuples(st.just("seen"), st.integers(0, 20)),
        st.tuples(st.just("raw"), texts),
        st.tuples(st.just("raw_delete"), st.integers(0, 20)),
    ),
    min_size=1,
    max_size=12,
)


def apply(store: Store, op: tuple[Any, ...], name: str) -> None:
    with contextlib.suppress(ForgottenText):  # writing a forgotten text again is refused
        _apply(store, op, name)


def _apply(store: Store, op: tuple[Any, ...], name: str) -> None:
    live = [m.id for m in store.memories.list(limit=100)]
    kind = op[0]
    if kind == "write":
        store.memories.write(op[1], name)
    elif kind == "batch":
        store.memories.write_many([{"content": text, "category": name} for text in op[1]])
    elif kind == "raw":
        store.db.conn.execute(
            """INSERT INTO memories (project, kind, category, content, normalized_hash,
                   token_count, tokenizer, created_at, updated_at, last_seen_at)
               SELECT project, kind, category, ?, ?, 1, tokenizer, created_at, updated_at,
                   last_seen_at FROM memories ORDER BY id LIMIT 1""",
            [op[1], f"raw:{next(_RAW)}"],
        )
    elif live:
        memory_id = live[op[1] % len(live)]
        if kind == "edit":
            with contextlib.suppress(DuplicateMemory):
                store.memories.update(memory_id, content=f"{op[2]} edited")
        elif kind == "archive":
            store.memories.archive(memory_id)
        elif kind == "forget":
            forgetting.forget(store, memory_id, reason="test")
        elif kind == "share":  # the read rule's columns, by raw SQL
            store.db.conn.execute(
                "UPDATE memories SET scope = 'global', shareable = 1 - shareable WHERE id = ?",
                [memory_id],
            )
        elif kind == "seen":  # a change of nothing search reads
            store.db.conn.execute(
                "UPDATE memories SET seen_count = seen_count + 1 WHERE id = ?", [memory_id]
            )
        else:
            # a raw DELETE; one of a row others refer to is refused, and nothing changes
            with contextlib.suppress(driver.Error), store.db.atomic():
                store.db.execute("DELETE FROM memories WHERE id = ?", [memory_id])


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=ops)
def test_the_postings_are_those_of_the_live_memories_after_any_changes(
    postgres_templates, ops_pack, steps
):
    made: list[str] = []
    try:
        with open_pg(postgres_templates, made, ops_pack) as store:
            name = category(store)
            store.memories.write("seed " + " ".join(WORDS[:3]), name)
            for op in steps:
                apply(store, op, name)
                assert postings(store) == derived(store), op
    finally:
        for url in made:
            postgres_templates.drop(url)


def test_a_forgotten_memorys_words_leave_the_postings(postgres_templates, ops_pack):
    made: list[str] = []
    try:
        with open_pg(postgres_templates, made, ops_pack) as store:
            name = category(store)
            kept = store.memories.write("rotate the lease token weekly", name)
            secret = store.memories.write("the vault password is hunter2secretxyz", name)
            assert any(row[0] == "hunter2secretxyz" for row in postings(store))
            forgetting.forget(store, secret.id, reason="a secret")
            assert not any(row[0] == "hunter2secretxyz" for row in postings(store))
            assert not any(row[1] == secret.id for row in postings(store))
            assert any(row[1] == kept.id for row in postings(store))
    finally:
        for url in made:
            postgres_templates.drop(url)


# The statement before m031: each rare word's rows from the GIN index and the
# heap, its occurrences by ts_rank_cd, all rows sorted by a window; phrases from
# those rows' tsvectors. Kept here as the reference the postings must equal.
_HEAP_BEST = """), hit AS MATERIALIZED (
    SELECT rare.k, rare.n, h.* FROM rare CROSS JOIN LATERAL (
        SELECT id, search_len AS len, search, {readable} AS ok
        FROM memories WHERE status = 'active' AND search @@ rare.query
    ) h
), best AS (
    SELECT k, id, score FROM (
        SELECT k, id, score, row_number() OVER (PARTITION BY k ORDER BY score DESC, id) AS place
        FROM (
            SELECT hit.k, hit.id, {bm25} AS score
            FROM hit JOIN rare ON rare.k = hit.k CROSS JOIN stats
            CROSS JOIN LATERAL (
                SELECT ts_rank_cd('{{1,1,1,1}}', hit.search, rare.one, 0)::integer AS tf OFFSET 0
            ) f
            WHERE hit.ok
        ) scored
    ) placed WHERE place <= :cap
), pair AS MATERIALIZED ("""


_HEAP_PHRASE = """), phrase AS (
    SELECT j, id, len, tf, count(*) OVER (PARTITION BY j) AS held FROM (
        SELECT pair.j, m.id, m.search_len AS len,
               ts_rank_cd('{1,1,1,1}', m.search, pair.adjacent, 0)::integer AS tf
        FROM pair JOIN memories m ON m.status = 'active' AND m.search @@ pair.query OFFSET 0
    ) adjacent WHERE tf > 0
)"""


def _heap_statement() -> str:
    new = pgsearch._MATCHES
    start, end = new.index("), best AS ("), new.index("), pair AS MATERIALIZED (")
    heap = _HEAP_BEST.format(
        readable=pgsearch._READABLE_NAMED, bm25=pgsearch._bm25_sql("f.tf", "hit.len", "hit.n")
    )
    statement = new[:start] + heap + new[end + len("), pair AS MATERIALIZED (") :]
    start, end = statement.index("), phrase AS ("), statement.index("\nSELECT 's'")
    return statement[:start] + _HEAP_PHRASE + statement[end:]


def test_search_reads_from_the_postings_what_the_heap_gives(postgres_templates, ops_pack):
    """Rows and scores for single words, pairs (phrases), common words and other
    projects' memories, shared or not, equal the heap's within float rounding."""
    made: list[str] = []
    try:
        with open_pg(postgres_templates, made, ops_pack) as store:
            name = category(store)
            rows = [
                {
                    "content": f"{WORDS[n % 9]} {WORDS[(n * 7) % 9]} {WORDS[n % 4]} note {n}",
                    "category": name,
                }
                for n in range(150)
            ] + [
                {"content": f"beacon lantern, lantern lantern beacon lantern {n}", "category": name}
                for n in range(6)
            ]
            store.memories.write_many(rows)
            other = Store(store.path, project="beta")
            other.memories.write_many(
                [{"content": f"beacon lantern beta {n}", "category": name} for n in range(20)]
            )
            other.db.execute(
                "UPDATE memories SET scope = 'global', shareable = 1 WHERE project = 'beta' "
                "AND content LIKE '%1'"
            )
            other.close()
            heap = _heap_statement()
            assert heap != pgsearch._MATCHES
            seen: set[str] = set()
            common: set[str] = set()
            for words in (
                ["cache"],
                ["deploy", "queue"],
                ["cache", "deploy"],
                ["note", "lease", "n0"],
                ["shard", "x"],
                ["lantern", "lantern"],
                ["beacon", "lantern", "x"],
            ):
                params = {
                    "words": words,
                    "first": words[:-1],
                    "second": words[1:],
                    "common_min": 10,
                    "common_share": 0.2,
                    "cap": 7,
                    "project": PROJECT,
                    "k1": pgsearch.K1,
                    "k1p": pgsearch.K1 + 1,
                    "one_b": 1 - pgsearch.B,
                    "b": pgsearch.B,
                }
                new = store.db.execute(pgsearch._MATCHES, params).fetchall()
                old = store.db.execute(heap, params).fetchall()
                assert _rounded(new) == _rounded(old), words
                seen.update(r[0] for r in new)
                common.update(words[r[1] - 1] for r in new if r[0] == "h" and r[3] > _cutoff(new))
            assert seen == {"s", "h", "b", "p"}  # scored rows and phrases were compared
            assert common  # and a common word, whose rows are never read
    finally:
        for url in made:
            postgres_templates.drop(url)


def _cutoff(rows: list[Any]) -> int:
    return int(next(r[2] for r in rows if r[0] == "s"))


def _rounded(rows: list[Any]) -> list[tuple[Any, ...]]:
    return sorted((r[0], r[1], r[2], None if r[3] is None else round(r[3], 9)) for r in rows)
