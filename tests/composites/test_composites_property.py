"""Composites under random sequences of memory and composite operations.

A hypothesis state machine drives one store per example through writes,
composite creation and membership changes, merges, archives, edits and
fragmentation, and after every step checks the invariants of docs/composites.md
and that the store matches a plain-Python model of what each operation should
have done (merge fate included).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from plugin_sdk import Store, resolve_pack
from plugin_sdk.composites.composite import TYPES
from plugin_sdk.composites.fragment import fragment, reconstruct
from plugin_sdk.errors import CompositeError
from plugin_sdk.testing import fresh_plugin_manager

pytestmark = pytest.mark.slow  # 50 random runs of 30 steps, each on its own store

CAT = "RESEARCH"
PACK = resolve_pack("ops")
WORDS = ["cache", "deploy", "queue", "token", "lease", "shard", "probe", "index"]


class CompositeMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.mkdtemp(prefix="memsdk-prop-")
        self.store = Store(
            Path(self.directory) / "p.db", project="prop", plugins=fresh_plugin_manager()
        )
        self.store.packs.install(PACK)
        self.serial = 0
        # The model: memory id -> status; composite id -> [type, head, members]
        self.status: dict[int, str] = {}
        self.composites: dict[int, list] = {}
        self.headers: dict[int, str] = {}  # header id -> text it must reconstruct

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    # Helpers

    def text(self, words: list[str]) -> str:
        self.serial += 1
        return " ".join([*words, f"n{self.serial}"])

    def live(self) -> list[int]:
        return sorted(m for m, s in self.status.items() if s != "superseded")

    def active(self) -> list[int]:
        return sorted(m for m, s in self.status.items() if s == "active")

    def pick(self, items: list[int], index: int) -> int:
        return items[index % len(items)]

    def model_merge(self, source: int, target: int) -> None:
        """What Composites.repoint should do for one merged-away memory."""
        for entry in self.composites.values():
            _, head, members = entry
            if source in members:
                if head == target or target in members:
                    members.remove(source)
                else:
                    members[members.index(source)] = target
        for entry in self.composites.values():
            if entry[1] == source:
                if target in entry[2]:
                    entry[2].remove(target)
                entry[1] = target
        self.status[source] = "superseded"
        for header in list(self.headers):
            if header == source:
                # The header's sequence moves to the target: exact text no longer promised.
                del self.headers[header]

    def forget_exact(self, memory_id: int) -> None:
        """An edited or merged detail changes what its header reconstructs."""
        for type_, head, members in self.composites.values():
            if type_ == "sequence" and memory_id in members and head in self.headers:
                del self.headers[head]

    # Rules

    @initialize(words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
    def first_memory(self, words):
        self.write_memory(words)

    @rule(words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
    def write_memory(self, words):
        result = self.store.memories.write(self.text(words), CAT)
        assert result.created
        self.status[result.id] = "active"

    @rule(
        type_=st.sampled_from(TYPES),
        head=st.integers(0, 1000),
        members=st.lists(st.integers(0, 1000), max_size=5),
        include_head=st.booleans(),
        cyclic=st.booleans(),
    )
    def create_composite(self, type_, head, members, include_head, cyclic):
        live = self.live()
        head_id = self.pick(live, head)
        member_ids = list(dict.fromkeys(self.pick(live, m) for m in members))
        if include_head:
            member_ids.append(head_id)
        if head_id in member_ids:
            try:
                self.store.composites.create(type_, head_id, member_ids, cyclic=cyclic)
            except CompositeError:
                return
            raise AssertionError("a composite with its head as a member was created")
        made = self.store.composites.create(type_, head_id, member_ids, cyclic=cyclic)
        self.composites[made.id] = [type_, head_id, member_ids]

    @rule(
        composite=st.integers(0, 1000),
        member=st.integers(0, 1000),
        position=st.none() | st.integers(0, 6),
    )
    def add_member(self, composite, member, position):
        if not self.composites:
            return
        cid = self.pick(sorted(self.composites), composite)
        _, head, members = self.composites[cid]
        member_id = self.pick(self.live(), member)
        if member_id == head or member_id in members:
            try:
                self.store.composites.add(cid, member_id, position)
            except CompositeError:
                return
            raise AssertionError("add accepted the head or a repeat")
        self.store.composites.add(cid, member_id, position)
        self.headers.pop(head, None)  # layout no longer matches: no exact text promised
        members.insert(len(members) if position is None else position, member_id)

    @rule(composite=st.integers(0, 1000), member=st.integers(0, 1000))
    def remove_member(self, composite, member):
        if not self.composites:
            return
        cid = self.pick(sorted(self.composites), composite)
        members = self.composites[cid][2]
        if not members:
            return
        member_id = self.pick(members, member)
        self.store.composites.remove(cid, member_id)
        self.headers.pop(self.composites[cid][1], None)
        members.remove(member_id)

    @rule(composite=st.integers(0, 1000), seed=st.randoms(use_true_random=False))
    def reorder(self, composite, seed):
        if not self.composites:
            return
        cid = self.pick(sorted(self.composites), composite)
        members = self.composites[cid][2]
        order = list(members)
        seed.shuffle(order)
        self.store.composites.reorder(cid, order)
        if order != members:
            self.headers.pop(self.composites[cid][1], None)
        members[:] = order

    @rule(
        sources=st.lists(st.integers(0, 1000), min_size=1, max_size=3),
        into=st.integers(0, 1000),
    )
    def merge(self, sources, into):
        active = self.active()
        target_id = self.pick(active, into)
        source_ids = [
            s for s in dict.fromkeys(self.pick(self.live(), i) for i in sources) if s != target_id
        ]
        if not source_ids:
            return
        self.store.memories.merge(source_ids, into=target_id)
        for source in source_ids:
            self.forget_exact(source)
            self.model_merge(source, target_id)
        self.forget_exact(target_id)
        merged = self.store.memories.get(target_id)
        assert set(source_ids) <= set(merged.merged_from)
        for source in source_ids:
            assert self.store.memories.get(source).superseded_by == target_id

    @rule(memory=st.integers(0, 1000))
    def archive(self, memory):
        memory_id = self.pick(self.live(), memory)
        if self.status[memory_id] == "active" and len(self.active()) == 1:
            return  # keep one active memory: a merge needs an active target
        self.store.memories.archive(memory_id)
        self.status[memory_id] = "archived"
        self.headers.pop(memory_id, None)
        self.forget_exact(memory_id)

    @rule(
        choice=st.integers(0, 1000),
        words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    )
    def edit_member(self, choice, words):
        members = sorted(
            {m for _, _, ms in self.composites.values() for m in ms} & set(self.live())
        )
        if not members:
            return
        memory_id = self.pick(members, choice)
        self.store.memories.update(memory_id, content=self.text(words))
        self.forget_exact(memory_id)
        self.headers.pop(memory_id, None)  # a title-line header is part of the text
        stale = {c.id for c in self.store.composites.stale()}
        for cid, (type_, _, ms) in self.composites.items():
            if type_ == "sequence" and memory_id in ms:
                assert cid in stale

    @rule(steps=st.integers(2, 4), title=st.booleans())
    def fragment_memory(self, steps, title):
        self.serial += 1
        lines = [f"{i}. step {i} of sop{self.serial}" for i in range(1, steps + 1)]
        text = (f"Runbook sop{self.serial}\n" if title else "") + "\n".join(lines)
        original = self.store.memories.write(text, CAT).id
        self.status[original] = "active"
        done = fragment(self.store, original)
        for memory_id in (done.header, *done.details):
            self.status[memory_id] = "active"
        self.composites[done.composite] = ["sequence", done.header, list(done.details)]
        self.model_merge(original, done.header)
        self.headers[done.header] = text

    @rule(composite=st.integers(0, 1000))
    def advance(self, composite):
        if not self.composites:
            return
        cid = self.pick(sorted(self.composites), composite)
        self.store.composites.advance(cid)

    # Invariants, after every step

    @invariant()
    def no_member_row_points_at_a_superseded_memory(self):
        rows = self.store.db.execute(
            """SELECT cm.composite_id, cm.member_memory_id FROM composite_members cm
               JOIN memories m ON m.id = cm.member_memory_id WHERE m.status = 'superseded'"""
        ).fetchall()
        assert rows == []

    @invariant()
    def no_head_is_a_member_of_its_own_composite(self):
        rows = self.store.db.execute(
            """SELECT c.id FROM composites c JOIN composite_members cm
               ON cm.composite_id = c.id AND cm.member_memory_id = c.head_memory_id"""
        ).fetchall()
        assert rows == []

    @invariant()
    def positions_are_exactly_0_to_n_minus_1(self):
        for (cid,) in self.store.db.execute("SELECT id FROM composites").fetchall():
            positions = [
                r[0]
                for r in self.store.db.execute(
                    "SELECT position FROM composite_members WHERE composite_id = ? ORDER BY position",
                    [cid],
                )
            ]
            assert positions == list(range(len(positions))), (cid, positions)

    @invariant()
    def no_duplicate_member_rows(self):
        rows = self.store.db.execute(
            """SELECT composite_id, member_memory_id FROM composite_members
               GROUP BY composite_id, member_memory_id HAVING count(*) > 1"""
        ).fetchall()
        assert rows == []

    @invariant()
    def no_head_is_superseded(self):
        rows = self.store.db.execute(
            """SELECT c.id FROM composites c JOIN memories m ON m.id = c.head_memory_id
               WHERE m.status = 'superseded'"""
        ).fetchall()
        assert rows == []

    @invariant()
    def the_store_matches_the_model(self):
        actual = {c.id: [c.type, c.head, c.members] for c in self.store.composites.all()}
        assert actual == self.composites
        statuses = dict(self.store.db.execute("SELECT id, status FROM memories").fetchall())
        assert statuses == self.status

    @invariant()
    def untouched_headers_reconstruct_exactly(self):
        for header, text in self.headers.items():
            assert reconstruct(self.store, header) == text


CompositeMachine.TestCase.settings = settings(
    max_examples=50,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_composites_state_machine = CompositeMachine.TestCase
