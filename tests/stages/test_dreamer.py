"""The dreamer: registered tasks, exactly-once progress across pauses, crashes and kills,
leases, and the built-in curate task."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from plugin_sdk import MemsdkError, Store, hookimpl, validate_pack
from plugin_sdk.cli import cli
from plugin_sdk.errors import LeaseLost, TaskBusy
from plugin_sdk.model.prompts import dreamer_curate
from plugin_sdk.plugin.records import DreamerTask
from plugin_sdk.proposals.filing import pending, propose
from plugin_sdk.stages.dreamer import Dreamer, default_owner, owner_process
from plugin_sdk.store import driver
from plugin_sdk.testing import ScriptedModel, StoreTemplates, fresh_plugin_manager

PROJECT = "dream"
OTHER_HOST_OWNER = "lighthouse-2.invalid:4242"  # another host: always presumed alive


class RecordingTask:
    """A test plugin: a dreamer task that handles the rows of ``items`` in id order.

    Each batch records the ids it handles in ``handled`` and saves its cursor
    in the same transaction. Options make it misbehave on purpose.
    """

    def __init__(
        self,
        name: str = "record",
        *,
        batch_size: int = 3,
        interrupt_at: int | None = None,
        save: bool = True,
        delay: float = 0.0,
        before_batch: Callable[[int, object], None] | None = None,
    ) -> None:
        self.name = name
        self.batch_size = batch_size
        self.interrupt_at = interrupt_at
        self.save = save
        self.delay = delay
        self.before_batch = before_batch
        self.batches = 0

    @hookimpl
    def register_dreamer_tasks(self, register):
        register(
            DreamerTask(
                name=self.name,
                description="Record each item once.",
                run=self.run,
                schedule="manual",
                batch_size=self.batch_size,
                total=lambda store: store.db.execute("SELECT count(*) FROM items").fetchone()[0],
            )
        )

    def run(self, context) -> int:
        db = context.store.db
        ids = [
            row[0]
            for row in db.execute(
                "SELECT id FROM items WHERE id > ? ORDER BY id LIMIT ?",
                [context.cursor or 0, context.batch_size],
            )
        ]
        if not ids:
            return 0
        self.batches += 1
        if self.before_batch:
            self.before_batch(self.batches, context)
        with context.batch():
            for item in ids:
                db.execute("INSERT INTO handled (item, owner) VALUES (?, ?)", [item, context.owner])
            if self.delay:
                time.sleep(self.delay)
            if self.interrupt_at == self.batches:
                raise KeyboardInterrupt  # a kill in the middle of the batch, after its writes
            if self.save:
                context.save(ids[-1], len(ids))
        return len(ids)


def open_store(path: Path, *plugins: tuple[str, object], clock=None) -> Store:
    kwargs = {"clock": clock} if clock else {}
    return Store(path, project=PROJECT, plugins=fresh_plugin_manager(*plugins), **kwargs)


def make_items(path: Path, count: int) -> None:
    with open_store(path) as store:
        store.db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY)")
        store.db.execute("CREATE TABLE handled (item INTEGER NOT NULL, owner TEXT NOT NULL)")
        with store.atomic():
            for item in range(1, count + 1):
                store.db.execute("INSERT INTO items (id) VALUES (?)", [item])


def handled(store: Store) -> list[int]:
    return [row[0] for row in store.db.execute("SELECT item FROM handled ORDER BY rowid")]


def state(store: Store, task: str = "record") -> dict:
    rows = list(
        store.db.query(
            "SELECT * FROM dreamer_state WHERE task = ? AND project = ?", [task, PROJECT]
        )
    )
    return rows[0] if rows else {}


@pytest.fixture
def db(tmp_path: Path, memsdk_templates: StoreTemplates) -> Path:
    path = memsdk_templates.copy(tmp_path / "dream.db")
    make_items(path, 10)
    return path


# Registration


def test_builtin_tasks_are_registered(tmp_path):
    with open_store(tmp_path / "t.db") as store:
        tasks = Dreamer(store).tasks
        assert {"curate", "retrospective", "classify"} <= set(tasks)
        for task in tasks.values():
            assert isinstance(task, DreamerTask)
            assert task.description and task.batch_size > 0
        statuses = {row["task"]: row for row in Dreamer(store).status()}
        assert statuses["curate"]["status"] == "never run"
        assert statuses["curate"]["passes"] == 0


def test_a_plugin_task_is_registered_and_listed(db):
    with open_store(db, ("record", RecordingTask())) as store:
        dreamer = Dreamer(store)
        assert "record" in dreamer.tasks
        [row] = [r for r in dreamer.status() if r["task"] == "record"]
        assert (row["schedule"], row["total"], row["done"]) == ("manual", 10, 0)


def test_duplicate_task_names_are_an_error_naming_the_name(db):
    twice = (("one", RecordingTask("harbour_sync")), ("two", RecordingTask("harbour_sync")))
    with (
        open_store(db, *twice) as store,
        pytest.raises(MemsdkError, match="'harbour_sync' is registered twice"),
    ):
        Dreamer(store)
    with (
        open_store(db, ("clash", RecordingTask("curate"))) as store,
        pytest.raises(MemsdkError, match="'curate'"),
    ):
        Dreamer(store)


def test_registering_something_else_is_an_error(db):
    class Wrong:
        @hookimpl
        def register_dreamer_tasks(self, register):
            register({"name": "not a task"})

    with (
        open_store(db, ("wrong", Wrong())) as store,
        pytest.raises(MemsdkError, match="expected a DreamerTask"),
    ):
        Dreamer(store)


def test_unknown_task_name_is_not_found(db):
    with (
        open_store(db, ("record", RecordingTask())) as store,
        pytest.raises(MemsdkError, match=r"no dreamer task 'nope'.*record"),
    ):
        Dreamer(store).run("nope")


# Running: complete, paused, resumed


def test_run_to_completion_handles_each_item_exactly_once(db):
    progress = []
    with open_store(db, ("record", RecordingTask())) as store:
        [report] = Dreamer(store).run(
            "record", progress=lambda t, d, n: progress.append((t.name, d, n))
        )
        assert handled(store) == list(range(1, 11))
        assert (report.batches, report.handled, report.finished_pass) == (4, 10, True)
        assert progress == [
            ("record", 3, 10),
            ("record", 6, 10),
            ("record", 9, 10),
            ("record", 10, 10),
        ]
        row = state(store)
        assert (row["cursor"], row["done"], row["passes"], row["status"]) == (None, 0, 1, "idle")
        assert row["lease_owner"] is None and row["finished_at"]
        # a second pass starts over
        Dreamer(store).run("record")
        assert handled(store) == list(range(1, 11)) * 2
        assert state(store)["passes"] == 2


def test_max_batches_pauses_and_the_next_run_resumes(db):
    with open_store(db, ("record", RecordingTask())) as store:
        [first] = Dreamer(store).run("record", max_batches=2)
        assert (first.batches, first.handled, first.finished_pass) == (2, 6, False)
        assert handled(store) == [1, 2, 3, 4, 5, 6]
        row = state(store)
        assert (json.loads(row["cursor"]), row["done"], row["passes"], row["status"]) == (
            6,
            6,
            0,
            "idle",
        )
        assert row["lease_owner"] is None
    with open_store(db, ("record", RecordingTask())) as store:  # a new process, say
        [second] = Dreamer(store).run("record")
        assert second.finished_pass and second.handled == 4
        assert handled(store) == list(range(1, 11))
        assert state(store)["passes"] == 1


def test_interrupt_mid_batch_rolls_the_batch_back_and_the_next_run_completes(db):
    with open_store(db, ("record", RecordingTask(interrupt_at=3))) as store:
        with pytest.raises(KeyboardInterrupt):
            Dreamer(store).run("record")
        # batch 3 inserted 7, 8, 9 before the interrupt: rolled back with its cursor
        assert handled(store) == [1, 2, 3, 4, 5, 6]
        row = state(store)
        assert (json.loads(row["cursor"]), row["done"], row["status"]) == (6, 6, "idle")
        assert row["lease_owner"] is None
        assert not store.db.conn.in_transaction
    with open_store(db, ("record", RecordingTask())) as store:
        Dreamer(store).run("record")
        items = handled(store)
        assert sorted(items) == list(range(1, 11))
        assert len(items) == len(set(items))


def test_a_failing_task_is_recorded_and_resumes_from_its_cursor(db):
    def explode(batch, context):
        if batch == 2:
            raise RuntimeError("lamp exploded")

    with open_store(db, ("record", RecordingTask(before_batch=explode))) as store:
        with pytest.raises(RuntimeError):
            Dreamer(store).run("record")
        row = state(store)
        assert row["status"] == "failed"
        assert "lamp exploded" in row["last_error"]
        assert handled(store) == [1, 2, 3]
    with open_store(db, ("record", RecordingTask())) as store:
        Dreamer(store).run("record")
        assert handled(store) == list(range(1, 11))
        assert state(store)["last_error"] is None


def test_a_run_raises_the_page_cache_and_puts_the_connection_s_own_back(db):
    """While tasks run the connection may cache ``RUN_CACHE_KIB``; after the run, and
    after a run that failed, it has the size it had before."""
    from plugin_sdk.stages import dreamer as dreamer_module

    seen: list[int] = []
    task = RecordingTask(before_batch=lambda n, context: seen.append(cache_kib(context.store)))
    with open_store(db, ("record", task)) as store:
        store.db.execute("PRAGMA cache_size = -2000")
        Dreamer(store).run("record")
        assert seen and set(seen) == {dreamer_module.RUN_CACHE_KIB}
        assert cache_kib(store) == 2000
        failing = RecordingTask("broken", before_batch=lambda n, context: 1 / 0)
        store.plugins.register(failing, "broken")
        with pytest.raises(ZeroDivisionError):
            Dreamer(store).run("broken")
        assert cache_kib(store) == 2000


def cache_kib(store: Store) -> int:
    (value,) = store.db.execute("PRAGMA cache_size").fetchone()
    return -value


def test_a_task_that_does_not_save_its_cursor_is_an_error(db):
    with open_store(db, ("record", RecordingTask(save=False))) as store:
        with pytest.raises(MemsdkError, match="'record' did not save its cursor"):
            Dreamer(store).run("record")
        assert handled(store) == []  # the batch's writes rolled back
        row = state(store)
        assert row["status"] == "failed" and "did not save its cursor" in row["last_error"]


def test_a_task_that_skips_the_batch_context_is_an_error(db):
    class Careless:
        @hookimpl
        def register_dreamer_tasks(self, register):
            register(DreamerTask(name="careless", description="Forgets.", run=lambda context: 5))

    with (
        open_store(db, ("careless", Careless())) as store,
        pytest.raises(MemsdkError, match="'careless' did not save its cursor"),
    ):
        Dreamer(store).run("careless")


def test_a_task_that_stops_saving_after_its_first_batch_is_an_error(db):
    """Every batch must save its cursor, not only the first one."""
    calls = []

    def run(context):
        calls.append(context.cursor)
        if len(calls) == 1:
            with context.batch():
                context.save(1, 1)
        return 1  # later calls claim work without saving: the cursor never moves

    class Sneaky:
        @hookimpl
        def register_dreamer_tasks(self, register):
            register(DreamerTask(name="sneaky", description="Saves once.", run=run))

    with (
        open_store(db, ("sneaky", Sneaky())) as store,
        pytest.raises(MemsdkError, match="'sneaky' did not save its cursor"),
    ):
        Dreamer(store).run("sneaky", max_batches=3)  # bounded: without the check it would spin
    assert calls == [None, 1]


# Leases


def test_a_second_dreamer_finds_the_task_busy(db):
    seen = []

    def probe(batch, context):
        if batch == 2:
            with pytest.raises(TaskBusy, match=OTHER_HOST_OWNER) as caught:
                Dreamer(context.store).run("record")  # this host, another owner
            seen.append(str(caught.value))

    with open_store(db, ("record", RecordingTask(before_batch=probe))) as store:
        [report] = Dreamer(store, owner=OTHER_HOST_OWNER).run("record")
        assert report.finished_pass and seen
        assert sorted(handled(store)) == list(range(1, 11))
        assert set(r[0] for r in store.db.execute("SELECT owner FROM handled")) == {
            OTHER_HOST_OWNER
        }


def test_two_dreamers_in_one_process_do_not_share_a_lease(db):
    seen = []

    def probe(batch, context):
        if batch == 2:
            with pytest.raises(TaskBusy, match=re.escape(context.owner)):
                Dreamer(context.store).run("record")  # same process, another Dreamer
            seen.append(batch)

    with open_store(db, ("record", RecordingTask(before_batch=probe))) as store:
        first = Dreamer(store)
        [report] = first.run("record")
        assert report.finished_pass and seen == [2]
        assert sorted(handled(store)) == list(range(1, 11))
        assert first.owner != Dreamer(store).owner


def test_owners_name_the_host_the_process_and_the_instance():
    host, pid = owner_process(default_owner())
    assert (host, pid) == (socket.gethostname(), str(os.getpid()))
    assert owner_process("old-host:42") == ("old-host", "42")  # leases written before


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


def hold_lease(store: Store, owner: str, until: datetime) -> None:
    store.db.execute(
        """INSERT INTO dreamer_state (task, project, lease_owner, lease_until, status)
           VALUES ('record', ?, ?, ?, 'running')""",
        [PROJECT, owner, iso(until)],
    )


def test_a_live_lease_of_another_host_is_respected_until_it_expires(db):
    now = [datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)]
    clock = lambda: now[0]  # noqa: E731
    with open_store(db, ("record", RecordingTask()), clock=clock) as store:
        hold_lease(store, OTHER_HOST_OWNER, now[0] + timedelta(seconds=60))
        with pytest.raises(TaskBusy, match=re.escape(OTHER_HOST_OWNER)):
            Dreamer(store).run("record")
        assert handled(store) == []
        now[0] += timedelta(seconds=61)
        [report] = Dreamer(store).run("record")
        assert report.finished_pass
        assert handled(store) == list(range(1, 11))


def test_a_lease_of_a_dead_local_process_is_taken_over_at_once(db):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with open_store(db, ("record", RecordingTask())) as store:
        hold_lease(
            store,
            f"{socket.gethostname()}:{dead.pid}",
            datetime.now(timezone.utc) + timedelta(hours=1),
        )
        [report] = Dreamer(store).run("record")
        assert report.finished_pass and handled(store) == list(range(1, 11))


def test_a_run_whose_lease_is_taken_over_stops_and_rolls_back(db):
    def steal(batch, context):
        if batch == 2:
            with open_store(context.store.path) as thief:
                thief.db.execute(
                    "UPDATE dreamer_state SET lease_owner = ? WHERE task = 'record'",
                    [OTHER_HOST_OWNER],
                )

    with open_store(db, ("record", RecordingTask(before_batch=steal))) as store:
        with pytest.raises(LeaseLost, match="taken over"):
            Dreamer(store).run("record")
        assert handled(store) == [1, 2, 3]
        assert state(store)["lease_owner"] == OTHER_HOST_OWNER  # the new holder keeps it


# A real kill


CHILD = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("dreamer_tests", {test_file!r})
tests = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tests)
from plugin_sdk.stages.dreamer import Dreamer
store = tests.open_store(sys.argv[1], ("record", tests.RecordingTask(batch_size=2, delay=0.05)))
Dreamer(store).run("record")
store.close()
"""


