"""What an approved proposal does: a store change, or a commit on a new git branch.

- ``memory_entry`` goes through the store's own API (``memories.write``,
  ``update``, ``merge``), so deduplication and merge rules hold; the queue
  runs it in one transaction and records the rows it changed (``undo.py``).
- ``claude_md``, ``skill`` and ``allowlist`` are file changes in a target git
  repository: ``{"path", "base", "before", "after"}``, where ``base`` is the
  blob id of the file when the proposal was made (``None``: the file did not
  exist). Approval commits ``after``, and nothing else, on a new branch with
  git's plumbing (``gitapply.py``) and writes a pull-request description in the
  git directory (``.git/memsdk/pull-requests/``); the user's branch, index and
  working tree are never touched. A file that changed since ``base`` fails the
  apply, unless a three-way merge is asked for and merges cleanly.

Where file changes go is a :class:`~plugin_sdk.proposals.target.Target`; drafts are made
exact by ``drafts.py`` before they are filed.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plugin_sdk.errors import ApplyFailed, GitError, InvalidProposal
from plugin_sdk.proposals.filing import Proposal
from plugin_sdk.proposals.gitapply import Repo
from plugin_sdk.proposals.target import Target

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

DESCRIPTIONS_DIR = "memsdk/pull-requests"  # in the repository's git directory


def apply_memory(store: Store, proposal: Proposal) -> dict[str, Any]:
    """Apply a ``memory_entry`` through the store's API (the caller holds the transaction)."""
    diff = proposal.diff
    action = diff["action"]
    source = f"proposal:{proposal.id}"
    if action == "write":
        result = store.memories.write(
            diff["content"],
            diff["category"],
            project=proposal.project,
            importance=diff.get("importance", 50),
            source=source,
        )
        return {"action": action, "memory_id": result.id, "created": result.created}
    if action == "update":
        current = store.memories.own(diff["id"], project=proposal.project, doing="update")
        if current.status not in ("active", "pending"):
            raise ApplyFailed(f"memory {current.id} is {current.status} now")
        updated = store.memories.update(
            current.id, content=diff["content"], project=proposal.project
        )
        return {"action": action, "memory_id": updated.id, "changed": updated != current}
    if action == "merge":
        target = store.memories.own(diff["into"], project=proposal.project, doing="merge")
        if target.category != diff["category"]:
            raise ApplyFailed(f"memory {target.id} is in {target.category} now")
        text = diff.get("content")
        if text and text != target.content:
            store.memories.update(target.id, content=text, project=proposal.project)
        store.memories.merge(diff["sources"], into=target.id, project=proposal.project)
        return {"action": action, "memory_id": target.id, "merged": diff["sources"]}
    raise InvalidProposal(f"memory_entry {action}: nothing to apply")


def apply_file(proposal: Proposal, target: Target, *, actor: str, rendered: str) -> dict[str, Any]:
    """Commit a file proposal on a new branch; :class:`ApplyFailed` leaves no ref behind."""
    diff = proposal.diff
    path = diff["path"]
    try:
        repo = target.open_for(proposal.id, diff)
        branch = repo.check_branch(target.branch_for(proposal.id))
        base = repo.commit(target.base)
        if base is None:
            raise ApplyFailed(f"{target.base!r} names no commit in {repo.root}")
        if repo.branch_exists(branch):
            raise ApplyFailed(f"branch {branch} already exists in {repo.root}")
        current = repo.read(base, path)
        data = diff["after"].encode("utf-8")
        if (current.blob if current else None) != diff["base"]:
            data = _merged(repo, path, diff, current, target, base)
        title, body = describe(proposal, branch=branch, actor=actor)
        mode = current.mode if current else "100644"
        commit = repo.commit_files(base, {path: (mode, data)}, f"{title}\n\n{body}")
        repo.create_branch(branch, commit, f"memsdk: proposal {proposal.id} approved by {actor}")
    except GitError as error:
        raise ApplyFailed(str(error)) from error
    description = repo.git_dir / DESCRIPTIONS_DIR / f"{branch.replace('/', '-')}.md"
    try:
        _write(description, f"# {title}\n\n{body}\n```diff\n{rendered.rstrip()}\n```\n")
    except OSError as error:
        repo.delete_branch(branch, commit)
        raise ApplyFailed(
            f"cannot write the pull-request description {description}: {error}"
        ) from error
    return {
        "repo": str(repo.root),
        "branch": branch,
        "commit": commit,
        "base_commit": base,
        "path": path,
        "description": str(description),
    }


def discard(applied: dict[str, Any]) -> None:
    """Remove what :func:`apply_file` made: the branch (if still at its commit), the description.

    :class:`GitError` if the branch moved; the description is kept then.
    """
    Repo(applied["repo"]).delete_branch(applied["branch"], applied["commit"])
    if applied.get("description"):
        Path(applied["description"]).unlink(missing_ok=True)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, "utf-8")
    partial.replace(path)


def _merged(
    repo: Repo, path: str, diff: dict[str, Any], current: Any, target: Target, base: str
) -> bytes:
    now = f"blob {current.blob[:12]}" if current else "absent"
    was = f"blob {diff['base'][:12]}" if diff["base"] else "absent"
    changed = f"{path} changed since the proposal was made (was {was}, is {now} at {base[:12]})"
    if not target.merge:
        raise ApplyFailed(f"{changed}; approve with a three-way merge to try merging")
    if current is None or diff["before"] is None:
        raise ApplyFailed(f"{changed}; a three-way merge needs the file on both sides")
    merged, conflicts = repo.merge_text(
        current.data, diff["before"].encode("utf-8"), diff["after"].encode("utf-8"), path
    )
    if conflicts:
        raise ApplyFailed(f"{changed}; merge conflict: {conflicts} conflicting hunk(s)")
    return merged


def describe(proposal: Proposal, *, branch: str, actor: str) -> tuple[str, str]:
    """The commit's (and the pull request's) title and body."""
    first = proposal.rationale.strip().splitlines()[0] if proposal.rationale.strip() else ""
    title = f"memsdk: {proposal.diff['path']}: {first}"[:72].rstrip()
    evidence = ", ".join(str(i) for i in proposal.evidence) or "none"
    body = (
        f"{proposal.rationale.strip()}\n\n"
        f"- proposal: {proposal.id} ({proposal.diff_type}), filed by {proposal.source} "
        f"on {proposal.created_at}\n"
        f"- evidence (memory ids): {evidence}\n"
        f"- approved by: {actor}\n"
        f"- branch: {branch}\n"
    )
    return title, body


def unified(path: str, before: str | None, after: str | None) -> str:
    """A unified diff of one file (``/dev/null`` for a missing side)."""
    old = (before or "").splitlines(keepends=True)
    new = (after or "").splitlines(keepends=True)
    lines = difflib.unified_diff(
        old,
        new,
        fromfile="/dev/null" if before is None else f"a/{path}",
        tofile="/dev/null" if after is None else f"b/{path}",
    )
    out = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)
