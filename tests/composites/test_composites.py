"""Composites (typed star groups over memories): schema, API, cursor, merge fate,
header map, stale headers and the sync-headers dreamer task, frozen reference sets."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from plugin_sdk import MemsdkError, NotFound, Pack, Store
from plugin_sdk.composites.composite import TYPES
from plugin_sdk.composites.fragment import fragment, reconstruct
from plugin_sdk.composites.headermap import header_map, render
from plugin_sdk.composites.refsets import freeze, read
from plugin_sdk.errors import CompositeError, MergeRefused
from plugin_sdk.proposals import filing as proposals_mod
from plugin_sdk.stages.dreamer import Dreamer
from plugin_sdk.store import driver
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager

PROJECT = "comp-test"
CAT = "RESEARCH"  # content category of the ops pack
OTHER = "INCIDENTS"  # another content category
INTENT = "OPS_RULES"  # intent category of the ops pack

COMPOSITE_TABLES = ("memories", "composites", "composite_members", "composite_events")


@pytest.fixture
def cs(new_store: Callable[..., Store], ops_pack: Pack) -> Store:
    """A store with the ops pack and only memsdk's built-in plugins (no model)."""
    return new_store(ops_pack, name="c.db", project=PROJECT, plugins=fresh_plugin_manager())


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def ms(new_store: Callable[..., Store], ops_pack: Pack, model: ScriptedModel) -> Store:
    """Like ``cs`` but with a ScriptedModel registered as the host's model."""
    plugins = fresh_plugin_manager(("scripted-model", model))
    return new_store(ops_pack, name="m.db", project=PROJECT, plugins=plugins)


def mem(store: Store, text: str, category: str = CAT, **kw) -> int:
    result = store.memories.write(text, category, **kw)
    assert result.created, f"{text!r} folded into an existing memory"
    return result.id


def mems(store: Store, n: int, prefix: str = "note", category: str = CAT) -> list[int]:
    return [mem(store, f"{prefix} number {i} of {n}", category) for i in range(n)]


def dump(store: Store, tables: tuple[str, ...] = COMPOSITE_TABLES) -> dict[str, list[tuple]]:
    return {
        t: [tuple(r) for r in store.db.execute(f"SELECT * FROM {t} ORDER BY rowid")] for t in tables
    }


def member_rows(store: Store, composite_id: int) -> list[tuple[int, int]]:
    return [
        tuple(r)
        for r in store.db.execute(
            "SELECT member_memory_id, position FROM composite_members WHERE composite_id = ? "
            "ORDER BY position",
            [composite_id],
        )
    ]


# Schema


def columns(store: Store, table: str) -> list[tuple[str, str, int, int]]:
    """(name, type, notnull, pk) per column, in table order."""
    return [(r[1], r[2], r[3], r[5]) for r in store.db.execute(f"PRAGMA table_info({table})")]


@pytest.mark.sqlite_only(
    "the schema read through SQLite's pragmas; tests/store/test_postgres_schema.py checks PostgreSQL's"
)
def test_composites_table_has_the_core_columns_plus_the_feature_ones(cs):
    """The core: composites(id, type, head_memory_id, cursor, created_at, updated_at).

    docs/composites.md documents three more columns the features need: cyclic
    (rotations), layout (exact reconstruction) and stale_since (stale headers).
    """
    cols = columns(cs, "composites")
    names = [c[0] for c in cols]
    core = ["id", "type", "head_memory_id", "cursor", "created_at", "updated_at"]
    assert [n for n in names if n in core] == core
    assert names == [
        "id",
        "type",
        "head_memory_id",
        "cursor",
        "cyclic",
        "layout",
        "stale_since",
        "created_at",
        "updated_at",
    ]
    by_name = {c[0]: c for c in cols}
    assert by_name["id"][1:] == ("INTEGER", 0, 1)
    assert by_name["type"][1:3] == ("TEXT", 1)
    assert by_name["head_memory_id"][1:3] == ("INTEGER", 1)
    assert by_name["cursor"][1:3] == ("INTEGER", 1)
    fks = [tuple(r[2:5]) for r in cs.db.execute("PRAGMA foreign_key_list(composites)")]
    assert ("memories", "head_memory_id", "id") in fks


@pytest.mark.sqlite_only(
    "the schema read through SQLite's pragmas; tests/store/test_postgres_schema.py checks PostgreSQL's"
)
def test_composite_members_table_is_exactly_composite_member_position(cs):
    cols = columns(cs, "composite_members")
    assert [c[0] for c in cols] == ["composite_id", "member_memory_id", "position"]
    assert all(c[1] == "INTEGER" and c[2] == 1 for c in cols)
    assert {c[0]: c[3] for c in cols} == {"composite_id": 1, "member_memory_id": 2, "position": 0}
    fks = {(r[2], r[3]) for r in cs.db.execute("PRAGMA foreign_key_list(composite_members)")}
    assert fks == {("composites", "composite_id"), ("memories", "member_memory_id")}


