"""``copy_store`` and ``memsdk copy``: a whole store, or one project, moved without loss.

The source is built with the project's own APIs (two projects, composites
and a frozen reference set, criteria and grid overrides, the entity grid, a
Retain Job run, a merge, an archive, a retired category, a proposal, a
dreamer's state, outcomes, a value conflict, a forgotten memory); the copy
is compared with it table by table, row by row, every stored column. The
tables the copy leaves to the destination (``DERIVED``) are compared by
what they do: search finds the same ids, the injector's ranking is the same.
"""

from __future__ import annotations

import json
import os
import uuid
from array import array
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from plugin_sdk import Store, resolve_pack
from plugin_sdk.cli import cli
from plugin_sdk.composites import refsets
from plugin_sdk.composites.fragment import fragment
from plugin_sdk.errors import ProjectConflict
from plugin_sdk.grid import overrides
from plugin_sdk.host import portable
from plugin_sdk.packs.documents import validate_pack
from plugin_sdk.proposals import queue
from plugin_sdk.proposals.filing import propose
from plugin_sdk.retain import retention, value_conflicts
from plugin_sdk.retain.job import retain
from plugin_sdk.retain.observations import observe
from plugin_sdk.store import driver
from plugin_sdk.store.doctor import doctor
from plugin_sdk.store.file import copying
from plugin_sdk.store.search import neardup, ranking
from plugin_sdk.store.tables.queues import hooks
from plugin_sdk.vectors.embed import Embedded

SECRET = "sk-live-Zq7rT9wX2mK4pL8vN3bC"
QUERIES = ("cache", "queue deploy", "billing", "note about", "garden")
POSTGRES = "MEMSDK_TEST_POSTGRES"


def garden(version: str, **categories: dict[str, Any]) -> Any:
    document = {
        "format": 1,
        "name": "garden",
        "version": version,
        "description": "A small pack for tests.",
        "categories": {
            name: {"kind": "content", "priority": 10 + i, "criteria": {"definition": name}}
            for i, name in enumerate(categories)
        },
    }
    return validate_pack(document, source="test")


def observations(store: Store, n: int, first: int = 0) -> list[str]:
    names = [f"world:person:p{i}" for i in range(3)]
    categories = store.category_names()
    return [
        json.dumps(
            {
                "id": f"o{i}",
                "source": "test",
                "timestamp": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z",
                "category": categories[i % len(categories)],
                "actors": [names[i % len(names)]],
                "topic": f"topic {i % 3}",
                "sentiment": "neutral",
                "payload_typed": {
                    "text": f"note {i} about {names[i % len(names)]} and the queue",
                    "facts": [
                        {
                            "subject": names[i % len(names)],
                            "predicate": "owner",
                            "object": f"v{i % 2}",
                        }
                    ],
                },
            }
        )
        for i in range(first, first + n)
    ]


