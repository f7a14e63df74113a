"""Proposals: changes that wait for a person's approval.

The dreamer never rewrites an intent memory on its own, and detectors
(``detect_patterns``) never change anything: they file a proposal here. An
identical pending proposal (same project, type and diff) is not filed twice.
Approving, rejecting, editing and undoing are the approval queue's job
(``queue.py``); its history is in ``proposal_events``.

``diff_type`` is one of ``diffs.DIFF_TYPES``; the diff shapes each one takes are
checked by ``diffs.py`` and described in ``docs/queue.md``.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import InvalidProposal, NotFound
from plugin_sdk.proposals.diffs import check_proposal
from plugin_sdk.store.limits import check_id

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

STATUSES = ("pending", "approved", "rejected", "applied", "failed", "undone")


@attrs.frozen
class Proposal:
    id: int
    project: str
    diff_type: str
    status: str
    rationale: str
    evidence: list[int]
    diff: dict[str, Any]
    source: str
    created_at: str
    updated_at: str = ""
    error: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Proposal:
        return cls(
            id=row["id"],
            project=row["project"],
            diff_type=row["diff_type"],
            status=row["status"],
            rationale=row["rationale"],
            evidence=json.loads(row["evidence"]),
            diff=json.loads(row["diff"]),
            source=row["source"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            error=row.get("error"),
        )

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class ProposalDraft:
    """A proposal a detector suggests (returned by ``detect_patterns``).

    ``diff`` is a diff of ``diff_type``'s shape; for the file types it may also
    be a draft shape (a note, a skill, allowlist entries) that the queue turns
    into an exact change against the target repository when it files it.
    ``source`` names the detector.
    """

    diff_type: str
    rationale: str
    evidence: list[int]
    diff: dict[str, Any]
    source: str = "detector"


@attrs.frozen
class Event:
    """One row of a proposal's history."""

    id: int
    proposal_id: int
    event: str
    actor: str
    detail: dict[str, Any]
    at: str

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def canonical(diff: dict[str, Any]) -> str:
    """The diff as canonical JSON (sorted keys): what is stored and hashed."""
    return json.dumps(diff, sort_keys=True, ensure_ascii=False)


def diff_hash(diff: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(diff).encode("utf-8")).hexdigest()


def propose(
    store: Store,
    *,
    diff_type: str,
    rationale: str,
    evidence: list[int],
    diff: dict[str, Any],
    source: str,
    project: str | None = None,
) -> int | None:
    """File a pending proposal; None if an identical one is already pending.

    The diff must be exact and well formed for its type (a known action and its
    fields, a memory entry's category active in the store, a file change, not a
    draft) and the evidence a list of memory ids: :class:`InvalidProposal`
    names the field otherwise (``diffs.py``).
    """
    check_proposal(store, diff_type, diff, evidence, project=project)
    for name, value in (("rationale", rationale), ("source", source)):
        if not isinstance(value, str):
            raise InvalidProposal(f"'{name}' must be a text, not {type(value).__name__}")
    with store.atomic():
        proposal_id = store.tables.proposals.insert(
            project=project or store.project,
            diff_type=diff_type,
            rationale=rationale,
            evidence=json.dumps(sorted(evidence)),
            diff=canonical(diff),
            digest=diff_hash(diff),
            source=source,
        )
        if proposal_id is None:
            return None
        record_event(store, proposal_id, "filed", source, {})
    return proposal_id


def pending(store: Store, *, project: str | None = None) -> list[Proposal]:
    """Pending proposals of a project, oldest first."""
    return list_proposals(store, project=project, status="pending")


def list_proposals(
    store: Store, *, project: str | None = None, status: str | None = None
) -> list[Proposal]:
    """Proposals of a project with one status (``None``: every status), oldest first."""
    if status is not None and status not in STATUSES:
        raise InvalidProposal(f"unknown status {status!r}; statuses are {', '.join(STATUSES)}")
    rows = store.tables.proposals.of_project(project or store.project, status)
    return [Proposal.from_row(row) for row in rows]


def get(store: Store, proposal_id: int) -> Proposal:
    """One proposal of the store's project by id; :class:`NotFound` if there is none.

    Another project's proposal is not found either (projects are walls).
    """
    check_id(proposal_id, "proposal")
    row = store.tables.proposals.by_id(proposal_id, store.project)
    if row is None:
        raise NotFound(f"no proposal with id {proposal_id} in project {store.project!r}")
    return Proposal.from_row(row)


def record_event(
    store: Store, proposal_id: int, event: str, actor: str, detail: dict[str, Any]
) -> int:
    """Add one row to a proposal's history (call inside the change's transaction); its id."""
    return store.tables.proposals.add_event(proposal_id, event, actor, canonical(detail))


def events(store: Store, proposal_id: int) -> list[Event]:
    """A proposal's history, oldest first."""
    return [
        Event(
            id=row["id"],
            proposal_id=row["proposal_id"],
            event=row["event"],
            actor=row["actor"],
            detail=json.loads(row["detail"]),
            at=row["at"],
        )
        for row in store.tables.proposals.events(proposal_id)
    ]
