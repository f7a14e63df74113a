"""The approval queue: nothing a proposal describes happens until a person approves it.

Lifecycle (``proposals.status``)::

    pending --approve--> applied            (memory_entry: one transaction)
    pending --approve--> approved --> applied | failed   (file changes: git, then the store)
    pending --reject---> rejected
    pending --edit-----> pending            (a new diff or rationale; history keeps the old)
    applied --undo-----> undone
    failed  --approve--> ...                (try again, e.g. after deleting a branch)
    failed  --reject---> rejected

Every step claims the proposal inside its transaction (a conditional
``UPDATE`` on its status), so two steps at once cannot both happen: the loser
gets :class:`WrongStatus` and changes nothing. ``approved`` is the claim of a
file change being committed; another approval may take it over only when it is
older than :data:`APPLY_LEASE` (the first was interrupted).

Every step is recorded in ``proposal_events`` (who, when, what). An apply that
fails marks the proposal ``failed`` with the reason, keeps nothing of the change
(the store write is rolled back; no branch or ref is left), and raises
:class:`~plugin_sdk.errors.ApplyFailed`. A wrong id raises
:class:`~plugin_sdk.errors.NotFound`.
"""

from __future__ import annotations

import json
from datetime import timedelta, timezone
from typing import TYPE_CHECKING, Any

from plugin_sdk.errors import (
    ApplyFailed,
    GitError,
    InvalidProposal,
    MemsdkError,
    QueueError,
    UndoRefused,
    WrongStatus,
)
from plugin_sdk.proposals import actuate
from plugin_sdk.proposals.diffs import check_diff, check_proposal
from plugin_sdk.proposals.filing import (
    Proposal,
    canonical,
    diff_hash,
    events,
    get,
    record_event,
)
from plugin_sdk.proposals.gitapply import Repo
from plugin_sdk.proposals.target import Target
from plugin_sdk.proposals.undo import RowChange, record, revert
from plugin_sdk.redact import redact
from plugin_sdk.store import driver

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

APPROVABLE = ("pending", "approved", "failed")
REJECTABLE = ("pending", "approved", "failed")
APPLY_LEASE = timedelta(minutes=10)  # an approval still 'approved' after this was interrupted


def approve(
    store: Store, proposal_id: int, *, target: Target | None = None, actor: str = "user"
) -> Proposal:
    """Approve a proposal and apply it; the applied proposal, or :class:`ApplyFailed`.

    Of two approvals at once, one applies and the other gets :class:`WrongStatus`.
    """
    proposal = get(store, proposal_id)
    _check(store, proposal)
    if proposal.diff_type == "memory_entry" and proposal.diff["action"] == "review":
        raise QueueError(
            f"proposal {proposal_id} asks for a review and has nothing to apply: edit it into "
            "a write (memsdk queue edit ID --category NAME --content TEXT) or reject it"
        )
    if proposal.diff_type == "memory_entry":
        return _apply_memory(store, proposal_id, actor)
    return _apply_file(store, proposal_id, target or Target(), actor)