def committed(path: Path) -> tuple[int, dict]:
    with contextlib.closing(driver.connect(path, timeout=5)) as conn:
        conn.row_factory = driver.Row
        count = conn.execute("SELECT count(*) FROM handled").fetchone()[0]
        row = conn.execute("SELECT * FROM dreamer_state WHERE task = 'record'").fetchone()
        return count, dict(row) if row else {}


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_handles_every_item_exactly_once(tmp_path):
    path = tmp_path / "killed.db"
    make_items(path, 60)
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(test_file=__file__), "utf-8")
    errors = tmp_path / "child.err"
    with errors.open("wb") as err:
        child = subprocess.Popen([sys.executable, str(script), str(path)], stderr=err)
    try:
        deadline = time.monotonic() + 60
        while committed(path)[0] < 8:
            assert child.poll() is None, errors.read_text()
            assert time.monotonic() < deadline, "the child made no progress"
            time.sleep(0.02)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()  # reaped: the pid no longer exists
    assert child.returncode == -signal.SIGKILL
    count, row = committed(path)
    assert 8 <= count < 60, "killed before the end"
    assert row["lease_owner"].startswith(f"{socket.gethostname()}:{child.pid}:")
    assert row["status"] == "running"
    assert row["done"] == count  # only whole batches were committed, with their cursor
    assert json.loads(row["cursor"]) == count

    with open_store(path, ("record", RecordingTask(batch_size=7))) as store:
        dreamer = Dreamer(store)
        assert dreamer.owner != row["lease_owner"]
        [report] = dreamer.run("record")  # the dead pid's lease is taken over
        assert report.finished_pass
        assert report.handled == 60 - count
        items = handled(store)
        assert sorted(items) == list(range(1, 61))
        assert len(items) == len(set(items))
        owners = [r[0] for r in store.db.execute("SELECT owner FROM handled ORDER BY rowid")]
        assert set(owners[:count]) == {row["lease_owner"]}
        assert set(owners[count:]) == {dreamer.owner}
        assert state(store)["passes"] == 1


