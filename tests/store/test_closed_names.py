"""Closed names hold for every column and path: no live memory in a category the store does not have."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from plugin_sdk import Store, validate_pack
from plugin_sdk.cli import cli
from plugin_sdk.store import driver
from plugin_sdk.store.doctor import doctor
from plugin_sdk.testing import fresh_plugin_manager, pack_document

RULES = "QUAY_RULES"


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "quay.db"
    with Store(path, project="quay", plugins=fresh_plugin_manager()) as store:
        store.packs.install(
            validate_pack(pack_document("quay", "1.0.0", {RULES: "content"}), source="t")
        )
        store.memories.write("Moor at the east quay.", RULES)
        store.memories.quarantine(
            "Tide tables live in the harbour office.", "NO_SUCH_KIND", reason="unknown"
        )
    return path


def sql(path: Path, statement: str) -> None:
    with closing(driver.connect(path)) as conn:
        conn.execute(statement)
        conn.commit()


@pytest.mark.parametrize("status", ["active", "pending"])
def test_a_quarantined_memory_in_an_unknown_category_cannot_be_made_live_by_its_status(db, status):
    with pytest.raises(driver.IntegrityError, match="not an active category"):
        sql(db, f"UPDATE memories SET status = '{status}' WHERE status = 'quarantined'")
    sql(db, "UPDATE memories SET status = 'archived' WHERE status = 'quarantined'")
    with pytest.raises(driver.IntegrityError, match="not an active category"):
        sql(db, "UPDATE memories SET status = 'active' WHERE category = 'NO_SUCH_KIND'")


def test_an_insert_of_a_live_memory_in_an_unknown_category_is_refused(db):
    with pytest.raises(driver.IntegrityError, match="not an active category"):
        sql(
            db,
            "INSERT INTO memories (project, kind, category, normalized_hash, status, content, "
            "created_at, updated_at) SELECT project, kind, 'NO_SUCH_KIND', 'h', 'active', 'x', "
            "created_at, updated_at FROM memories LIMIT 1",
        )


def test_doctor_finds_a_live_memory_in_an_unknown_category(db):
    assert doctor(db).ok
    with closing(driver.connect(db)) as conn:  # as an older store or a hand edit could leave it
        conn.execute("DROP TRIGGER memories_category_status")
        conn.execute("UPDATE memories SET status = 'active' WHERE status = 'quarantined'")
        conn.commit()
    report = doctor(db)
    assert not report.ok
    [finding] = [f for f in report.findings if f.check == "categories"]
    assert "'NO_SUCH_KIND', unknown to the store" in finding.detail
    assert "1 active memories" in finding.detail
    shown = CliRunner().invoke(cli, ["doctor", "--db", str(db)])
    assert shown.exit_code == 1 and "NO_SUCH_KIND" in shown.output
