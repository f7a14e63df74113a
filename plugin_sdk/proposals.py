"""Proposals: changes that wait for a person's approval.

The dreamer never rewrites an intent memory on its own; it files a proposal
here instead. An identical pending proposal (same project, type and diff) is
not filed twice. Approving and applying proposals is the approval queue's job.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from .store import Store


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
    """File a pending proposal; None if an identical one is already pending."""
    canonical = json.dumps(diff, sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    now = store.now()
    with store.atomic():
        cursor = store.db.execute(
            """INSERT INTO proposals (project, diff_type, rationale, evidence, diff, diff_hash,
                   source, created_at, updated_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT DO NOTHING""",
            [
                project or store.project,
                diff_type,
                rationale,
                json.dumps(sorted(evidence)),
                canonical,
                digest,
                source,
                now,
                now,
            ],
        )
    return cursor.lastrowid if cursor.rowcount else None


def pending(store: Store, *, project: str | None = None) -> list[Proposal]:
    """Pending proposals of a project, oldest first."""
    rows = store.db.query(
        "SELECT * FROM proposals WHERE project = ? AND status = 'pending' ORDER BY id",
        [project or store.project],
    )
    return [
        Proposal(
            id=row["id"],
            project=row["project"],
            diff_type=row["diff_type"],
            status=row["status"],
            rationale=row["rationale"],
            evidence=json.loads(row["evidence"]),
            diff=json.loads(row["diff"]),
            source=row["source"],
            created_at=row["created_at"],
        )
        for row in rows
    ]
