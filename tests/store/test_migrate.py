"""Applying migrations the fast way gives the store sqlite-utils' Migrations would."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlite_utils import Database
from sqlite_utils.db import _iter_complete_sql_statements

from plugin_sdk import Store
from plugin_sdk.store import driver, migrate
from plugin_sdk.store.migrations import KNOWN, migrations
from tests.store.test_store import file_dump

APPLIED_AT = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?\+00:00"


def schema(path: Path) -> list[tuple]:
    """Every row of sqlite_master, in the order SQLite keeps them."""
    with closing(driver.connect(path)) as conn:
        return list(conn.execute("SELECT * FROM sqlite_master ORDER BY rowid"))


def migration_rows(path: Path) -> list[tuple]:
    with closing(driver.connect(path)) as conn:
        return list(conn.execute("SELECT * FROM _sqlite_migrations ORDER BY rowid"))


def applied_steps(path: Path) -> list[str]:
    """The steps a store records as applied; none when it has no record table yet."""
    with closing(driver.connect(path)) as conn:
        if not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = '_sqlite_migrations'"
        ).fetchone():
            return []
        return [
            row[0] for row in conn.execute("SELECT name FROM _sqlite_migrations ORDER BY rowid")
        ]


def migrated_the_old_way(path: Path, **options: str) -> Path:
    """A store file migrated by sqlite-utils' own ``Migrations.apply``."""
    db = Database(path, execute_plugins=False)
    db.execute("PRAGMA synchronous = OFF")  # no waiting for the disk: the rows are the same
    try:
        migrations.apply(db, **options)
    finally:
        db.close()
    return path


def migrated_the_new_way(path: Path) -> Path:
    Store(path, project="p").close()
    return path


@pytest.fixture(scope="module")
def old_way(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``old_way(stop_before=None)`` -> a store migrated the old way (built once; do not change it)."""
    directory = tmp_path_factory.mktemp("old-way")
    built: dict[str | None, Path] = {}

    def get(stop_before: str | None = None) -> Path:
        if stop_before not in built:
            options = {"stop_before": stop_before} if stop_before else {}
            path = directory / f"{stop_before or 'all'}.db"
            built[stop_before] = migrated_the_old_way(path, **options)
        return built[stop_before]

    return get


class RecordingDatabase(Database):
    scripts: list[str]

    def executescript(self, sql: str) -> driver.Cursor:
        self.scripts.append(sql)
        return super().executescript(sql)


def migration_scripts() -> list[str]:
    db = RecordingDatabase(memory=True, execute_plugins=False)
    db.scripts = []
    migrations.apply(db)
    db.close()
    return db.scripts


def test_every_migration_script_is_cut_into_the_same_statements():
    scripts = migration_scripts()
    assert len(scripts) >= len(KNOWN)
    for script in scripts:
        assert list(migrate.statements(script)) == list(_iter_complete_sql_statements(script))


PIECES = [
    ";",
    " ",
    "\n",
    "SELECT 1",
    "SELECT 'a;b'",
    'SELECT "q;"',
    "-- a comment; with a semicolon\n",
    "/* a block; comment */",
    "CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; SELECT 2; END",
    "CREATE TRIGGER u BEFORE DELETE ON x BEGIN",
    "END",
    "'unterminated;",
    "/*",
]


@given(st.lists(st.sampled_from(PIECES), max_size=12))
def test_any_script_is_cut_into_the_same_statements(pieces):
    script = "".join(pieces)
    assert list(migrate.statements(script)) == list(_iter_complete_sql_statements(script))


def test_a_new_store_has_the_schema_and_records_of_the_old_way(tmp_path, old_way):
    old = old_way()
    new = migrated_the_new_way(tmp_path / "new.db")
    assert schema(new) == schema(old)
    old_rows, new_rows = migration_rows(old), migration_rows(new)
    assert [row[:3] for row in new_rows] == [row[:3] for row in old_rows]
    assert [row[1:3] for row in new_rows] == [("plugin_sdk", name) for name in KNOWN]
    for row in old_rows + new_rows:
        assert len(row) == 4
        assert re.fullmatch(APPLIED_AT, row[3])


def test_a_store_migrated_the_old_way_opens_unchanged(tmp_path):
    path = migrated_the_old_way(tmp_path / "old.db")
    before = file_dump(path)
    with Store(path, project="p") as store:
        assert store.schema_version == KNOWN
    assert file_dump(path) == before


@pytest.mark.parametrize("stop_before", KNOWN[1:])
def test_a_store_part_migrated_the_old_way_is_finished_the_new_way(tmp_path, old_way, stop_before):
    part = tmp_path / "part.db"
    shutil.copyfile(old_way(stop_before), part)
    with Store(part, project="p") as store:
        assert store.schema_version == KNOWN
    assert schema(part) == schema(old_way())
    assert [row[:3] for row in migration_rows(part)] == [
        (index, "plugin_sdk", name) for index, name in enumerate(KNOWN, start=1)
    ]


def test_a_failing_step_leaves_the_store_as_it_was(tmp_path, old_way, monkeypatch):
    # The pending steps of one open are applied in one transaction under the
    # write lock (store/fence.py): a failure in any of them keeps none.
    failing = migrations._migrations[2]
    real = failing.fn

    def fail_after_running(db: Database) -> None:
        real(db)
        raise RuntimeError("power cut")

    monkeypatch.setattr(failing, "fn", fail_after_running)
    path = tmp_path / "failed.db"
    with pytest.raises(RuntimeError, match="power cut"):
        Store(path, project="p")
    assert applied_steps(path) == []
    assert [row[1] for row in schema(path)] in ([], ["_sqlite_migrations"])

    monkeypatch.setattr(failing, "fn", real)
    with Store(path, project="p") as store:
        assert store.schema_version == KNOWN
    assert schema(path) == schema(old_way())


CHILD = """
import os, signal, sys
from plugin_sdk import Store
from plugin_sdk.store.migrations import migrations

step = migrations._migrations[{index}]
real = step.fn

def killed_mid_step(db):
    real(db)
    os.kill(os.getpid(), signal.SIGKILL)

step.fn = killed_mid_step
Store(sys.argv[1], project="p")
"""


@pytest.mark.slow
def test_kill_9_mid_migration_leaves_the_store_as_it_was(tmp_path, old_way):
    path = tmp_path / "killed.db"
    index = len(KNOWN) - 2
    child = subprocess.run(
        [sys.executable, "-c", CHILD.format(index=index), str(path)], capture_output=True
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    assert applied_steps(path) == []
    with Store(path, project="p") as store:
        assert store.schema_version == KNOWN
    assert schema(path) == schema(old_way())
