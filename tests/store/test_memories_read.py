"""The typed read API: ``store.memories.iter``, ``list`` and ``find`` (filters, batches, streaming)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from plugin_sdk import InvalidMemory, Memory, Store
from plugin_sdk.stages.classify import by_importance

ROOT = Path(__file__).resolve().parents[2]
RULES, STATE, CONFIG, INCIDENTS = "OPS_RULES", "ENV_STATE", "CONFIG_VALUES", "INCIDENTS"


def ids(memories) -> list[int]:
    return [m.id for m in memories]


@pytest.fixture
def filled(store: Store) -> dict[str, int]:
    """Nine memories in four categories, some archived, seen or retrieved more than once."""
    made = {}
    for name, text, category in [
        ("rule", "Deploys happen on Tuesdays.", RULES),
        ("state", "The staging box runs Debian 12.", STATE),
        ("config", "max_connections = 200", CONFIG),
        ("incident", "The March outage came from a full disk.", INCIDENTS),
        ("rule2", "Never force-push to main.", RULES),
        ("state2", "Prod runs three replicas.", STATE),
        ("old", "The old VPN is at vpn1.example.", STATE),
        ("config2", "timeout_seconds = 30", CONFIG),
        ("incident2", "The May outage came from DNS.", INCIDENTS),
    ]:
        made[name] = store.memories.write(text, category).id
    store.memories.archive(made["old"])
    for _ in range(2):
        store.memories.write("The staging box runs Debian 12.", STATE)  # seen 3 times
    store.memories.write("timeout_seconds = 30", CONFIG)  # seen twice
    store.memories.record_retrievals([made["incident"], made["config"]])
    store.memories.record_retrievals([made["incident"]])
    store.memories.record_retrievals([made["incident"]])
    return made


def test_iter_streams_memory_records(store, filled, monkeypatch):
    built = []
    original = Memory.from_row

    def counting(row):
        built.append(row["id"])
        return original(row)

    monkeypatch.setattr(Memory, "from_row", staticmethod(counting))
    stream = store.memories.iter()
    assert inspect.isgenerator(stream)
    assert built == []  # nothing is read before the first item is asked for
    first = next(stream)
    assert isinstance(first, Memory)
    assert built == [first.id]  # one row read, one record made
    rest = list(stream)
    assert ids([first, *rest]) == sorted(set(filled.values()) - {filled["old"]})
    assert len(built) == 1 + len(rest)


def test_iter_reads_on_while_the_caller_writes_between_rows(store, monkeypatch):
    """Rows come a batch at a time (PostgreSQL: a server-side cursor of 500 rows, never
    the whole result in the client); writes between them, in or out of a transaction,
    neither end the stream nor lose a row; stopping early releases what the read held."""
    written = [store.memories.write(f"note {n} about the ledger", RULES).id for n in range(1203)]
    seen = []
    for n, memory in enumerate(store.memories.iter(category=RULES)):
        seen.append(memory.id)
        if n in (3, 700):
            store.memories.write(f"written while reading {n}", STATE)
            if store.engine == "postgresql":
                (cursor,) = store.db.execute("SELECT name FROM pg_cursors").fetchall()
                assert cursor[0].startswith("memsdk_stream_")
        if n == 900:
            with store.atomic():
                store.memories.write("written in a transaction while reading", STATE)
    assert seen == written
    stream = store.memories.iter(category=RULES)
    assert next(stream).id == written[0]
    stream.close()
    if store.engine == "postgresql":
        assert not store.db.execute("SELECT name FROM pg_cursors").fetchall()
    assert len(list(store.memories.iter(category=STATE))) == 3


def test_defaults_active_memories_of_the_stores_project_oldest_first(store, filled):
    other = store.memories.write("Other project rule.", RULES, project="elsewhere").id
    active = sorted(set(filled.values()) - {filled["old"]})
    assert ids(store.memories.iter()) == active
    assert ids(store.memories.list()) == active
    assert ids(store.memories.list(project="elsewhere")) == [other]


def test_status_one_several_or_any(store, filled):
    assert ids(store.memories.list(status="archived")) == [filled["old"]]
    everything = sorted(filled.values())
    assert ids(store.memories.list(status=None)) == everything
    assert ids(store.memories.list(status=["active", "archived"])) == everything
    assert store.memories.list(status=[]) == []
    with pytest.raises(InvalidMemory, match="unknown status 'gone'"):
        store.memories.list(status=["active", "gone"])


def test_category_one_or_several_and_kind(store, filled):
    assert ids(store.memories.list(category=RULES)) == [filled["rule"], filled["rule2"]]
    assert ids(store.memories.list(category=[CONFIG, INCIDENTS])) == sorted(
        [filled["config"], filled["incident"], filled["config2"], filled["incident2"]]
    )
    assert ids(store.memories.list(category=(RULES,), kind="content")) == []
    assert ids(store.memories.list(kind="intent")) == [filled["rule"], filled["rule2"]]
    assert store.memories.list(category=[]) == []  # an empty list keeps nothing


def test_values_are_bound_parameters(store, filled):
    hostile = "x' OR 1=1 --"
    assert store.memories.list(category=hostile) == []
    assert store.memories.list(category=[hostile, RULES]) == store.memories.list(category=RULES)
    assert store.memories.list(kind=hostile) == []
    assert store.memories.list(project=hostile) == []
    with pytest.raises(InvalidMemory, match="unknown order"):
        store.memories.list(order="id; DROP TABLE memories")
    assert store.memories.count() == 8


def test_batches_by_id_cover_everything_once(store, filled):
    everything = ids(store.memories.list(status=None, limit=None))
    seen: list[int] = []
    after = 0
    while batch := store.memories.list(status=None, after_id=after, limit=3):
        assert len(batch) <= 3
        seen += ids(batch)
        after = batch[-1].id
    assert seen == everything
    # newest first, with after_id continuing downwards
    newest = store.memories.list(status=None, order="-id", limit=4)
    assert ids(newest) == everything[::-1][:4]
    following = store.memories.list(status=None, order="-id", after_id=newest[-1].id, limit=4)
    assert ids(following) == everything[::-1][4:8]


def test_writes_between_batches_are_seen_in_order(store, filled):
    first = store.memories.list(after_id=0, limit=4)
    added = store.memories.write("A memory written between two batches.", STATE).id
    store.memories.archive(filled["incident2"])
    rest = store.memories.list(after_id=first[-1].id, limit=None)
    assert ids(rest)[-1] == added
    assert filled["incident2"] not in ids(rest)


def test_id_range_is_inclusive(store, filled):
    low, high = filled["config"], filled["state2"]
    assert ids(store.memories.list(min_id=low, max_id=high)) == [
        i for i in sorted(filled.values()) if low <= i <= high
    ]
    assert ids(store.memories.list(min_id=high, max_id=high)) == [high]
    assert ids(store.memories.list(min_id=high, max_id=low)) == []


def test_after_id_needs_an_id_order(store, filled):
    with pytest.raises(InvalidMemory, match="after_id needs order 'id' or '-id'"):
        store.memories.list(after_id=1, order="importance")


def test_min_seen_and_min_retrievals(store, filled):
    assert ids(store.memories.list(min_seen=2)) == [filled["state"], filled["config2"]]
    assert ids(store.memories.list(min_seen=3)) == [filled["state"]]
    assert ids(store.memories.list(min_retrievals=1)) == [filled["config"], filled["incident"]]
    assert ids(store.memories.list(min_retrievals=2, category=INCIDENTS)) == [filled["incident"]]


def test_orders(store, filled):
    active = store.memories.list(limit=None)
    assert ids(store.memories.list(order="importance", limit=None)) == ids(by_importance(active))
    retrieved = store.memories.list(order="retrievals", limit=3)
    assert ids(retrieved) == [filled["incident"], filled["config"], filled["rule"]]


def test_limit_and_offset(store, filled):
    everything = ids(store.memories.list(limit=None))
    assert len(store.memories.list()) == len(everything)  # under the default limit of 100
    assert ids(store.memories.list(limit=2, offset=3)) == everything[3:5]
    assert ids(store.memories.iter(offset=6)) == everything[6:]
    assert ids(store.memories.iter(limit=2)) == everything[:2]


def test_cell_and_act_combine_with_other_filters(store, filled):
    for memory_id, memory_type, referent, act in [
        (filled["rule"], "procedural", "self", "directive"),
        (filled["rule2"], "procedural", "self", None),
        (filled["state"], "semantic", "object", None),
    ]:
        store.db.execute(
            """INSERT INTO memory_cells (memory_id, memory_type, referent, act, signal)
               VALUES (?, ?, ?, ?, 'test')""",
            [memory_id, memory_type, referent, act],
        )
    assert ids(store.memories.iter(cell="procedural.self")) == [filled["rule"], filled["rule2"]]
    assert ids(store.memories.iter(cell="procedural.self", act="directive")) == [filled["rule"]]
    assert ids(store.memories.iter(cell="semantic.object", category=RULES)) == []


def test_find_the_memory_a_write_would_fold_into(store, filled):
    found = store.memories.find("  the STAGING box runs debian 12 ", STATE)
    assert found is not None and found.id == filled["state"]
    archived = store.memories.find("The old VPN is at vpn1.example.", STATE)
    assert archived is not None and archived.status == "archived"  # any status
    assert store.memories.find("The staging box runs Debian 12.", RULES) is None
    assert store.memories.find("Deploys happen on Tuesdays.", RULES, project="elsewhere") is None
    with pytest.raises(InvalidMemory):
        store.memories.find("   ", RULES)


def test_the_store_doc_example_runs(store, filled):
    text = (ROOT / "docs" / "store.md").read_text("utf-8")
    blocks = [b.split("\n```", 1)[0] for b in text.split("```python\n")[1:]]
    [example] = [b for b in blocks if "after_id" in b]
    namespace = {"store": store, "facts": STATE, "notes": CONFIG}
    exec(compile(example, "docs/store.md", "exec"), namespace)
    assert ids(namespace["recurring"]) == []  # the loop consumed the stream
    assert namespace["after"] == max(ids(store.memories.list(limit=None)))