@pytest.mark.sqlite_only(
    "the schema read through SQLite's pragmas; tests/store/test_postgres_schema.py checks PostgreSQL's"
)
def test_indexes_serve_the_head_and_member_paths(cs):
    head_indexes = {r[1] for r in cs.db.execute("PRAGMA index_list(composites)")}
    assert "composites_head" in head_indexes
    assert [r[2] for r in cs.db.execute("PRAGMA index_info(composites_head)")] == ["head_memory_id"]
    member_indexes = {r[1] for r in cs.db.execute("PRAGMA index_list(composite_members)")}
    assert "composite_members_member" in member_indexes
    assert [r[2] for r in cs.db.execute("PRAGMA index_info(composite_members_member)")] == [
        "member_memory_id"
    ]
    plan = " ".join(
        r[3]
        for r in cs.db.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM composites WHERE head_memory_id = ?", [1]
        )
    )
    assert "composites_head" in plan and "SCAN" not in plan, plan
    plan = " ".join(
        r[3]
        for r in cs.db.execute(
            "EXPLAIN QUERY PLAN SELECT composite_id FROM composite_members "
            "WHERE member_memory_id = ?",
            [1],
        )
    )
    assert "composite_members_member" in plan and "SCAN" not in plan, plan


def test_the_db_refuses_an_unknown_type(cs):
    head = mem(cs, "head")
    before = dump(cs)
    with pytest.raises(driver.IntegrityError):
        cs.db.execute(
            "INSERT INTO composites (type, head_memory_id, created_at, updated_at) "
            "VALUES ('ring', ?, 'x', 'x')",
            [head],
        )
    cid = cs.composites.create("theme", head).id
    with pytest.raises(driver.IntegrityError):
        cs.db.execute("UPDATE composites SET type = 'graph' WHERE id = ?", [cid])
    assert cs.composites.get(cid).type == "theme"
    cs.composites.delete(cid)
    assert dump(cs)["composite_members"] == before["composite_members"]


@pytest.mark.parametrize("bad", ["ring", "Sequence", "", "edge"])
def test_the_api_refuses_an_unknown_type_and_lists_the_types(cs, bad):
    head, member = mems(cs, 2)
    before = dump(cs)
    with pytest.raises(CompositeError) as caught:
        cs.composites.create(bad, head, [member])
    message = str(caught.value)
    assert repr(bad) in message
    for name in TYPES:
        assert name in message
    assert dump(cs) == before
    with pytest.raises(CompositeError):
        cs.composites.all(type=bad)


def test_types_are_the_closed_four():
    assert set(TYPES) == {"sequence", "theme", "cause", "alternatives"}


def test_head_is_never_a_member_api(cs):
    head, a, b = mems(cs, 3)
    before = dump(cs)
    with pytest.raises(CompositeError, match=str(head)):
        cs.composites.create("sequence", head, [a, head, b])
    assert dump(cs) == before
    cid = cs.composites.create("sequence", head, [a, b]).id
    with pytest.raises(CompositeError, match=str(head)):
        cs.composites.add(cid, head)
    with pytest.raises(CompositeError, match=str(head)):
        cs.composites.add(cid, head, position=0)
    assert cs.composites.get(cid).members == [a, b]


def test_head_is_never_a_member_raw_sql(cs):
    head, a, b = mems(cs, 3)
    cid = cs.composites.create("cause", head, [a, b]).id
    before = dump(cs)
    with pytest.raises(driver.IntegrityError, match="head cannot be its own member"):
        cs.db.execute("INSERT INTO composite_members VALUES (?, ?, ?)", [cid, head, 2])
    with pytest.raises(driver.IntegrityError, match="head cannot be its own member"):
        cs.db.execute(
            "UPDATE composite_members SET member_memory_id = ? "
            "WHERE composite_id = ? AND member_memory_id = ?",
            [head, cid, a],
        )
    with pytest.raises(driver.IntegrityError, match="head cannot be its own member"):
        cs.db.execute("UPDATE composites SET head_memory_id = ? WHERE id = ?", [a, cid])
    assert dump(cs) == before
    assert cs.composites.get(cid).head == head


def test_a_memory_may_head_several_composites(cs):
    head, a, b, c = mems(cs, 4)
    first = cs.composites.create("sequence", head, [a, b])
    second = cs.composites.create("theme", head, [c])
    third = cs.composites.create("sequence", head, [b, c])
    assert [x.id for x in cs.composites.by_head(head)] == [first.id, second.id, third.id]
    assert cs.composites.by_head(a) == []


