"""The approval queue in the store: statuses, history, memory entries applied through
the store's own API, exact undo, edits, and the errors for a wrong id or status."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from sqlite_utils import Database

from plugin_sdk import NotFound, Store, hookimpl, validate_pack
from plugin_sdk.errors import ApplyFailed, InvalidProposal, QueueError, UndoRefused, WrongStatus
from plugin_sdk.proposals import queue as q
from plugin_sdk.proposals.filing import events, get, list_proposals, pending, propose
from plugin_sdk.proposals.undo import tables
from plugin_sdk.stages.dreamer import Dreamer
from plugin_sdk.store.migrations import migrations
from plugin_sdk.testing import fresh_plugin_manager, pack_document

RULES, NOTES = "ORCHARD_RULES", "ORCHARD_NOTES"


def orchard_pack():
    doc = pack_document("orchard", "1.0.0", {RULES: "intent", NOTES: "content"})
    doc["categories"][NOTES]["promotable"] = True
    return validate_pack(doc, source="orchard")


ORCHARD_PACK = orchard_pack()


@pytest.fixture
def store(new_store: Callable[..., Store]) -> Store:
    return new_store(ORCHARD_PACK, name="q.db", project="orchard", plugins=fresh_plugin_manager())


def dump(store: Store) -> dict[str, list[tuple]]:
    """Every row of every table an apply may touch (all but the queue's own), and what the
    full-text index finds, on either engine."""
    rows = {
        t.name: table_rows(store, t.name, t.key)
        for t in tables(store)
        # curate's work queue: a restored row is queued to be indexed again
        if t.name != "neardup_dirty"
    }
    found = (
        "SELECT id FROM memories WHERE search @@ to_tsquery('memsdk', 'pear | apple | rule')"
        " ORDER BY id"
        if store.engine == "postgresql"
        else "SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'pear OR apple OR rule'"
        " ORDER BY rowid"
    )
    rows["fts"] = [tuple(r) for r in store.db.execute(found)]
    return rows


def table_rows(store: Store, table: str, key: list[str]) -> list[tuple]:
    """A table's rows in key order: its columns but the generated ones, and SQLite's rowid
    first where the rowid is the key (on PostgreSQL it is a column of its own)."""
    columns = ", ".join(f'"{c}"' for c in store.db.columns(table))
    rowid = "rowid, " if key == ["rowid"] and store.engine == "sqlite" else ""
    order = ", ".join(f'"{c}"' for c in key)
    return [
        tuple(r)
        for r in store.db.execute(f'SELECT {rowid}{columns} FROM "{table}" ORDER BY {order}')
    ]


def file_write(store: Store, text: str, category: str = RULES) -> int:
    proposal_id = propose(
        store,
        diff_type="memory_entry",
        rationale="a fact that keeps coming back",
        evidence=[],
        diff={"action": "write", "category": category, "content": text},
        source="test",
    )
    assert proposal_id is not None
    return proposal_id


def test_approving_a_write_applies_it_through_the_store_and_undo_restores_the_store_exactly(store):
    store.memories.write("Pears ripen off the tree.", NOTES)
    proposal_id = file_write(store, "Pick pears before they are ripe.")
    before = dump(store)

    applied = q.approve(store, proposal_id, actor="ann")
    assert applied.status == "applied" and applied.error is None
    done = q.application(store, proposal_id)
    assert done["target"] == "store"
    memory = store.memories.get(done["result"]["memory_id"])
    assert (memory.category, memory.kind, memory.content, memory.source) == (
        RULES,
        "intent",
        "Pick pears before they are ripe.",
        f"proposal:{proposal_id}",
    )
    assert store.memories.search("pick pears")[0].memory.id == memory.id
    assert dump(store) != before

    undone = q.undo(store, proposal_id, actor="bob")
    assert undone.status == "undone"
    assert dump(store) == before
    assert memory.id not in [hit.memory.id for hit in store.memories.search("pick pears")]
    assert [(e.event, e.actor) for e in events(store, proposal_id)] == [
        ("filed", "test"),
        ("approved", "ann"),
        ("applied", "ann"),
        ("undone", "bob"),
    ]
    assert q.application(store, proposal_id)["undone_at"] is not None


def test_a_write_of_known_text_folds_through_dedup_and_undo_puts_the_count_back(store):
    known = store.memories.write("Prune apple trees in late winter.", RULES)
    proposal_id = file_write(store, "prune apple trees in  late winter")
    before = dump(store)
    q.approve(store, proposal_id)
    folded = store.memories.get(known.id)
    assert folded.seen_count == 2
    assert q.application(store, proposal_id)["result"] == {
        "action": "write",
        "memory_id": known.id,
        "created": False,
    }
    assert store.memories.count() == 1
    q.undo(store, proposal_id)
    assert dump(store) == before


def test_the_dreamers_intent_merge_goes_through_the_queue_and_undo_restores_rows_and_composites(
    tmp_path,
):
    with Store(tmp_path / "d.db", project="orchard", plugins=fresh_plugin_manager()) as store:
        store.packs.install(orchard_pack())
        short = store.memories.write("Never spray apple trees in bloom.", RULES).id
        long = store.memories.write("Never spray apple trees in full bloom.", RULES).id
        # the merged-away memory is a member of a theme: the merge repoints it
        head = store.memories.write("Spraying", NOTES).id
        theme = store.composites.create("theme", head, [short]).id
        Dreamer(store).run("curate")
        [proposal] = pending(store)
        assert proposal.source == "dreamer:curate" and proposal.diff["action"] == "merge"
        assert store.memories.get(short).status == "active"  # nothing happened yet
        before = dump(store)

        q.approve(store, proposal.id)
        assert store.memories.get(short).superseded_by == long
        assert store.composites.get(theme).members == [long]

        q.undo(store, proposal.id)
        assert dump(store) == before
        assert store.composites.get(theme).members == [short]


def test_the_dreamers_header_review_and_rule_proposals_apply_through_the_queue(store):
    header = store.memories.write("Harvest: three steps", RULES).id
    update = propose(
        store,
        diff_type="memory_entry",
        rationale="a detail of this header changed",
        evidence=[header],
        diff={"action": "update", "id": header, "content": "Harvest: four steps", "review": True},
        source="dreamer:sync-headers",
    )
    q.approve(store, update)
    assert store.memories.get(header).content == "Harvest: four steps"

    review = propose(
        store,
        diff_type="memory_entry",
        rationale="the model's retrospective reply could not be parsed",
        evidence=[header],
        diff={"action": "review", "reply": "Maybe: always wear gloves?"},
        source="dreamer:retrospective",
    )
    before = dump(store)
    with pytest.raises(QueueError, match="nothing to apply"):
        q.approve(store, review)
    assert get(store, review).status == "pending" and dump(store) == before
    q.edit(store, review, diff={"action": "write", "category": RULES, "content": "Wear gloves."})
    q.approve(store, review)
    assert [m.content for m in store.memories.list(category=RULES)][-1] == "Wear gloves."


def test_undo_is_refused_when_a_row_changed_since_but_not_for_retrievals(store):
    proposal_id = file_write(store, "Thin apples to one per cluster.")
    q.approve(store, proposal_id)
    memory_id = q.application(store, proposal_id)["result"]["memory_id"]
    store.memories.update(memory_id, importance=90)
    before = dump(store)
    with pytest.raises(UndoRefused, match=rf"changed since: memories row {memory_id}"):
        q.undo(store, proposal_id)
    assert get(store, proposal_id).status == "applied" and dump(store) == before

    read = file_write(store, "Thin pears to two per cluster.")
    q.approve(store, read)
    read_id = q.application(store, read)["result"]["memory_id"]
    store.memories.record_retrievals([read_id])  # reading is not changing
    q.undo(store, read)
    assert (
        store.db.execute("SELECT count(*) FROM memories WHERE id = ?", [read_id]).fetchone()[0] == 0
    )


def test_a_failed_apply_marks_the_proposal_failed_and_writes_nothing(store):
    a = store.memories.write("Mulch the pear trees in autumn.", RULES).id
    b = store.memories.write("Mulch pear trees every autumn.", RULES).id
    proposal_id = propose(
        store,
        diff_type="memory_entry",
        rationale="same rule twice",
        evidence=[a, b],
        diff={
            "action": "merge",
            "category": RULES,
            "into": b,
            "sources": [a],
            "content": "Mulch pears in autumn.",
        },
        source="test",
    )
    store.memories.archive(b)  # the merge target is no longer active
    before = dump(store)
    with pytest.raises(
        ApplyFailed, match=f"proposal {proposal_id} failed: merge target {b} is archived"
    ):
        q.approve(store, proposal_id, actor="ann")
    assert dump(store) == before  # not even the target's new text
    failed = get(store, proposal_id)
    assert failed.status == "failed" and "archived" in failed.error
    assert [e.event for e in events(store, proposal_id)] == ["filed", "approved", "failed"]
    assert q.application(store, proposal_id) is None


def test_rejection_changes_nothing_but_the_status(store):
    proposal_id = file_write(store, "Net the cherries in June.")
    before = dump(store)
    rejected = q.reject(store, proposal_id, actor="ann", reason="birds are welcome")
    assert rejected.status == "rejected"
    assert dump(store) == before
    assert events(store, proposal_id)[-1].detail == {"reason": "birds are welcome"}
    # the same change may be proposed again later (it is no longer pending)
    assert file_write(store, "Net the cherries in June.") != proposal_id


def test_an_identical_pending_proposal_is_filed_once(store):
    first = file_write(store, "Water young trees weekly.")
    seen = store.memories.write("Young trees dry out fast.", RULES).id
    again = propose(
        store,
        diff_type="memory_entry",
        rationale="other words",
        evidence=[seen],
        diff={"content": "Water young trees weekly.", "category": RULES, "action": "write"},
        source="elsewhere",
    )
    assert again is None
    assert [p.id for p in pending(store)] == [first]
    assert [e.event for e in events(store, first)] == ["filed"]


def test_editing_a_pending_proposal_keeps_the_old_diff_in_the_history(store):
    proposal_id = file_write(store, "Stake new trees.")
    other = file_write(store, "Stake new trees loosely.")
    edited = q.edit(
        store,
        proposal_id,
        diff={"action": "write", "category": RULES, "content": "Stake new trees for a year."},
        rationale="clearer",
        actor="ann",
    )
    assert edited.diff["content"] == "Stake new trees for a year." and edited.rationale == "clearer"
    last = events(store, proposal_id)[-1]
    assert (last.event, last.actor) == ("edited", "ann")
    assert last.detail["before"]["diff"]["content"] == "Stake new trees."
    assert last.detail["after"]["rationale"] == "clearer"
    # the hash follows the edit: the old text may be filed again, the new one may not
    assert file_write(store, "Stake new trees.") is not None
    assert (
        propose(
            store,
            diff_type="memory_entry",
            rationale="r",
            evidence=[],
            source="t",
            diff=edited.diff,
        )
        is None
    )
    with pytest.raises(QueueError, match=f"proposal {other} already proposes exactly this"):
        q.edit(store, proposal_id, diff=get(store, other).diff)
    with pytest.raises(InvalidProposal, match="'content' is empty"):
        q.edit(store, proposal_id, diff={"action": "write", "category": RULES, "content": " "})
    with pytest.raises(Exception, match="unknown category 'WEATHER'"):
        q.edit(store, proposal_id, diff={"action": "write", "category": "WEATHER", "content": "x"})
    q.approve(store, proposal_id)
    assert store.memories.list(category=RULES)[0].content == "Stake new trees for a year."


def test_a_wrong_id_or_a_wrong_status_is_a_clear_error_that_changes_nothing(store):
    proposal_id = file_write(store, "Label every graft.")
    for step in (q.approve, q.reject, q.edit, q.undo):
        with pytest.raises(NotFound, match="no proposal with id 999"):
            step(store, 999)
    with pytest.raises(
        WrongStatus,
        match=f"proposal {proposal_id} is pending; only applied proposals can be undone",
    ):
        q.undo(store, proposal_id)
    q.reject(store, proposal_id)
    before = (dump(store), get(store, proposal_id), events(store, proposal_id))
    for step, allowed in (
        (q.approve, "pending, approved or failed"),
        (q.edit, "pending"),
        (q.reject, "pending, approved or failed"),
        (q.undo, "applied"),
    ):
        with pytest.raises(WrongStatus, match=f"is rejected; only {allowed} proposals"):
            step(store, proposal_id)
    assert (dump(store), get(store, proposal_id), events(store, proposal_id)) == before
    applied = file_write(store, "Label every graft with the rootstock.")
    q.approve(store, applied)
    with pytest.raises(WrongStatus, match="is applied"):
        q.approve(store, applied)
    q.undo(store, applied)
    with pytest.raises(WrongStatus, match="is undone"):
        q.undo(store, applied)


@pytest.mark.parametrize(
    ("diff_type", "diff", "evidence", "message"),
    [
        ("patch", {}, [], "unknown diff_type 'patch'"),
        ("memory_entry", {"a": 1}, [], "action None"),
        ("memory_entry", {"action": "wrte", "category": RULES, "content": "x"}, [], "'wrte'"),
        ("memory_entry", {"action": "write", "category": RULES}, [], "'content' must be a str"),
        (
            "memory_entry",
            {"action": "write", "category": "WEATHER", "content": "Rain."},
            [],
            "memory_entry write: 'category': unknown category 'WEATHER'",
        ),
        (
            "memory_entry",
            {"action": "write", "category": RULES, "content": "x", "colour": 1},
            [],
            "unknown field 'colour'",
        ),
        ("memory_entry", {"action": "update", "id": True, "content": "x"}, [], "'id' must be"),
        (
            "memory_entry",
            {"action": "merge", "category": RULES, "into": 1, "sources": []},
            [],
            "'sources' must be a list of memory ids",
        ),
        ("memory_entry", {"action": "review", "reply": " "}, [], "'reply' is empty"),
        (
            "memory_entry",
            {"action": "write", "category": RULES, "content": "x"},
            [1, "a"],
            r"'evidence' must be a list of memory ids; got \[1, 'a'\]",
        ),
        (
            "memory_entry",
            {"action": "write", "category": RULES, "content": "x"},
            "12",
            "'evidence' must be a list",
        ),
        ("claude_md", {"note": "Never prune in frost."}, [], "this is a draft \\(note\\)"),
        ("skill", {"path": "a", "after": "x"}, [], "exactly the keys"),
        (
            "claude_md",
            {"path": "a", "base": None, "before": None, "after": "x", "repo": "/r"},
            [],
            "and repo and root, or neither",
        ),
        (
            "allowlist",
            {"path": "s.json", "base": None, "before": None, "after": "[1]"},
            [],
            "must hold a JSON object",
        ),
    ],
)
def test_a_malformed_proposal_is_refused_naming_the_field(
    store, diff_type, diff, evidence, message
):
    with pytest.raises(InvalidProposal, match=message):
        propose(store, diff_type=diff_type, rationale="r", evidence=evidence, diff=diff, source="t")
    assert list_proposals(store, status=None) == []


def test_a_malformed_proposal_already_stored_is_not_applied(store):
    store.db.execute(
        """INSERT INTO proposals (project, diff_type, rationale, evidence, diff, diff_hash,
           source, created_at, updated_at)
           VALUES ('orchard', 'memory_entry', 'r', '[]', '{"a": 1}', 'h', 't', 't', 't')"""
    )
    [odd] = pending(store)
    with pytest.raises(QueueError, match=f"proposal {odd.id} cannot be applied: .*action None"):
        q.approve(store, odd.id)
    assert get(store, odd.id).status == "pending"


def test_the_dreamers_own_shapes_are_accepted(store):
    rule = store.memories.write("Stake new trees.", RULES).id
    other = store.memories.write("Stake young trees.", RULES).id
    for diff in (
        {"action": "write", "category": RULES, "content": "Prune in winter.", "importance": 70},
        {"action": "update", "id": rule, "content": "Stake trees.", "review": False},
        {"action": "merge", "category": RULES, "into": rule, "sources": [other]},
        {"action": "merge", "category": RULES, "into": rule, "sources": [other], "content": "S."},
        {"action": "review", "reply": "maybe: stake them?"},
    ):
        assert propose(
            store, diff_type="memory_entry", rationale="r", evidence=[rule], diff=diff, source="t"
        )


def test_list_filters_by_status(store):
    a = file_write(store, "One.")
    b = file_write(store, "Two.")
    q.reject(store, b)
    assert [p.id for p in list_proposals(store)] == [a, b]
    assert [p.id for p in list_proposals(store, status="rejected")] == [b]
    with pytest.raises(InvalidProposal, match="unknown status 'done'"):
        list_proposals(store, status="done")


def test_m007_keeps_the_proposals_a_store_already_has(tmp_path):
    path = tmp_path / "old.db"
    db = Database(path)
    migrations.apply(db, stop_before="m007_queue")
    db.execute(
        """INSERT INTO proposals (project, diff_type, status, rationale, evidence, diff, diff_hash,
           source, created_at, updated_at) VALUES ('p', 'memory_entry', 'rejected', 'r', '[3]',
           '{"action": "review", "reply": "x"}', 'h', 'dreamer:retrospective', 't', 't')"""
    )
    db.conn.commit()
    db.close()
    with Store(path, project="p") as store:
        [old] = list_proposals(store, status="rejected")
        assert (old.id, old.evidence, old.diff, old.error) == (
            1,
            [3],
            {"action": "review", "reply": "x"},
            None,
        )
        assert "m007_queue" in store.schema_version
        indexes = {
            r[0]
            for r in store.db.execute(
                "SELECT name FROM sqlite_master WHERE tbl_name = 'proposals' AND type = 'index'"
            )
        }
        assert {"proposals_pending_once", "proposals_status"} <= indexes


def test_detect_patterns_hook_files_drafts_once_and_not_after_a_rejection(tmp_path):
    from plugin_sdk.proposals.detect import run_detectors
    from plugin_sdk.proposals.filing import ProposalDraft

    class Detector:
        @hookimpl
        def detect_patterns(self, store, project):
            return [
                ProposalDraft(
                    "memory_entry",
                    "seen in every session",
                    [1],
                    {"action": "write", "category": RULES, "content": "Check for scab."},
                    source="detector:test",
                ),
                ProposalDraft(
                    "memory_entry",
                    "a category the store lacks",
                    [],
                    {"action": "write", "category": "WEATHER", "content": "Rain."},
                ),
            ]

    plugins = fresh_plugin_manager(("detector", Detector()))
    with Store(tmp_path / "h.db", project="orchard", plugins=plugins) as store:
        store.packs.install(orchard_pack())
        assert store.memories.write("Scab came back.", RULES).id == 1  # the evidence
        first = run_detectors(store)
        assert len(first.filed) == 1 and first.already_pending == 0
        assert "unknown category 'WEATHER'" in first.skipped[0]["reason"]
        [proposal] = pending(store)
        assert (proposal.source, proposal.evidence) == ("detector:test", [1])
        second = run_detectors(store)
        assert (second.filed, second.already_pending) == ([], 1)
        q.reject(store, proposal.id)
        third = run_detectors(store)
        assert third.filed == [] and third.skipped[0]["reason"] == (
            f"proposal {proposal.id} with the same change was rejected"
        )


def test_a_detector_returning_something_else_than_drafts_is_an_error(tmp_path):
    from plugin_sdk.proposals.detect import run_detectors

    class Broken:
        @hookimpl
        def detect_patterns(self, store, project):
            return [{"diff_type": "memory_entry"}]

    with (
        Store(
            tmp_path / "b.db", project="o", plugins=fresh_plugin_manager(("b", Broken()))
        ) as store,
        pytest.raises(InvalidProposal, match="returned a dict, not a ProposalDraft"),
    ):
        run_detectors(store)


def test_the_built_in_detector_proposes_promoting_a_fact_retrieved_again_and_again(tmp_path):
    from plugin_sdk.proposals.detect import run_detectors

    with Store(tmp_path / "r.db", project="orchard", plugins=fresh_plugin_manager()) as store:
        store.packs.install(orchard_pack())
        other = pack_document("cellar", "1.0.0", {"CELLAR_RULES": "intent"})
        other["categories"]["CELLAR_RULES"]["priority"] = 1  # first by priority, another pack
        store.packs.install(validate_pack(other, source="cellar"))
        facts = [store.memories.write(f"Orchard fact number {i}.", NOTES).id for i in range(6)]
        for _ in range(3):  # a table of contents shown three times: everything alike
            store.memories.record_retrievals(facts)
        for _ in range(7):  # one fact keeps being looked up
            store.memories.record_retrievals([facts[2]])
        report = run_detectors(store)
        [proposal] = pending(store)
        assert report.filed == [proposal.id]
        assert proposal.source == "detector:retrieved-facts"
        assert proposal.evidence == [facts[2]]
        assert proposal.diff == {
            "action": "write",
            "category": RULES,
            "content": "Orchard fact number 2.",
        }
        assert "retrieved 10 times" in proposal.rationale and "median is 3" in proposal.rationale
        q.approve(store, proposal.id)
        assert [m.content for m in store.memories.list(category=RULES)] == [
            "Orchard fact number 2."
        ]
        again = run_detectors(store)  # promoted already: nothing new
        assert (again.filed, again.already_pending, again.skipped) == ([], 0, [])


def test_the_built_in_detector_is_quiet_when_nothing_stands_out(store):
    from plugin_sdk.proposals.detect import run_detectors

    facts = [store.memories.write(f"Fact {i}.", NOTES).id for i in range(4)]
    for _ in range(20):
        store.memories.record_retrievals(facts)
    assert run_detectors(store).filed == []


def test_proposal_rows_are_plain_json(store):
    proposal_id = file_write(store, "Keep ladders dry.")
    row = store.db.execute(
        "SELECT diff, evidence FROM proposals WHERE id = ?", [proposal_id]
    ).fetchone()
    assert json.loads(row[0])["content"] == "Keep ladders dry." and json.loads(row[1]) == []


def test_the_built_in_detector_proposes_a_persistent_interaction_style(tmp_path, monkeypatch):
    from plugin_sdk import resolve_pack
    from plugin_sdk.grid.cells import place
    from plugin_sdk.plugin.records import CellDecision
    from plugin_sdk.proposals.detect import run_detectors

    with Store(tmp_path / "s.db", project="dev", plugins=fresh_plugin_manager()) as store:
        store.packs.install(resolve_pack("dev"))
        said = {
            "world:person:anya": ["directive"] * 5 + ["expressive"],
            "world:person:bob": ["directive"] * 3,  # too few to be a style
            "world:person:carl": ["directive"] * 3 + ["expressive"] * 3,  # a pair: issue 17
        }
        ids: dict[str, list[int]] = {}
        for actor, spoken in said.items():
            for n, act in enumerate(spoken):
                memory_id = store.memories.write(f"{actor} said thing {n}", "WORKFLOWS").id
                store.entities.link(memory_id, [actor])
                place(store, [(memory_id, CellDecision("episodic", "other", act, "test"))])
                ids.setdefault(actor, []).append(memory_id)
        monkeypatch.chdir(tmp_path)  # no repository: the instructions-file notes are skipped
        report = run_detectors(store)
        proposal, _carl = pending(store)
        assert report.filed == [proposal.id, _carl.id]
        assert [s["diff_type"] for s in report.skipped] == ["claude_md", "claude_md"]
        assert proposal.source == "detector:interaction-style"
        assert proposal.evidence == ids["world:person:anya"][:5]
        # the intent category whose usual cell is about a person (dev: the user's preferences)
        assert proposal.diff == {
            "action": "write",
            "category": "USER_PREFERENCES",
            "content": "Interactions with world:person:anya are predominantly directive "
            "(instructions and requests).",
        }
        assert proposal.rationale.startswith("5 directive of world:person:anya's 6 interactions")
        q.approve(store, proposal.id)
        q.approve(store, _carl.id)
        assert run_detectors(store).filed == []  # stated already
