"""Two queue steps at once, from two Store objects on one file: one wins, the other gets a
clear error, and an undo afterwards restores exactly."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from plugin_sdk import Store, validate_pack
from plugin_sdk.errors import QueueError, WrongStatus
from plugin_sdk.proposals import queue as q
from plugin_sdk.proposals.filing import events, get, propose
from plugin_sdk.proposals.target import Target
from plugin_sdk.proposals.undo import tables
from plugin_sdk.testing import (
    StoreTemplates,
    drop_postgres_schemas,
    fresh_plugin_manager,
    pack_document,
    postgres_schema,
)
from tests.proposals.test_queue import table_rows

RULES = "ORCHARD_RULES"


def open_store(path: Path | str, **kwargs) -> Store:
    return Store(path, project="orchard", plugins=fresh_plugin_manager(), **kwargs)


@pytest.fixture
def db(tmp_path: Path, memsdk_templates: StoreTemplates, engine: str) -> Iterator[Path | str]:
    """A closed store with the orchard pack: a file, or a PostgreSQL schema's URL."""
    orchard = validate_pack(pack_document("orchard", "1.0.0", {RULES: "intent"}), source="t")
    if engine == "sqlite":
        yield memsdk_templates.copy(tmp_path / "race.db", orchard)
        return
    server = os.environ["MEMSDK_TEST_POSTGRES"]
    url, schema = postgres_schema(server)
    try:
        with open_store(url) as store:
            store.packs.install(orchard)
        yield url
    finally:
        drop_postgres_schemas(server, [schema])


def dump(store: Store) -> dict[str, list[tuple]]:
    return {t.name: table_rows(store, t.name, t.key) for t in tables(store)}


def write_proposal(store: Store, text: str) -> int:
    proposal_id = propose(
        store,
        diff_type="memory_entry",
        rationale="r",
        evidence=[],
        diff={"action": "write", "category": RULES, "content": text},
        source="test",
    )
    assert proposal_id is not None
    return proposal_id


def run_during_first_read(monkeypatch, store: Store, step) -> None:
    """Run ``step`` right after ``store``'s first read of a proposal (a stale read)."""
    real_get = q.get
    done = []

    def get_then_step(s, proposal_id):
        proposal = real_get(s, proposal_id)
        if s is store and not done:
            done.append(step())
        return proposal

    monkeypatch.setattr(q, "get", get_then_step)


def test_two_approvals_of_one_memory_entry_apply_once_and_undo_restores_exactly(db, monkeypatch):
    with open_store(db) as first, open_store(db) as second:
        proposal_id = write_proposal(first, "Never prune in frost.")
        before = dump(first)
        run_during_first_read(
            monkeypatch, first, lambda: q.approve(second, proposal_id, actor="bob")
        )
        with pytest.raises(WrongStatus, match=f"proposal {proposal_id} is applied; only"):
            q.approve(first, proposal_id, actor="ann")
        monkeypatch.undo()

        [memory] = first.memories.list(category=RULES)
        assert memory.seen_count == 1  # written once, not folded in a second time
        assert [(e.event, e.actor) for e in events(first, proposal_id)] == [
            ("filed", "test"),
            ("approved", "bob"),
            ("applied", "bob"),
        ]
        q.undo(first, proposal_id)
        assert dump(first) == before


def test_two_edits_to_the_same_text_at_once_give_a_clear_error(db, monkeypatch):
    with open_store(db) as first, open_store(db) as second:
        one = write_proposal(first, "Stake new trees.")
        two = write_proposal(first, "Stake young trees.")
        same = {"action": "write", "category": RULES, "content": "Stake trees for a year."}
        real_atomic = first.atomic
        entered = []

        def atomic_after_the_other_edit():
            if not entered:
                entered.append(q.edit(second, two, diff=same))
            return real_atomic()

        monkeypatch.setattr(first, "atomic", atomic_after_the_other_edit)
        with pytest.raises(QueueError, match=f"proposal {two} already proposes exactly this"):
            q.edit(first, one, diff=same)
        monkeypatch.undo()
        assert get(first, one).diff["content"] == "Stake new trees."
        assert get(first, two).diff == same


def test_an_approval_under_way_is_not_taken_over_until_its_lease_ran_out(db):
    now = datetime(2030, 1, 1, tzinfo=timezone.utc)
    with open_store(db, clock=lambda: now) as first:
        proposal_id = write_proposal(first, "Water after planting.")
        with first.atomic():
            _, claim = q._claim_approval(first, proposal_id, "ann")  # ann's apply is under way
    with open_store(db, clock=lambda: now + timedelta(minutes=1)) as second:
        with pytest.raises(WrongStatus, match="another approval has been applying it since"):
            q.approve(second, proposal_id, actor="bob")
        assert get(second, proposal_id).status == "approved"
    later = now + q.APPLY_LEASE + timedelta(seconds=1)
    with open_store(db, clock=lambda: later) as second:
        assert q.approve(second, proposal_id, actor="bob").status == "applied"
        # ann's approval comes back late: it no longer holds the proposal
        with second.atomic(), pytest.raises(QueueError, match="is applied: another step took"):
            q._applied(second, proposal_id, claim, "ann", "store", {}, [])
        # nor is a second application of the same proposal ever recorded
        with second.atomic(), pytest.raises(QueueError, match="is applied already"):
            q._applied(second, proposal_id, None, "ann", "store", {}, [])
        assert len(second.memories.list(category=RULES)) == 1
        assert [e.event for e in events(second, proposal_id)][-1] == "applied"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, check=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Test\n\temail = test@example.invalid\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    path = tmp_path / "orchard"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "CLAUDE.md").write_text("# Rules\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path


@pytest.mark.slow
def test_two_approvals_of_one_file_change_at_once_commit_once_and_undo_removes_it(db, repo):
    from plugin_sdk.proposals.detect import file_draft
    from plugin_sdk.proposals.filing import ProposalDraft

    with open_store(db) as store:
        draft = ProposalDraft("claude_md", "r", [], {"note": "Never prune in frost."}, "test")
        proposal_id = file_draft(store, draft, target=Target(repo=repo)).proposal_id
    refs = git(repo, "for-each-ref")
    barrier = threading.Barrier(2)
    outcomes: dict[str, object] = {}

    def approve(branch: str) -> None:
        with open_store(db) as store:
            barrier.wait()
            try:
                target = Target(repo=repo, branch=branch)
                outcomes[branch] = q.approve(store, proposal_id, target=target, actor=branch)
            except QueueError as error:
                outcomes[branch] = error

    threads = [threading.Thread(target=approve, args=(name,)) for name in ("ann", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    errors = [o for o in outcomes.values() if isinstance(o, Exception)]
    assert len(errors) == 1 and isinstance(errors[0], WrongStatus)
    assert f"proposal {proposal_id} is " in str(errors[0])
    [winner] = [name for name, o in outcomes.items() if not isinstance(o, Exception)]
    branches = git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/").split()
    assert sorted(branches) == sorted(["refs/heads/main", f"refs/heads/{winner}"])
    with open_store(db) as store:
        assert [e.event for e in events(store, proposal_id)] == ["filed", "approved", "applied"]
        q.undo(store, proposal_id)
    assert git(repo, "for-each-ref") == refs
