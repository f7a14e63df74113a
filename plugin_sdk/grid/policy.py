"""The entity grid: memory type × referent cells, their decay defaults, and the graph's relation types.

Two axes: the memory type (episodic: what happened; semantic: what is true;
procedural: how to do something; Tulving's memory systems, in E. Tulving,
"How many memory systems are there?", American Psychologist 40, 1985) and the
referent, what the memory is about (self: the operator, the user; agent: AI
agents; other: people and organisations; object: projects, artefacts, places;
abstract: concepts and principles). A cell is written
``"<memory type>.<referent>"``, such as ``"semantic.other"``. The axes are
fixed in code (``store/models.py``, next to the schema); everything a cell
*means* (its half-life, its emotional multiplier, which namespaces fall in it,
which words hint at it, the relation types and their σ) is pack data, read
from the store.

**Where the values come from.** The ``[grid]`` and ``[graph]`` sections of the
installed packs, as stored in the ``packs`` table. Packs are read in install
order and the first pack to set a value owns it: a cell's defaults, an emotion,
a namespace pattern, a relation type. A later pack that sets the same key to a
different value does not change it; :func:`conflicts` names each such key, and
an install reports them. Upgrading the owning pack changes the value.

**Entity names** are ``:``-separated path segments, ``namespace:slug``. A
segment keeps the case its source used (``agent:claude-code:rc:RC-2``), while
names compare case-insensitively: ``agent:claude-code:rc:rc-2`` is the same
entity, and patterns match either.

**Namespace patterns** are ``:``-separated segments; ``*`` matches exactly one
segment, and a trailing ``*`` matches one or more (``world:*`` matches
``world:person:anya``). Rules inherit: every rule matching a name applies,
the most specific first (the most literal segments, then the most segments,
then the earliest rule), and each value (cell, half-life, pinned) comes from
the most specific rule that sets it. So ``world:person:*`` that sets only a
cell keeps the half-life of ``world:*``; to change it, it sets its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import GridError, InvalidEntityName, NoGrid, PackError
from plugin_sdk.grid.overrides import apply, overrides
from plugin_sdk.store.patterns import compile_pattern

if TYPE_CHECKING:
    from plugin_sdk.packs.documents import Pack
    from plugin_sdk.store.connection import Store


_SEGMENT = r"[A-Za-z0-9][A-Za-z0-9._-]*"
ENTITY_NAME = re.compile(rf"^{_SEGMENT}(:{_SEGMENT})+$")


RULE_CACHE = 65536  # entity names whose namespace rule a grid keeps


@attrs.frozen
class CellDefaults:
    half_life_days: float
    emotional_multiplier: float
    pack: str


@attrs.frozen
class NamespaceRule:
    pattern: str
    pack: str
    position: int
    cell: str | None = None
    half_life_days: float | None = None
    pinned: bool | None = None  # None: not set here (inherited from a parent rule)
    note: str = ""

    @property
    def specificity(self) -> tuple[int, int, int]:
        segments = self.pattern.split(":")
        return (sum(s != "*" for s in segments), len(segments), -self.position)


@attrs.frozen
class RelationType:
    name: str
    sigma_days: float
    description: str
    pack: str


@attrs.frozen
class Grid:
    """The store's effective grid and graph policy (see the module docstring)."""

    default_cell: str
    cells: dict[str, CellDefaults]
    emotions: dict[str, float]
    namespaces: list[NamespaceRule]
    category_cells: dict[str, str]
    cues: dict[str, dict[str, list[str]]]  # axis ("memory_type", "referent") -> value -> regexes
    acts: dict[str, list[str]]
    relations: dict[str, RelationType]
    readings: dict[str, str] = attrs.field(factory=dict)  # referent -> interior | exterior | …
    styles: dict[str, Any] = attrs.field(factory=dict)  # the style detector's thresholds
    # rule_for's answers by name (the grid is never changed in place; bounded)
    _rules: dict[str, NamespaceRule | None] = attrs.field(
        factory=dict, init=False, eq=False, repr=False
    )

    def rule_for(self, name: str) -> NamespaceRule | None:
        """The rule for an entity name: the most specific match, with inherited values.

        Each value the most specific matching rule leaves unset comes from the
        next most specific rule that sets it (see the module docstring).
        """
        try:
            return self._rules[name]
        except KeyError:
            pass
        if len(self._rules) >= RULE_CACHE:
            self._rules.clear()
        found = self._rules[name] = self._rule_for(name)
        return found

    def _rule_for(self, name: str) -> NamespaceRule | None:
        matching = sorted(
            (rule for rule in self.namespaces if matches(rule.pattern, name)),
            key=lambda rule: rule.specificity,
            reverse=True,
        )
        if not matching:
            return None

        def first(field: str) -> Any:
            return next((v for r in matching if (v := getattr(r, field)) is not None), None)

        return attrs.evolve(
            matching[0],
            cell=first("cell"),
            half_life_days=first("half_life_days"),
            pinned=first("pinned"),
        )

    def multiplier(self, cell: str, emotional_tag: str | None) -> float:
        """The emotional multiplier: the tag's value if tagged, else the cell's default."""
        if emotional_tag is None:
            return self.cells[cell].emotional_multiplier
        if emotional_tag not in self.emotions:
            raise GridError(
                f"unknown emotional tag {emotional_tag!r}; the grid has: "
                + ", ".join(sorted(self.emotions))
            )
        return self.emotions[emotional_tag]

    def relation(self, name: str) -> RelationType:
        if name not in self.relations:
            known = ", ".join(sorted(self.relations)) or "(none: no installed pack has [graph])"
            raise GridError(f"unknown relation type {name!r}; the graph has: {known}")
        return self.relations[name]


