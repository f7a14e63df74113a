"""What a person reads before deciding: a proposal rendered as text.

:func:`render_diff` shows the change itself: a unified diff for a file change,
a readable before and after for a memory entry (read from the store as it is
now, so a person sees what approving would do). :func:`render` adds the
header, the rationale, the evidence, what an applied proposal did, and the
history.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from plugin_sdk.errors import NotFound
from plugin_sdk.proposals.actuate import DESCRIPTIONS_DIR, unified
from plugin_sdk.proposals.filing import Proposal, events
from plugin_sdk.proposals.queue import APPROVABLE, application
from plugin_sdk.store.normalize import normalized_hash

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

EVIDENCE_SHOWN = 10


def render(store: Store, proposal: Proposal) -> str:
    """The whole proposal, as the person deciding on it reads it."""
    lines = [
        f"Proposal {proposal.id}: {proposal.diff_type}, {proposal.status}",
        f"Filed by {proposal.source} at {proposal.created_at}",
        "",
        "Rationale:",
        *_indent(proposal.rationale or "(none)"),
    ]
    if proposal.error:
        lines += ["", f"Failed: {proposal.error}"]
    if proposal.evidence:
        lines += ["", "Evidence:"]
        for memory_id in proposal.evidence[:EVIDENCE_SHOWN]:
            lines.append(f"  [{memory_id}] {_memory_line(store, memory_id)}")
        if len(proposal.evidence) > EVIDENCE_SHOWN:
            lines.append(f"  ... and {len(proposal.evidence) - EVIDENCE_SHOWN} more")
    lines += ["", "Change:", render_diff(store, proposal).rstrip("\n")]
    done = application(store, proposal.id)
    if done is not None:
        lines += ["", _applied(done)]
    lines += ["", "History:"]
    for event in events(store, proposal.id):
        detail = event.detail.get("error") or event.detail.get("reason") or ""
        lines.append(
            f"  {event.at}  {event.event:<8} by {event.actor}" + (f": {detail}" if detail else "")
        )
    return "\n".join(lines) + "\n"


def render_diff(store: Store, proposal: Proposal) -> str:
    """The change: a unified diff, or a memory entry's before and after."""
    diff = proposal.diff
    if proposal.diff_type != "memory_entry":
        if {"path", "after"} <= set(diff):
            text = unified(diff["path"], diff.get("before"), diff["after"])
            where = f" of {diff['repo']}" if diff.get("repo") else ""
            note = (
                f"(on approval: committed on a new branch{where}, with a pull-request "
                f"description in its git directory under {DESCRIPTIONS_DIR}/; "
                f"base blob {diff.get('base') or 'none: a new file'})"
            )
            return text + note + "\n"
        return _raw(diff)
    action = diff.get("action")
    if action == "write":
        lines = [f"Write a memory in {diff.get('category')}:", *_marked("+", diff.get("content"))]
        known = _existing(store, proposal) if proposal.status in APPROVABLE else None
        if known is not None:
            lines.append(
                f"(already known as memory {known['id']}, {known['status']}, seen "
                f"{known['seen_count']} times: approving counts it once more)"
            )
        return "\n".join(lines) + "\n"
    if action == "update":
        current = _get(store, diff.get("id"))
        head = f"Update memory {diff.get('id')}"
        if current is None:
            return (
                f"{head} (no such memory now):\n"
                + "\n".join(_marked("+", diff.get("content")))
                + "\n"
            )
        lines = [f"{head} ({current.category}, {current.status}):"]
        if current.content == diff.get("content"):
            lines += [*_marked(" ", current.content), "(text unchanged: flagged for review)"]
        else:
            lines += [*_marked("-", current.content), *_marked("+", diff.get("content"))]
        return "\n".join(lines) + "\n"
    if action == "merge":
        into = _get(store, diff.get("into"))
        lines = [f"Merge into memory {diff.get('into')} ({diff.get('category')}):"]
        lines.append(f"  keep  [{diff.get('into')}] {_text(into)}")
        for source in diff.get("sources", []):
            lines.append(f"  fold  [{source}] {_text(_get(store, source))}")
        if diff.get("content") and into is not None and diff["content"] != into.content:
            lines += [f"New text for memory {diff.get('into')}:", *_marked("-", into.content)]
            lines += _marked("+", diff["content"])
        return "\n".join(lines) + "\n"
    if action == "review":
        return (
            "A reply to review by hand (nothing to apply: edit it into a write, or reject it):\n"
            + "\n".join(_marked("|", diff.get("reply")))
            + "\n"
        )
    return _raw(diff)


def _applied(done: dict[str, Any]) -> str:
    result = done["result"]
    when = f" (undone at {done['undone_at']})" if done["undone_at"] else ""
    if done["target"] == "git":
        return (
            f"Applied at {done['applied_at']}{when}: branch {result['branch']} at "
            f"{result['commit'][:12]} in {result['repo']} (from {result['base_commit'][:12]}); "
            f"pull-request description: {result['description']}"
        )
    rows = ", ".join(
        f"{c['table']} {c['key'][0] if len(c['key']) == 1 else c['key']} "
        f"({'created' if c['before'] is None else 'deleted' if c['after'] is None else 'changed'})"
        for c in done["undo"]
    )
    return f"Applied at {done['applied_at']}{when}: memory {result.get('memory_id')}; rows: {rows or 'none'}"


def _existing(store: Store, proposal: Proposal) -> dict[str, Any] | None:
    content = proposal.diff.get("content")
    if not isinstance(content, str) or not content.strip():
        return None
    return store.tables.memories.seen_by_hash(
        proposal.project, proposal.diff.get("category"), normalized_hash(content.strip())
    )


def _get(store: Store, memory_id: Any) -> Any:
    if not isinstance(memory_id, int):
        return None
    try:
        return store.memories.get(memory_id)
    except NotFound:
        return None


def _memory_line(store: Store, memory_id: int) -> str:
    memory = _get(store, memory_id)
    if memory is None:
        return "(no such memory)"
    return f"{memory.category}, {memory.status}: {_text(memory)}"


def _text(memory: Any, width: int = 100) -> str:
    if memory is None:
        return "(no such memory)"
    flat = " ".join(memory.content.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def _marked(mark: str, text: Any) -> list[str]:
    return [f"{mark} {line}".rstrip() for line in str(text or "").splitlines() or [""]]


def _indent(text: str) -> list[str]:
    return [f"  {line}".rstrip() for line in text.splitlines()]


def _raw(diff: dict[str, Any]) -> str:
    return json.dumps(diff, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