# The built-in curate task

HARBOUR = {
    "format": 1,
    "name": "harbour",
    "version": "1.0.0",
    "description": "A pack for dreamer tests.",
    "categories": {
        "HARBOUR_RULES": {"kind": "intent", "priority": 10, "criteria": {"definition": "Rules."}},
        "TIDE_TABLES": {"kind": "content", "priority": 20, "criteria": {"definition": "Tides."}},
        "BERTH_NOTES": {"kind": "content", "priority": 30, "criteria": {"definition": "Berths."}},
    },
}
TIDE = "High tide at Port Ellen on Monday is 04:12 with a height of 3.4 m"
TIDE_LONGER = TIDE + " today"
RULE = "Never berth on the north quay at low water without the harbour master"
RULE_LONGER = RULE + " present"


HARBOUR_PACK = validate_pack(HARBOUR, source="test")


@pytest.fixture
def harbour_store(new_store: Callable[..., Store]) -> Callable[..., Store]:
    """``harbour_store(name, *plugins)`` -> a new store with the harbour pack and those plugins."""

    def open_(name: str, *plugins: tuple[str, object]) -> Store:
        return new_store(
            HARBOUR_PACK, name=name, project=PROJECT, plugins=fresh_plugin_manager(*plugins)
        )

    return open_


