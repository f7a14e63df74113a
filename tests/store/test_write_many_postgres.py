"""write_many on PostgreSQL (store/postgres/memories.py) against one-by-one writes and SQLite.

On PostgreSQL a batch's new rows are one ``INSERT … SELECT FROM unnest`` and
its folds one ``UPDATE … FROM unnest``, with the TOC and near-duplicate
queues kept by statement triggers and the full-text index merged once. The
end state must be the one writing the items one by one leaves (rows, the
``search`` column and its length, the corpus counts, the TOC, the queues),
and the one SQLite's ``write_many`` leaves (results, ids, rows, TOC).

Needs a server: ``MEMSDK_TEST_POSTGRES`` (``tests/conftest.py``).
"""

from __future__ import annotations

import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from plugin_sdk import Store
from plugin_sdk.testing import fresh_plugin_manager
from tests.conftest import POSTGRES_URL
from tests.store.test_write_many import FIXED, OPS, items, one_by_one, open_copy

pytestmark = pytest.mark.skipif(not POSTGRES_URL, reason="MEMSDK_TEST_POSTGRES is not set")

from hypothesis import strategies as st  # noqa: E402


def open_pg(templates: Any, made: list[str]) -> Store:
    url = templates.new()
    made.append(url)
    store = Store(url, project="alpha", clock=lambda: FIXED, plugins=fresh_plugin_manager())
    store.packs.install(OPS)
    return store


def sqlite_columns(store: Store) -> list[str]:
    return [c[1] for c in store.db.conn.execute("PRAGMA table_info(memories)")]


def rows(store: Store, columns: list[str], extra: str = "") -> list[tuple[Any, ...]]:
    return [
        tuple(row)
        for row in store.db.conn.execute(
            f"SELECT {', '.join(columns)}{extra} FROM memories ORDER BY id"
        )
    ]


def keyed_state(store: Store, columns: list[str]) -> dict[str, Any]:
    """The PostgreSQL end state by key, not id: one-by-one upserts spend ids on repeats."""
    conn = store.db.conn
    shown = [c for c in columns if c not in ("id", "batch")]
    memories = {
        tuple(r[1:4]): (*r[4:],)
        for r in conn.execute(
            f"SELECT id, project, category, normalized_hash, {', '.join(shown)}, "
            "search::text, search_len FROM memories"
        )
    }
    key_of = {
        r[0]: tuple(r[1:])
        for r in conn.execute("SELECT id, project, category, normalized_hash FROM memories")
    }
    return {
        "memories": memories,
        "toc_rank": {key_of[r[0]]: tuple(r[1:]) for r in conn.execute("SELECT * FROM toc_rank")},
        "search_stats": tuple(conn.execute("SELECT rows, total_len FROM search_stats").fetchone()),
        "live": tuple(
            conn.execute(
                "SELECT count(*), coalesce(sum(search_len), 0) FROM memories WHERE status = 'active'"
            ).fetchone()
        ),
        "neardup_dirty": {
            key_of[r[0]] for r in conn.execute("SELECT memory_id FROM neardup_dirty")
        },
        "paused": conn.execute("SELECT count(*) FROM insert_triggers_paused").fetchone()[0],
    }


def toc(store: Store) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in store.db.conn.execute("SELECT * FROM toc_rank ORDER BY memory_id")]


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    before=st.lists(items, max_size=5),
    batch=st.lists(items, min_size=1, max_size=25),
)
def test_write_many_on_postgresql_ends_where_one_by_one_and_sqlite_end(
    postgres_templates, memsdk_templates, before, batch
):
    made: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="memsdk-bulk-") as directory:
            bulk = open_pg(postgres_templates, made)
            single = open_pg(postgres_templates, made)
            lite = open_copy(memsdk_templates, directory, "lite.db")
            with bulk, single, lite:
                columns = sqlite_columns(lite)
                if before:
                    bulk.memories.write_many(before)
                    lite.memories.write_many(before)
                one_by_one(single, before)
                results = bulk.memories.write_many(batch)
                # SQLite's write_many: the same results, ids, rows (batch labels too), TOC.
                assert results == lite.memories.write_many(batch)
                assert rows(bulk, columns) == rows(lite, columns)
                assert toc(bulk) == toc(lite)
                # One by one on PostgreSQL: the same rows, index, counts and queues.
                singles = one_by_one(single, batch)
                assert [(r.created, r.status, r.seen_count) for r in results] == [
                    (r.created, r.status, r.seen_count) for r in singles
                ]
                state = keyed_state(bulk, columns)
                assert state == keyed_state(single, columns)
                assert state["search_stats"] == state["live"]
                assert state["paused"] == 0
    finally:
        for url in made:
            postgres_templates.drop(url)


def test_a_batch_inside_a_transaction_gives_back_the_pending_list_limit(postgres_templates):
    made: list[str] = []
    words = ["cache", "deploy", "queue", "lease", "shard", "probe", "drain", "rotate"]
    try:
        store = open_pg(postgres_templates, made)
        with store:
            with store.atomic():
                store.memories.write_many(
                    [
                        {
                            "content": f"{words[n % 8]} {words[(n + 3) % 8]} {n}",
                            "category": "OPS_RULES",
                        }
                        for n in range(300)
                    ]
                )
                # Raised for the batch's insert only: the store's own limit again after it.
                limit = store.db.conn.execute("SHOW gin_pending_list_limit").fetchone()[0]
            found = [hit.memory.content for hit in store.memories.search("shard 17")]
        assert limit == "64kB"
        assert found[0] == "deploy shard 17"
    finally:
        for url in made:
            postgres_templates.drop(url)