def test_a_composite_longer_than_one_insert_keeps_every_member_in_order(cs):
    """Members go in several rows a statement (``MEMBERS_PER_STATEMENT``): a composite
    longer than one statement's worth keeps every member at its position, and the
    ranking its triggers keep equals the one derived from the rows."""
    from plugin_sdk.store.tables.composites.composites import MEMBERS_PER_STATEMENT

    n = 2 * MEMBERS_PER_STATEMENT + 7
    head, *members = [
        r.id
        for r in cs.memories.write_many(
            [{"content": f"step {i} of {n}", "category": CAT} for i in range(n + 1)]
        )
    ]
    members = members[::-1]  # positions follow the list, not the ids
    composite = cs.composites.create("sequence", head, members)
    assert member_rows(cs, composite.id) == [(m, p) for p, m in enumerate(members)]
    assert cs.composites.get(composite.id).members == members
    cs.composites.set_members(composite.id, members[: MEMBERS_PER_STATEMENT + 1])
    assert member_rows(cs, composite.id) == [
        (m, p) for p, m in enumerate(members[: MEMBERS_PER_STATEMENT + 1])
    ]
    kept = cs.db.execute("SELECT * FROM toc_rank ORDER BY memory_id").fetchall()
    derived = cs.db.execute(
        "SELECT * FROM toc_rank_source WHERE tier IS NOT NULL ORDER BY memory_id"
    ).fetchall()
    assert [tuple(r) for r in kept] == [tuple(r) for r in derived]


def test_membership_is_n_to_n_and_crosses_categories(cs):
    h1, h2, a, b = mems(cs, 4)
    incident = mem(cs, "an incident that touches research too", OTHER)
    c1 = cs.composites.create("theme", h1, [a, b, incident])
    c2 = cs.composites.create("alternatives", h2, [b, incident, a])
    c3 = cs.composites.create("cause", a, [incident])
    assert [c.id for c in cs.composites.by_member(incident)] == [c1.id, c2.id, c3.id]
    assert [c.id for c in cs.composites.by_member(b)] == [c1.id, c2.id]
    assert [c.id for c in cs.composites.by_member(a)] == [c1.id, c2.id]
    assert [c.id for c in cs.composites.by_head(a)] == [c3.id]
    assert cs.composites.get(c2.id).members == [b, incident, a]


def test_composites_key_no_dedup_and_leave_sharing_alone(cs):
    """Composites sit outside the category machinery (they are mechanism, not content).

    They key no deduplication: two composites with the same type, head and
    members are both kept, and composite rows never change what a memory
    write treats as a duplicate. They pass no sharing gate: creating,
    changing, cursoring or deleting composites never touches a memory's
    ``shareable``, ``scope``, category, hash or any other column.
    """
    head = mem(cs, "head of a group", shareable=True, scope="global")
    a = mem(cs, "a private detail", scope="project")
    b = mem(cs, "another private detail")
    memories_before = dump(cs, ("memories",))
    one = cs.composites.create("theme", head, [a, b])
    two = cs.composites.create("theme", head, [a, b])
    assert one.id != two.id
    assert (one.type, one.head, one.members) == (two.type, two.head, two.members)
    cs.composites.add(one.id, mem(cs, "third detail"))
    cs.composites.reorder(two.id, [b, a])
    cs.composites.advance(two.id)
    cs.composites.remove(one.id, a)
    cs.composites.delete(two.id)
    after = {row[0]: row for row in dump(cs, ("memories",))["memories"]}
    for row in memories_before["memories"]:
        assert after[row[0]] == row
    for memory_id, shareable, scope in ((head, True, "global"), (a, False, "project")):
        got = cs.memories.get(memory_id)
        assert (got.shareable, got.scope) == (shareable, scope)
    again = cs.memories.write("A PRIVATE DETAIL.", CAT)
    assert (again.id, again.created) == (a, False)
    assert cs.memories.write("a private detail", OTHER).created is True


# The API


def test_create_and_get(cs):
    head, a, b, c = mems(cs, 4)
    made = cs.composites.create("sequence", head, [a, b, c])
    got = cs.composites.get(made.id)
    assert got == made
    assert (got.type, got.head, got.members, got.cursor, got.cyclic) == (
        "sequence",
        head,
        [a, b, c],
        0,
        False,
    )
    assert got.stale_since is None
    assert member_rows(cs, made.id) == [(a, 0), (b, 1), (c, 2)]
    assert got.to_dict()["members"] == [a, b, c]
    empty = cs.composites.create("alternatives", head)
    assert empty.members == [] and cs.composites.peek(empty.id) is None


def test_create_refuses_superseded_members_and_writes_nothing(cs):
    head, a, b = mems(cs, 3)
    cs.memories.merge([b], into=a)
    before = dump(cs)
    with pytest.raises(CompositeError, match=str(b)):
        cs.composites.create("theme", head, [a, b])
    with pytest.raises(CompositeError, match=str(b)):
        cs.composites.create("theme", b, [a])
    assert dump(cs) == before


def test_add_appends_or_inserts_at_a_position_shifting_the_rest(cs):
    head, a, b, c, d, e = mems(cs, 6)
    cid = cs.composites.create("sequence", head, [a, b]).id
    assert cs.composites.add(cid, c).members == [a, b, c]
    assert cs.composites.add(cid, d, position=0).members == [d, a, b, c]
    assert cs.composites.add(cid, e, position=2).members == [d, a, e, b, c]
    assert member_rows(cs, cid) == [(d, 0), (a, 1), (e, 2), (b, 3), (c, 4)]
    with pytest.raises(CompositeError, match="already a member"):
        cs.composites.add(cid, a, position=0)
    assert cs.composites.get(cid).members == [d, a, e, b, c]