def memory_rows(store: Store, ids: list[int]) -> list[tuple]:
    marks = ", ".join("?" * len(ids))
    return [
        tuple(r)
        for r in store.db.execute(f"SELECT * FROM memories WHERE id IN ({marks}) ORDER BY id", ids)
    ]


def test_curate_merges_near_duplicates_within_one_category_only(harbour_store):
    with harbour_store("c.db") as store:
        short = store.memories.write(TIDE, "TIDE_TABLES").id
        long = store.memories.write(TIDE_LONGER, "TIDE_TABLES").id
        other_category = store.memories.write(TIDE, "BERTH_NOTES").id
        unrelated = store.memories.write(
            "Berth 4 has fresh water and shore power.", "BERTH_NOTES"
        ).id
        [report] = Dreamer(store).run("curate")
        assert report.finished_pass
        merged, target = store.memories.get(short), store.memories.get(long)
        assert (merged.status, merged.superseded_by) == ("superseded", long)
        assert (target.status, target.merged_from, target.seen_count) == ("active", [short], 2)
        assert target.content == TIDE_LONGER  # no model: the most detailed text is kept
        for kept in (other_category, unrelated):
            memory = store.memories.get(kept)
            assert (memory.status, memory.superseded_by, memory.merged_from) == ("active", None, [])
        assert pending(store) == []


