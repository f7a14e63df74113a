"""Detectors find recurring patterns and file them as proposals.

:func:`run_detectors` fires the ``detect_patterns`` hook for a project and
files every draft it returns (``memsdk queue detect`` runs it). File drafts
are made exact against the target repository first (``drafts.resolve``). A
draft is not filed when an identical proposal is pending (the queue files it
once), when a person already rejected or applied the same change, or when
the target already has what it asks for; the report says which and why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import InvalidProposal, MemsdkError
from plugin_sdk.proposals.diffs import check_diff_type
from plugin_sdk.proposals.drafts import resolve
from plugin_sdk.proposals.filing import ProposalDraft, diff_hash, propose
from plugin_sdk.proposals.target import Target

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


@attrs.define
class DetectReport:
    """What a detection run filed, found already pending, and left out (with why)."""

    filed: list[int] = attrs.Factory(list)
    already_pending: int = 0
    skipped: list[dict[str, Any]] = attrs.Factory(list)

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def run_detectors(
    store: Store, *, project: str | None = None, target: Target | None = None
) -> DetectReport:
    """Ask every detector for drafts and file them; see the module docstring."""
    project = project or store.project
    report = DetectReport()
    for drafts in store.plugins.hook.detect_patterns(store=store, project=project):
        for draft in drafts or ():
            if not isinstance(draft, ProposalDraft):
                raise InvalidProposal(
                    f"detect_patterns returned a {type(draft).__name__}, not a ProposalDraft"
                )
            try:
                outcome = file_draft(store, draft, project=project, target=target)
            except MemsdkError as error:  # one bad draft does not stop the others
                report.skipped.append(_skip(draft, str(error)))
                continue
            if outcome.proposal_id is not None:
                report.filed.append(outcome.proposal_id)
            elif outcome.already_pending:
                report.already_pending += 1
            else:
                report.skipped.append(_skip(draft, outcome.reason))
    return report


@attrs.frozen
class Filed:
    """What :func:`file_draft` did: the new proposal's id, or why there is none."""

    proposal_id: int | None
    already_pending: bool = False
    reason: str = ""


def file_draft(
    store: Store, draft: ProposalDraft, *, project: str | None = None, target: Target | None = None
) -> Filed:
    """File one draft (file drafts made exact against ``target`` first)."""
    check_diff_type(draft.diff_type)
    diff = resolve(draft.diff_type, draft.diff, target or Target())
    if diff is None:
        return Filed(None, reason="the target already has it")
    project = project or store.project
    decided = store.tables.proposals.decided(project, draft.diff_type, diff_hash(diff))
    if decided:
        return Filed(None, reason=f"proposal {decided[0]} with the same change was {decided[1]}")
    proposal_id = propose(
        store,
        diff_type=draft.diff_type,
        rationale=draft.rationale,
        evidence=list(draft.evidence),
        diff=diff,
        source=draft.source,
        project=project,
    )
    return Filed(proposal_id, already_pending=proposal_id is None)


def _skip(draft: ProposalDraft, reason: str) -> dict[str, Any]:
    return {"source": draft.source, "diff_type": draft.diff_type, "reason": reason}
