"""Plain records returned by the store's API (attrs classes, frozen)."""

from __future__ import annotations

import json
from typing import Any

import attrs

from plugin_sdk.errors import GridError

CRITERIA_FIELDS = ("definition", "positive_examples", "negative_examples", "exclusions")
LIST_FIELDS = ("positive_examples", "negative_examples", "exclusions")
MEMORY_STATUSES = ("active", "archived", "superseded", "pending", "quarantined")

# The grid's axes: what ``memory_cells`` rows and entities may hold (the grid
# area gives them meaning; the store only checks values against them).
MEMORY_TYPES = ("episodic", "semantic", "procedural")
REFERENTS = ("self", "agent", "other", "object", "abstract")
CELLS = tuple(f"{t}.{r}" for t in MEMORY_TYPES for r in REFERENTS)
ACTS = ("assertive", "directive", "commissive", "expressive", "declarative")
DEFAULT_ACT = "assertive"  # a statement of how things are: what is left when nothing else votes


def split_cell(cell: str) -> tuple[str, str]:
    """``"semantic.other"`` -> ``("semantic", "other")``; a clear error for anything else."""
    if cell not in CELLS:
        raise GridError(f"unknown cell {cell!r}; cells are {', '.join(CELLS)}")
    memory_type, referent = cell.split(".")
    return memory_type, referent


@attrs.frozen
class Memory:
    """One row of ``memories``."""

    id: int
    project: str
    kind: str
    category: str
    content: str
    normalized_hash: str
    status: str
    importance: int
    scope: str
    shareable: bool
    superseded_by: int | None
    merged_from: list[int]
    seen_count: int
    retrieval_count: int
    token_count: int | None
    tokenizer: str | None
    source: str
    note: str | None
    created_at: str
    updated_at: str
    last_seen_at: str
    last_retrieved_at: str | None
    archived_at: str | None
    pinned: bool = False
    occurred_at: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Memory:
        fields = {f.name for f in attrs.fields(cls)}
        values = {k: v for k, v in row.items() if k in fields}
        values["shareable"] = bool(values["shareable"])
        values["pinned"] = bool(values.get("pinned", 0))
        values["merged_from"] = json.loads(values["merged_from"] or "[]")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class WriteResult:
    """What a write did: ``created`` is False when it folded into an existing row."""

    id: int
    created: bool
    status: str
    seen_count: int


@attrs.frozen
class SearchHit:
    """A search result: the memory, its rank (lower is better: ``-score``),
    its score (higher is better), why it was found and the query's evidence
    for it (0 to 1, the relevance floor's measure; ``docs/search.md``)."""

    memory: Memory
    rank: float
    score: float = 0.0
    why: tuple[str, ...] = ()
    evidence: float = 1.0


@attrs.frozen
class Criterion:
    """One criteria field of a category, with where its effective value comes from."""

    field: str
    value: Any
    source: str  # "pack" or "override"
    pack_default: Any
    user_override: Any


@attrs.frozen
class Category:
    """A category and its effective criteria, as the store holds them."""

    name: str
    pack: str
    kind: str
    priority: int
    promotable: bool
    label: str | None
    status: str
    renamed_to: str | None
    criteria: dict[str, Criterion]

    def value(self, field: str) -> Any:
        """The effective value of a criteria field (override, else pack default)."""
        return self.criteria[field].value

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class CriteriaEvent:
    """One row of the criteria history."""

    id: int
    category: str
    field: str
    source: str
    pack: str | None
    pack_version: str | None
    old_value: Any
    new_value: Any
    note: str | None
    at: str

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)