def test_remove_closes_the_gap(cs):
    head, a, b, c, d = mems(cs, 5)
    cid = cs.composites.create("sequence", head, [a, b, c, d]).id
    assert cs.composites.remove(cid, b).members == [a, c, d]
    assert member_rows(cs, cid) == [(a, 0), (c, 1), (d, 2)]
    assert cs.composites.remove(cid, a).members == [c, d]
    assert member_rows(cs, cid) == [(c, 0), (d, 1)]
    before = dump(cs)
    with pytest.raises(CompositeError, match="not a member"):
        cs.composites.remove(cid, a)
    assert dump(cs) == before


def test_reorder_takes_a_permutation(cs):
    head, a, b, c = mems(cs, 4)
    cid = cs.composites.create("sequence", head, [a, b, c]).id
    assert cs.composites.reorder(cid, [c, a, b]).members == [c, a, b]
    assert member_rows(cs, cid) == [(c, 0), (a, 1), (b, 2)]


@pytest.mark.parametrize(
    "order",
    [
        lambda a, b, c, x: [a, b],  # missing one
        lambda a, b, c, x: [a, b, c, x],  # an extra one
        lambda a, b, c, x: [a, a, b, c],  # a repeat
        lambda a, b, c, x: [a, b, b],  # repeat in place of one
        lambda a, b, c, x: [a, b, x],  # a stranger in place of one
        lambda a, b, c, x: [],
    ],
)
def test_reorder_refuses_anything_but_a_permutation_and_changes_nothing(cs, order):
    head, a, b, c, x = mems(cs, 5)
    cid = cs.composites.create("sequence", head, [a, b, c]).id
    before = dump(cs)
    with pytest.raises(CompositeError, match="each current member once"):
        cs.composites.reorder(cid, order(a, b, c, x))
    assert dump(cs) == before


def test_by_head_and_by_member(cs):
    h1, h2, a, b = mems(cs, 4)
    c1 = cs.composites.create("theme", h1, [a])
    c2 = cs.composites.create("theme", h2, [a, b])
    assert [c.id for c in cs.composites.by_head(h1)] == [c1.id]
    assert [c.id for c in cs.composites.by_member(a)] == [c1.id, c2.id]
    assert [c.id for c in cs.composites.by_member(b)] == [c2.id]
    assert cs.composites.by_member(h1) == []
    assert [c.id for c in cs.composites.all()] == [c1.id, c2.id]
    assert cs.composites.all(type="sequence") == []


def test_delete_keeps_the_memories(cs):
    head, a, b = mems(cs, 3)
    cid = cs.composites.create("theme", head, [a, b]).id
    memories_before = dump(cs, ("memories",))
    cs.composites.delete(cid)
    assert dump(cs, ("memories",)) == memories_before
    assert member_rows(cs, cid) == []
    with pytest.raises(NotFound, match=f"no composite with id {cid}"):
        cs.composites.get(cid)
    assert cs.composites.by_head(head) == [] and cs.composites.by_member(a) == []
    assert all(cs.memories.get(m).status == "active" for m in (head, a, b))


def test_wrong_ids_raise_not_found_naming_the_id(cs):
    head, a = mems(cs, 2)
    cid = cs.composites.create("theme", head, [a]).id
    before = dump(cs)
    missing = 987654
    calls = [
        lambda: cs.composites.get(missing),
        lambda: cs.composites.add(missing, a),
        lambda: cs.composites.remove(missing, a),
        lambda: cs.composites.reorder(missing, [a]),
        lambda: cs.composites.delete(missing),
        lambda: cs.composites.peek(missing),
        lambda: cs.composites.advance(missing),
        lambda: cs.composites.reset(missing),
        lambda: cs.composites.create("theme", missing, [a]),
        lambda: cs.composites.create("theme", head, [a, missing]),
        lambda: cs.composites.add(cid, missing),
    ]
    for call in calls:
        with pytest.raises(NotFound, match=str(missing)):
            call()
    assert dump(cs) == before


# The cursor


def test_cyclic_cursor_wraps_around(cs):
    head, a, b, c = mems(cs, 4)
    cid = cs.composites.create("theme", head, [a, b, c], cyclic=True).id
    assert cs.composites.get(cid).cyclic is True
    assert cs.composites.peek(cid) == a
    assert cs.composites.peek(cid) == a  # peek does not move
    assert [cs.composites.advance(cid) for _ in range(7)] == [b, c, a, b, c, a, b]
    assert cs.composites.get(cid).cursor == 1
    assert cs.composites.reset(cid) == a
    assert cs.composites.get(cid).cursor == 0


def test_non_cyclic_cursor_stops_past_the_end(cs):
    head, a, b = mems(cs, 3)
    cid = cs.composites.create("sequence", head, [a, b]).id
    assert cs.composites.peek(cid) == a
    assert cs.composites.advance(cid) == b
    assert cs.composites.advance(cid) is None
    assert cs.composites.peek(cid) is None
    assert cs.composites.advance(cid) is None
    assert cs.composites.get(cid).cursor == 2
    assert cs.composites.reset(cid) == a