def reject(store: Store, proposal_id: int, *, actor: str = "user", reason: str = "") -> Proposal:
    """Reject a proposal: its status changes, nothing else does."""
    with store.atomic():
        _claim(store, proposal_id, REJECTABLE, "rejected", "rejected")
        record_event(store, proposal_id, "rejected", actor, {"reason": reason} if reason else {})
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
    with store.atomic():
        _claim(store, proposal_id, ("pending",), None, "edited")
        proposal = get(store, proposal_id)
        new_diff = proposal.diff if diff is None else diff
        new_rationale = proposal.rationale if rationale is None else rationale
        if proposal.diff_type != "memory_entry" and diff is not None:
            moved = [
                k
                for k in ("path", "base", "before", "repo", "root")
                if diff.get(k) != proposal.diff.get(k)
            ]
            if moved:
                raise QueueError(
                    f"proposal {proposal_id}: an edit may change 'after' only, "
                    f"not {', '.join(moved)}"
                )
        check_proposal(store, proposal.diff_type, new_diff, project=proposal.project)
        if (new_diff, new_rationale) == (proposal.diff, proposal.rationale):
            return proposal
        digest = diff_hash(new_diff)
        rows = store.tables.proposals
        twin = rows.pending_twin(proposal.project, proposal.diff_type, digest, proposal.id)
        if twin is not None:
            raise QueueError(f"proposal {twin} already proposes exactly this; nothing was changed")
        rows.set_diff(proposal.id, canonical(new_diff), digest, new_rationale)
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

    Refused (:class:`~plugin_sdk.errors.UndoRefused`, nothing changed) when a row
    it wrote has changed since, or when the branch no longer points at the
    proposal's commit. The store is marked undone first and the branch deleted
    after; if git refuses then, the store is put back (the proposal stays applied).
    """
    with store.atomic():
        _claim(store, proposal_id, ("applied",), "undone", "undone")
        done = application(store, proposal_id)
        if done is None or done["undone_at"] is not None:
            raise QueueError(f"proposal {proposal_id} has no record of what it applied")
        if done["target"] == "store":
            revert(store, [RowChange.from_dict(c) for c in done["undo"]])
        else:
            _branch_unmoved(done["undo"])
        store.tables.proposals.mark_undone(proposal_id)
        undone = record_event(store, proposal_id, "undone", actor, {})
    if done["target"] == "git":
        git = done["undo"]
        try:
            actuate.discard(git)
        except GitError as error:
            with store.atomic():  # the undo did not happen: the proposal stays applied
                _set_status(store, proposal_id, "applied")
                store.tables.proposals.unmark_undone(proposal_id)
                store.tables.proposals.delete_event(undone)
            raise _moved(git) from error
    return get(store, proposal_id)


def application(store: Store, proposal_id: int) -> dict[str, Any] | None:
    """What an applied proposal did (``target``, ``result``, ``undo``), or None."""
    row = store.tables.proposals.application(proposal_id)
    if row is None:
        return None
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


def _apply_memory(store: Store, proposal_id: int, actor: str) -> Proposal:
    claimed = False
    try:
        with store.atomic():
            proposal, _ = _claim_approval(store, proposal_id, actor)
            claimed = True
            with record(store) as changes:
                result = actuate.apply_memory(store, proposal)
            undo_rows = [c.to_dict() for c in changes]
            _applied(store, proposal_id, None, actor, "store", result, undo_rows)
    except (MemsdkError, driver.IntegrityError) as error:
        if not claimed:
            raise
        _failed(store, proposal_id, None, actor, str(error))
        raise ApplyFailed(redact(f"proposal {proposal_id} failed: {error}")) from error
    return get(store, proposal_id)


def _apply_file(store: Store, proposal_id: int, target: Target, actor: str) -> Proposal:
    with store.atomic():
        proposal, claim = _claim_approval(store, proposal_id, actor)
    rendered = actuate.unified(
        proposal.diff["path"], proposal.diff["before"], proposal.diff["after"]
    )
    try:
        result = actuate.apply_file(proposal, target, actor=actor, rendered=rendered)
    except MemsdkError as error:
        _failed(store, proposal_id, claim, actor, str(error))
        raise ApplyFailed(redact(f"proposal {proposal_id} failed: {error}")) from error
    try:
        with store.atomic():
            undo_git = {k: result[k] for k in ("repo", "branch", "commit", "description")}
            _applied(store, proposal_id, claim, actor, "git", result, undo_git)
    except BaseException:
        # the store did not take it: the branch must not outlive the record
        actuate.discard(result)
        raise
    return get(store, proposal_id)


def _claim_approval(store: Store, proposal_id: int, actor: str) -> tuple[Proposal, int]:
    """Take the proposal for this approval (inside a transaction): it, and the claim's id.

    ``pending`` and ``failed`` proposals can be taken; an ``approved`` one only
    when the approval holding it started more than :data:`APPLY_LEASE` ago.
    """
    stale = (store.clock() - APPLY_LEASE).astimezone(timezone.utc).isoformat("T", "microseconds")
    if not store.tables.proposals.claim_approval(proposal_id, stale):
        raise _refusal(store, proposal_id, APPROVABLE, "approved")
    claim = record_event(store, proposal_id, "approved", actor, {})
    return get(store, proposal_id), claim


def _applied(
    store: Store,
    proposal_id: int,
    claim: int | None,
    actor: str,
    target: str,
    result: dict[str, Any],
    redo: Any,
) -> None:
    """Record an application (inside the apply's transaction); refuses a second live one.

    ``claim``: the ``approved`` event of an approval that committed its claim
    before applying (a file change); it must still hold the proposal.
    """
    if claim is not None and not _settle(store, proposal_id, claim, "applied"):
        raise QueueError(
            f"proposal {proposal_id} is {get(store, proposal_id).status}: another step took it "
            "while this approval was applying it; this approval's change was discarded"
        )
    added = store.tables.proposals.add_application(
        proposal_id, target, canonical(result), json.dumps(redo)
    )
    if not added:
        raise QueueError(f"proposal {proposal_id} is applied already; it is not applied twice")
    _set_status(store, proposal_id, "applied")
    record_event(store, proposal_id, "applied", actor, result)


def _failed(store: Store, proposal_id: int, claim: int | None, actor: str, reason: str) -> None:
    """Mark a failed apply; ``claim`` None: the approval was rolled back with the change."""
    reason = redact(reason)
    with store.atomic():
        if claim is None:
            store.tables.proposals.fail(proposal_id, reason)
            record_event(store, proposal_id, "approved", actor, {})
        else:  # a step that took the proposal meanwhile (a rejection, say) keeps it
            _settle(store, proposal_id, claim, "failed", error=reason)
        record_event(store, proposal_id, "failed", actor, {"error": reason})


def _settle(
    store: Store, proposal_id: int, claim: int, status: str, *, error: str | None = None
) -> bool:
    """Set the status if the approval ``claim`` still holds the proposal; whether it did."""
    return store.tables.proposals.settle(proposal_id, claim, status, error=error)


def _claim(
    store: Store, proposal_id: int, statuses: tuple[str, ...], status: str | None, step: str
) -> None:
    """Take the proposal for a step (inside its transaction) if its status allows it.

    ``status`` None keeps the status (the claim only checks it and takes the
    write lock); otherwise it is set. :class:`WrongStatus` (or NotFound) if not.
    """
    if not store.tables.proposals.claim(proposal_id, statuses, status):
        raise _refusal(store, proposal_id, statuses, step)


def _refusal(store: Store, proposal_id: int, statuses: tuple[str, ...], step: str) -> WrongStatus:
    proposal = get(store, proposal_id)  # NotFound for a wrong id
    if proposal.status == "approved" and "approved" in statuses:
        return WrongStatus(
            f"proposal {proposal_id} is approved: another approval has been applying it since "
            f"{proposal.updated_at}; if that one was interrupted, it can be {step} again "
            f"{int(APPLY_LEASE.total_seconds() // 60)} minutes after that"
        )
    allowed = " or ".join([", ".join(statuses[:-1]), statuses[-1]] if statuses[:-1] else statuses)
    return WrongStatus(
        f"proposal {proposal_id} is {proposal.status}; only {allowed} proposals can be {step}"
    )


def _set_status(store: Store, proposal_id: int, status: str, *, error: str | None = None) -> None:
    store.tables.proposals.set_status(proposal_id, status, error=error)


def _branch_unmoved(git: dict[str, Any]) -> None:
    """Refuse (UndoRefused) unless the proposal's branch still points at its commit."""
    try:
        now = Repo(git["repo"]).commit(f"refs/heads/{git['branch']}")
    except GitError as error:
        raise UndoRefused(f"cannot open {git['repo']}: {error}; nothing was undone") from error
    if now != git["commit"]:
        raise _moved(git)


def _moved(git: dict[str, Any]) -> UndoRefused:
    return UndoRefused(
        f"branch {git['branch']} in {git['repo']} no longer points at the proposal's "
        f"commit {git['commit'][:12]} (pushed and merged, moved or deleted?); undo it in git"
    )


def _check(store: Store, proposal: Proposal) -> None:
    try:
        check_diff(proposal.diff_type, proposal.diff)
    except InvalidProposal as error:
        raise QueueError(f"proposal {proposal.id} cannot be applied: {error}") from error
