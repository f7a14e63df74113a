"""A store's projects: list, rename, merge, delete; backup; export and import round-trips."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from plugin_sdk import Store
from plugin_sdk.cli import cli
from plugin_sdk.errors import EmptyProject, NoStore, ProjectConflict
from plugin_sdk.host import portable, projects
from plugin_sdk.host.demo import run_demo
from plugin_sdk.store.doctor import doctor
from plugin_sdk.store.file.backup import backup
from plugin_sdk.testing import fresh_plugin_manager

ENV = {"MEMSDK_DB": None, "MEMSDK_PROJECT": None}


@pytest.fixture
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo store (project ``demo``): memories, composites, entities, cells."""
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    with Store(path, project="demo", plugins=fresh_plugin_manager()) as store:
        run_demo(store, "ops")
    return path


def copy_of(db: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy.db"
    backup(db, target)
    return target


def cli_run(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args), env=ENV)
    assert result.exit_code == code, result.output
    return result.output


def table_rows(store: Store, project: str) -> dict[str, int]:
    return {
        table: store.db.execute(
            f"SELECT count(*) FROM [{table}] WHERE project = ?", [project]
        ).fetchone()[0]
        for table in projects.project_tables(store)
    }


def test_projects_lists_counts_and_last_write(demo_db: Path, tmp_path: Path) -> None:
    db = copy_of(demo_db, tmp_path)
    with Store(db, project="side") as store:
        store.memories.write("A side note.", store.category_names()[0])
    listed = json.loads(cli_run("projects", "--db", str(db), "--json"))
    assert [p["name"] for p in listed] == ["demo", "side"]
    demo = listed[0]
    assert demo["memories"] == sum(demo["by_status"].values()) and demo["active"] > 100
    assert demo["entities"] > 0 and demo["last_write"]
    assert "side: 1 memories (1 active)" in cli_run("projects", "--db", str(db))


def test_read_commands_never_create_a_store_and_refuse_an_empty_project(
    demo_db: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "no" / "such" / "x.db"
    for args in (["inject"], ["memory", "search", "x"], ["memory", "list"], ["projects"]):
        out = cli_run(*args, "--db", str(missing), code=1)
        assert "no store at" in out
    assert not (tmp_path / "no").exists()
    out = cli_run(
        "memory", "search", "disk", "--db", str(demo_db), "--project", "elsewhere", code=1
    )
    assert "project 'elsewhere' holds nothing" in out and "demo (" in out
    with Store(demo_db, project="elsewhere") as store, pytest.raises(EmptyProject):
        from plugin_sdk.cli.common import require_project

        require_project(store)
    verbose = CliRunner().invoke(
        cli, ["--verbose", "inject", "--db", str(demo_db), "--project", "demo"], env=ENV
    )
    assert "memsdk: store" in verbose.stderr and "project 'demo'" in verbose.stderr


def test_rename_moves_every_row_and_refuses_a_name_in_use(demo_db: Path, tmp_path: Path) -> None:
    db = copy_of(demo_db, tmp_path)
    with Store(db, project="demo") as store:
        before = table_rows(store, "demo")
        moved = projects.rename_project(store, "demo", "git:abc")
        assert table_rows(store, "git:abc") == before
        assert sum(table_rows(store, "demo").values()) == 0
        assert moved["memories"] == before["memories"]
        store.memories.write("Back in the old name.", store.category_names()[0], project="demo")
        with pytest.raises(ProjectConflict, match="merge into it"):
            projects.rename_project(store, "git:abc", "demo")
    assert doctor(db).ok


def test_merge_folds_repeats_and_moves_the_rest(demo_db: Path, tmp_path: Path) -> None:
    db = copy_of(demo_db, tmp_path)
    with Store(db, project="demo") as store:
        category = store.category_names()[0]
        store.memories.write("Only in the old folder.", category, project="old")
        shared = store.memories.list(limit=1)[0]
        store.memories.write(shared.content, shared.category, project="old")
        seen = store.memories.get(shared.id).seen_count
        report = projects.merge_project(store, "old", "demo")
        assert report["folded_memories"] == 1 and report["memories"] == 1
        assert store.memories.get(shared.id).seen_count == seen + 1
        assert store.memories.find("Only in the old folder.", category) is not None
        assert "old" not in projects.project_names(store)
    assert doctor(db).ok


def test_delete_needs_yes_and_takes_everything(demo_db: Path, tmp_path: Path) -> None:
    db = copy_of(demo_db, tmp_path)
    out = cli_run("projects", "delete", "demo", "--db", str(db), code=1)
    assert "run again with --yes" in out
    cli_run("projects", "delete", "demo", "--db", str(db), "--yes")
    with Store(db, project="demo") as store:
        assert projects.list_projects(store) == []
        assert store.db.execute("SELECT count(*) FROM composites").fetchone()[0] == 0
        assert store.db.execute("SELECT count(*) FROM memories_fts").fetchone()[0] == 0
    assert doctor(db).ok


def test_export_then_import_into_a_fresh_store_round_trips_exactly(
    demo_db: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "demo.jsonl"
    cli_run("export", "--db", str(demo_db), "--project", "demo", "-o", str(exported))
    lines = exported.read_text().splitlines()
    kinds = [json.loads(line)["record"] for line in lines]
    assert kinds[0] == "header" and {"pack", "memory", "composite", "entity"} <= set(kinds)
    fresh = tmp_path / "fresh.db"
    loaded = json.loads(cli_run("import", str(exported), "--db", str(fresh), "--json"))
    assert loaded["memory"] == kinds.count("memory")
    again = tmp_path / "again.jsonl"
    cli_run("export", "--db", str(fresh), "--project", "demo", "-o", str(again))
    assert again.read_text() == exported.read_text()
    with Store(demo_db, project="demo") as a, Store(fresh, project="demo") as b:
        assert table_rows(a, "demo")["memories"] == table_rows(b, "demo")["memories"]
        assert a.memories.search("disk")[0].memory.id == b.memories.search("disk")[0].memory.id
    assert doctor(fresh).ok
    # a second import of the same project is refused; under another name it gets new ids
    assert "already exists" in cli_run("import", str(exported), "--db", str(fresh), code=1)
    cli_run("import", str(exported), "--db", str(fresh), "--project", "copy")
    with Store(fresh, project="copy") as store:
        assert table_rows(store, "copy")["memories"] == kinds.count("memory")
        heads = store.db.execute(
            "SELECT count(*) FROM composites c JOIN memories m ON m.id = c.head_memory_id "
            "WHERE m.project = 'copy'"
        ).fetchone()[0]
        assert heads == kinds.count("composite")
    assert doctor(fresh).ok


def test_a_bad_export_line_writes_nothing(demo_db: Path, tmp_path: Path) -> None:
    exported = tmp_path / "demo.jsonl"
    cli_run("export", "--db", str(demo_db), "--project", "demo", "-o", str(exported))
    lines = exported.read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines[:5], "{not json", *lines[5:]]) + "\n")
    out = cli_run("import", str(broken), "--db", str(tmp_path / "x.db"), code=1)
    assert "line 6: not JSON" in out
    with Store(tmp_path / "x.db", project="demo") as store:
        assert projects.list_projects(store) == []