def test_cursor_of_an_empty_composite(cs):
    head = mem(cs, "lonely head")
    cid = cs.composites.create("theme", head, cyclic=True).id
    assert cs.composites.peek(cid) is None
    assert cs.composites.advance(cid) is None
    assert cs.composites.reset(cid) is None


def test_removing_the_member_under_the_cursor_keeps_a_cyclic_cursor_valid(cs):
    head, a, b, c = mems(cs, 4)
    cid = cs.composites.create("theme", head, [a, b, c], cyclic=True).id
    cs.composites.advance(cid)
    cs.composites.advance(cid)
    assert cs.composites.peek(cid) == c
    cs.composites.remove(cid, c)
    assert cs.composites.peek(cid) in (a, b)


def test_a_merge_that_drops_a_member_keeps_a_cyclic_cursor_valid(cs):
    """A cyclic composite never stops (peek is None only when it is empty),
    whether a member leaves by ``remove`` or by a merge."""
    head, a, b, c = mems(cs, 4)
    cid = cs.composites.create("theme", head, [a, b, c], cyclic=True).id
    cs.composites.advance(cid)
    cs.composites.advance(cid)
    assert cs.composites.peek(cid) == c
    cs.memories.merge([c], into=b)  # b is already a member: c's row is dropped
    assert cs.composites.get(cid).members == [a, b]
    assert cs.composites.peek(cid) in (a, b)


# Merge fate


def test_merge_supersedes_sources_and_repoints_members_in_one_go(cs):
    h1, h2, a, b, c, x = mems(cs, 6)
    k1 = cs.composites.create("sequence", h1, [a, x, b]).id  # A and B, not C
    k2 = cs.composites.create("theme", h2, [c, a]).id  # C already a member
    k3 = cs.composites.create("alternatives", h2, [b]).id
    merged = cs.memories.merge([a, b], into=c)
    assert merged.id == c and merged.status == "active"
    assert merged.merged_from == [a, b]
    for source in (a, b):
        got = cs.memories.get(source)
        assert (got.status, got.superseded_by) == ("superseded", c)
    assert cs.composites.get(k1).members == [c, x]
    assert member_rows(cs, k1) == [(c, 0), (x, 1)]
    assert cs.composites.get(k2).members == [c]
    assert member_rows(cs, k2) == [(c, 0)]
    assert cs.composites.get(k3).members == [c]
    dupes = cs.db.execute(
        "SELECT composite_id, member_memory_id, count(*) FROM composite_members "
        "GROUP BY composite_id, member_memory_id HAVING count(*) > 1"
    ).fetchall()
    assert dupes == []
    left = cs.db.execute(
        "SELECT count(*) FROM composite_members WHERE member_memory_id IN (?, ?)", [a, b]
    ).fetchone()[0]
    assert left == 0
    assert [k.id for k in cs.composites.by_member(c)] == [k1, k2, k3]


def test_merge_into_the_head_drops_the_membership_and_records_it(cs):
    head, a, b = mems(cs, 3)
    cid = cs.composites.create("sequence", head, [a, b]).id
    cs.memories.merge([a], into=head)
    got = cs.composites.get(cid)
    assert got.head == head and got.members == [b]
    assert member_rows(cs, cid) == [(b, 0)]
    events = cs.composites.events(cid)
    assert [e["event"] for e in events] == ["membership-dropped"]
    assert events[0]["detail"]["member"] == a
    assert events[0]["detail"]["merged_into"] == head
    assert events[0]["composite_id"] == cid


def test_composites_headed_by_a_source_move_to_the_target(cs):
    a, b, c, x, y = mems(cs, 5)
    ka = cs.composites.create("theme", a, [x, c, y]).id  # C is a member of A's composite
    kb = cs.composites.create("cause", b, [y]).id
    kc = cs.composites.create("theme", c, [x]).id
    cs.memories.merge([a, b], into=c)
    moved = cs.composites.get(ka)
    assert moved.head == c and moved.members == [x, y]
    assert member_rows(cs, ka) == [(x, 0), (y, 1)]
    assert cs.composites.get(kb).head == c
    assert [k.id for k in cs.composites.by_head(c)] == [ka, kb, kc]
    assert cs.composites.by_head(a) == [] and cs.composites.by_head(b) == []
    events = cs.composites.events(ka)
    assert [e["event"] for e in events] == ["head-moved", "membership-dropped"]
    assert events[0]["detail"] == {"from": a, "to": c}
    assert events[1]["detail"]["member"] == c
    assert [e["event"] for e in cs.composites.events(kb)] == ["head-moved"]
    assert cs.composites.events(kc) == []


def test_merge_of_a_head_and_its_own_member(cs):
    a, b, c, x = mems(cs, 4)
    kid = cs.composites.create("sequence", a, [b, x]).id
    cs.memories.merge([a, b], into=c)
    got = cs.composites.get(kid)
    assert (got.head, got.members) == (c, [x])
    assert [e["event"] for e in cs.composites.events(kid)] == ["head-moved", "membership-dropped"]