def test_curate_proposes_instead_of_merging_intent_memories(harbour_store):
    with harbour_store("c.db") as store:
        short = store.memories.write(RULE, "HARBOUR_RULES").id
        long = store.memories.write(RULE_LONGER, "HARBOUR_RULES").id
        before = memory_rows(store, [short, long])
        Dreamer(store).run("curate")
        assert memory_rows(store, [short, long]) == before
        [proposal] = pending(store)
        assert proposal.diff_type == "memory_entry"
        assert proposal.source == "dreamer:curate"
        assert proposal.evidence == [short, long]
        assert proposal.diff == {
            "action": "merge",
            "category": "HARBOUR_RULES",
            "into": long,
            "sources": [short],
        }
        # the next pass finds the same pair: the identical pending proposal is not filed again
        Dreamer(store).run("curate")
        assert len(pending(store)) == 1
        assert memory_rows(store, [short, long]) == before


def test_an_identical_pending_proposal_is_not_filed_twice(harbour_store):
    with harbour_store("c.db") as store:
        seen = [store.memories.write(f"Berth {n} is busy.", "HARBOUR_RULES").id for n in (1, 2, 3)]
        assert seen == [1, 2, 3]  # the evidence: memories of the project
        args = dict(
            diff_type="memory_entry",
            rationale="r",
            evidence=[2, 1],
            diff={"content": "Moor at berth 4.", "action": "write", "category": "HARBOUR_RULES"},
            source="test",
        )
        first = propose(store, **args)
        assert first is not None
        assert propose(store, **{**args, "rationale": "other words", "evidence": [3]}) is None
        other = {"action": "write", "category": "HARBOUR_RULES", "content": "Moor at berth 5."}
        assert propose(store, **{**args, "diff": other}) is not None
        assert propose(store, **{**args, "evidence": []}, project="elsewhere") is not None
        assert pending(store)[0].id == first
        assert pending(store)[0].evidence == [1, 2]
        assert len(pending(store)) == 2


