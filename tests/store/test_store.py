"""Opening, migrating and reopening a store."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

import plugin_sdk.store.connection as store_module
from plugin_sdk import SchemaTooNew, Store, StoreError
from plugin_sdk.store import driver
from plugin_sdk.store.migrations import KNOWN

FUTURE_MIGRATION = "m999_from_a_newer_memsdk"


def file_dump(path: Path) -> dict[str, list]:
    """Schema plus every row of every table, read through a separate connection."""
    with closing(driver.connect(path)) as conn:
        names = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        dump = {"sqlite_master": list(conn.execute("SELECT * FROM sqlite_master ORDER BY name"))}
        for name in names:
            if name == "memories_fts":  # external-content view of memories
                continue
            dump[name] = sorted(map(repr, conn.execute(f'SELECT * FROM "{name}"')))
        return dump


def add_migration_row(path: Path, migration_set: str, name: str) -> None:
    with closing(driver.connect(path)) as conn, conn:
        conn.execute(
            "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES (?, ?, ?)",
            [migration_set, name, "2099-01-01 00:00:00.000000+00:00"],
        )


@pytest.fixture
def empty_store(tmp_path: Path) -> Iterator[Store]:
    """A store opened (so created and migrated) here, not copied from a template."""
    with Store(tmp_path / "empty.db", project="p") as store:
        yield store


@pytest.fixture
def populated(tmp_path: Path) -> Path:
    """A closed store file with the ops pack and one memory."""
    path = tmp_path / "populated.db"
    with Store(path, project="p") as s:
        from plugin_sdk import resolve_pack

        s.packs.install(resolve_pack("ops"))
        s.memories.write("Deploys happen on Tuesdays only.", "OPS_RULES")
    return path


def test_new_store_creates_file_with_wal_busy_timeout_and_foreign_keys(tmp_path):
    path = tmp_path / "nested" / "dir" / "new.db"
    with Store(path, project="p") as s:
        assert path.exists()
        assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert s.db.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
        assert s.db.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_foreign_keys_are_enforced(empty_store):
    with pytest.raises(driver.IntegrityError):
        empty_store.db.execute(
            "INSERT INTO categories (name, pack, kind, priority, created_at, updated_at) "
            "VALUES ('ORPHAN', 'no-such-pack', 'content', 1, 'now', 'now')"
        )


def test_migrations_are_recorded_in_sqlite_migrations_under_plugin_sdk(empty_store):
    rows = list(
        empty_store.db.query("SELECT migration_set, name FROM _sqlite_migrations ORDER BY id")
    )
    assert KNOWN, "the code knows at least one migration"
    assert all(re.fullmatch(r"m\d{3}_\w+", name) for name in KNOWN)
    assert [r["name"] for r in rows if r["migration_set"] == "plugin_sdk"] == KNOWN
    assert empty_store.schema_version == KNOWN
    for table in ("packs", "categories", "criteria", "criteria_history", "memories"):
        assert empty_store.db[table].exists()


def test_reopen_keeps_data_and_applies_no_migration_twice(populated):
    with Store(populated, project="p") as s:
        (memory,) = s.memories.list()
        assert memory.content == "Deploys happen on Tuesdays only."
        assert "OPS_RULES" in s.category_names()
        assert [p.name for p in s.packs.installed()] == ["ops"]
        assert s.schema_version == KNOWN
        count = s.db.execute("SELECT count(*) FROM _sqlite_migrations").fetchone()[0]
        assert count == len(KNOWN)
        assert s.memories.search("Tuesdays")[0].memory.id == memory.id


def test_store_with_unknown_plugin_sdk_migration_is_refused_and_untouched(populated):
    add_migration_row(populated, "plugin_sdk", FUTURE_MIGRATION)
    before = file_dump(populated)
    with pytest.raises(SchemaTooNew) as excinfo:
        Store(populated, project="p")
    assert FUTURE_MIGRATION in str(excinfo.value)
    assert str(populated) in str(excinfo.value)
    assert isinstance(excinfo.value, StoreError)
    assert file_dump(populated) == before


def test_refused_store_does_not_switch_the_journal_mode(populated):
    with closing(driver.connect(populated)) as conn:
        assert conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
    add_migration_row(populated, "plugin_sdk", FUTURE_MIGRATION)
    with pytest.raises(SchemaTooNew):
        Store(populated, project="p")
    with closing(driver.connect(populated)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_refused_store_leaves_no_open_connection(populated, monkeypatch):
    add_migration_row(populated, "plugin_sdk", FUTURE_MIGRATION)
    opened = []
    real_connect = store_module._connect

    def recording_connect(path):
        db = real_connect(path)
        opened.append(db)
        return db

    monkeypatch.setattr(store_module, "_connect", recording_connect)
    with pytest.raises(SchemaTooNew):
        Store(populated, project="p")
    (db,) = opened
    try:
        with pytest.raises(driver.ProgrammingError):
            db.execute("SELECT 1")
    finally:
        db.close()


def test_migrations_of_another_set_are_not_refused(populated):
    add_migration_row(populated, "some_host_app", "m001_host_tables")
    with Store(populated, project="p") as s:
        assert s.schema_version == KNOWN
        assert len(s.memories.list()) == 1


def test_a_file_that_is_not_sqlite_raises_store_error(tmp_path):
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not an SQLite database, just some text" * 100)
    with pytest.raises(StoreError, match=re.escape(str(path))):
        Store(path, project="p")
