"""The schema fence (a drifted store is refused, naming the difference), ``memsdk doctor``,
and reads that record something without ever failing for it."""

from __future__ import annotations

import json
import logging
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from plugin_sdk import Store, inject, validate_pack
from plugin_sdk.cli import cli
from plugin_sdk.errors import SchemaMismatch, StoreBusy
from plugin_sdk.store import driver, locking
from plugin_sdk.store.doctor import doctor
from plugin_sdk.store.migrations import KNOWN
from plugin_sdk.testing import fresh_plugin_manager, pack_document

RULES = "QUAY_RULES"


def open_store(path: Path) -> Store:
    return Store(path, project="quay", plugins=fresh_plugin_manager())


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "quay.db"
    with open_store(path) as store:
        store.packs.install(
            validate_pack(pack_document("quay", "1.0.0", {RULES: "content"}), source="t")
        )
        store.memories.write("Moor at the east quay.", RULES)
    return path


def raw(path: Path, *statements: str) -> None:
    with closing(driver.connect(path)) as conn:
        for statement in statements:
            conn.execute(statement)
        conn.commit()


def findings(path: Path, **kwargs) -> list[str]:
    return [f"{f.severity}: {f.check}: {f.detail}" for f in doctor(path, **kwargs).findings]


# The fence


def test_a_new_store_records_its_version(db):
    with closing(driver.connect(db)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(KNOWN)


def test_a_store_from_before_the_fence_gets_its_version_on_open(db):
    raw(db, "PRAGMA user_version = 0")
    open_store(db).close()
    with closing(driver.connect(db)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(KNOWN)


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        ("DROP TABLE session_meta", "table missing: session_meta"),
        ("DROP TRIGGER memories_fts_update", "trigger missing: memories_fts_update"),
        ("DROP INDEX toc_rank_order", "index missing: toc_rank_order"),
        (
            "DELETE FROM _sqlite_migrations WHERE name = 'm002_stages'",
            "migration record missing: m002_stages",
        ),
        ("PRAGMA user_version = 3", f"user_version is 3 but {len(KNOWN)} migration steps"),
    ],
)
def test_a_store_whose_schema_drifted_is_refused_naming_the_difference(db, statement, named):
    raw(db, statement)
    before = db.read_bytes()
    with pytest.raises(SchemaMismatch, match=named):
        open_store(db)
    assert db.read_bytes() == before  # refused without writing
    assert any(named in line for line in findings(db))
    assert not doctor(db).ok


def test_the_cli_refuses_a_drifted_store_in_one_line(db):
    raw(db, "DROP TRIGGER memories_fts_insert")
    result = CliRunner().invoke(cli, ["memory", "list", "--db", str(db)])
    assert result.exit_code == 1
    assert "trigger missing: memories_fts_insert" in result.output
    assert "Traceback" not in result.output


# Doctor


def test_a_healthy_store_is_clean(db):
    report = doctor(db)
    assert report.ok and report.findings == []
    assert report.checks == [
        "integrity",
        "schema",
        "fts",
        "references",
        "categories",
        "composites",
        "merges",
        "dreamer",
        "read records",
    ]


def test_repair_rebuilds_a_dropped_trigger_and_the_index_it_left_behind(db):
    raw(
        db,
        "DROP TRIGGER memories_fts_insert",
        """INSERT INTO memories (project, kind, category, normalized_hash, content, created_at,
               updated_at, last_seen_at) VALUES ('quay', 'content', 'QUAY_RULES', 'h',
               'Tie up with two lines.', 'now', 'now', 'now')""",
    )
    found = findings(db)
    assert "error: schema: trigger missing: memories_fts_insert" in found
    assert any(line.startswith("error: fts: the full-text index does not match") for line in found)
    repaired = doctor(db, repair=True)
    assert repaired.ok and all(f.repaired for f in repaired.findings)
    assert doctor(db).findings == []
    with open_store(db) as store:
        [hit] = store.memories.search("two lines")
        assert hit.memory.content == "Tie up with two lines."


def test_a_composite_member_of_another_project_is_an_error(db):
    with open_store(db) as store:
        head = store.memories.write("Quay rules.", RULES).id
        other = store.memories.write("Elsewhere.", RULES, project="elsewhere").id
        mine = store.memories.write("Mine.", RULES).id
        composite = store.composites.create("theme", head, [mine])
    raw(db, f"INSERT INTO composite_members VALUES ({composite.id}, {other}, 5)")
    assert f"error: composites: composite {composite.id} (project quay) has member {other} " in (
        "\n".join(findings(db))
    )


