"""write_many (store/writing/bulk.py) against writing the same items one by one.

The bulk path checks, deduplicates and inserts a whole batch at once; the
one-by-one path (``write``) upserts row by row through the triggers. On any
batch, with repeats inside it and against the store, the two must end in the
same rows, seen counts, full-text matches and results.
"""

from __future__ import annotations

import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin_sdk import Store, resolve_pack
from plugin_sdk.errors import ForgottenText, InvalidMemory, UnknownCategory
from plugin_sdk.store import driver
from plugin_sdk.testing import StoreTemplates, fresh_plugin_manager

OPS = resolve_pack("ops")
CATEGORIES = ["OPS_RULES", "ENV_STATE", "INCIDENTS"]
WORDS = ["cache", "deploy", "queue", "lease", "shard", "probe"]
FIXED = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
# The same memory for deduplication: case, whitespace and a trailing period differ.
variants = st.sampled_from(
    [
        lambda s: s,
        str.upper,
        lambda s: s + ".",
        lambda s: "  " + s.replace(" ", "\n\t") + " ;",
    ]
)
items = st.fixed_dictionaries(
    {
        "content": st.builds(lambda text, change: change(text), texts, variants),
        "category": st.sampled_from(CATEGORIES),
    },
    optional={
        "importance": st.integers(1, 100),
        "occurred_at": st.sampled_from([None, "2026-01-02", "2026-03-04T05:06:07Z"]),
        "project": st.sampled_from(["alpha", "beta"]),
        "scope": st.sampled_from(["project", "global"]),
        "shareable": st.booleans(),
        "source": st.sampled_from(["", "chat"]),
    },
)


def open_copy(templates: StoreTemplates, directory: str, name: str) -> Store:
    path = templates.copy(Path(directory) / name, OPS)
    return Store(path, project="alpha", clock=lambda: FIXED, plugins=fresh_plugin_manager())


def one_by_one(store: Store, batch: list[dict[str, Any]]) -> list[Any]:
    return [store.memories.write(**item) for item in batch]


def batches(conn: Any) -> list[int]:
    """How many rows share each batch label, in label order: 0 or 1 batch per write_many call."""
    return [
        n
        for (n,) in conn.execute(
            "SELECT count(*) FROM memories WHERE batch IS NOT NULL GROUP BY batch ORDER BY batch"
        )
    ]


def end_state(store: Store) -> dict[str, Any]:
    conn = store.db.conn
    matches = {
        word: conn.execute(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid", [word]
        ).fetchall()
        for word in [*WORDS, "fts_scope:shared"]
    }
    conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")
    # Every column but ``batch``: rows one write_many call created share a batch
    # label (search's episodes), rows written one by one have none.
    columns = [c[1] for c in conn.execute("PRAGMA table_info(memories)") if c[1] != "batch"]
    return {
        "memories": conn.execute(
            f"SELECT {', '.join(columns)} FROM memories ORDER BY id"
        ).fetchall(),
        "batches": batches(conn),
        "toc_rank": conn.execute("SELECT * FROM toc_rank ORDER BY memory_id").fetchall(),
        "fts": matches,
        "paused": conn.execute("SELECT count(*) FROM insert_triggers_paused").fetchone()[0],
    }


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    before=st.lists(items, max_size=6),
    batch=st.lists(items, min_size=1, max_size=25),
)
def test_write_many_ends_where_writing_one_by_one_ends(memsdk_templates, before, batch):
    with tempfile.TemporaryDirectory(prefix="memsdk-bulk-") as directory:
        bulk = open_copy(memsdk_templates, directory, "bulk.db")
        single = open_copy(memsdk_templates, directory, "single.db")
        with bulk, single:
            one_by_one(bulk, before)
            one_by_one(single, before)
            bulk_results = bulk.memories.write_many(batch)
            single_results = one_by_one(single, batch)
            assert bulk_results == single_results
            state = end_state(bulk)
            other = end_state(single)
            new = sum(1 for r in bulk_results if r.created)
            assert state.pop("batches") == ([new] if new > 1 else [])
            assert other.pop("batches") == []
            assert state == other
            assert state["paused"] == 0
            seen = sum(row[0] for row in bulk.db.conn.execute("SELECT seen_count FROM memories"))
            assert seen == len(before) + len(batch)