def test_merge_is_one_transaction(cs, monkeypatch):
    """A failure inside a merge leaves memories and composites exactly as they were."""
    h, a, b, c = mems(cs, 4)
    cs.composites.create("theme", h, [a, b])
    cs.composites.create("theme", a, [c])
    before = dump(cs)
    calls = []
    real = cs.composites.repoint

    def failing(source, target):
        calls.append(source)
        real(source, target)
        if len(calls) == 2:
            raise RuntimeError("boom in the second fold")

    monkeypatch.setattr(cs.composites, "repoint", failing)
    with pytest.raises(RuntimeError, match="boom"):
        cs.memories.merge([a, b], into=c)
    assert calls == [a, b]
    assert dump(cs) == before


def test_cross_category_merge_is_refused_and_changes_nothing(cs):
    h, a, b = mems(cs, 3)
    other = mem(cs, "an incident", OTHER)
    cs.composites.create("theme", h, [a, other])
    cs.composites.create("theme", other, [b])
    before = dump(cs)
    with pytest.raises(MergeRefused, match="cross-category"):
        cs.memories.merge([a, other], into=b)
    with pytest.raises(MergeRefused):
        cs.memories.merge([other], into=a)
    assert dump(cs) == before


def test_merge_of_a_superseded_source_is_refused_and_changes_nothing(cs):
    h, a, b, c = mems(cs, 4)
    cs.composites.create("theme", h, [b, c])
    cs.memories.merge([a], into=b)
    before = dump(cs)
    with pytest.raises(MergeRefused):
        cs.memories.merge([c, a], into=b)
    assert dump(cs) == before


# The header map


def sop(n: int, name: str) -> str:
    return f"{name} procedure\n" + "\n".join(f"{i}. {name} step {i}" for i in range(1, n + 1))


def test_header_map_has_two_layers(cs):
    f1 = fragment(cs, mem(cs, sop(3, "deploy")))
    f2 = fragment(cs, mem(cs, sop(2, "rollback")))
    f3 = fragment(cs, mem(cs, sop(2, "incident"), OTHER))
    theme_head = mem(cs, "Release management")
    theme = cs.composites.create("theme", theme_head, [f1.header, f2.header, f3.header])
    data = header_map(cs)
    assert data["themes"] == [
        {
            "id": theme_head,
            "title": "Release management",
            "members": [f1.header, f2.header, f3.header],
            "composite": theme.id,
        }
    ]
    groups = {g["category"]: g for g in data["categories"]}
    assert [g["category"] for g in data["categories"]] == cs.category_names()
    assert [h["id"] for h in groups[CAT]["headers"]] == [f1.header, f2.header]
    assert [h["id"] for h in groups[OTHER]["headers"]] == [f3.header]
    first = groups[CAT]["headers"][0]
    assert first["details"] == f1.details and first["composite"] == f1.composite
    assert first["stale"] is False
    assert groups[INTENT]["headers"] == []

    text = render(cs, "text")
    assert f"theme #{theme_head}" in text
    for f, category in ((f1, CAT), (f2, CAT), (f3, OTHER)):
        assert f"#{f.header}" in text
        assert f"-> #{f.header}" in text
        assert category in text
        for d in f.details:
            assert f"#{d}" in text
    assert INTENT not in text  # no headers there: not drawn

    mermaid = render(cs, "mermaid")
    assert mermaid.startswith("flowchart")
    assert f"m{theme_head} --> m{f1.header}" in mermaid
    for f, category in ((f1, CAT), (f2, CAT), (f3, OTHER)):
        assert f"m{f.header}[" in mermaid
        assert f"subgraph {category}" in mermaid
        assert f'd{f.header}["{len(f.details)} details"]' in mermaid

    dot = render(cs, "dot")
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    assert f"m{theme_head} -> m{f1.header};" in dot
    for f, category in ((f1, CAT), (f2, CAT), (f3, OTHER)):
        assert f"m{f.header} [label=" in dot
        assert f"cluster_{category}" in dot
        assert f'm{f.header} -> d{f.header} [label="{len(f.details)} details"]' in dot
    with pytest.raises(ValueError, match="text, mermaid or dot"):
        render(cs, "svg")


def test_header_map_of_an_empty_store(cs):
    assert "no headers yet" in render(cs, "text")
    assert render(cs, "mermaid") == "flowchart LR"


def test_header_map_quotes_titles(cs):
    f = fragment(cs, mem(cs, 'The "quoted" procedure\n1. one\n2. two'))
    mermaid = render(cs, "mermaid")
    (line,) = [ln for ln in mermaid.splitlines() if ln.strip().startswith(f"m{f.header}[")]
    assert "The 'quoted' procedure" in line and '"quoted"' not in line
    (line,) = [ln for ln in render(cs, "dot").splitlines() if f"m{f.header} [label=" in ln]
    assert "The 'quoted' procedure" in line and '"quoted"' not in line


