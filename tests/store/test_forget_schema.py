"""Forget reaches every column that can hold stored text: the schema is walked, and the file grepped."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from plugin_sdk import Store, resolve_pack
from plugin_sdk.cli import cli
from plugin_sdk.proposals.filing import propose
from plugin_sdk.retain.job import retain
from plugin_sdk.retain.observations import observe
from plugin_sdk.store import forget as forgetting
from plugin_sdk.store.forget import redaction

SECRET = "hunter2SECRETxyz"
TEXT_TYPES = ("", "TEXT", "BLOB")  # SQLite's affinities that can hold text (untyped: any)


def schema_columns(store: Store) -> set[tuple[str, str]]:
    """Every (table, column) of the schema whose declared type can hold text or bytes."""
    found = set()
    tables = store.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    for (table,) in tables:
        if table.startswith("sqlite_"):
            continue
        for row in store.db.execute(f'PRAGMA table_xinfo("{table}")'):
            if str(row[2]).upper() in TEXT_TYPES:
                found.add((table, row[1]))
    return found


def handled(table: str, column: str) -> bool:
    copies = set(redaction.TEXT_COPIES) | set(redaction.JSON_COPIES)
    reviewed = redaction.NOT_STORED_TEXT.get(table, ())
    return (table, column) in copies or "*" in reviewed or column in reviewed


def test_every_text_column_of_a_fresh_store_is_redacted_by_forget_or_reviewed(tmp_path):
    with Store(tmp_path / "s.db", project="p") as store:
        columns = schema_columns(store)
        known = {
            r[0] for r in store.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    missing = sorted(f"{t}.{c}" for t, c in columns if not handled(t, c))
    assert not missing, f"columns forget neither redacts nor lists as holding no text: {missing}"
    listed = set(redaction.TEXT_COPIES) | set(redaction.JSON_COPIES)
    stale = sorted(f"{t}.{c}" for t, c in listed if (t, c) not in columns)
    assert not stale, f"redaction lists columns the schema does not have: {stale}"
    assert not set(redaction.NOT_STORED_TEXT) - known


def test_a_table_added_later_without_a_redaction_rule_fails_the_walk(tmp_path):
    with Store(tmp_path / "s.db", project="p") as store:
        store.db.execute("CREATE TABLE later_notes (id INTEGER PRIMARY KEY, body TEXT)")
        columns = schema_columns(store)
    assert ("later_notes", "body") in columns and not handled("later_notes", "body")


def observation(number: int, name: str) -> dict:
    return {
        "id": f"o{number}",
        "source": "insight:slack",
        "source_ref": f"C1/p{number}",
        "timestamp": f"2026-03-0{number}T09:30:00Z",
        "category": name,
        "actors": ["world:person:anya"],
        "topic": "db creds",
        "payload_typed": {
            "text": f"Anya note {number}: the staging db password is {SECRET} now.",
            "facts": [{"subject": "world:person:anya", "predicate": "password", "object": SECRET}],
        },
    }


def count(path: Path) -> int:
    """Copies of the secret in a file, any case (the word index lower-cases)."""
    return path.read_bytes().lower().count(SECRET.lower().encode()) if path.exists() else 0


def grep_c(path: Path) -> int:
    """``grep -c -a -i SECRET FILE``: the check the issue asks for."""
    done = subprocess.run(
        ["grep", "-c", "-a", "-i", SECRET, str(path)], capture_output=True, text=True, check=False
    )
    return int(done.stdout.strip() or 0)


@pytest.fixture
def retained(tmp_path: Path) -> Path:
    """A store where one secret is in memories, facts, observations, a truth and a proposal."""
    path = tmp_path / "m.db"
    with Store(path, project="p") as store:
        store.packs.install(resolve_pack("ops"))
        name = store.category_names()[0]
        observe(store, [json.dumps(observation(n, name)) for n in (1, 2, 3)])
        retain(store)
        memory = store.memories.list(status=None)[0]
        propose(
            store,
            diff_type="memory_entry",
            rationale=f"the password {SECRET} is stale",
            evidence=[memory.id],
            diff={"action": "update", "id": memory.id, "content": f"password: {SECRET}!"},
            source="t",
        )
        store.db.execute("UPDATE memories SET note = ? WHERE id = ?", [f"see {SECRET}", memory.id])
        truths = store.db.execute("SELECT count(*) FROM compiled_truths").fetchone()[0]
        assert truths >= 1  # the truth quotes the fact's object
    assert count(path) + count(Path(f"{path}-wal")) > 10
    return path


def run(db: Path, *args: str):
    return CliRunner().invoke(cli, [*args, "--db", str(db), "--project", "p"])


def test_forget_by_pattern_leaves_no_byte_in_the_file_its_log_a_backup_or_an_export(
    retained, tmp_path
):
    done = run(retained, "forget", "--secret", SECRET, "--yes", "--vacuum", "--json")
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert len(report["forgotten"]) == 3
    assert {"facts", "observations", "compiled_truths", "proposals"} <= set(report["redacted"])
    backup, export = tmp_path / "b.db", tmp_path / "e.jsonl"
    assert CliRunner().invoke(cli, ["backup", str(backup), "--db", str(retained)]).exit_code == 0
    assert run(retained, "export", "-o", str(export)).exit_code == 0
    files = [retained, Path(f"{retained}-wal"), backup, export]
    assert [count(f) for f in files] == [0, 0, 0, 0]
    if shutil.which("grep"):
        assert [grep_c(f) for f in files if f.exists()] == [0] * sum(f.exists() for f in files)
    with Store(retained, project="p") as store:
        (truth,) = store.db.execute(
            "SELECT markdown FROM compiled_truths ORDER BY id DESC LIMIT 1"
        ).fetchone()
        assert redaction.REDACTED in truth  # redacted, not deleted: the truth still reads
    assert stat.S_IMODE(export.stat().st_mode) == 0o600
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600


def test_every_listed_copy_is_redacted_where_the_secret_is_planted(retained):
    with Store(retained, project="p") as store:
        planted = []
        for table, column in redaction.TEXT_COPIES + redaction.JSON_COPIES:
            row = store.db.execute(f"SELECT rowid FROM {table} LIMIT 1").fetchone()
            if row is None:
                continue
            value = (
                json.dumps({"quote": f"x {SECRET} y"})
                if (table, column) in (redaction.JSON_COPIES)
                else f"x {SECRET} y"
            )
            store.db.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", [value, row[0]])
            planted.append((table, column))
        store.db.conn.commit()
        assert len(planted) >= 12
        forgetting.forget_secret(store, SECRET)
        left = [
            (t, c)
            for t, c in sorted(schema_columns(store))
            if store.db.execute(
                f'SELECT count(*) FROM "{t}" WHERE instr(lower(CAST("{c}" AS TEXT)), ?) > 0',
                [SECRET.lower()],
            ).fetchone()[0]
        ]
    assert left == []


def test_forget_by_id_without_vacuum_leaves_no_word_of_it_in_the_file(tmp_path):
    path = tmp_path / "w.db"
    with Store(path, project="p") as store:
        store.packs.install(resolve_pack("ops"))
        name = store.category_names()[0]
        for n in range(20):
            store.memories.write(f"filler memory {n} about servers", name)
        memory = store.memories.write("The zebraquokka token rotates weekly", name).id
    assert count_word(path) > 0
    assert run(path, "forget", str(memory)).exit_code == 0
    assert count_word(path) == 0  # the index merged away its entry; the log is checkpointed


def count_word(path: Path) -> int:
    data = path.read_bytes() + (
        Path(f"{path}-wal").read_bytes() if Path(f"{path}-wal").exists() else b""
    )
    return data.lower().count(b"zebraquokka")


def test_forget_vacuum_alone_scrubs_and_export_is_private(tmp_path):
    path = tmp_path / "v.db"
    with Store(path, project="p") as store:
        store.packs.install(resolve_pack("ops"))
        store.memories.write("Rotate keys every quarter.", store.category_names()[0])
    done = run(path, "forget", "--vacuum")
    assert done.exit_code == 0 and "Vacuumed" in done.output
    out = tmp_path / "e.jsonl"
    out.write_text("")
    out.chmod(0o644)  # an existing file is made private too
    exported = run(path, "export", "-o", str(out))
    assert exported.exit_code == 0, exported.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
