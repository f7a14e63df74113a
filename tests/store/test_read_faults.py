"""Reads under faults: a full disk or a busy writer never fails a read, nothing it records is lost.

A read's records (a session's injection that ``delta`` needs, retrieval
counts, token counts) wait for the write lock like a write; when they still
cannot be written they are kept and written with the next successful write,
and ``memsdk doctor`` counts them.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin_sdk import Store, inject, validate_pack
from plugin_sdk.model.prompts import is_stale
from plugin_sdk.stages.expand import expand
from plugin_sdk.stages.inject import delta
from plugin_sdk.store import driver
from plugin_sdk.store.doctor import doctor
from plugin_sdk.testing import fresh_plugin_manager, pack_document


def open_store(path: Path) -> Store:
    return Store(path, project="quay", plugins=fresh_plugin_manager())


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "quay.db"
    with open_store(path) as store:
        store.packs.install(
            validate_pack(pack_document("quay", "1.0.0", {"QUAY_RULES": "content"}), source="t")
        )
        rules = store.category_names()[0]
        for i in range(20):
            store.memories.write(f"Moor boat {i} at the east quay, berth {i}.", rules)
        store.db.execute("CREATE TABLE filler (x TEXT)")
        store.db.conn.commit()
    return path


def fill_the_disk(store: Store) -> None:
    """No page more for this connection: the file is as big as it may grow, and full."""
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count = {pages}")
    rows = iter(range(10**9))
    fillers = [
        ("INSERT INTO filler VALUES (?)", lambda size: ["x" * size]),
        # the injections' own pages too, so a new session's row finds no room
        (
            """INSERT INTO injections (session_id, project, budget, tokens, text_hash, shown,
               created_at) VALUES (?, 'quay', 1, 1, 'h', '{}', 'now')""",
            lambda size: [f"{next(rows)}-" + "x" * size],
        ),
    ]
    for sql, values in fillers:
        for size in (2000, 200, 20, 1):  # big rows, then ever smaller ones into the gaps
            with pytest.raises(driver.OperationalError, match="full"):
                while True:
                    store.db.execute(sql, values(size))
                    store.db.conn.commit()
            if store.db.conn.in_transaction:
                store.db.conn.rollback()


def test_reads_answer_on_a_full_disk_and_their_records_follow_the_next_write(db):
    with open_store(db) as store:
        rules = store.category_names()[0]
        fill_the_disk(store)
        result = inject(store, session="s1")  # failed with "database or disk is full"
        assert "east quay" in result.text
        assert expand(store, 1).shown
        assert any("injection" in what for what, _ in store.pending.writes)
        store.db.execute("PRAGMA max_page_count = 1000000")  # space again
        store.memories.write("Tie up at the west quay.", rules)
        assert len(store.pending) == 0
        assert delta(store, "s1").text is not None  # the injection delta needs is there
        assert store.memories.get(1).retrieval_count >= 1
    found = {f.detail for f in doctor(db).findings if f.check == "read records"}
    assert any("session injection records written late" in d for d in found), found


def test_a_busy_writer_delays_a_reads_records_it_does_not_drop_them(db):
    with closing(driver.connect(db, isolation_level=None)) as other, open_store(db) as store:
        rules = store.category_names()[0]
        other.execute("BEGIN IMMEDIATE")
        store.db.execute("PRAGMA busy_timeout = 20")
        assert "east quay" in inject(store, session="s2").text
        assert len(store.pending) >= 1
        other.execute("COMMIT")
        store.memories.write("Tie up at the west quay.", rules)
        assert delta(store, "s2").text is not None
    assert any("written late" in f.detail for f in doctor(db).findings)


def test_records_still_pending_at_close_are_written_then(db):
    with open_store(db) as store:
        store.db.execute("PRAGMA query_only = 1")
        inject(store, session="s3")
        assert len(store.pending)
        store.db.execute("PRAGMA query_only = 0")
    with open_store(db) as store:
        assert delta(store, "s3").text is not None


def test_inject_with_a_session_records_the_prompt_hash(db):
    with open_store(db) as store:
        inject(store, session="s4")
        assert is_stale(store, "s4") is False  # raised NotFound: no hash recorded
        rules = store.category_names()[0]
        store.criteria.set(rules, "definition", "Where each boat is moored, berth by berth.")
        assert is_stale(store, "s4") is True


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("inject"), st.sampled_from(["a", "b", "c"])),
            st.tuples(st.just("expand"), st.integers(1, 20)),
            st.tuples(st.just("search"), st.sampled_from(["quay", "berth", "boat 3"])),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_no_read_fails_on_an_unwritable_store_and_no_record_is_lost(db, reads):
    sessions = set()
    with open_store(db) as store:
        store.db.execute("PRAGMA query_only = 1")  # every write fails, as on a read-only file
        for kind, arg in reads:
            if kind == "inject":
                assert inject(store, session=f"p-{arg}").text
                sessions.add(f"p-{arg}")
            elif kind == "expand":
                expand(store, arg)
            else:
                store.memories.search(arg)
        store.db.execute("PRAGMA query_only = 0")
        store.memories.write(f"Boat {len(reads)} left.", store.category_names()[0])
        assert len(store.pending) == 0
        for session in sessions:
            assert delta(store, session).text is not None