def test_header_map_is_current_after_a_detail_merge_and_an_archive(cs):
    f1 = fragment(cs, mem(cs, sop(3, "deploy")))
    f2 = fragment(cs, mem(cs, sop(2, "rollback")))
    theme_head = mem(cs, "Release management")
    cs.composites.create("theme", theme_head, [f1.header, f2.header])
    *rest, d2, d3 = f1.details
    cs.memories.merge([d3], into=d2)
    header = next(
        h for g in header_map(cs)["categories"] for h in g["headers"] if h["id"] == f1.header
    )
    assert header["details"] == [*rest, d2]
    assert header["stale"] is True  # the merge target is a detail
    assert f"#{d3}" not in render(cs, "text")
    cs.memories.archive(f2.header)
    ids = [h["id"] for g in header_map(cs)["categories"] for h in g["headers"]]
    assert ids == [f1.header]
    assert f"m{f2.header}[" not in render(cs, "mermaid")


def test_header_map_is_current_after_a_theme_member_merge(cs):
    f1 = fragment(cs, mem(cs, sop(2, "deploy")))
    other = mem(cs, "standalone note")
    theme_head = mem(cs, "Release management")
    cs.composites.create("theme", theme_head, [other, f1.header])
    mover = mem(cs, "the replacement standalone note")
    cs.memories.merge([other], into=mover)
    assert header_map(cs)["themes"][0]["members"] == [mover, f1.header]


def test_header_map_shows_every_sequence_of_a_header_after_merging_headers(cs):
    """After header B is merged into header A, A heads both sequences; the map,
    derived from the composites on every read, must still reach every detail."""
    fa = fragment(cs, mem(cs, sop(2, "deploy")))
    fb = fragment(cs, mem(cs, sop(2, "rollback")))
    cs.memories.merge([fb.header], into=fa.header)
    assert {c.id for c in cs.composites.by_head(fa.header)} == {fa.composite, fb.composite}
    shown = set()
    for group in header_map(cs)["categories"]:
        for header in group["headers"]:
            shown.update(header["details"])
    assert set(fa.details) | set(fb.details) <= shown


def test_header_map_never_nests_deeper_than_two_layers(cs):
    f = fragment(cs, mem(cs, sop(2, "deploy")))
    inner = mem(cs, "inner theme")
    outer = mem(cs, "outer theme")
    cs.composites.create("theme", inner, [f.header])
    cs.composites.create("theme", outer, [inner])
    data = header_map(cs)
    assert [t["members"] for t in data["themes"]] == [[f.header], [inner]]
    for line in render(cs, "text").splitlines():
        assert len(line) - len(line.lstrip()) <= 4


# Stale headers and sync-headers


def test_editing_a_detail_marks_its_sequence_stale(cs):
    f = fragment(cs, mem(cs, sop(3, "deploy")))
    theme_head = mem(cs, "themes are never stale")
    theme = cs.composites.create("theme", theme_head, f.details)
    assert cs.composites.stale() == []
    cs.memories.update(f.details[-2], importance=70)  # not a text change
    assert cs.composites.stale() == []
    cs.memories.update(f.details[-2], content="2. deploy step TWO, revised")
    stale = cs.composites.stale()
    assert [c.id for c in stale] == [f.composite]
    assert stale[0].stale_since is not None
    assert cs.composites.get(theme.id).stale_since is None
    since = stale[0].stale_since
    cs.memories.update(f.details[-1], content="3. deploy step three, revised")
    assert cs.composites.get(f.composite).stale_since == since  # first change is kept


def test_archiving_a_detail_marks_its_sequence_stale(cs):
    f = fragment(cs, mem(cs, sop(2, "deploy")))
    cs.memories.archive(f.details[-1])
    assert [c.id for c in cs.composites.stale()] == [f.composite]


def test_merging_a_detail_marks_its_sequence_stale(cs):
    f = fragment(cs, mem(cs, sop(2, "deploy")))
    outside = mem(cs, "a note outside the sequence")
    cs.memories.merge([f.details[-1]], into=outside)
    assert [c.id for c in cs.composites.stale()] == [f.composite]
    assert cs.composites.get(f.composite).members[-1] == outside


def test_merging_a_detail_into_its_own_header_marks_the_sequence_stale(cs):
    """docs/composites.md: editing, archiving or merging a detail marks its
    sequence stale, whatever the merge target is (here: the header itself)."""
    f = fragment(cs, mem(cs, sop(3, "deploy")))
    cs.memories.merge([f.details[-1]], into=f.header)
    assert cs.composites.get(f.composite).members == f.details[:-1]
    assert [e["event"] for e in cs.composites.events(f.composite)] == ["membership-dropped"]
    assert [c.id for c in cs.composites.stale()] == [f.composite]


def test_reconstruct_after_an_edit_gives_the_current_text(cs):
    text = sop(2, "deploy")
    f = fragment(cs, mem(cs, text))
    assert reconstruct(cs, f.header) == text
    (step,) = [d for d in f.details if cs.memories.get(d).content == "1. deploy step 1"]
    cs.memories.update(step, content="1. deploy it carefully")
    assert reconstruct(cs, f.header) == text.replace("1. deploy step 1", "1. deploy it carefully")


