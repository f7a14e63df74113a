"""Which records of a Claude Code session are on the conversation as it stands.

Every record Claude Code writes has a ``uuid`` and names the record before it
in ``parentUuid``. When the user rewinds (edits an earlier prompt, or
restores a checkpoint), the new turns hang off an earlier record and the
abandoned ones stay in the file: the conversation as it stands is the chain
that ends at the file's last record, walked back through ``parentUuid``.
After a compaction the first record of the new segment has no parent but
names the record before it in ``logicalParentUuid``; the walk follows it.

Each thread is walked on its own: the main conversation, and each sub-agent
conversation (``isSidechain``, told apart by ``agentId``, or by the record a
sub-agent conversation starts from in files written before ``agentId``
existed). A sub-agent's chain ends where it reaches a record of another
thread.

A parent that is not in the file (a record lost, a file cut) does not cut the
conversation short: the walk goes on from the thread's record before it in
the file, and the gap is counted.

Records without a ``uuid`` (old files, bookkeeping records) are not judged
here: :func:`kept_records` returns ``None`` for a file with no uuids at all.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from plugin_sdk.transcripts.model import ImportReport


def kept_records(records: Sequence[dict[str, Any] | None], report: ImportReport) -> set[int] | None:
    """The indexes of ``records`` on a kept branch; ``None`` when no record has a uuid.

    ``records`` are the file's records in order (``None`` for a line that is
    not a record). A record without a uuid is in the result whenever any is.
    """
    index: dict[str, int] = {}
    for number, record in enumerate(records):
        uuid = _uuid(record, "uuid")
        if uuid is not None:
            index.setdefault(uuid, number)
    if not index:
        return None
    kept = {n for n, record in enumerate(records) if _uuid(record, "uuid") is None}
    threads: dict[str, list[int]] = {}
    starts: dict[int, str] = {}
    for number, record in enumerate(records):
        if _uuid(record, "uuid") is not None:
            threads.setdefault(_thread(records, index, number, starts), []).append(number)
    for members in threads.values():
        kept |= _walk(records, index, set(members), members, report)
    return kept


def _walk(
    records: Sequence[dict[str, Any] | None],
    index: dict[str, int],
    members: set[int],
    order: list[int],
    report: ImportReport,
) -> set[int]:
    """The chain from the thread's last record back to its first."""
    chain: set[int] = set()
    number: int | None = order[-1]
    while number is not None and number not in chain:
        chain.add(number)
        record = records[number] or {}
        parent = _uuid(record, "parentUuid") or _uuid(record, "logicalParentUuid")
        if parent is None:
            number = None
        elif parent in index:
            number = index[parent] if index[parent] in members else None
        else:
            report.skip("parentUuid not in the file (followed the file's order)")
            at = bisect.bisect_left(order, number)
            number = order[at - 1] if at > 0 else None
    return chain


def _thread(
    records: Sequence[dict[str, Any] | None],
    index: dict[str, int],
    number: int,
    starts: dict[int, str],
) -> str:
    record = records[number] or {}
    if not record.get("isSidechain"):
        return "main"
    agent = record.get("agentId")
    if isinstance(agent, str) and agent:
        return f"agent {agent}"
    # An older file: a sub-agent conversation is named by the record it starts from.
    path = [number]
    while True:
        if path[-1] in starts:
            name = starts[path[-1]]
            break
        parent = _uuid(records[path[-1]], "parentUuid")
        above = index.get(parent) if parent is not None else None
        if above is None or above in path or not (records[above] or {}).get("isSidechain"):
            name = f"sidechain from {parent}"
            break
        path.append(above)
    for step in path:
        starts[step] = name
    return name


def _uuid(record: dict[str, Any] | None, field: str) -> str | None:
    value = record.get(field) if isinstance(record, dict) else None
    return value if isinstance(value, str) and value else None
