"""The undo recording on both engines: typed values back exactly (through the JSON the
queue keeps), a row moved to another key put back, and on PostgreSQL the triggers
enabled only inside the recording and readers never held up by it."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import pytest

from plugin_sdk import Store
from plugin_sdk.errors import UndoRefused
from plugin_sdk.proposals.undo import RowChange, record, revert, tables
from plugin_sdk.testing import fresh_plugin_manager
from tests.proposals.test_queue import NOTES, ORCHARD_PACK, table_rows

BLOB = bytes(range(256)) * 2  # 4 * 128 bytes: every byte value, NUL included


@pytest.fixture
def store(new_store: Callable[..., Store]) -> Store:
    return new_store(ORCHARD_PACK, name="u.db", project="orchard", plugins=fresh_plugin_manager())


def everything(store: Store) -> dict[str, list[tuple]]:
    return {t.name: table_rows(store, t.name, t.key) for t in tables(store)}


def kept(changes: list[RowChange]) -> list[RowChange]:
    """The changes as the queue keeps them: through JSON and back."""
    return [RowChange.from_dict(json.loads(json.dumps(c.to_dict()))) for c in changes]


def add_vector(store: Store, memory_id: int, model: str, blob: bytes) -> None:
    store.db.execute(
        "INSERT INTO memory_vectors (model, memory_id, dim, vector, content_hash, embedded_at)"
        " VALUES (?, ?, ?, ?, 'h', 't')",
        [model, memory_id, len(blob) // 4, blob],
    )


def test_undo_puts_back_integers_floats_text_and_bytes_exactly(store):
    kept_id = store.memories.write("Apples keep best in the cold.", NOTES).id
    gone_id = store.memories.write("Pears bruise when stacked.", NOTES).id
    with store.atomic():
        add_vector(store, kept_id, "m1", BLOB)
        add_vector(store, gone_id, "m1", BLOB[::-1])
        store.db.execute(
            "INSERT INTO grid_overrides (key, value, updated_at) VALUES ('w', ?, 't')",
            [0.1 + 0.2],
        )
    before = everything(store)

    with store.atomic(), record(store) as changes:
        store.db.execute(
            "UPDATE memories SET importance = 9, note = 'é\u2028', merged_from = NULL WHERE id = ?",
            [kept_id],
        )
        store.db.execute(
            "UPDATE memory_vectors SET vector = ? WHERE memory_id = ?", [b"\x01" * 4 * 128, kept_id]
        )
        store.db.execute("DELETE FROM memory_vectors WHERE memory_id = ?", [gone_id])
        store.db.execute("UPDATE grid_overrides SET value = 1e-300 WHERE key = 'w'")
        store.memories.write("Quinces need a long summer.", NOTES)
    assert everything(store) != before
    touched = {c.table for c in changes}
    assert {"memories", "memory_vectors", "grid_overrides"} <= touched

    with store.atomic():
        revert(store, kept(changes))
    after = everything(store)
    assert after == before
    assert [[v for v in row if type(v) is bytes] for row in after["memory_vectors"]] == [
        [BLOB],
        [BLOB[::-1]],
    ]
    [override] = after["grid_overrides"]
    assert 0.1 + 0.2 in override  # 0.30000000000000004, not 0.3


def test_undo_puts_a_row_moved_to_another_key_back_where_it_was(store):
    with store.atomic():
        store.db.execute(
            "INSERT INTO grid_overrides (key, value, updated_at) VALUES ('a', 2.5, 't')"
        )
    before = everything(store)
    with store.atomic(), record(store) as changes:
        store.db.execute("UPDATE grid_overrides SET key = 'b' WHERE key = 'a'")
    with store.atomic():
        revert(store, kept(changes))
    assert everything(store) == before
    keys = [r[0] for r in store.db.execute("SELECT key FROM grid_overrides")]
    assert keys == ["a"]


def test_undo_writes_no_generated_column_back_and_they_follow_the_row(store):
    kept_id = store.memories.write("Plums ripen in August.", NOTES).id
    gone_id = store.memories.write("Damsons ripen in September.", NOTES).id
    scopes = "SELECT id, fts_scope FROM memories ORDER BY id"
    before, scoped = everything(store), store.db.execute(scopes).fetchall()
    with store.atomic(), record(store) as changes:
        store.db.execute(
            "UPDATE memories SET content = 'Plums ripen late.', scope = 'global', shareable = 1"
            " WHERE id = ?",
            [kept_id],
        )
        store.db.execute("DELETE FROM memories WHERE id = ?", [gone_id])
    assert store.db.execute(scopes).fetchall() != scoped
    with store.atomic():
        revert(store, kept(changes))
    assert everything(store) == before
    assert store.db.execute(scopes).fetchall() == scoped
    assert [h.memory.id for h in store.memories.search("plums august")] == [kept_id]
    assert [h.memory.id for h in store.memories.search("damsons september")] == [gone_id]


def test_undo_brings_back_a_deleted_memory_with_what_the_cascade_took(store, engine):
    memory_id = store.memories.write("Medlars are eaten bletted.", NOTES).id
    with store.atomic():
        add_vector(store, memory_id, "m1", BLOB)
    before = everything(store)
    with store.atomic(), record(store) as changes:
        store.db.execute("DELETE FROM memories WHERE id = ?", [memory_id])
    tables = [c.table for c in changes]
    assert tables[0] == "memories" and "memory_vectors" in tables  # the parent first
    with store.atomic():
        revert(store, kept(changes))
    assert everything(store) == before


def test_undo_is_refused_when_a_later_row_refers_to_a_row_it_would_remove(store):
    old_id = store.memories.write("Mulberries stain.", NOTES).id
    with store.atomic(), record(store) as changes:
        new_id = store.memories.write("Mulberries stain everything.", NOTES).id
    with store.atomic():
        store.db.execute("UPDATE memories SET superseded_by = ? WHERE id = ?", [new_id, old_id])
    before = everything(store)
    with pytest.raises(UndoRefused, match="refuses the old rows"), store.atomic():
        revert(store, kept(changes))
    assert everything(store) == before


@pytest.mark.skipif(not os.environ.get("MEMSDK_TEST_POSTGRES"), reason="no PostgreSQL server")
@pytest.mark.parametrize("engine", ["postgresql"], indirect=True)
def test_on_postgresql_the_triggers_fire_only_inside_the_recording_and_readers_pass(store):
    import psycopg

    schema = store.db.execute("SELECT current_schema()").fetchone()[0]
    memory_id = store.memories.write("Figs like a south wall.", NOTES).id
    with psycopg.connect(store.path, autocommit=True) as other:  # the store's own database
        other.execute(f'SET search_path = "{schema}"')
        other.execute("SET lock_timeout = '1s'")
        with store.atomic():
            with record(store) as changes:
                store.db.execute("UPDATE memories SET importance = 3 WHERE id = ?", [memory_id])
            # the recording is over, its transaction is not: another connection reads
            assert other.execute("SELECT count(*) FROM memories").fetchone()[0] == 1
        assert [c.key for c in changes if c.table == "memories"] == [[memory_id]]
        triggers = other.execute(
            "SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE t.tgname = 'memsdk_undo' AND c.relnamespace = current_schema()::regnamespace"
        ).fetchone()[0]
        assert triggers == len(tables(store))
        # outside a recording, here or there, nothing is logged (a firing trigger would
        # fail: no log table)
        other.execute("UPDATE memories SET importance = 5 WHERE id = %s", [memory_id])
        store.db.execute("UPDATE memories SET importance = 4 WHERE id = ?", [memory_id])
    assert store.memories.get(memory_id).importance == 4
