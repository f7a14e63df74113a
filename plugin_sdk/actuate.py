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

Detectors may give file changes as drafts (a note for the instructions file, a
skill, allowlist entries); :func:`resolve` turns a draft into the exact change
against the target repository as it is at ``target.base``.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from .diffs import InvalidProposal, check_file_diff, check_memory_diff, settings_json
from .errors import MemsdkError
from .gitapply import GitError, Repo, check_path
from .proposals import Proposal

if TYPE_CHECKING:
    from .store import Store

INSTRUCTIONS_FILES = ("CLAUDE.md", "AGENTS.md")
SETTINGS_FILE = ".claude/settings.json"
SKILLS_DIR = ".claude/skills"
NOTES_SECTION = "Notes from memory"
DESCRIPTIONS_DIR = "memsdk/pull-requests"  # in the repository's git directory
_SKILL_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


class ApplyFailed(MemsdkError):
    """An approved change could not be applied; nothing of it was kept."""


class WrongRepository(ApplyFailed):
    """A file proposal asked to be applied to another repository than its own."""


@attrs.frozen
class Target:
    """Where file proposals go, and how they are applied.

    :param repo: the target git repository (default: the current directory).
    :param instructions_file: the agent's instructions file; default: CLAUDE.md,
        or AGENTS.md when only that one exists.
    :param settings_file: the settings JSON holding ``permissions.allow``.
    :param skills_dir: where skills live (``NAME/SKILL.md`` under it).
    :param base: the commit a new branch starts from.
    :param branch: the new branch's name (default ``memsdk/proposal-ID``).
    :param merge: when the file changed since the proposal, try a three-way
        merge instead of failing (a conflict still fails).
    :param other_repo: apply a proposal made against one repository to
        ``repo``, another one (refused otherwise).
    """

    repo: str | Path | None = None
    instructions_file: str | None = None
    settings_file: str = SETTINGS_FILE
    skills_dir: str = SKILLS_DIR
    base: str = "HEAD"
    branch: str | None = None
    merge: bool = False
    other_repo: bool = False

    def open(self) -> Repo:
        return Repo(self.repo if self.repo is not None else Path.cwd())

    def open_for(self, proposal_id: int, diff: dict[str, Any]) -> Repo:
        """The repository to apply a file diff to: by default the one it was made against.

        A diff without ``repo`` (filed exact through the API) goes to ``repo``
        or the current directory. Another repository than the diff's, or one
        whose history lacks the diff's ``root`` commit, is refused unless
        ``other_repo``.
        """
        if "repo" not in diff:
            return self.open()
        repo = Repo(diff["repo"] if self.repo is None else self.repo)
        if self.other_repo:
            return repo
        made = f"proposal {proposal_id} was made against {diff['repo']}"
        if str(repo.root) != diff["repo"]:
            raise WrongRepository(
                f"{made}; {repo.root} is another repository: approve it without a repository "
                "to apply it there, or allow another repository (--other-repo) to apply it here"
            )
        if not repo.has_commit(diff["root"]):
            raise WrongRepository(
                f"{made}, whose history starts at {diff['root'][:12]}; the repository there now "
                "has no such commit (re-created?): allow another repository (--other-repo) "
                "to apply it anyway"
            )
        return repo

    def branch_for(self, proposal_id: int) -> str:
        return self.branch or f"memsdk/proposal-{proposal_id}"


# Drafts -> exact file changes


