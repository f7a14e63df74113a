"""Forget: the text leaves the file and its log for good, and is refused when it comes back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from plugin_sdk import NotFound, Store, resolve_pack
from plugin_sdk.cli import cli
from plugin_sdk.composites import refsets
from plugin_sdk.composites.fragment import fragment
from plugin_sdk.errors import ForgottenText
from plugin_sdk.host.mcp_tools import call_tool, tool_specs
from plugin_sdk.proposals.filing import propose
from plugin_sdk.retain.job import retain
from plugin_sdk.retain.observations import observe
from plugin_sdk.stages.historian import run_historian
from plugin_sdk.store import forget as forgetting
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager

SECRET = "sk-live-Zq7rT9wX2mK4pL8vN3bC"
TOKEN = b"zq7rt9wx2mk4pl8vn3bc"  # how the full-text index holds the key's last word
TEXT = f"The deploy key for the billing service is {SECRET} until March."


def file_bytes(path: Path) -> bytes:
    """The store file and its write-ahead log, lower-cased."""
    data = path.read_bytes()
    wal = Path(f"{path}-wal")
    if wal.exists():
        data += wal.read_bytes()
    return data.lower()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "forget.db"
    with Store(path, project="p") as store:
        store.packs.install(resolve_pack("ops"))
    return path


def category(store: Store) -> str:
    return store.category_names()[0]


def test_after_forget_and_vacuum_no_byte_of_the_text_is_left_in_the_file_or_its_log(db):
    with Store(db, project="p") as store:
        memory = store.memories.write(TEXT, category(store)).id
        store.memories.write("Rotate keys every quarter.", category(store))
        store.memories.search("billing deploy")  # the index holds it
        assert SECRET.lower().encode() in file_bytes(db)  # the grep can see it
        done = store.memories.forget(memory, reason="a leaked key")
        store.vacuum()
        data = file_bytes(db)
        assert SECRET.lower().encode() not in data
        assert TOKEN not in data
        assert b"billing service" not in data
        assert Path(f"{db}-wal").stat().st_size == 0
        assert done.reason == "a leaked key" and done.category == category(store)
        assert store.memories.search("billing") == []
    with Store(db, project="p") as store:  # and it stays out on reopening
        with pytest.raises(NotFound, match="was forgotten"):
            store.memories.get(memory)
        assert memory not in [m.id for m in store.memories.list(status=None)]


def test_the_same_text_coming_back_is_refused_and_reported_until_undone(db):
    with Store(db, project="p") as store:
        name = category(store)
        memory = store.memories.write(TEXT, name).id
        store.memories.forget(memory)
        with pytest.raises(ForgottenText) as refused:
            store.memories.write(f"  {TEXT.upper()} ", name)  # same normalized text
        assert refused.value.memory_id == memory and SECRET not in str(refused.value)
        with pytest.raises(ForgottenText, match="item 1"):
            store.memories.write_many(
                [{"content": "Fine.", "category": name}, {"content": TEXT, "category": name}]
            )
        other = store.memories.write("Something else.", name).id
        with pytest.raises(ForgottenText):
            store.memories.update(other, content=TEXT)
        assert store.memories.get(other).content == "Something else."
        with pytest.raises(ForgottenText):  # another category is no way round it
            store.memories.write(TEXT, store.category_names()[1])

        lifted = forgetting.undo(store, memory)
        assert lifted.undone_at is not None
        again = store.memories.write(TEXT, name)
        assert again.created and again.id != memory  # a new memory; the old text stays gone
        with pytest.raises(NotFound, match="was forgotten"):
            store.memories.get(memory)


def test_the_historian_reports_a_forgotten_fact_instead_of_writing_it(tmp_path):
    model = ScriptedModel()
    plugins = fresh_plugin_manager(("model", model))
    with Store(tmp_path / "h.db", project="p", plugins=plugins) as store:
        store.packs.install(resolve_pack("ops"))
        name = category(store)
        store.memories.forget(store.memories.write(TEXT, name).id)
        model.add(f'<facts category="{name}">\n- {TEXT}\n- Billing deploys on Fridays.\n</facts>')
        report = run_historian(store, [{"role": "user", "content": "about billing"}])
    assert len(report.written) == 1
    assert report.refused == [{"category": name, "line": 2, "forgotten": 1}]


def observation(identifier: str, text: str, name: str) -> str:
    return json.dumps(
        {
            "id": identifier,
            "source": "test",
            "timestamp": "2026-03-01T10:00:00Z",
            "category": name,
            "topic": "billing",
            "actors": ["svc:billing"],
            "payload_typed": {"text": text},
        }
    )


def test_a_replayed_or_new_observation_of_forgotten_text_writes_nothing(db):
    with Store(db, project="p") as store:
        name = category(store)
        observe(store, [observation("o-1", TEXT, name)])
        retain(store)
        [memory] = [m.id for m in store.memories.list(status=None) if SECRET in m.content]
        store.memories.forget(memory)
        (document,) = store.db.execute("SELECT document FROM observations").fetchone()
        assert SECRET not in document  # the payload is redacted too
        replay = observe(store, [observation("o-1", TEXT, name)])
        assert replay.replayed == ["o-1"]  # the id and content are known: nothing changes
        observe(store, [observation("o-2", TEXT, name)])
        report = retain(store)
        assert [i for i, _ in report.failed] == ["o-2"]
        assert "was forgotten" in report.failed[0][1] and SECRET not in report.failed[0][1]
        assert not [m for m in store.memories.list(status=None) if SECRET in m.content]


def test_copies_of_the_text_are_redacted_and_the_rest_kept(db):
    with Store(db, project="p") as store:
        name = category(store)
        steps = f"Billing:\n\n1. {TEXT}\n\n2. Restart the billing worker."
        done = fragment(store, store.memories.write(steps, name).id)
        secret_detail = next(d for d in done.details if SECRET in store.memories.get(d).content)
        quoted = store.memories.get(secret_detail).content  # what copies quote in full
        set_id = refsets.freeze(store, done.composite)
        propose(
            store,
            diff_type="memory_entry",
            rationale=f"because {quoted}",
            evidence=[secret_detail],
            diff={"action": "update", "id": secret_detail, "content": f"{quoted} (checked)"},
            source="t",
        )
        store.db.execute(
            "INSERT INTO dreamer_state (task, project, status, last_error) "
            "VALUES ('t', 'p', 'failed', ?)",
            [f"the model said: {quoted}"],
        )
        result = store.memories.forget(secret_detail)
        assert result.also_in == [done.original]  # the fragmented original still holds it
        assert set(result.redacted) >= {
            "reference_set_items",
            "proposals",
            "dreamer_state",
            "composites",
        }
        dump = "\n".join(
            str(row)
            for table in (
                "composites",
                "composite_members",
                "reference_set_items",
                "proposals",
                "proposal_events",
                "dreamer_state",
            )
            for row in store.db.execute(f"SELECT * FROM {table}").fetchall()
        )
        assert SECRET not in dump
        composite = store.composites.get(done.composite)
        assert secret_detail not in composite.members and len(composite.members) == 1
        item = refsets.read(store, set_id).items
        assert [i["content"] for i in item if i["memory_id"] == secret_detail] == [""]
        assert "Restart the billing worker" in dump  # only the text went
        json.loads(store.db.execute("SELECT diff FROM proposals").fetchone()[0])  # still JSON
        store.memories.forget(done.original)
        store.vacuum()
    assert SECRET.lower().encode() not in file_bytes(db)


def test_forget_twice_and_ids_out_of_range_are_clear_errors(db):
    with Store(db, project="p") as store:
        memory = store.memories.write(TEXT, category(store)).id
        store.memories.forget(memory)
        with pytest.raises(Exception, match="forgotten already"):
            store.memories.forget(memory)
        with pytest.raises(NotFound, match="ids are whole numbers"):
            store.memories.forget(2**63)
        with pytest.raises(NotFound):
            forgetting.undo(store, 424242)


def run(db: Path, *args: str, input: str | None = None):
    return CliRunner().invoke(cli, [*args, "--db", str(db), "--project", "p"], input=input)


def test_cli_forget_secret_asks_first_and_forgets_every_match(db):
    with Store(db, project="p") as store:
        name = category(store)
        ids = [store.memories.write(f"{TEXT} ({n})", name).id for n in ("one", "two")] + [
            store.memories.write("Nothing secret here.", name).id
        ]
        store.memories.archive(ids[1])  # any status is searched
    refused = run(db, "forget", "--secret", r"sk-live-[A-Za-z0-9]+")
    assert refused.exit_code == 1 and "Aborted" in refused.output
    with Store(db, project="p") as store:
        assert SECRET in store.memories.get(ids[0]).content
    done = run(db, "forget", "--secret", r"sk-live-[A-Za-z0-9]+", "--yes", "--vacuum", "--json")
    assert done.exit_code == 0, done.output
    assert [item["memory_id"] for item in json.loads(done.output)["forgotten"]] == ids[:2]
    assert SECRET.lower().encode() not in file_bytes(db)
    listed = run(db, "forget", "--list")
    assert listed.exit_code == 0 and f"#{ids[0]}" in listed.output
    bad = run(db, "forget", "--secret", "(?=lookahead)", "--yes")
    assert bad.exit_code == 1 and len(bad.output.strip().splitlines()) == 1
    both = run(db, "forget", str(ids[2]), "--undo", str(ids[0]))
    assert both.exit_code == 2


def test_cli_write_of_forgotten_text_is_one_line_and_undo_allows_it(db):
    with Store(db, project="p") as store:
        name = category(store)
        memory = store.memories.write(TEXT, name).id
    assert run(db, "forget", str(memory), "--reason", "leaked").exit_code == 0
    again = run(db, "memory", "write", TEXT, "-c", name)
    assert again.exit_code == 1
    assert again.output.strip().splitlines() == [
        f"Error: this text was forgotten (memory {memory}) and is not stored again; "
        f"memsdk forget --undo {memory} allows it"
    ]
    assert run(db, "forget", "--undo", str(memory)).exit_code == 0
    assert run(db, "memory", "write", TEXT, "-c", name).exit_code == 0


def test_mcp_memory_forget(db):
    with Store(db, project="p") as store:
        memory = store.memories.write(TEXT, category(store)).id
        specs = tool_specs(store)
        done = call_tool(store, specs, "memory_forget", {"id": memory, "reason": "asked"})
        assert not done.is_error and SECRET not in done.text
        again = call_tool(store, specs, "memory_get", {"id": memory})
        assert again.is_error and "was forgotten" in again.text