@pytest.fixture
def alpha(tmp_path, memsdk_templates) -> Store:
    store = open_copy(memsdk_templates, str(tmp_path), "alpha.db")
    yield store
    store.close()


def test_forgotten_text_before_a_bad_item_is_named_first(alpha):
    gone = alpha.memories.write("Rotate the lease keys.", "OPS_RULES")
    alpha.memories.forget(gone.id)
    batch = [
        {"content": "New rule.", "category": "OPS_RULES"},
        {"content": "rotate the LEASE keys", "category": "OPS_RULES"},
        {"content": "", "category": "OPS_RULES"},
    ]
    with pytest.raises(ForgottenText, match="item 1"):
        alpha.memories.write_many(batch)
    # An item whose occurred_at is bad is still checked against forgotten texts first,
    # as a one-by-one write checks them before that field.
    batch[1]["occurred_at"] = "not a time"
    with pytest.raises(ForgottenText, match="item 1"):
        alpha.memories.write_many(batch)
    with pytest.raises(InvalidMemory, match="item 2"):
        alpha.memories.write_many([batch[0], batch[0], batch[2]])
    with pytest.raises(InvalidMemory, match="item 0: occurred_at"):
        alpha.memories.write_many([{**batch[0], "occurred_at": "not a time"}])
    with pytest.raises(UnknownCategory, match="item 1"):
        alpha.memories.write_many([batch[0], {"content": "x", "category": "NOPE"}])
    assert alpha.db.execute("SELECT count(*) FROM memories").fetchone()[0] == 1


def test_a_failed_batch_inside_a_transaction_leaves_the_triggers_on(alpha):
    with alpha.atomic():
        alpha.memories.write_many([{"content": "queue depth alarm", "category": "INCIDENTS"}])
        with pytest.raises(InvalidMemory):
            alpha.memories.write_many(
                [{"content": "shard probe", "category": "INCIDENTS"}, {"category": "INCIDENTS"}]
            )
        alpha.memories.write("lease probe failed", "INCIDENTS")  # through the trigger
    assert alpha.db.execute("SELECT count(*) FROM insert_triggers_paused").fetchone()[0] == 0
    ranked = alpha.db.execute("SELECT count(*) FROM toc_rank").fetchone()[0]
    assert ranked == 2  # the batch that failed left no ranking row
    assert [hit.memory.content for hit in alpha.memories.search("lease probe")] == [
        "lease probe failed"
    ]
    assert [hit.memory.content for hit in alpha.memories.search("queue alarm")] == [
        "queue depth alarm"
    ]


def test_new_ids_are_looked_up_when_sqlite_picks_them_at_random(alpha):
    # With the largest id taken, SQLite gives new rows free ids at random: the
    # batch cannot count on ids following the largest one.
    alpha.db.conn.execute(
        """INSERT INTO memories (id, project, kind, category, content, normalized_hash,
               created_at, updated_at, last_seen_at)
           VALUES (9223372036854775807, 'alpha', 'content', 'OPS_RULES', 'top', 'h', 'x', 'x', 'x')"""
    )
    alpha.db.conn.commit()
    results = alpha.memories.write_many(
        [
            {"content": "deploy cache", "category": "OPS_RULES"},
            {"content": "probe shard", "category": "OPS_RULES"},
            {"content": "DEPLOY cache.", "category": "OPS_RULES"},
        ]
    )
    assert [r.created for r in results] == [True, True, False]
    assert results[2].id == results[0].id and results[2].seen_count == 2
    for result, text in zip(results[:2], ["deploy cache", "probe shard"], strict=True):
        assert alpha.memories.get(result.id).content == text
        assert [hit.memory.id for hit in alpha.memories.search(text)] == [result.id]


def test_a_batch_sqlite_refuses_midway_leaves_nothing(alpha):
    # A value SQLite cannot store fails the insert itself, after the triggers paused.
    with pytest.raises(driver.Error):
        alpha.memories.write_many(
            [
                {"content": "cache lease", "category": "OPS_RULES"},
                {"content": "cache shard", "category": "OPS_RULES", "scope": ["not", "text"]},
            ]
        )
    conn = alpha.db.conn
    assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM insert_triggers_paused").fetchone()[0] == 0
    alpha.memories.write("cache lease", "OPS_RULES")
    assert [hit.memory.content for hit in alpha.memories.search("lease")] == ["cache lease"]