def resolve(diff_type: str, diff: dict[str, Any], target: Target) -> dict[str, Any] | None:
    """The exact diff for a draft (an exact diff is checked and returned as it is).

    Drafts: ``claude_md`` ``{"note", "section"?}``; ``skill`` ``{"skill",
    "description", "body"}``; ``allowlist`` ``{"allow": [...]}``. Returns
    ``None`` when the target already has what the draft asks for.
    """
    if diff_type == "memory_entry":
        check_memory_diff(diff)
        return diff
    if "path" in diff:
        check_file_diff(diff_type, diff)
        return diff
    repo = target.open()
    commit = repo.commit(target.base)
    if commit is None:
        raise ApplyFailed(f"{repo.root}: {target.base!r} names no commit to propose against")
    after: str | None
    if diff_type == "claude_md":
        note = diff.get("note")
        if not isinstance(note, str) or not note.strip():
            raise InvalidProposal("claude_md draft: 'note' must be a non-empty text")
        path = target.instructions_file or _instructions_file(repo, commit)
        path, base, before = _current(repo, commit, path)
        after = add_note(before or "", note, diff.get("section") or NOTES_SECTION)
    elif diff_type == "skill":
        name = diff.get("skill")
        if not isinstance(name, str) or not _SKILL_NAME.fullmatch(name):
            raise InvalidProposal("skill draft: 'skill' must be a name like deploy-checklist")
        path = f"{target.skills_dir.rstrip('/')}/{name}/SKILL.md"
        path, base, before = _current(repo, commit, path)
        after = skill_text(name, str(diff.get("description", "")), str(diff.get("body", "")))
    elif diff_type == "allowlist":
        allow = diff.get("allow")
        if not isinstance(allow, list) or not allow or not all(isinstance(a, str) for a in allow):
            raise InvalidProposal("allowlist draft: 'allow' must be a list of permission rules")
        path = target.settings_file
        path, base, before = _current(repo, commit, path)
        after = add_allowed(before, allow, path)
    else:
        raise InvalidProposal(f"no draft shape for diff_type {diff_type!r}")
    if after is None or after == before:
        return None
    exact = {
        "path": check_path(path),
        "base": base,
        "before": before,
        "after": after,
        "repo": str(repo.root),
        "root": repo.root_commit(commit),
    }
    check_file_diff(diff_type, exact)
    return exact


def add_note(text: str, note: str, section: str) -> str:
    """``text`` with ``- note`` at the end of the ``## section`` (added if missing)."""
    bullet = "- " + " ".join(note.split())
    lines = text.splitlines()
    if bullet in (line.rstrip() for line in lines):
        return text
    heading = f"## {section}"
    if heading not in (line.rstrip() for line in lines):
        body = text.rstrip("\n")
        return (body + "\n\n" if body else "") + f"{heading}\n\n{bullet}\n"
    start = [line.rstrip() for line in lines].index(heading)
    end = next(
        (i for i in range(start + 1, len(lines)) if re.match(r"#{1,2} ", lines[i])), len(lines)
    )
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    lines[end:end] = [bullet]
    return "\n".join(lines) + "\n"


def skill_text(name: str, description: str, body: str) -> str:
    description = " ".join(description.split()) or name
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body.strip()}\n"


def add_allowed(text: str | None, allow: list[str], path: str) -> str | None:
    """The settings JSON with ``allow`` added to ``permissions.allow`` (kept if already there)."""
    settings = settings_json(text, path) if text is not None else {}
    permissions = settings.setdefault("permissions", {})
    if not isinstance(permissions, dict):
        raise InvalidProposal(f"{path}: 'permissions' is not a JSON object")
    allowed = permissions.setdefault("allow", [])
    if not isinstance(allowed, list):
        raise InvalidProposal(f"{path}: 'permissions.allow' is not a list")
    new = [rule for rule in dict.fromkeys(allow) if rule not in allowed]
    if not new:
        return text
    allowed.extend(new)
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def _instructions_file(repo: Repo, commit: str) -> str:
    for name in INSTRUCTIONS_FILES:
        if repo.entry(commit, name) is not None:
            return name
    return INSTRUCTIONS_FILES[0]


def _current(repo: Repo, commit: str, path: str) -> tuple[str, str | None, str | None]:
    """The file a draft changes (symbolic links followed), its blob id and its text."""
    path = repo.follow(commit, path)
    found = repo.read(commit, path)
    if found is None:
        return path, None, None
    try:
        return path, found.blob, found.data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidProposal(f"{path} is not UTF-8 text") from error


# Applying


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
        current = store.memories.get(diff["id"])
        if current.status not in ("active", "pending"):
            raise ApplyFailed(f"memory {current.id} is {current.status} now")
        updated = store.memories.update(current.id, content=diff["content"])
        return {"action": action, "memory_id": updated.id, "changed": updated != current}
    if action == "merge":
        target = store.memories.get(diff["into"])
        if target.category != diff["category"]:
            raise ApplyFailed(f"memory {target.id} is in {target.category} now")
        text = diff.get("content")
        if text and text != target.content:
            store.memories.update(target.id, content=text)
        store.memories.merge(diff["sources"], into=target.id)
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
