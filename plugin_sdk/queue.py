"""The approval queue: nothing a proposal describes happens until a person approves it.

Lifecycle (``proposals.status``)::

    pending --approve--> applied            (memory_entry: one transaction)
    pending --approve--> approved --> applied | failed   (file changes: git, then the store)
    pending --reject---> rejected
    pending --edit-----> pending            (a new diff or rationale; history keeps the old)
    applied --undo-----> undone
    failed  --approve--> ...                (try again, e.g. after deleting a branch)
    failed  --reject---> rejected

Every step is recorded in ``proposal_events`` (who, when, what). An apply that
fails marks the proposal ``failed`` with the reason, keeps nothing of the change
(the store write is rolled back; no branch or ref is left), and raises
:class:`~plugin_sdk.actuate.ApplyFailed`. A wrong id raises
:class:`~plugin_sdk.errors.NotFound`; a step the status does not allow raises
:class:`WrongStatus` and changes nothing.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

from . import actuate
from .errors import MemsdkError, UnknownCategory
from .gitapply import GitError, Repo
from .proposals import (
    InvalidProposal,
    Proposal,
    canonical,
    diff_hash,
    events,
    get,
    record_event,
)
from .undo import RowChange, UndoRefused, record, revert

if TYPE_CHECKING:
    from .store import Store

APPROVABLE = ("pending", "approved", "failed")
REJECTABLE = ("pending", "approved", "failed")


class QueueError(MemsdkError, ValueError):
    """A queue step that cannot be done as asked."""


class WrongStatus(QueueError):
    """The proposal's status does not allow this step."""


def approve(
    store: Store, proposal_id: int, *, target: actuate.Target | None = None, actor: str = "user"
) -> Proposal:
    """Approve a proposal and apply it; the applied proposal, or :class:`ApplyFailed`."""
    proposal = _expect(store, proposal_id, APPROVABLE, "approved")
    _check(store, proposal)
    if proposal.diff_type == "memory_entry" and proposal.diff["action"] == "review":
        raise QueueError(
            f"proposal {proposal_id} asks for a review and has nothing to apply: edit it into "
            "a write (memsdk queue edit ID --category NAME --content TEXT) or reject it"
        )
    if proposal.diff_type == "memory_entry":
        return _apply_memory(store, proposal, actor)
    return _apply_file(store, proposal, target or actuate.Target(), actor)


def reject(store: Store, proposal_id: int, *, actor: str = "user", reason: str = "") -> Proposal:
    """Reject a proposal: its status changes, nothing else does."""
    proposal = _expect(store, proposal_id, REJECTABLE, "rejected")
    with store.atomic():
        _set_status(store, proposal.id, "rejected")
        record_event(store, proposal.id, "rejected", actor, {"reason": reason} if reason else {})
    return get(store, proposal_id)


def edit(
    store: Store,
    proposal_id: int,
    *,
    diff: dict[str, Any] | None = None,
    rationale: str | None = None,
    actor: str = "user",
) -> Proposal:
    """Change a pending proposal's diff or rationale; the history keeps the old ones.

    A file change keeps its path and base: an edit changes what the file
    becomes (``after``), not which file or which version it starts from.
    """
    proposal = _expect(store, proposal_id, ("pending",), "edited")
    new_diff = proposal.diff if diff is None else diff
    new_rationale = proposal.rationale if rationale is None else rationale
    if proposal.diff_type != "memory_entry" and diff is not None:
        moved = [k for k in ("path", "base", "before") if diff.get(k) != proposal.diff.get(k)]
        if moved:
            raise QueueError(
                f"proposal {proposal_id}: an edit may change 'after' only, not {', '.join(moved)}"
            )
    actuate.check_diff(proposal.diff_type, new_diff)
    category = new_diff.get("category") if proposal.diff_type == "memory_entry" else None
    if category is not None and category not in store.category_names():
        raise UnknownCategory(
            new_diff["category"], store.category_names(), where=f"proposal {proposal_id}"
        )
    if (new_diff, new_rationale) == (proposal.diff, proposal.rationale):
        return proposal
    digest = diff_hash(new_diff)
    twin = store.db.execute(
        """SELECT id FROM proposals WHERE project = ? AND diff_type = ? AND diff_hash = ?
           AND status = 'pending' AND id != ?""",
        [proposal.project, proposal.diff_type, digest, proposal.id],
    ).fetchone()
    if twin:
        raise QueueError(f"proposal {twin[0]} already proposes exactly this; nothing was changed")
    with store.atomic():
        store.db.execute(
            "UPDATE proposals SET diff = ?, diff_hash = ?, rationale = ?, updated_at = ? WHERE id = ?",
            [canonical(new_diff), digest, new_rationale, store.now(), proposal.id],
        )
        record_event(
            store,
            proposal.id,
            "edited",
            actor,
            {
                "before": {"diff": proposal.diff, "rationale": proposal.rationale},
                "after": {"diff": new_diff, "rationale": new_rationale},
            },
        )
    return get(store, proposal_id)