def check_name(name: str) -> str:
    """Validate an entity name (``namespace:slug``; segments keep their case)."""
    if not ENTITY_NAME.match(name):
        raise InvalidEntityName(
            f"entity name {name!r} is not namespace:slug: two or more ':'-separated segments "
            "of letters, digits, '.', '_' or '-' (for example world:person:anya)"
        )
    return name


def type_and_subtype(name: str) -> tuple[str, str | None]:
    """An entity's type (the first segment) and subtype (the rest of its namespace path).

    ``agent:claude-code:rc:RC-2`` is type ``agent``, subtype ``claude-code:rc``;
    ``world:anya`` has no subtype.
    """
    namespace = name.split(":")[:-1]
    return namespace[0], ":".join(namespace[1:]) or None


PATTERN = re.compile(r"^(\*|[A-Za-z0-9][A-Za-z0-9._-]*)(:(\*|[A-Za-z0-9][A-Za-z0-9._-]*))*$")


def check_pattern(pattern: str) -> str:
    """Validate a namespace pattern (``agent:*:relationship:*``)."""
    if not PATTERN.match(pattern):
        raise GridError(
            f"namespace pattern {pattern!r} is not ':'-separated segments of letters, "
            "digits, '.', '_' or '-', or '*' (for example agent:*:relationship:*)"
        )
    return pattern


def matches(pattern: str, name: str) -> bool:
    """Whether an entity name matches a namespace pattern (see the module docstring)."""
    return _compiled(pattern).match(name) is not None


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str]:
    segments = pattern.split(":")
    parts = ["[^:]+" if s == "*" else re.escape(s) for s in segments]
    if segments[-1] == "*":
        parts[-1] = "[^:]+(?::[^:]+)*"
    return re.compile("^" + ":".join(parts) + "$", re.IGNORECASE)