def test_a_broken_merge_pointer_is_an_error(db):
    with open_store(db) as store:
        a = store.memories.write("First.", RULES).id
        b = store.memories.write("Second.", RULES, project="elsewhere").id
    raw(db, f"UPDATE memories SET status = 'superseded', superseded_by = {b} WHERE id = {a}")
    assert f"error: merges: memory {a} (quay) is superseded by memory {b} (elsewhere)" in (
        findings(db)
    )


def test_a_stale_lease_is_a_warning_that_repair_releases(db):
    past = (datetime.now(timezone.utc) - timedelta(hours=1)).isoformat()
    raw(
        db,
        f"""INSERT INTO dreamer_state (task, project, status, lease_owner, lease_until)
            VALUES ('classify', 'quay', 'running', 'gone-host:1:abc', '{past}')""",
    )
    report = doctor(db)
    assert report.ok  # a warning: the next run takes the lease over
    [finding] = report.findings
    assert finding.severity == "warning" and "stale lease of gone-host:1:abc" in finding.detail
    assert doctor(db, repair=True).findings[0].repaired
    with open_store(db) as store:
        row = store.db.execute("SELECT status, lease_owner FROM dreamer_state").fetchone()
        assert tuple(row) == ("idle", None)


def test_memsdk_doctor_exit_codes_and_json(db):
    runner = CliRunner()
    clean = runner.invoke(cli, ["doctor", "--db", str(db), "--json"])
    assert clean.exit_code == 0, clean.output
    assert json.loads(clean.output)["ok"] is True
    raw(db, "DROP INDEX toc_rank_order")
    broken = runner.invoke(cli, ["doctor", "--db", str(db)])
    assert broken.exit_code == 1
    assert "error: schema: index missing: toc_rank_order" in broken.output
    fixed = runner.invoke(cli, ["doctor", "--db", str(db), "--repair"])
    assert fixed.exit_code == 0 and "[repaired]" in fixed.output
    missing = runner.invoke(cli, ["doctor", "--db", str(db.parent / "none.db")])
    assert missing.exit_code == 1 and "no store at" in missing.output


# Writers wait; reads that record never fail for it


def test_a_writer_waits_for_the_lock_instead_of_failing(db):
    with closing(driver.connect(db, isolation_level=None)) as other, open_store(db) as store:
        other.execute("BEGIN IMMEDIATE")
        store.db.execute("PRAGMA busy_timeout = 50")
        with pytest.raises(StoreBusy, match="the store is busy"), store.atomic():
            pass
        other.execute("COMMIT")
        assert store.memories.write("Now it can.", RULES).created


def test_begin_retries_with_jitter_until_the_lock_is_free(db, monkeypatch):
    with closing(driver.connect(db, isolation_level=None)) as other, open_store(db) as store:
        other.execute("BEGIN IMMEDIATE")
        store.db.execute("PRAGMA busy_timeout = 10")
        waits = []

        def sleep(seconds):
            waits.append(seconds)
            if len(waits) == 2:
                other.execute("COMMIT")

        monkeypatch.setattr(locking.time, "sleep", sleep)
        store.memories.write("After two waits.", RULES)
        assert len(waits) == 2 and all(0 < w < 1 for w in waits)


def test_a_read_still_answers_when_its_record_must_wait_too_long(db, caplog):
    with closing(driver.connect(db, isolation_level=None)) as other, open_store(db) as store:
        other.execute("BEGIN IMMEDIATE")
        store.db.execute("PRAGMA busy_timeout = 50")
        with caplog.at_level(logging.WARNING, logger="plugin_sdk.store"):
            result = inject(store, session="s1")
        assert "Moor at the east quay." in result.text
        assert "kept, to be recorded with the next write" in caplog.text
        other.execute("COMMIT")
        [memory] = store.memories.list()
        assert memory.retrieval_count == 0  # kept, not half-written
        store.memories.write("Tie up at the west quay.", RULES)  # the next write records it
        assert store.memories.get(memory.id).retrieval_count == 1


def test_a_read_only_store_still_answers(db, caplog):
    # query_only makes every write fail as on a read-only file (tests may run as root,
    # for whom file modes do not stop a write).
    with open_store(db) as store, caplog.at_level(logging.WARNING, logger="plugin_sdk.store"):
        store.db.execute("PRAGMA query_only = 1")
        assert store.memories.search("quay")
        assert store.memories.record_retrievals([1]) is False
        assert "Moor at the east quay." in inject(store, session="s2").text
        assert "kept, to be recorded" in caplog.text