def build(path: Path) -> None:
    """A store holding something in every table a person's use fills."""
    with Store(path, project="p") as store:
        store.packs.install(resolve_pack("dev"))
        store.packs.install(garden("1.0.0", GARDEN_LOG={}, OLD_LOG={}))
        names = store.category_names()
        ids = [
            store.memories.write(f"memory {i}: the cache and the queue, part {i}", names[i % 3]).id
            for i in range(12)
        ]
        neardup.refresh(store, lambda text: set(text.lower().split()))  # curate's index
        store.memories.write("The old log of the garden: tomatoes in May.", "OLD_LOG")
        store.memories.write("The garden's beans came up in June.", "GARDEN_LOG")
        steps = "Deploy:\n\n1. Build the image.\n\n2. Push it.\n\n3. Restart the billing worker."
        done = fragment(store, store.memories.write(steps, names[0]).id)
        refsets.freeze(store, done.composite, note="as it was")
        theme = store.composites.create("theme", ids[0], [ids[1], ids[2]]).id
        store.memories.merge([ids[3]], into=ids[6])
        store.memories.archive(ids[5])
        store.memories.outcome(ids[6], True, note="it helped")
        value_conflicts.record(store, ids[7], ids[8], source="test")
        store.criteria.set(names[0], "definition", "My own definition.")
        overrides.set_value(store, "emotions.critical", 3.0, note="louder")
        plain = [json.loads(line) for line in observations(store, 14, first=100)]
        for document in plain:  # no facts: the oldest are pruned, leaving tombstones
            document["actors"] = ["world:person:p0"]
            document["payload_typed"].pop("facts")
        assert observe(store, [json.dumps(d) for d in plain]).ok
        retain(store)
        assert retention.prune(store, older_than=0).pruned
        assert observe(store, observations(store, 12, first=6)).ok
        retain(store)
        store.memories.merge([ids[2]], into=ids[11])  # a composite's member moves
        store.relations.relate("world:person:p0", "world:person:p1", "mentions")
        proposal = propose(
            store,
            diff_type="memory_entry",
            rationale="keep it current",
            evidence=[ids[9]],
            diff={"action": "update", "id": ids[9], "content": "memory 9, checked"},
            source="test",
        )
        queue.approve(store, proposal)
        propose(
            store,
            diff_type="memory_entry",
            rationale="one more",
            evidence=[ids[10]],
            diff={"action": "update", "id": ids[10], "content": "memory 10, checked"},
            source="test",
        )
        with store.atomic():  # a dreamer task's place, as a run leaves it
            store.tables.sessions.dreamer_lease("curate", "p")
            store.tables.sessions.take_lease("curate", "p", "me", "2026-01-01T00:00Z", store.now())
            store.tables.sessions.save_cursor("curate", "p", "me", "7", 3, "2026-01-01T00:00Z")
            store.tables.sessions.release("curate", "p", "me", "failed", "the model was away")
        store.tables.sessions.record_surface("s1", "p", "abc")
        store.tables.sessions.record_injection("s1", "p", 800, 120, "f00d", json.dumps(ids[:3]))
        ranking.set_setting(store, "pinned", 0.3)
        retention.set_keep_days(store, 30)
        vectors = [array("f", [1.0, 0.0]), array("f", [0.0, 1.0])]
        texts = [(i, store.memories.get(i).content) for i in ids[7:9]]
        assert store.vectors.put(Embedded("test-model", 2, vectors), texts) == 2
        conn = store.db.conn  # what a host's hooks leave, as the lean hook entry point writes it
        hooks.enqueue(conn, "p", "s1", "SessionEnd", json.dumps([{"path": "/t.jsonl", "size": 9}]))
        hooks.record_run(conn, "p", "SessionEnd", None)
        hooks.first_notice(conn, "s1", "p", "memsdk is on")
        conn.commit()
        secret = store.memories.write(f"The deploy key is {SECRET} until March.", names[1]).id
        store.composites.add(theme, secret)  # forgetting it drops it, as an event
        store.memories.forget(secret, reason="a leaked key")
        store.packs.upgrade(garden("2.0.0", GARDEN_LOG={}), mapping={"OLD_LOG": None})
    with Store(path, project="q") as other:
        other.memories.write("Project q keeps its own notes on the cache.", names[0])
        other.entities.add("world:person:quinn")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("copy") / "source.db"
    build(path)
    return path


@pytest.fixture
def source(built: Path, tmp_path: Path) -> Iterator[Store]:
    path = tmp_path / "source.db"
    path.write_bytes(built.read_bytes())
    with Store(path, project="p") as store:
        yield store