def test_curate_with_a_model_writes_the_merged_text(harbour_store):
    model = ScriptedModel(["High tide at Port Ellen on Monday 04:12, 3.4 m (merged)."])
    with harbour_store("c.db", ("scripted-model", model)) as store:
        short = store.memories.write(TIDE, "TIDE_TABLES").id
        long = store.memories.write(TIDE_LONGER, "TIDE_TABLES").id
        Dreamer(store).run("curate")
        [prompt] = model.prompts
        assert prompt.purpose == "curate"
        assert prompt.system == dreamer_curate(store)
        assert f"[{long}] {TIDE_LONGER}" in prompt.messages[0]["content"]
        assert f"[{short}] {TIDE}" in prompt.messages[0]["content"]
        target = store.memories.get(long)
        assert target.content == "High tide at Port Ellen on Monday 04:12, 3.4 m (merged)."
        assert store.memories.get(short).superseded_by == long


def test_curate_keeps_memories_apart_when_the_model_says_so(harbour_store):
    # The curate prompt asks the model for "<keep-separate/> if they differ".
    model = ScriptedModel(["<keep-separate/>"])
    with harbour_store("c.db", ("scripted-model", model)) as store:
        short = store.memories.write(TIDE, "TIDE_TABLES").id
        long = store.memories.write(TIDE_LONGER, "TIDE_TABLES").id
        Dreamer(store).run("curate")
        assert len(model.prompts) == 1
        assert store.memories.get(short).status == "active"
        assert store.memories.get(short).superseded_by is None
        assert store.memories.get(long).merged_from == []


# The command line


@pytest.mark.slow
def test_cli_dream_run_and_status_on_the_demo_store(tmp_path):
    db = str(tmp_path / "demo.db")
    env = {"MEMSDK_LOAD_PLUGINS": ""}
    runner = CliRunner()
    demo = runner.invoke(cli, ["demo", "--db", db], env=env)
    assert demo.exit_code == 0, demo.output
    ran = runner.invoke(cli, ["dream", "run", "--db", db, "--project", "demo"], env=env)
    assert ran.exit_code == 0, ran.output
    for task in ("classify", "curate", "retrospective"):
        assert f"{task}: " in ran.stdout and "pass complete" in ran.stdout
    # standard error is no terminal here: no progress bar (test_cli_habits.py draws one)
    assert ran.stderr == ""
    status = runner.invoke(cli, ["dream", "status", "--db", db, "--project", "demo"], env=env)
    assert status.exit_code == 0, status.output
    lines = {line.split()[0]: line for line in status.stdout.splitlines()}
    for task in ("classify", "curate", "retrospective"):
        assert "passes 1" in lines[task]
        assert "idle" in lines[task]
    rows = json.loads(
        runner.invoke(
            cli, ["dream", "status", "--db", db, "--project", "demo", "--json"], env=env
        ).stdout
    )
    passes = {row["task"]: row["passes"] for row in rows}
    assert {task: passes[task] for task in ("classify", "curate", "retrospective")} == {
        "classify": 1,
        "curate": 1,
        "retrospective": 1,
    }


def test_cli_dream_run_max_batches_pauses(tmp_path):
    db = str(tmp_path / "demo.db")
    env = {"MEMSDK_LOAD_PLUGINS": ""}
    runner = CliRunner()
    assert runner.invoke(cli, ["demo", "--db", db], env=env).exit_code == 0
    ran = runner.invoke(
        cli,
        ["dream", "run", "classify", "--max-batches", "1", "--db", db, "--project", "demo"],
        env=env,
    )
    assert ran.exit_code == 0, ran.output
    assert "paused" in ran.stdout
    unknown = runner.invoke(cli, ["dream", "run", "nope", "--db", db, "--project", "demo"], env=env)
    assert unknown.exit_code == 1
    assert "no dreamer task 'nope'" in unknown.output
