"""The shapes a proposal's diff may take, checked before anything is filed or applied.

``memory_entry`` diffs name an ``action`` and its fields (:data:`MEMORY_FIELDS`);
the file types (``claude_md``, ``skill``, ``allowlist``) are one exact file
change ``{"path", "base", "before", "after"}``, with ``repo`` and ``root``
when it was made against a known repository. :func:`check_proposal` adds what
only the store knows: a memory entry's category must be one of its active
categories. Every problem is an :class:`InvalidProposal` naming the field.
``docs/queue.md`` describes each shape.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plugin_sdk.errors import (
    GitError,
    InvalidProposal,
    NotFound,
    ReadOnlyMemory,
    UnknownProposalCategory,
)
from plugin_sdk.proposals.gitapply import check_path

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

DIFF_TYPES = ("claude_md", "memory_entry", "skill", "allowlist")
FILE_KEYS = frozenset({"path", "base", "before", "after"})
WHERE_KEYS = frozenset({"repo", "root"})  # the repository a draft was made exact against
DRAFT_KEYS = frozenset({"note", "skill", "allow"})
# action -> (required fields, optional fields), each name -> type
MEMORY_FIELDS: dict[str, tuple[dict[str, type], dict[str, type]]] = {
    "write": ({"category": str, "content": str}, {"importance": int}),
    "update": ({"id": int, "content": str}, {"review": bool}),
    "merge": ({"category": str, "into": int, "sources": list}, {"content": str}),
    "review": ({"reply": str}, {}),
}
_OBJECT_ID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def check_diff_type(diff_type: str) -> None:
    if diff_type not in DIFF_TYPES:
        raise InvalidProposal(
            f"unknown diff_type {diff_type!r}; diff types are {', '.join(DIFF_TYPES)}"
        )


def check_proposal(
    store: Store, diff_type: str, diff: Any, evidence: Any = (), *, project: str | None = None
) -> None:
    """Everything :func:`check_diff` checks, the category against the store, the evidence.

    The project (default: the store's) is a wall: evidence must be memories
    it may read, and a memory entry may update or merge only its own memories
    (``store/visibility.py``).
    """
    check_diff(diff_type, diff)
    category = diff.get("category") if diff_type == "memory_entry" else None
    if category is not None and category not in store.category_names():
        raise UnknownProposalCategory(
            category,
            store.category_names(),
            where=f"memory_entry {diff['action']}: 'category'",
            renamed_to=store.renamed_to(category),
        )
    if not isinstance(evidence, (list, tuple)) or not all(_is_int(i) for i in evidence):
        raise InvalidProposal(f"'evidence' must be a list of memory ids; got {evidence!r}")
    project = project or store.project
    for memory_id in evidence:
        try:
            store.memories.get(memory_id, project=project)
        except NotFound as error:
            raise InvalidProposal(f"'evidence': {error}") from error
    if diff_type == "memory_entry":
        action = diff["action"]
        named = {"update": ["id"], "merge": ["into", "sources"]}.get(action, [])
        for field in named:
            ids = diff[field] if isinstance(diff[field], list) else [diff[field]]
            for memory_id in ids:
                try:
                    store.memories.own(memory_id, project=project, doing=action)
                except (NotFound, ReadOnlyMemory) as error:
                    raise InvalidProposal(f"memory_entry {action}: {field!r}: {error}") from error


def check_diff(diff_type: str, diff: Any) -> None:
    """The diff's shape for its type (see the module docstring)."""
    check_diff_type(diff_type)
    if not isinstance(diff, dict):
        raise InvalidProposal(f"a proposal's diff is a JSON object, not {type(diff).__name__}")
    if diff_type == "memory_entry":
        check_memory_diff(diff)
    else:
        check_file_diff(diff_type, diff)


def check_memory_diff(diff: dict[str, Any]) -> None:
    """The ``memory_entry`` shapes (:data:`MEMORY_FIELDS`)."""
    action = diff.get("action")
    fields = MEMORY_FIELDS.get(action) if isinstance(action, str) else None
    if fields is None:
        raise InvalidProposal(
            f"memory_entry diff has action {action!r}; actions are {', '.join(MEMORY_FIELDS)}"
        )
    required, optional = fields
    unknown = sorted(set(diff) - {"action", *required, *optional})
    if unknown:
        known = ", ".join([*required, *(f"{name}?" for name in optional)])
        raise InvalidProposal(
            f"memory_entry {action}: unknown field {', '.join(map(repr, unknown))} "
            f"(its fields: {known})"
        )
    for name, kind in {**required, **{k: v for k, v in optional.items() if k in diff}}.items():
        value = diff.get(name)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise InvalidProposal(f"memory_entry {action}: {name!r} must be a {kind.__name__}")
    if action == "merge" and (not diff["sources"] or not all(map(_is_int, diff["sources"]))):
        raise InvalidProposal("memory_entry merge: 'sources' must be a list of memory ids")
    for name in ("content", "reply"):
        if name in diff and not diff[name].strip():
            raise InvalidProposal(f"memory_entry {action}: {name!r} is empty")


def check_file_diff(diff_type: str, diff: dict[str, Any]) -> None:
    """The exact file-change shape ``{"path", "base", "before", "after"}`` (+ ``repo``, ``root``)."""
    keys = set(diff)
    if "path" not in keys and keys & DRAFT_KEYS:
        raise InvalidProposal(
            f"{diff_type}: this is a draft ({', '.join(sorted(keys & DRAFT_KEYS))}); a draft is "
            "made exact against a repository first (detect.file_draft), then filed"
        )
    if not FILE_KEYS <= keys <= FILE_KEYS | WHERE_KEYS or (keys & WHERE_KEYS) not in (
        set(),
        WHERE_KEYS,
    ):
        raise InvalidProposal(
            f"{diff_type} diff must have exactly the keys {', '.join(sorted(FILE_KEYS))} "
            f"(and {' and '.join(sorted(WHERE_KEYS))}, or neither); "
            f"got {', '.join(sorted(keys)) or 'none'}"
        )
    if "repo" in diff and not (isinstance(diff["repo"], str) and Path(diff["repo"]).is_absolute()):
        raise InvalidProposal(f"{diff_type}: 'repo' must be the repository's absolute path")
    if "root" in diff and not (
        isinstance(diff["root"], str) and _OBJECT_ID.fullmatch(diff["root"])
    ):
        raise InvalidProposal(f"{diff_type}: 'root' must be a commit id")
    try:
        check_path(diff["path"])
    except GitError as error:
        raise InvalidProposal(f"{diff_type}: 'path': {error}") from error
    base, before, after = diff["base"], diff["before"], diff["after"]
    if base is not None and not (isinstance(base, str) and _OBJECT_ID.fullmatch(base)):
        raise InvalidProposal(f"{diff_type}: 'base' must be a git blob id or null")
    if (base is None) != (before is None) or not isinstance(before, (str, type(None))):
        raise InvalidProposal(f"{diff_type}: 'before' is the text at 'base' (null with it)")
    if not isinstance(after, str):
        raise InvalidProposal(f"{diff_type}: 'after' must be the file's new text")
    if after == before:
        raise InvalidProposal(f"{diff_type}: 'after' is the same as 'before'; nothing changes")
    if diff_type == "allowlist":
        settings_json(after, diff["path"])


def settings_json(text: str | None, path: str) -> dict[str, Any]:
    """A settings file's JSON object; :class:`InvalidProposal` if it is not one."""
    try:
        value = json.loads(text or "")
    except json.JSONDecodeError as error:
        raise InvalidProposal(f"{path} is not valid JSON: {error}") from error
    if not isinstance(value, dict):
        raise InvalidProposal(f"{path} must hold a JSON object")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