def pattern_sql(pattern: str) -> tuple[str, list[Any]]:
    """A SQL condition on ``name`` that narrows a pattern by its literal prefix (then filter)."""
    prefix: list[str] = []
    for segment in pattern.split(":"):
        if segment == "*":
            break
        prefix.append(segment)
    if not prefix:
        return "1", []
    literal = ":".join(prefix)
    if len(prefix) == len(pattern.split(":")):
        return "name = ? COLLATE NOCASE", [literal]
    return "substr(name, 1, ?) = ? COLLATE NOCASE", [len(literal) + 1, literal + ":"]


def grid(store: Store) -> Grid:
    """The store's effective grid: its packs', then its overrides (:class:`NoGrid` if no grid).

    Overrides (``overrides.py``) win over every pack until they are cleared.
    """
    pinned_grid = _PINNED.get(id(store))
    if pinned_grid is not None:
        return pinned_grid
    return apply(store.packs.derived("grid", merge), overrides(store))


_PINNED: dict[int, Grid] = {}


@contextmanager
def pinned(store: Store, policy: Grid) -> Iterator[Grid]:
    """Within the block, :func:`grid` of ``store`` is ``policy`` without reading the store.

    The Retain Job pins the grid it read at its start (the one it routes and
    places with) for each batch, so the hooks and helpers it calls do not read
    the packs and overrides again per observation.
    """
    _PINNED[id(store)] = policy
    try:
        yield policy
    finally:
        _PINNED.pop(id(store), None)


def merge(documents: Iterable[tuple[str, Mapping[str, Any]]], *, require_grid: bool = True) -> Grid:
    """The effective grid of pack documents in install order (first to set a key owns it).

    Without any ``[grid]`` section this raises :class:`NoGrid`, unless
    ``require_grid`` is false: then the cells are empty and only the graph is read.
    """
    default_cell: str | None = None
    cells: dict[str, CellDefaults] = {}
    emotions: dict[str, float] = {}
    rules: dict[str, NamespaceRule] = {}
    category_cells: dict[str, str] = {}
    cues: dict[str, dict[str, list[str]]] = {"memory_type": {}, "referent": {}}
    acts: dict[str, list[str]] = {}
    relations: dict[str, RelationType] = {}
    readings: dict[str, str] = {}
    styles: dict[str, Any] = {}
    for pack, document in documents:
        section = document.get("grid")
        if section:
            default_cell = default_cell or section["default_cell"]
            for memory_type, row in section["cells"].items():
                for referent, values in row.items():
                    cells.setdefault(
                        f"{memory_type}.{referent}",
                        CellDefaults(
                            float(values["half_life_days"]),
                            float(values["emotional_multiplier"]),
                            pack,
                        ),
                    )
            for tag, value in section["emotions"].items():
                emotions.setdefault(tag, float(value))
            for referent, reading in section.get("readings", {}).items():
                readings.setdefault(referent, reading)
            for key, value in section.get("styles", {}).items():
                styles.setdefault(key, value)
            for rule in section.get("namespaces", []):
                rules.setdefault(
                    rule["pattern"],
                    NamespaceRule(
                        pattern=rule["pattern"],
                        pack=pack,
                        position=len(rules),
                        cell=rule.get("cell"),
                        half_life_days=rule.get("half_life_days"),
                        pinned=rule.get("pinned"),
                        note=rule.get("note", ""),
                    ),
                )
            category_cells.update(section.get("category_cells", {}))
            for axis, votes in section.get("cues", {}).items():
                for value, patterns in votes.items():
                    cues[axis].setdefault(value, []).extend(patterns)
            for act, patterns in section.get("acts", {}).items():
                acts.setdefault(act, []).extend(patterns)
        for name, spec in (document.get("graph") or {}).get("relations", {}).items():
            relations.setdefault(
                name,
                RelationType(name, float(spec["sigma_days"]), spec.get("description", ""), pack),
            )
    if default_cell is None and not require_grid:
        default_cell = ""
    if default_cell is None:
        raise NoGrid(
            "no installed pack has a [grid] section; install one that does "
            "(the built-in packs do: memsdk pack install ops)"
        )
    return Grid(
        default_cell=default_cell,
        cells=cells,
        emotions=emotions,
        namespaces=list(rules.values()),
        category_cells=category_cells,
        cues=cues,
        acts=acts,
        relations=relations,
        readings=readings,
        styles=styles,
    )


