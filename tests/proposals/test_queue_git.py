"""File proposals against a real temporary git repository whose working tree is dirty:
approval commits exactly the proposed change on a new branch and touches nothing else;
failures leave no ref; undo deletes the branch."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from plugin_sdk import Store, validate_pack
from plugin_sdk.errors import ApplyFailed, GitError, InvalidProposal, QueueError, UndoRefused
from plugin_sdk.proposals import queue as q
from plugin_sdk.proposals.detect import file_draft
from plugin_sdk.proposals.drafts import add_note, resolve
from plugin_sdk.proposals.filing import ProposalDraft, events, get, propose
from plugin_sdk.proposals.gitapply import Repo
from plugin_sdk.proposals.target import Target
from plugin_sdk.store import driver
from plugin_sdk.testing import fresh_plugin_manager, pack_document

pytestmark = pytest.mark.slow  # every test drives a real git repository

INSTRUCTIONS = (
    "# Orchard agent\n\n## Rules\n\n- Be gentle with the trees.\n\n## Tools\n\n- shears\n"
)
SETTINGS = {"permissions": {"allow": ["Bash(ls)"], "deny": []}, "model": "small"}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True)
    return done.stdout.decode()


@pytest.fixture(autouse=True)
def quiet_git(tmp_path, monkeypatch):
    """No user or system git configuration leaks into the tests."""
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Test\n\temail = test@example.invalid\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture
def repo(tmp_path) -> Path:
    """A repository with two commits on main and a dirty working tree:
    an unstaged edit, a staged edit and an untracked file."""
    path = tmp_path / "orchard"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "CLAUDE.md").write_text(INSTRUCTIONS)
    (path / ".claude").mkdir()
    (path / ".claude" / "settings.json").write_text(json.dumps(SETTINGS, indent=2) + "\n")
    (path / "README").write_text("orchard\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    (path / "README").write_text("orchard tools\n")
    git(path, "commit", "-q", "-am", "second")
    (path / "CLAUDE.md").write_text(INSTRUCTIONS + "- an unsaved thought\n")  # unstaged
    (path / "README").write_text("orchard tools, staged\n")
    git(path, "add", "README")  # staged
    (path / "scratch.txt").write_text("untracked\n")
    return path


def snapshot(repo: Path) -> dict:
    """What the user sees: HEAD, the current branch, index, working tree, status, refs."""
    files = {
        str(p.relative_to(repo)): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }
    return {
        "head": git(repo, "rev-parse", "HEAD"),
        "branch": git(repo, "symbolic-ref", "HEAD"),
        "status": git(repo, "status", "--porcelain=v1", "-uall"),
        "index": (repo / ".git" / "index").read_bytes(),
        "files": files,
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
    }


ORCHARD = validate_pack(pack_document("orchard", "1.0.0", {"ORCHARD_RULES": "intent"}), source="t")


@pytest.fixture
def store(new_store: Callable[..., Store]) -> Store:
    return new_store(ORCHARD, name="q.db", project="orchard", plugins=fresh_plugin_manager())


def note(store: Store, repo: Path, text: str = "Never prune in frost.", **target) -> int:
    filed = file_draft(
        store,
        ProposalDraft("claude_md", "a rule that keeps coming back", [], {"note": text}, "test"),
        target=Target(repo=repo, **target),
    )
    assert filed.proposal_id is not None
    return filed.proposal_id


def changed_paths(repo: Path, branch: str) -> list[str]:
    return git(repo, "diff", "--name-status", f"{branch}^", branch).splitlines()


def test_approval_commits_exactly_the_proposed_diff_on_a_new_branch_and_touches_nothing_else(
    store, repo
):
    proposal_id = note(store, repo)
    proposal = get(store, proposal_id)
    head = git(repo, "rev-parse", "HEAD").strip()
    assert proposal.diff["path"] == "CLAUDE.md"
    assert proposal.diff["base"] == git(repo, "rev-parse", "HEAD:CLAUDE.md").strip()
    assert proposal.diff["before"] == INSTRUCTIONS  # the committed file, not the dirty one
    before = snapshot(repo)

    applied = q.approve(store, proposal_id, target=Target(repo=repo), actor="ann")

    assert applied.status == "applied"
    assert snapshot(repo)["refs"] != before["refs"]
    after = snapshot(repo)
    for what in ("head", "branch", "status", "index", "files"):
        assert after[what] == before[what], what
    branch = "memsdk/proposal-1"
    result = q.application(store, proposal_id)["result"]
    assert result["branch"] == branch and result["base_commit"] == head
    assert git(repo, "rev-parse", f"{branch}^").strip() == head
    assert git(repo, "rev-parse", branch).strip() == result["commit"]
    # the commit is exactly the proposed diff: one file, nothing else
    assert changed_paths(repo, branch) == ["M\tCLAUDE.md"]
    # the instructions file's change is exactly the proposal: its before at the parent, its after on the branch
    assert git(repo, "show", f"{branch}^:CLAUDE.md") == proposal.diff["before"]
    assert git(repo, "show", f"{branch}:CLAUDE.md") == proposal.diff["after"]
    assert (
        proposal.diff["after"]
        == INSTRUCTIONS + "\n## Notes from memory\n\n- Never prune in frost.\n"
    )
    # the pull-request description is outside the work tree, in the git directory
    description = repo / ".git" / "memsdk" / "pull-requests" / "memsdk-proposal-1.md"
    assert result["description"] == str(description)
    pr = description.read_text()
    assert pr.startswith("# memsdk: CLAUDE.md: a rule that keeps coming back\n")
    assert "- approved by: ann" in pr and "+- Never prune in frost." in pr
    message = git(repo, "log", "-1", "--format=%s%n%b", branch)
    assert message.startswith("memsdk: CLAUDE.md: a rule that keeps coming back")
    assert [e.event for e in events(store, proposal_id)] == ["filed", "approved", "applied"]


def test_rejection_changes_nothing(store, repo):
    proposal_id = note(store, repo)
    before = snapshot(repo)
    q.reject(store, proposal_id)
    assert snapshot(repo) == before
    assert get(store, proposal_id).status == "rejected"


def test_a_file_changed_underneath_fails_and_leaves_no_ref(store, repo):
    proposal_id = note(store, repo)
    git(repo, "commit", "-q", "-m", "edit the rules", "--", "CLAUDE.md")  # the dirty edit lands
    before = snapshot(repo)
    with pytest.raises(ApplyFailed, match=r"CLAUDE\.md changed since the proposal was made"):
        q.approve(store, proposal_id, target=Target(repo=repo))
    assert snapshot(repo) == before  # no branch, no ref
    failed = get(store, proposal_id)
    assert failed.status == "failed" and "changed since" in failed.error
    assert [e.event for e in events(store, proposal_id)] == ["filed", "approved", "failed"]
    assert q.application(store, proposal_id) is None


def test_a_three_way_merge_applies_a_change_made_elsewhere_in_the_file(store, repo):
    proposal_id = note(store, repo)
    (repo / "CLAUDE.md").write_text(INSTRUCTIONS.replace("# Orchard agent", "# The orchard agent"))
    git(repo, "commit", "-q", "-am", "retitle")
    q.approve(store, proposal_id, target=Target(repo=repo, merge=True))
    merged = git(repo, "show", "memsdk/proposal-1:CLAUDE.md")
    assert merged.startswith("# The orchard agent\n") and merged.endswith(
        "- Never prune in frost.\n"
    )


def test_a_merge_conflict_fails_and_leaves_no_ref(store, repo):
    proposal_id = note(store, repo)
    (repo / "CLAUDE.md").write_text(INSTRUCTIONS + "\n## Notes from memory\n\n- Prune in frost.\n")
    git(repo, "commit", "-q", "-am", "a competing note")
    before = snapshot(repo)
    with pytest.raises(ApplyFailed, match=r"merge conflict: 1 conflicting hunk"):
        q.approve(store, proposal_id, target=Target(repo=repo, merge=True))
    assert snapshot(repo) == before
    assert get(store, proposal_id).status == "failed"


def test_an_existing_branch_fails_and_is_left_alone_then_a_retry_works(store, repo):
    proposal_id = note(store, repo)
    git(repo, "branch", "memsdk/proposal-1", "HEAD~1")
    before = snapshot(repo)
    with pytest.raises(ApplyFailed, match="branch memsdk/proposal-1 already exists"):
        q.approve(store, proposal_id, target=Target(repo=repo))
    assert snapshot(repo) == before
    assert get(store, proposal_id).status == "failed"
    q.approve(store, proposal_id, target=Target(repo=repo, branch="orchard/frost-note"))
    assert get(store, proposal_id).status == "applied"
    assert changed_paths(repo, "orchard/frost-note") == ["M\tCLAUDE.md"]


def test_undo_deletes_the_branch_but_not_one_that_moved(store, repo):
    proposal_id = note(store, repo)
    before = snapshot(repo)
    q.approve(store, proposal_id, target=Target(repo=repo))
    description = Path(q.application(store, proposal_id)["result"]["description"])
    assert description.is_file()
    q.undo(store, proposal_id)
    assert snapshot(repo) == before
    assert not description.exists()
    assert get(store, proposal_id).status == "undone"

    other = note(store, repo, "Water after planting.")
    q.approve(store, other, target=Target(repo=repo))
    git(repo, "branch", "-f", f"memsdk/proposal-{other}", "HEAD")  # someone moved it
    with pytest.raises(UndoRefused, match=f"memsdk/proposal-{other} .* no longer points"):
        q.undo(store, other)
    assert get(store, other).status == "applied"


def test_a_skill_is_added_as_a_new_file(store, repo):
    draft = ProposalDraft(
        "skill",
        "the same pruning steps, every winter",
        [],
        {
            "skill": "winter-pruning",
            "description": "Prune apple trees in winter.",
            "body": "1. Cut dead wood.\n2. Open the centre.",
        },
    )
    filed = file_draft(store, draft, target=Target(repo=repo))
    proposal = get(store, filed.proposal_id)
    assert proposal.diff["path"] == ".claude/skills/winter-pruning/SKILL.md"
    assert (proposal.diff["base"], proposal.diff["before"]) == (None, None)
    q.approve(store, proposal.id, target=Target(repo=repo))
    assert changed_paths(repo, "memsdk/proposal-1") == ["A\t.claude/skills/winter-pruning/SKILL.md"]
    assert git(repo, "show", "memsdk/proposal-1:.claude/skills/winter-pruning/SKILL.md") == (
        "---\nname: winter-pruning\ndescription: Prune apple trees in winter.\n---\n\n"
        "1. Cut dead wood.\n2. Open the centre.\n"
    )


def test_allowlist_entries_edit_the_settings_json_and_keep_the_rest(store, repo):
    target = Target(repo=repo)
    draft = ProposalDraft(
        "allowlist", "asked for every session", [], {"allow": ["Bash(make check)", "Bash(ls)"]}
    )
    filed = file_draft(store, draft, target=target)
    q.approve(store, filed.proposal_id, target=target)
    settings = json.loads(git(repo, "show", "memsdk/proposal-1:.claude/settings.json"))
    assert settings == {
        "permissions": {"allow": ["Bash(ls)", "Bash(make check)"], "deny": []},
        "model": "small",
    }
    # already allowed: nothing to propose
    again = ProposalDraft("allowlist", "r", [], {"allow": ["Bash(ls)"]})
    assert file_draft(store, again, target=target).reason == "the target already has it"


def test_agents_md_is_the_default_instructions_file_when_it_is_the_only_one(store, tmp_path):
    path = tmp_path / "agents"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "AGENTS.md").write_text("# Agents\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    proposal = get(store, note(store, path))
    assert proposal.diff["path"] == "AGENTS.md"
    assert (
        get(store, note(store, path, "Other.", instructions_file="CLAUDE.md")).diff["base"] is None
    )


def test_editing_a_file_proposal_changes_its_after_only(store, repo):
    proposal_id = note(store, repo)
    diff = get(store, proposal_id).diff
    q.edit(store, proposal_id, diff={**diff, "after": diff["after"] + "- And in snow.\n"})
    q.approve(store, proposal_id, target=Target(repo=repo))
    assert git(repo, "show", "memsdk/proposal-1:CLAUDE.md").endswith("- And in snow.\n")
    other = note(store, repo, "Another.")
    odiff = get(store, other).diff
    with pytest.raises(QueueError, match="may change 'after' only, not path"):
        q.edit(store, other, diff={**odiff, "path": "README"})
    with pytest.raises(InvalidProposal, match="nothing changes"):
        q.edit(store, other, diff={**odiff, "after": odiff["before"]})


def test_file_diffs_are_checked(store):
    for bad, message in (
        ({"path": "../x", "base": None, "before": None, "after": "x"}, "not a plain relative path"),
        ({"path": ".git/config", "base": None, "before": None, "after": "x"}, "inside .git"),
        ({"path": "a", "base": "zz", "before": "", "after": "x"}, "blob id"),
        ({"path": "a", "after": "x"}, "exactly the keys"),
        ({"path": "s.json", "base": None, "before": None, "after": "[1]"}, "JSON object"),
    ):
        with pytest.raises(InvalidProposal, match=message):
            resolve("allowlist", bad, Target())


def test_a_missing_git_or_a_missing_repository_is_a_clear_error(store, repo, tmp_path, monkeypatch):
    proposal_id = note(store, repo)
    with pytest.raises(GitError, match="is not a git repository"):
        Repo(tmp_path)
    monkeypatch.setattr("plugin_sdk.proposals.gitapply.shutil.which", lambda name: None)
    with pytest.raises(ApplyFailed, match="git is not installed"):
        q.approve(store, proposal_id, target=Target(repo=repo))
    assert get(store, proposal_id).status == "failed"


def test_add_note_puts_the_bullet_at_the_end_of_its_section():
    text = "# A\n\n## Notes from memory\n\n- one\n\n## Later\n\n- x\n"
    assert add_note(text, "two", "Notes from memory") == (
        "# A\n\n## Notes from memory\n\n- one\n- two\n\n## Later\n\n- x\n"
    )
    assert add_note(text, "one", "Notes from memory") == text
    assert add_note("", "first", "Notes") == "## Notes\n\n- first\n"


def test_an_exact_file_proposal_from_the_api_applies_too(store, repo):
    blob = git(repo, "rev-parse", "HEAD:README").strip()
    proposal_id = propose(
        store,
        diff_type="claude_md",
        rationale="by hand",
        evidence=[],
        diff={
            "path": "README",
            "base": blob,
            "before": "orchard tools\n",
            "after": "orchard tools and ladders\n",
        },
        source="api",
    )
    q.approve(store, proposal_id, target=Target(repo=repo))
    assert (
        git(repo, "show", f"memsdk/proposal-{proposal_id}:README") == "orchard tools and ladders\n"
    )


def test_a_symlinked_instructions_file_is_changed_where_it_points(store, tmp_path):
    path = tmp_path / "linked"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "AGENTS.md").write_text("# Agents\n")
    (path / "CLAUDE.md").symlink_to("AGENTS.md")
    (path / "docs").symlink_to(".")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    assert git(path, "ls-files", "-s", "CLAUDE.md").startswith("120000 ")
    link = git(path, "ls-tree", "HEAD", "CLAUDE.md")

    proposal = get(store, note(store, path))
    assert (proposal.diff["path"], proposal.diff["before"]) == ("AGENTS.md", "# Agents\n")
    q.approve(store, proposal.id, target=Target(repo=path))
    branch = f"memsdk/proposal-{proposal.id}"
    assert changed_paths(path, branch) == ["M\tAGENTS.md"]
    assert git(path, "ls-tree", branch, "CLAUDE.md") == link  # still the same link
    assert git(path, "show", f"{branch}:AGENTS.md").endswith("- Never prune in frost.\n")

    # an exact change to the link itself is refused, naming where it points; no ref is left
    refs = git(path, "for-each-ref")
    blob = git(path, "rev-parse", "HEAD:CLAUDE.md").strip()
    exact = propose(
        store,
        diff_type="claude_md",
        rationale="by hand",
        evidence=[],
        diff={"path": "CLAUDE.md", "base": blob, "before": "AGENTS.md", "after": "# Rules\n"},
        source="api",
    )
    with pytest.raises(ApplyFailed, match=r"CLAUDE\.md is a symbolic link \(to AGENTS\.md\)"):
        q.approve(store, exact, target=Target(repo=path))
    assert git(path, "for-each-ref") == refs

    # a link out of the repository, or a file behind a linked directory, is refused
    (path / "OUT.md").symlink_to("../elsewhere.md")
    git(path, "add", "OUT.md")
    git(path, "commit", "-q", "-m", "out")
    with pytest.raises(
        GitError, match=r"OUT\.md is a symbolic link to \.\./elsewhere\.md, outside"
    ):
        note(store, path, "Other.", instructions_file="OUT.md")
    with pytest.raises(GitError, match=r"docs is a symbolic link \(to \.\)"):
        note(store, path, "Other.", instructions_file="docs/CLAUDE.md")


def test_a_proposal_is_applied_to_the_repository_it_was_made_against(
    store, repo, tmp_path, monkeypatch
):
    proposal_id = note(store, repo)
    diff = get(store, proposal_id).diff
    assert diff["repo"] == str(repo.resolve())
    assert diff["root"] == git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    before = snapshot(clone)
    with pytest.raises(ApplyFailed, match=f"made against {repo.resolve()}; {clone} is another"):
        q.approve(store, proposal_id, target=Target(repo=clone))
    assert snapshot(clone) == before

    # without a repository: the one it was made against, wherever the approval runs
    monkeypatch.chdir(tmp_path)
    assert q.approve(store, proposal_id).status == "applied"
    assert git(repo, "branch", "--list", "memsdk/*").split() == [f"memsdk/proposal-{proposal_id}"]

    # a subdirectory of it is the same repository; another one only when asked
    inside = note(store, repo, "Water after planting.")
    q.approve(store, inside, target=Target(repo=repo / ".claude"))
    elsewhere = note(store, repo, "Mulch in autumn.")
    q.approve(store, elsewhere, target=Target(repo=clone, other_repo=True))
    assert git(clone, "branch", "--list", "memsdk/*").split() == [f"memsdk/proposal-{elsewhere}"]

    # the same path re-created with another history is not the same repository
    last = note(store, repo, "Label the grafts.")
    shutil.rmtree(repo / ".git")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "anew")
    with pytest.raises(ApplyFailed, match="the repository there now has no such commit"):
        q.approve(store, last)


def test_a_description_that_cannot_be_written_fails_the_apply_and_leaves_no_ref(store, repo):
    proposal_id = note(store, repo)
    (repo / ".git" / "memsdk").write_text("in the way\n")  # no directory can be made there
    before = snapshot(repo)
    with pytest.raises(ApplyFailed, match="cannot write the pull-request description"):
        q.approve(store, proposal_id)
    assert snapshot(repo) == before
    assert get(store, proposal_id).status == "failed"


def test_an_undo_that_git_refuses_at_the_last_moment_leaves_the_proposal_applied(
    store, repo, monkeypatch
):
    proposal_id = note(store, repo)
    q.approve(store, proposal_id)
    branch = f"memsdk/proposal-{proposal_id}"
    refs = git(repo, "for-each-ref")

    def moved_meanwhile(applied):
        raise GitError("git update-ref: cannot lock ref")

    monkeypatch.setattr("plugin_sdk.proposals.actuate.discard", moved_meanwhile)
    with pytest.raises(UndoRefused, match=f"branch {branch} .* no longer points"):
        q.undo(store, proposal_id)
    monkeypatch.undo()
    assert get(store, proposal_id).status == "applied"
    assert q.application(store, proposal_id)["undone_at"] is None
    assert [e.event for e in events(store, proposal_id)] == ["filed", "approved", "applied"]
    assert git(repo, "for-each-ref") == refs
    assert q.undo(store, proposal_id).status == "undone"  # and it can be undone later
    assert branch not in git(repo, "for-each-ref")


def test_an_undo_whose_store_write_fails_keeps_the_branch(store, repo, monkeypatch):
    proposal_id = note(store, repo)
    q.approve(store, proposal_id)
    refs = git(repo, "for-each-ref")
    real = q.record_event

    def store_refuses(s, pid, event, actor, detail):
        if event == "undone":
            raise driver.OperationalError("disk I/O error")
        return real(s, pid, event, actor, detail)

    monkeypatch.setattr(q, "record_event", store_refuses)
    with pytest.raises(driver.OperationalError):
        q.undo(store, proposal_id)
    monkeypatch.undo()
    assert git(repo, "for-each-ref") == refs  # the branch is still there: undo can be retried
    assert get(store, proposal_id).status == "applied"
    assert q.undo(store, proposal_id).status == "undone"
    assert git(repo, "for-each-ref") != refs