def test_backup_during_concurrent_writes_passes_doctor(demo_db: Path, tmp_path: Path) -> None:
    db = copy_of(demo_db, tmp_path)
    stop = threading.Event()
    written: list[int] = []

    def writer() -> None:
        with Store(db, project="busy") as store:
            category = store.category_names()[0]
            n = 0
            while not stop.is_set():
                written.append(store.memories.write(f"Busy note {n}.", category).id)
                n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while len(written) < 5:
            threading.Event().wait(0.01)
        backups = [tmp_path / f"backup-{n}.db" for n in range(3)]
        for target in backups:
            cli_run("backup", str(target), "--db", str(db))
    finally:
        stop.set()
        thread.join()
    for target in backups:
        report = doctor(target)
        assert report.ok, report.findings
        assert target.stat().st_mode & 0o777 == 0o600
    assert "exists" in cli_run("backup", str(backups[0]), "--db", str(db), code=1)
    with pytest.raises(NoStore):
        backup(tmp_path / "none.db", tmp_path / "b.db")


def test_a_forgotten_memory_travels_as_its_tombstone(demo_db: Path, tmp_path: Path) -> None:
    from plugin_sdk.errors import ForgottenText

    db = copy_of(demo_db, tmp_path)
    with Store(db, project="demo") as store:
        victim = store.memories.list(limit=1)[0]
        store.memories.forget(victim.id, reason="a secret")
    exported = tmp_path / "demo.jsonl"
    cli_run("export", "--db", str(db), "--project", "demo", "-o", str(exported))
    text = exported.read_text()
    assert victim.content not in text and '"record": "forgotten"' in text
    fresh = tmp_path / "fresh.db"
    cli_run("import", str(exported), "--db", str(fresh))
    with Store(fresh, project="demo") as store, pytest.raises(ForgottenText):
        store.memories.write(victim.content, victim.category)
    again = tmp_path / "again.jsonl"
    cli_run("export", "--db", str(fresh), "--project", "demo", "-o", str(again))
    assert again.read_text() == text


def test_an_export_streams_the_memories_and_imports_back_the_same(
    store: Store, new_store: Any
) -> None:
    """On either engine; from PostgreSQL the memories come through a server-side cursor,
    a batch at a time, while the export is written (never the whole table in the client)."""
    category = store.category_names()[0]
    store.memories.write_many(
        [{"content": f"ledger note {n}", "category": category} for n in range(1203)]
    )
    records = []
    for record in portable.export_project(store):
        if record["record"] == "memory" and not records and store.engine == "postgresql":
            names = [row[0] for row in store.db.execute("SELECT name FROM pg_cursors")]
            assert any(name.startswith("memsdk_stream_") for name in names)
        if record["record"] == "memory":
            records.append(record)
    assert [r["content"] for r in records] == [f"ledger note {n}" for n in range(1203)]
    if store.engine == "postgresql":
        assert not store.db.execute("SELECT name FROM pg_cursors").fetchall()
    lines = list(portable.dump_lines(portable.export_project(store)))
    into = new_store(name="into.db", project="elsewhere")
    assert portable.import_project(into, lines)["memory"] == 1203