def has_grid(store: Store) -> bool:
    try:
        grid(store)
    except NoGrid:
        return False
    return True


def conflicts(installed: Iterable[tuple[str, Mapping[str, Any]]], pack: Pack) -> list[str]:
    """Keys of ``pack``'s grid and graph that an installed pack already sets differently."""
    others = [(name, doc) for name, doc in installed if name != pack.name]
    if not others:
        return []
    current = merge(others, require_grid=False)
    found: list[str] = []
    section = pack.document.get("grid") or {}
    if current.default_cell and section:
        if section["default_cell"] != current.default_cell:
            owner = next(name for name, doc in others if doc.get("grid"))
            found.append(f"grid.default_cell (kept from pack {owner})")
        for memory_type, row in section["cells"].items():
            for referent, values in row.items():
                cell = f"{memory_type}.{referent}"
                have = current.cells[cell]
                if (have.half_life_days, have.emotional_multiplier) != (
                    float(values["half_life_days"]),
                    float(values["emotional_multiplier"]),
                ):
                    found.append(f"grid.cells.{cell} (kept from pack {have.pack})")
        for tag, value in section["emotions"].items():
            if tag in current.emotions and current.emotions[tag] != float(value):
                owner = next(
                    n for n, d in others if tag in (d.get("grid") or {}).get("emotions", {})
                )
                found.append(f"grid.emotions.{tag} (kept from pack {owner})")
        by_pattern = {rule.pattern: rule for rule in current.namespaces}
        for rule in section.get("namespaces", []):
            have_rule = by_pattern.get(rule["pattern"])
            if have_rule and (
                have_rule.cell,
                have_rule.half_life_days,
                have_rule.pinned,
            ) != (rule.get("cell"), rule.get("half_life_days"), rule.get("pinned")):
                found.append(
                    f"grid.namespaces {rule['pattern']!r} (kept from pack {have_rule.pack})"
                )
    relations = (pack.document.get("graph") or {}).get("relations", {})
    for name, spec in relations.items():
        have_relation = current.relations.get(name)
        if have_relation and have_relation.sigma_days != float(spec["sigma_days"]):
            found.append(f"graph.relations.{name} (kept from pack {have_relation.pack})")
    return found


def validate_grid(document: Mapping[str, Any], source: str) -> None:
    """Checks the JSON Schema cannot make: regexes compile with RE2, category cells name own categories."""
    section = document.get("grid") or {}
    seen: dict[str, int] = {}
    for index, rule in enumerate(section.get("namespaces", [])):
        if rule["pattern"] in seen:
            raise PackError(
                source,
                f"pattern {rule['pattern']!r} is already the pattern of "
                f"grid.namespaces[{seen[rule['pattern']]}]",
                f"grid.namespaces[{index}].pattern",
            )
        seen[rule["pattern"]] = index
    for name in section.get("category_cells", {}):
        if name not in document.get("categories", {}):
            raise PackError(
                source, f"{name!r} is not a category of this pack", f"grid.category_cells.{name}"
            )
    groups: list[tuple[str, Mapping[str, list[str]]]] = [
        (f"grid.cues.{axis}", votes) for axis, votes in section.get("cues", {}).items()
    ]
    groups.append(("grid.acts", section.get("acts", {})))
    for prefix, votes in groups:
        for value, patterns in votes.items():
            for index, pattern in enumerate(patterns):
                try:
                    compile_pattern(pattern, ignore_case=True)
                except ValueError as error:
                    raise PackError(source, str(error), f"{prefix}.{value}[{index}]") from error
