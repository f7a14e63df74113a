"""Values in memory text, and the conflicts of near-duplicates whose values differ.

Two memories that read alike but carry different values ("max_connections =
400" and "max_connections = 600") are not duplicates: they disagree. The
dreamer's curate task never merges them; it records a **memory conflict**, the
memory counterpart of the Retain Job's fact conflicts (``job.py``): both
memories are kept, and the conflict stays open until a person resolves or
dismisses it (``memsdk triage conflicts``).

:func:`values` reads what counts as a value, conservatively (a value missed
is a merge that loses it): every token with a digit (numbers, versions, dates,
times, sizes, ports, IP addresses, ids such as ``db-2``), host and dotted
names (``db.internal.example``), URLs and paths, ``key=value`` right-hand
sides, quoted or back-ticked text, and the text's polarity (``polarity.py``:
``enabled`` against ``disabled``, ``may`` against ``may not``, counted).
Values compare after case folding and without trailing punctuation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import NotFound, WrongStatus
from plugin_sdk.retain.polarity import marks

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

_QUOTED = re.compile(r"\"([^\"]+)\"|'([^'\s][^']*)'|`([^`]+)`")
_ASSIGNED = re.compile(r"[\w.-]+(?:\s*=\s*|:\s+)([^\s,;]+)")
_TOKEN = re.compile(r"[^\s,;()\[\]{}<>\"'`]+")
_DIGIT = re.compile(r"\d")
_DOTTED = re.compile(r"^[\w-]+(\.[\w-]+)+$")
_TRAILING = re.compile(r"[.,;:!?)\]]+$")


def values(text: str, *, polarity: bool = True) -> frozenset[str]:
    """The values a text carries (see the module docstring); ``polarity=False``: without marks."""
    found: set[str] = set()
    for match in _QUOTED.finditer(text):
        found.add(_clean(next(group for group in match.groups() if group)))
    for match in _ASSIGNED.finditer(text):
        found.add(_clean(match.group(1)))
    for token in _TOKEN.findall(text):
        token = _clean(token)
        if _DIGIT.search(token) or _DOTTED.match(token) or "/" in token:
            found.add(token)
    found = {value for value in found if value}
    return frozenset(found | marks(text) if polarity else found)


def differ(texts: Iterable[str]) -> bool:
    """Whether the texts do not all carry the same values."""
    return len({values(text) for text in texts}) > 1


def _clean(value: str) -> str:
    return _TRAILING.sub("", value.strip().casefold())


@attrs.frozen
class MemoryConflict:
    id: int
    project: str
    memory_id: int
    other_memory_id: int
    values: list[str]
    other_values: list[str]
    detail: str
    source: str
    status: str
    created_at: str

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def record(store: Store, memory_id: int, other_id: int, *, source: str) -> bool:
    """Record an open conflict between two memories (inside a transaction); False if open already."""
    memory, other = store.memories.get(memory_id), store.memories.get(other_id)
    mine, theirs = values(memory.content), values(other.content)
    pair = {"values": sorted(mine - theirs), "other_values": sorted(theirs - mine)}
    detail = (
        f"memory {memory.id} says {', '.join(pair['values']) or '(none)'}; "
        f"memory {other.id} says {', '.join(pair['other_values']) or '(none)'}"
    )
    first, second = sorted((memory.id, other.id))
    return store.tables.facts.add_memory_conflict(
        (
            memory.project,
            first,
            second,
            json.dumps(pair if first == memory.id else _swap(pair), ensure_ascii=False),
            detail,
            source,
            store.now(),
        )
    )


def listing(store: Store, *, status: str | None = "open") -> list[MemoryConflict]:
    """The project's memory conflicts (open ones by default), oldest first."""
    found = []
    for row in store.tables.facts.memory_conflicts(store.project, status):
        pair = json.loads(row["pair"])
        found.append(
            MemoryConflict(
                id=row["id"],
                project=row["project"],
                memory_id=row["memory_id"],
                other_memory_id=row["other_memory_id"],
                values=pair["values"],
                other_values=pair["other_values"],
                detail=row["detail"],
                source=row["source"],
                status=row["status"],
                created_at=row["created_at"],
            )
        )
    return found


def close(store: Store, conflict_id: int, status: str, resolution: str = "") -> None:
    """Resolve or dismiss an open memory conflict."""
    if status not in ("resolved", "dismissed"):
        raise ValueError(f"a conflict is closed as resolved or dismissed, not {status!r}")
    with store.atomic():
        rows = store.tables.facts
        found = rows.memory_conflict_status(conflict_id, store.project)
        if found is None:
            raise NotFound(f"no memory conflict {conflict_id} in project {store.project!r}")
        if found != "open":
            raise WrongStatus(f"memory conflict {conflict_id} is {found}, not open")
        rows.close_memory_conflict(conflict_id, status, resolution or None, store.now())


def _swap(pair: dict[str, list[str]]) -> dict[str, list[str]]:
    return {"values": pair["other_values"], "other_values": pair["values"]}