@pytest.fixture(params=["sqlite", "postgres"])
def dest_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where a copy goes: a new SQLite file, or (with MEMSDK_TEST_POSTGRES) a new schema of that database.

    The PostgreSQL store is the test's own schema (``search_path`` in the
    URL's ``options``), dropped after it.
    """
    if request.param == "sqlite":
        yield str(tmp_path / "dest.db")
        return
    url = os.environ.get(POSTGRES)
    if not url:
        pytest.skip(f"{POSTGRES} is not set (the URL of a PostgreSQL database to copy into)")
    psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    schema = f"memsdk_copy_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            join = "&" if "?" in url else "?"
            mine = f"{url}{join}options=-csearch_path%3D{schema}%2Cpublic"
            if not _opens_postgres(mine, tmp_path):
                pytest.skip("Store does not open a PostgreSQL URL yet")
            yield mine
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def _opens_postgres(url: str, tmp_path: Path) -> bool:
    """Whether ``Store(url)`` opens PostgreSQL (an engine without it opens a file of that name)."""
    here = Path.cwd()
    os.chdir(tmp_path)  # where such a file would go
    try:
        with Store(url, project="p") as store:
            return not isinstance(store.db.conn, driver.Connection)
    except Exception:
        return False
    finally:
        os.chdir(here)


def tables(store: Store) -> list[str]:
    """The tables a copy carries row for row."""
    shadows = copying._shadows(store)
    return [t for t in copying._tables(store) if t not in copying.DERIVED and t not in shadows]


def dump(store: Store, table: str, project: str | None = None) -> list[tuple[Any, ...]]:
    """Every row of ``table`` (every stored column, the implicit rowid too), sorted."""
    names = [c.name for c in copying._columns(store, table)]
    select = ", ".join(f'"{n}"' for n in names)
    rows = store.db.conn.execute(f'SELECT {select} FROM "{table}"').fetchall()
    return sorted((tuple(row) for row in rows), key=repr)


def without(rows: list[tuple[Any, ...]], keep: list[int]) -> list[tuple[Any, ...]]:
    """``rows`` with only the columns at ``keep``, sorted."""
    return sorted((tuple(row[i] for i in keep) for row in rows), key=repr)


def dumps(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    return {table: dump(store, table) for table in tables(store)}


def found(store: Store, project: str) -> dict[str, list[int]]:
    with Store(store.path, project=project) as reader:
        return {q: [hit.memory.id for hit in reader.memories.search(q)] for q in QUERIES}


def ranked(store: Store) -> list[tuple[Any, ...]]:
    return dump(store, "toc_rank")


def test_the_source_fills_what_a_copy_must_carry(source: Store) -> None:
    empty = [table for table, rows in dumps(source).items() if not rows]
    # left empty: the historian's ledger, the token cache, the sqlite-vec mirror's
    # queue (the extension is not loaded here), records of reads written late
    assert set(empty) <= {"transcript_imports", "token_counts", "vector_changes", "read_records"}
    (forgotten,) = dump(source, "forgotten")
    assert SECRET not in repr(dumps(source))  # the source holds no text of it
    assert forgotten  # and its tombstone
    retired = source.db.conn.execute(
        "SELECT count(*) FROM memories WHERE category = 'OLD_LOG' AND status = 'archived'"
    ).fetchone()[0]
    assert retired >= 1  # archived memories memory of a category no pack has any more


def test_a_round_trip_keeps_every_row_of_every_table(
    source: Store, dest_url: str, tmp_path: Path
) -> None:
    seen: list[tuple[str, int]] = []
    with Store(dest_url, project="p") as dest:
        report = copying.copy_store(source, dest, progress=lambda t, n: seen.append((t, n)))
        assert [t for t, _ in seen] == list(report.rows)
        assert report.total == sum(n for _, n in seen) > 0
        assert "memories_fts" in report.skipped and "toc_rank" in report.skipped
        with Store(tmp_path / "back.db", project="p") as back:
            copying.copy_store(dest, back)
            assert dumps(back) == dumps(source)
            assert ranked(back) == ranked(source)
            for project in ("p", "q"):
                assert found(back, project) == found(source, project)
    assert doctor(tmp_path / "back.db").ok
    assert SECRET.lower().encode() not in (tmp_path / "back.db").read_bytes().lower()


def test_a_postgresql_source_is_read_a_batch_at_a_time(
    source: Store, dest_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its rows come through a server-side cursor while they are written, not as one
    result held by the client; the copy back is the same as with one batch."""
    if dest_url.endswith(".db"):
        pytest.skip("SQLite steps its statements: the PostgreSQL source is the case")
    with Store(dest_url, project="p") as middle:
        copying.copy_store(source, middle)
        open_cursors: list[list[str]] = []
        real = copying._write

        def write(dest: Store, table: str, sql: str, rows: Any) -> int:
            if table == "memories":
                names = middle.db.conn.execute("SELECT name FROM pg_cursors").fetchall()
                open_cursors.append([str(row[0]) for row in names])
            return real(dest, table, sql, rows)

        monkeypatch.setattr(copying, "BATCH", 3)
        monkeypatch.setattr(copying, "_write", write)
        with Store(tmp_path / "back.db", project="p") as back:
            copying.copy_store(middle, back)
            assert dumps(back) == dumps(source)
        count = source.db.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        assert len(open_cursors) == -(-count // 3) > 1  # a write a batch of 3
        assert all(any(n.startswith("memsdk_stream_") for n in names) for names in open_cursors)
        assert not middle.db.conn.execute("SELECT name FROM pg_cursors").fetchall()  # closed


def test_a_copy_is_one_row_for_each_source_row(source: Store, tmp_path: Path) -> None:
    with Store(tmp_path / "dest.db", project="p") as dest:
        report = copying.copy_store(source, dest)
        counts = {table: len(rows) for table, rows in dumps(source).items()}
        assert report.rows == {table: counts[table] for table in report.rows}
        assert set(report.rows) == set(counts)


def test_one_project_goes_alone_with_what_governs_it(source: Store, tmp_path: Path) -> None:
    with Store(tmp_path / "q.db", project="q") as dest:
        copying.copy_store(source, dest, project="q")
        assert found(dest, "q") == found(source, "q")
        assert dest.memories.count(project="p") == 0
        assert [e.name for e in dest.entities.list()] == ["world:person:quinn"]
        for table in ("packs", "categories", "criteria", "grid_overrides"):
            assert dump(dest, table) == dump(source, table), table
        for table in tables(source):
            names = [c.name for c in copying._columns(source, table)]
            if "project" in names:
                mine = [r for r in dump(source, table) if r[names.index("project")] == "q"]
                assert dump(dest, table) == mine, table


def test_a_project_into_a_store_that_holds_another(source: Store, tmp_path: Path) -> None:
    with Store(tmp_path / "dest.db", project="r") as dest:
        dest.packs.install(resolve_pack("ops"))
        dest.criteria.set(dest.category_names()[0], "definition", "Kept by the destination.")
        dest.memories.write("Project r was here first.", dest.category_names()[0])
        before = dumps(dest)
        with pytest.raises(ProjectConflict, match="keeps every id"):
            copying.copy_store(source, dest, project="p")  # p's first ids are r's there
        assert dumps(dest) == before
        report = copying.copy_store(source, dest, project="q")  # q's ids are free there
        assert found(dest, "q") == found(source, "q")
        assert dump(dest, "criteria") != dump(source, "criteria")
        assert report.kept  # its own packs' rows stay as they were
        r = [row for row in before["criteria"] if "Kept by the destination." in repr(row)]
        assert r and set(r) <= set(dump(dest, "criteria"))


def test_a_destination_that_holds_the_project_is_refused_with_nothing_written(
    source: Store, tmp_path: Path
) -> None:
    with Store(tmp_path / "dest.db", project="p") as dest:
        dest.packs.install(resolve_pack("ops"))
        dest.memories.write("Already here.", dest.category_names()[0])
        before = dumps(dest)
        with pytest.raises(ProjectConflict, match="not empty: it holds project"):
            copying.copy_store(source, dest)
        with pytest.raises(ProjectConflict, match="holds project 'p' already"):
            copying.copy_store(source, dest, project="p")
        with pytest.raises(ProjectConflict, match="no project 'nope'"):
            copying.copy_store(source, dest, project="nope")
        with Store(dest.path, project="p") as same, pytest.raises(ProjectConflict, match="itself"):
            copying.copy_store(dest, same, project="p")
        assert dumps(dest) == before


def test_a_failure_mid_copy_leaves_the_destination_empty(
    source: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = copying._copy_table
    calls: list[str] = []

    def failing(source: Store, dest: Store, table: str, *args: Any) -> tuple[int, int]:
        calls.append(table)
        if len(calls) == 3:
            raise OSError("disk unplugged")
        return real(source, dest, table, *args)

    monkeypatch.setattr(copying, "_copy_table", failing)
    with Store(tmp_path / "dest.db", project="p") as dest:
        before = dumps(dest)
        with pytest.raises(OSError, match="unplugged"):
            copying.copy_store(source, dest)
        assert dumps(dest) == before
        assert not dest.db.conn.in_transaction
        monkeypatch.setattr(copying, "_copy_table", real)
        copying.copy_store(source, dest)  # and it can be copied into afterwards
        assert dumps(dest) == dumps(source)


def test_cli_copy_prints_each_table_and_the_total(built: Path, tmp_path: Path) -> None:
    dest = tmp_path / "dest.db"
    result = CliRunner().invoke(cli, ["copy", str(built), str(dest)])
    assert result.exit_code == 0, result.output
    assert "memories: " in result.output and "Copied " in result.output
    assert "skipped memories_fts:" in result.output
    again = CliRunner().invoke(cli, ["copy", str(built), str(dest)])
    assert again.exit_code == 1
    assert again.output.startswith("Error: ") and "not empty" in again.output
    missing = CliRunner().invoke(cli, ["copy", str(tmp_path / "nope.db"), str(dest)])
    assert missing.exit_code == 1 and "no store at" in missing.output
    assert not (tmp_path / "nope.db").exists()
    one = CliRunner().invoke(
        cli, ["copy", str(built), str(tmp_path / "q.db"), "--project", "q", "--json"]
    )
    assert one.exit_code == 0, one.output
    assert json.loads(one.output)["rows"]["memories"] == 1


def test_cli_copy_refuses_a_newer_schema_and_leaves_no_new_file(
    built: Path, tmp_path: Path
) -> None:
    newer = tmp_path / "newer.db"
    newer.write_bytes(built.read_bytes())
    with closing(driver.connect(newer)) as conn, conn:
        conn.execute(
            "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES (?, ?, ?)",
            ["plugin_sdk", "m999_from_a_newer_memsdk", "2099-01-01 00:00:00.000000+00:00"],
        )
    Store(tmp_path / "a.db", project="p").close()
    for args in ([str(newer), str(tmp_path / "a.db")], [str(tmp_path / "a.db"), str(newer)]):
        result = CliRunner().invoke(cli, ["copy", *args])
        assert result.exit_code == 1
        assert "migrated by a newer memsdk" in result.output and "m999" in result.output
    failed = CliRunner().invoke(cli, ["copy", str(built), str(tmp_path / "b.db"), "--project", "x"])
    assert failed.exit_code == 1 and "no project 'x'" in failed.output
    assert not (tmp_path / "b.db").exists()  # the file it would have made is gone


def test_export_carries_every_table_that_is_not_left_out_with_a_reason(
    source: Store, tmp_path: Path
) -> None:
    """Each table of the schema: exported, or named in LEFT_OUT or DERIVED with its reason."""
    schema = set(tables(source))
    assert set(portable.LEFT_OUT) <= schema, set(portable.LEFT_OUT) - schema
    assert all(portable.LEFT_OUT.values()) and all(copying.DERIVED.values())
    exported = list(portable.export_project(source, "p"))
    with Store(tmp_path / "imported.db", project="p") as fresh:
        portable.import_project(fresh, portable.dump_lines(exported))
        again = portable.dump_lines(portable.export_project(fresh, "p"))
        assert list(again) == list(portable.dump_lines(exported))  # the same lines
        for table in sorted(schema - set(portable.LEFT_OUT)):
            names = [c.name for c in copying._columns(source, table)]
            mine = dump(source, table)
            if "project" in names:
                mine = [row for row in mine if row[names.index("project")] == "p"]
            if not mine:
                continue  # the rich store has none of this project's rows here
            assert dump(fresh, table), f"export does not carry {table}: add it or LEFT_OUT"
            if "project" in names:  # a fresh store keeps every id: the same rows
                plain = [i for i, name in enumerate(names) if name != "rowid"]
                assert without(dump(fresh, table), plain) == without(mine, plain), table


def test_an_import_under_new_ids_renumbers_what_proposals_name(source: Store) -> None:
    exported = list(portable.dump_lines(portable.export_project(source, "p")))
    loaded = portable.import_project(source, exported, project="again")  # every id is taken
    assert loaded["proposal"] == 2 and loaded["proposal_event"] and loaded["dreamer_state"] == 1
    with Store(source.path, project="again") as again:
        mine = {m.id for m in again.memories.list(status=None)}
        proposals = again.tables.proposals.of_project("again")
        assert proposals
        for row in proposals:
            named = {json.loads(row["diff"])["id"], *json.loads(row["evidence"])}
            assert named <= mine, row
        events = [e for row in proposals for e in again.tables.proposals.events(row["id"])]
        assert len(events) == len(
            [
                e
                for row in source.tables.proposals.of_project("p")
                for e in source.tables.proposals.events(row["id"])
            ]
        )