def test_sync_headers_without_a_model_files_a_proposal_and_clears_stale(cs):
    f = fragment(cs, mem(cs, sop(3, "deploy")))
    header_before = cs.memories.get(f.header)
    cs.memories.update(f.details[-1], content="3. deploy step three, revised")
    assert cs.composites.stale()
    (report,) = Dreamer(cs).run("sync-headers")
    assert report.error is None and report.finished_pass is True and report.handled == 1
    assert cs.composites.stale() == []
    assert cs.memories.get(f.header).content == header_before.content
    pending = proposals_mod.pending(cs)
    assert len(pending) == 1
    proposal = pending[0]
    assert proposal.diff_type == "memory_entry"
    assert proposal.source == "dreamer:sync-headers"
    assert proposal.diff["id"] == f.header and proposal.diff["review"] is True
    assert set(proposal.evidence) == {f.header, *f.details}
    (again,) = Dreamer(cs).run("sync-headers")
    assert again.handled == 0 and len(proposals_mod.pending(cs)) == 1


def test_sync_headers_with_a_model_rewrites_a_content_header(ms, model):
    model.add("Deploying in three steps")
    f = fragment(ms, mem(ms, sop(3, "deploy")))
    assert f.summary_by == "model"
    assert ms.memories.get(f.header).content.startswith("Deploying in three steps")
    model.prompts.clear()
    ms.memories.archive(f.details[-1])
    ms.memories.update(f.details[-2], content="2. deploy with the new pipeline")
    model.add("Deploy with the new pipeline in two steps")
    (report,) = Dreamer(ms).run("sync-headers")
    assert report.error is None and report.handled == 1
    assert [p.purpose for p in model.prompts] == ["header_sync"]
    assert "new pipeline" in model.prompts[0].messages[0]["content"]
    header = ms.memories.get(f.header)
    assert header.content.startswith("Deploy with the new pipeline in two steps")
    assert "Deploying in three steps" not in header.content
    assert header.status == "active"
    assert ms.composites.stale() == []
    assert proposals_mod.pending(ms) == []


def test_sync_headers_never_rewrites_an_intent_header(ms, model):
    model.add("On-call paging")
    f = fragment(ms, mem(ms, sop(2, "on-call"), INTENT))
    assert ms.memories.get(f.header).kind == "intent"
    before = ms.memories.get(f.header).content
    ms.memories.update(f.details[-1], content="2. page the secondary first")
    model.add("Page the secondary first")
    Dreamer(ms).run("sync-headers")
    assert ms.memories.get(f.header).content == before
    assert ms.composites.stale() == []
    (proposal,) = proposals_mod.pending(ms)
    assert proposal.diff["id"] == f.header
    assert proposal.diff["content"].startswith("Page the secondary first")
    assert proposal.diff["review"] is False


# Frozen reference sets


def test_a_frozen_set_survives_every_change_to_the_live_composite(cs):
    head, a, b, c, d, e = mems(cs, 6)
    cid = cs.composites.create("theme", head, [a, b, c]).id
    set_id = freeze(cs, cid, note="for the sub-agent")
    frozen = read(cs, set_id)
    expected = [
        {
            "memory_id": m,
            "normalized_hash": cs.memories.get(m).normalized_hash,
            "content": cs.memories.get(m).content,
        }
        for m in (a, b, c)
    ]
    assert frozen.items == expected
    assert (frozen.composite_id, frozen.type, frozen.head, frozen.note) == (
        cid,
        "theme",
        head,
        "for the sub-agent",
    )
    cs.composites.add(cid, d, position=0)
    cs.composites.remove(cid, b)
    cs.memories.update(a, content="a, rewritten after the freeze")
    cs.memories.merge([c], into=e)
    cs.composites.reorder(cid, list(reversed(cs.composites.get(cid).members)))
    cs.memories.archive(e)
    assert cs.composites.get(cid).members != [a, b, c]
    again = read(cs, set_id)
    assert again == frozen
    assert again.to_dict()["items"] == expected
    cs.composites.delete(cid)
    assert read(cs, set_id) == frozen


def test_each_freeze_is_its_own_set(cs):
    head, a, b = mems(cs, 3)
    cid = cs.composites.create("sequence", head, [a]).id
    first = freeze(cs, cid)
    cs.composites.add(cid, b)
    second = freeze(cs, cid)
    assert first != second
    assert [i["memory_id"] for i in read(cs, first).items] == [a]
    assert [i["memory_id"] for i in read(cs, second).items] == [a, b]


def test_reference_set_wrong_ids(cs):
    with pytest.raises(NotFound, match="4242"):
        read(cs, 4242)
    with pytest.raises(NotFound, match="4343"):
        freeze(cs, 4343)
    assert cs.db.execute("SELECT count(*) FROM reference_sets").fetchone()[0] == 0


def test_errors_are_memsdk_errors():
    assert issubclass(CompositeError, MemsdkError)
    assert issubclass(CompositeError, ValueError)