def undo(store: Store, proposal_id: int, *, actor: str = "user") -> Proposal:
    """Undo an applied proposal: the store rows back as they were, or the branch deleted.

    Refused (:class:`~plugin_sdk.undo.UndoRefused`, nothing changed) when a row
    it wrote has changed since, or when the branch no longer points at the
    proposal's commit.
    """
    _expect(store, proposal_id, ("applied",), "undone")
    done_before = application(store, proposal_id)
    if done_before is None:
        raise QueueError(f"proposal {proposal_id} has no record of what it applied")
    if done_before["target"] == "git":
        git = done_before["undo"]
        try:
            Repo(git["repo"]).delete_branch(git["branch"], git["commit"])
        except GitError as error:
            raise UndoRefused(
                f"branch {git['branch']} in {git['repo']} no longer points at the proposal's "
                f"commit {git['commit'][:12]} (pushed and merged, moved or deleted?); "
                "undo it in git"
            ) from error
    with store.atomic():
        if done_before["target"] == "store":
            revert(store, [RowChange.from_dict(c) for c in done_before["undo"]])
        store.db.execute(
            "UPDATE proposal_applications SET undone_at = ? WHERE proposal_id = ?",
            [store.now(), proposal_id],
        )
        _set_status(store, proposal_id, "undone")
        record_event(store, proposal_id, "undone", actor, {})
    return get(store, proposal_id)


def application(store: Store, proposal_id: int) -> dict[str, Any] | None:
    """What an applied proposal did (``target``, ``result``, ``undo``), or None."""
    rows = list(
        store.db.query("SELECT * FROM proposal_applications WHERE proposal_id = ?", [proposal_id])
    )
    if not rows:
        return None
    row = rows[0]
    return {
        "target": row["target"],
        "result": json.loads(row["result"]),
        "undo": json.loads(row["undo"]),
        "applied_at": row["applied_at"],
        "undone_at": row["undone_at"],
    }


def history(store: Store, proposal_id: int) -> list[dict[str, Any]]:
    get(store, proposal_id)
    return [event.to_dict() for event in events(store, proposal_id)]


# Steps


def _apply_memory(store: Store, proposal: Proposal, actor: str) -> Proposal:
    try:
        with store.atomic():
            _set_status(store, proposal.id, "approved")
            record_event(store, proposal.id, "approved", actor, {})
            with record(store) as changes:
                result = actuate.apply_memory(store, proposal)
            _applied(store, proposal, actor, "store", result, [c.to_dict() for c in changes])
    except (MemsdkError, sqlite3.IntegrityError) as error:
        _failed(store, proposal, actor, str(error), approved=True)
        raise actuate.ApplyFailed(f"proposal {proposal.id} failed: {error}") from error
    return get(store, proposal.id)


def _apply_file(store: Store, proposal: Proposal, target: actuate.Target, actor: str) -> Proposal:
    with store.atomic():
        _set_status(store, proposal.id, "approved")
        record_event(store, proposal.id, "approved", actor, {})
    rendered = actuate.unified(
        proposal.diff["path"], proposal.diff["before"], proposal.diff["after"]
    )
    try:
        result = actuate.apply_file(proposal, target, actor=actor, rendered=rendered)
    except MemsdkError as error:
        _failed(store, proposal, actor, str(error), approved=False)
        raise actuate.ApplyFailed(f"proposal {proposal.id} failed: {error}") from error
    try:
        with store.atomic():
            undo_git = {k: result[k] for k in ("repo", "branch", "commit")}
            _applied(store, proposal, actor, "git", result, undo_git)
    except BaseException:
        # the store did not take it: the branch must not outlive the record
        Repo(result["repo"]).delete_branch(result["branch"], result["commit"])
        raise
    return get(store, proposal.id)


def _applied(
    store: Store, proposal: Proposal, actor: str, target: str, result: dict[str, Any], redo: Any
) -> None:
    now = store.now()
    store.db.execute(
        """INSERT INTO proposal_applications (proposal_id, target, result, undo, applied_at)
           VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (proposal_id) DO UPDATE SET target = excluded.target,
               result = excluded.result, undo = excluded.undo,
               applied_at = excluded.applied_at, undone_at = NULL""",
        [proposal.id, target, canonical(result), json.dumps(redo), now],
    )
    _set_status(store, proposal.id, "applied")
    record_event(store, proposal.id, "applied", actor, result)


def _failed(store: Store, proposal: Proposal, actor: str, reason: str, *, approved: bool) -> None:
    with store.atomic():
        if approved:
            record_event(store, proposal.id, "approved", actor, {})
        # a concurrent approval that won (its branch exists, its record is there) stays applied
        if get(store, proposal.id).status != "applied":
            _set_status(store, proposal.id, "failed", error=reason)
        record_event(store, proposal.id, "failed", actor, {"error": reason})


def _set_status(store: Store, proposal_id: int, status: str, *, error: str | None = None) -> None:
    store.db.execute(
        "UPDATE proposals SET status = ?, error = ?, updated_at = ? WHERE id = ?",
        [status, error, store.now(), proposal_id],
    )


def _expect(store: Store, proposal_id: int, statuses: tuple[str, ...], step: str) -> Proposal:
    proposal = get(store, proposal_id)
    if proposal.status not in statuses:
        allowed = " or ".join(
            [", ".join(statuses[:-1]), statuses[-1]] if statuses[:-1] else statuses
        )
        raise WrongStatus(
            f"proposal {proposal_id} is {proposal.status}; only {allowed} proposals can be {step}"
        )
    return proposal


def _check(store: Store, proposal: Proposal) -> None:
    try:
        actuate.check_diff(proposal.diff_type, proposal.diff)
    except InvalidProposal as error:
        raise QueueError(f"proposal {proposal.id} cannot be applied: {error}") from error
