"""Installing and upgrading packs in a store; the store, not the pack file, is then the authority.

- **install** writes the pack's categories and criteria as defaults.
- **upgrade** of criteria text only updates the defaults; user overrides stay
  and keep winning. It is not a migration event.
- **upgrade** that adds, removes or renames categories is a migration event:
  it is refused with :class:`~plugin_sdk.errors.MigrationRequired` unless the
  caller passes a mapping that says, for every removed category, where its
  memories go (``{"OLD": "NEW"}``) or that it is retired (``{"OLD": None}``).
  An upgrade that only adds categories needs an explicit (empty) mapping.
  With a mapping, the categories change and the memories move in one
  transaction; a moved memory whose text already exists in the target
  category is folded into that memory (``superseded_by``; its seen count is
  added) rather than dropped. Memories of a retired category are archived.

Every change lands in ``criteria_history``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

import attrs

from plugin_sdk.errors import MigrationRequired, NotFound, PackConflict
from plugin_sdk.packs.documents import CategorySpec, Pack
from plugin_sdk.packs.mentions import stale_in_store
from plugin_sdk.packs.sections import kept_keys
from plugin_sdk.store.models import CRITERIA_FIELDS

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

CATEGORY_ATTRIBUTES = ("kind", "priority", "promotable", "label")


T = TypeVar("T")


@attrs.frozen
class InstalledPack:
    name: str
    version: str
    description: str
    content_hash: str
    source: str
    document: dict[str, Any] = attrs.field(converter=json.loads, repr=False)
    installed_at: str = ""
    updated_at: str = ""


@attrs.define
class UpgradeReport:
    """What an install or upgrade changed."""

    pack: str
    old_version: str | None
    new_version: str
    added: list[str] = attrs.field(factory=list)
    renamed: dict[str, str] = attrs.field(factory=dict)
    retired: list[str] = attrs.field(factory=list)
    changed: list[str] = attrs.field(factory=list)  # "CATEGORY.field" whose default changed
    overrides_kept: list[str] = attrs.field(factory=list)
    grid_kept: list[str] = attrs.field(factory=list)  # grid/graph keys another pack owns
    stale_mentions: list[str] = attrs.field(factory=list)  # criteria naming retired categories
    moved: int = 0
    folded: int = 0
    archived: int = 0

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


class Packs:
    """Pack operations on one store; reached as ``store.packs``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
        self.rows = store.tables.packs
        self._derived: dict[str, tuple[Any, Any]] = {}  # see derived()

    def installed(self) -> list[InstalledPack]:
        return [InstalledPack(**row) for row in self.rows.all()]

    def derived(self, name: str, build: Callable[[list[tuple[str, dict[str, Any]]]], T]) -> T:
        """A policy built from the installed packs' documents, in install order.

        ``build`` gets ``[(pack name, document), ...]`` (install time, then
        rowid: the order in which "the first pack to set a value owns it"); the
        result is cached under ``name`` until a pack is installed or upgraded.
        The grid (``grid/policy.py``) and the retain policy
        (``retain/routing.py``) are built this way.
        """
        key = tuple(self.rows.hashes())
        cached = self._derived.get(name)
        if cached is not None and cached[0] == key:
            return cast(T, cached[1])
        documents = [(name, json.loads(document)) for name, document in self.rows.documents()]
        result = build(documents)
        self._derived[name] = (key, result)
        return result

    def get(self, name: str) -> InstalledPack:
        for pack in self.installed():
            if pack.name == name:
                return pack
        installed = ", ".join(p.name for p in self.installed()) or "none"
        raise NotFound(f"pack {name!r} is not installed in this store (installed: {installed})")

    def install(self, pack: Pack) -> UpgradeReport:
        """Install a pack that the store does not have yet.

        Checked and written under the write lock, so of two installs at once
        one installs and the other is refused with "already installed".
        """
        now = self.store.now()
        with self.store.atomic():
            if any(p.name == pack.name for p in self.installed()):
                raise PackConflict(
                    f"pack {pack.name!r} is already installed; "
                    f"use upgrade to move to {pack.version}"
                )
            self._refuse_clashes(pack, list(pack.categories))
            self.rows.insert(
                [
                    pack.name,
                    pack.version,
                    pack.description,
                    pack.content_hash,
                    pack.source,
                    _document(pack),
                    now,
                    now,
                ],
            )
            for spec in pack.categories.values():
                self._add_category(pack, spec, "install")
        return UpgradeReport(
            pack.name,
            None,
            pack.version,
            added=by_priority(pack),
            grid_kept=self._grid_kept(pack),
        )

    def upgrade(
        self, pack: Pack, *, mapping: Mapping[str, str | None] | None = None
    ) -> UpgradeReport:
        """Upgrade an installed pack; see the module docstring for the rules."""
        installed = self.get(pack.name)
        if _version_key(pack.version) < _version_key(installed.version):
            raise PackConflict(
                f"pack {pack.name!r} {installed.version} is installed; {pack.version} is older "
                "and downgrades are refused; nothing was changed"
            )
        old = {row["name"]: row for row in self.rows.active_of(pack.name)}
        removed = sorted(set(old) - set(pack.categories), key=lambda n: (old[n]["priority"], n))
        added = [name for name in by_priority(pack) if name not in old]
        plan = _check_mapping(pack, installed.version, removed, added, mapping)
        self._refuse_clashes(pack, added)
        report = UpgradeReport(
            pack.name, installed.version, pack.version, grid_kept=self._grid_kept(pack)
        )
        with self.store.atomic():
            self.rows.update(
                pack.name,
                version=pack.version,
                description=pack.description,
                content_hash=pack.content_hash,
                source=pack.source,
                document=_document(pack),
                now=self.store.now(),
            )
            for name in added:
                self._add_category(pack, pack.categories[name], "upgrade")
                report.added.append(name)
            for name in sorted(set(old) & set(pack.categories)):
                self._update_category(pack, old[name], pack.categories[name], report)
            for name, target in plan.items():
                if target is None:
                    report.retired.append(name)
                    report.archived += self._retire(pack, name)
                else:
                    report.renamed[name] = target
                    moved, folded = self._rename(
                        pack, name, target, fresh=target in added, report=report
                    )
                    report.moved += moved
                    report.folded += folded
            report.stale_mentions = stale_in_store(self.store)
        return report

    def _grid_kept(self, pack: Pack) -> list[str]:
        """Grid and graph keys of ``pack`` that an earlier-installed pack sets differently."""
        names = self.rows.names()
        by_name = {p.name: p for p in self.installed()}
        order = [by_name[name] for name in names]
        before = order[: names.index(pack.name)] if pack.name in names else order
        return kept_keys([(p.name, p.document) for p in before], pack)

    # Steps, each called inside the upgrade's transaction.

    def _refuse_clashes(self, pack: Pack, names: list[str]) -> None:
        for name in names:
            owner = self.rows.pack_of(name)
            if owner is not None and owner != pack.name:
                raise PackConflict(
                    f"pack {pack.name!r} declares category {name!r}, which belongs to pack "
                    f"{owner!r} in this store; nothing was changed"
                )

    def _add_category(self, pack: Pack, spec: CategorySpec, source: str) -> None:
        now = self.store.now()
        attributes = (spec.kind, spec.priority, spec.promotable, spec.label)
        if (
            self.rows.pack_of(spec.name) is not None
        ):  # a category this pack retired earlier comes back
            self.rows.revive(spec.name, *attributes, now)
        else:
            self.rows.insert_category(spec.name, pack.name, *attributes, now)
        for field in CRITERIA_FIELDS:
            value = spec.criteria[field]
            self.rows.insert_criterion(spec.name, field, json.dumps(value, ensure_ascii=False), now)
            self.store.criteria.record(
                spec.name, field, source, None, value, pack=pack.name, pack_version=pack.version
            )

    def _update_category(
        self, pack: Pack, row: dict[str, Any], spec: CategorySpec, report: UpgradeReport
    ) -> None:
        now = self.store.now()
        record = self.store.criteria.record
        for attribute in CATEGORY_ATTRIBUTES:
            new = getattr(spec, attribute)
            old = bool(row[attribute]) if attribute == "promotable" else row[attribute]
            if new != old:
                record(
                    spec.name,
                    attribute,
                    "upgrade",
                    old,
                    new,
                    pack=pack.name,
                    pack_version=pack.version,
                )
                report.changed.append(f"{spec.name}.{attribute}")
        self.rows.update_category(
            spec.name, spec.kind, spec.priority, spec.promotable, spec.label, now
        )
        if spec.kind != row["kind"]:
            self.store.tables.memories.set_kind(spec.name, spec.kind)
        for field in CRITERIA_FIELDS:
            current = self.rows.criterion(spec.name, field)
            assert current is not None  # every active category has every field
            old_default = json.loads(current["pack_default"])
            new_default = spec.criteria[field]
            if old_default == new_default:
                continue
            self.rows.set_default(
                spec.name, field, json.dumps(new_default, ensure_ascii=False), now
            )
            note = "user override kept" if current["user_override"] is not None else None
            record(
                spec.name,
                field,
                "upgrade",
                old_default,
                new_default,
                pack=pack.name,
                pack_version=pack.version,
                note=note,
            )
            report.changed.append(f"{spec.name}.{field}")
            if note:
                report.overrides_kept.append(f"{spec.name}.{field}")

    def _retire(self, pack: Pack, name: str) -> int:
        now = self.store.now()
        self.rows.retire(name, now)
        archived = self.store.tables.memories.archive_category(name, now)
        self.store.criteria.record(
            name,
            "status",
            "retire",
            "active",
            "retired",
            pack=pack.name,
            pack_version=pack.version,
            note=f"{archived} memories archived",
        )
        return archived

    def _rename(
        self, pack: Pack, old: str, new: str, *, fresh: bool, report: UpgradeReport
    ) -> tuple[int, int]:
        now = self.store.now()
        kind = pack.categories[new].kind
        moved = folded = 0
        memories = self.store.tables.memories
        for row in memories.in_category(old):
            clash = memories.id_by_hash(row["project"], new, row["normalized_hash"])
            if clash is None:
                memories.move_category(row["id"], new, kind, now)
                moved += 1
                continue
            # Same text already in the target: fold into it, keeping the row.
            self.store.memories.fold(row["id"], clash)
            folded += 1
        self.rows.retire_renamed(old, new, now)
        self.store.criteria.record(
            old,
            "name",
            "rename",
            old,
            new,
            pack=pack.name,
            pack_version=pack.version,
            note=f"{moved} memories moved, {folded} folded into existing ones",
        )
        if fresh:
            self._carry_overrides(pack, old, new, report)
        return moved, folded

    def _carry_overrides(self, pack: Pack, old: str, new: str, report: UpgradeReport) -> None:
        for field, override in self.rows.overrides(old):
            self.rows.set_override(new, field, override, self.store.now())
            value = json.loads(override)
            self.store.criteria.record(
                new,
                field,
                "rename",
                None,
                value,
                pack=pack.name,
                pack_version=pack.version,
                note=f"user override carried over from {old}",
            )
            report.overrides_kept.append(f"{new}.{field}")


