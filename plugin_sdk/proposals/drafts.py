"""Drafts: a file change described by what it adds, made exact against a repository.

Detectors and ``memsdk queue note`` give file changes as drafts: a note for
the instructions file (``claude_md`` ``{"note", "section"?}``), a skill
(``skill`` ``{"skill", "description", "body"}``), allowlist entries
(``allowlist`` ``{"allow": [...]}``). :func:`resolve` reads the file as
committed at ``target.base`` (following symbolic links inside the repository)
and returns the exact change ``{"path", "base", "before", "after", "repo",
"root"}`` that the queue files and approval applies.
"""

from __future__ import annotations

import json
import re
from typing import Any

from plugin_sdk.errors import ApplyFailed, InvalidProposal
from plugin_sdk.proposals.diffs import check_file_diff, check_memory_diff, settings_json
from plugin_sdk.proposals.gitapply import Repo, check_path
from plugin_sdk.proposals.target import Target

INSTRUCTIONS_FILES = ("CLAUDE.md", "AGENTS.md")
NOTES_SECTION = "Notes from memory"
_SKILL_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


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