def by_priority(pack: Pack) -> list[str]:
    """The pack's category names in priority order (then name), as every list shows them."""
    return [
        spec.name
        for spec in sorted(pack.categories.values(), key=lambda spec: (spec.priority, spec.name))
    ]


def _check_mapping(
    pack: Pack,
    installed_version: str,
    removed: list[str],
    added: list[str],
    mapping: Mapping[str, str | None] | None,
) -> dict[str, str | None]:
    if not removed and not added:
        if mapping:
            raise MigrationRequired(
                f"pack {pack.name!r} {pack.version} keeps the same categories; a mapping "
                f"({', '.join(sorted(mapping))}) has nothing to map; nothing was changed"
            )
        return {}
    if mapping is None:
        parts = []
        if removed:
            parts.append(f"removes {', '.join(removed)}")
        if added:
            parts.append(f"adds {', '.join(added)}")
        hint = " ".join(f"--map {name}=NEW_NAME|retire" for name in removed) or "--accept-new"
        raise MigrationRequired(
            f"pack {pack.name!r} {installed_version} -> {pack.version} {' and '.join(parts)}: "
            f"this is a migration event and needs an explicit mapping for existing memories "
            f"(e.g. {hint}); nothing was changed"
        )
    unknown = sorted(set(mapping) - set(removed))
    if unknown:
        raise MigrationRequired(
            f"mapping names {', '.join(unknown)}, which this upgrade does not remove "
            f"(removed: {', '.join(removed) or 'none'}); nothing was changed"
        )
    missing = [name for name in removed if name not in mapping]
    if missing:
        raise MigrationRequired(
            f"the mapping must say where the memories of {', '.join(missing)} go "
            "(rename to a category of the new version, or retire); nothing was changed"
        )
    for name, target in mapping.items():
        if target is not None and target not in pack.categories:
            raise MigrationRequired(
                f"mapping {name} -> {target}: {target!r} is not a category of {pack.name} "
                f"{pack.version} ({', '.join(by_priority(pack))}); nothing was changed"
            )
    return {name: mapping[name] for name in removed}


def _document(pack: Pack) -> str:
    return json.dumps(pack.document, ensure_ascii=False, sort_keys=True)


def _version_key(version: str) -> tuple[Any, ...]:
    """Semantic-version precedence (semver.org, rule 11); build metadata is ignored."""
    core = version.split("+", 1)[0]
    numbers, _, prerelease = core.partition("-")
    major, minor, patch = (int(part) for part in numbers.split("."))
    if not prerelease:
        return (major, minor, patch, 1, ())
    identifiers = tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part) for part in prerelease.split(".")
    )
    return (major, minor, patch, 0, identifiers)
