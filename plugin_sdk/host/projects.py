"""The projects in a store: list them, rename one, merge one into another, delete one.

A project is a name in the ``project`` column of the store's tables (see
``store/project.py`` for how a default one is derived from a folder). The
name of a project derived from a folder or a repository changes when they
move, so a person needs to see the projects a store holds and to move their
memories along: these functions are what ``memsdk projects`` runs.

Every table with a ``project`` column takes part, so a table added later by a
new migration is renamed, merged and deleted with the rest without a change
here. Rows that hang off a project's rows without a ``project`` column of
their own (composite members, a memory's entity links, a proposal's events)
follow their parents through the store's foreign keys. Each operation is one
transaction: all of it or nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import NotFound, ProjectConflict

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


@attrs.frozen
class ProjectInfo:
    """One project: its memories by status and when it was last written."""

    name: str
    memories: int  # every status
    active: int
    by_status: dict[str, int]
    last_write: str | None
    entities: int

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def list_projects(store: Store) -> list[ProjectInfo]:
    """Every project the store holds anything for, the busiest first (then by name)."""
    counts: dict[str, dict[str, int]] = {}
    last: dict[str, str | None] = {}
    for project, status, number, latest in store.tables.memories.project_counts():
        counts.setdefault(project, {})[status] = number
        if latest and (last.get(project) or "") < latest:
            last[project] = latest
    entities = store.tables.entities.project_counts()
    names = set(counts) | set(entities) | set(_other_projects(store))
    infos = [
        ProjectInfo(
            name=name,
            memories=sum(counts.get(name, {}).values()),
            active=counts.get(name, {}).get("active", 0),
            by_status=dict(sorted(counts.get(name, {}).items())),
            last_write=last.get(name),
            entities=entities.get(name, 0),
        )
        for name in names
    ]
    return sorted(infos, key=lambda info: (-info.memories, info.name))


def project_names(store: Store) -> list[str]:
    """The names of the store's projects, the busiest first."""
    return [info.name for info in list_projects(store)]


def has_project(store: Store, name: str) -> bool:
    """Whether any table of the store holds a row of project ``name``."""
    return any(
        store.db.execute(f"SELECT 1 FROM [{table}] WHERE project = ? LIMIT 1", [name]).fetchone()
        for table in project_tables(store)
    )


def rename_project(store: Store, old: str, new: str) -> dict[str, int]:
    """Give project ``old`` the name ``new`` (which must not be in use); rows moved per table."""
    _check_names(store, old, new)
    if has_project(store, new):
        raise ProjectConflict(
            f"project {new!r} already exists; merge into it instead (memsdk projects merge)"
        )
    with store.atomic():
        moved = {
            table: store.db.execute(
                f"UPDATE [{table}] SET project = ? WHERE project = ?", [new, old]
            ).rowcount
            for table in project_tables(store)
        }
    return {table: n for table, n in moved.items() if n}


def merge_project(store: Store, source: str, target: str) -> dict[str, int]:
    """Move everything of project ``source`` into ``target``; ``source`` is gone after.

    A memory that ``target`` already holds (same category, same normalized
    text) is folded into the target's one, as a repeat would be; an entity
    whose name ``target`` already has is merged into it (its links, facts
    and relations repointed). Where both projects keep their own record of
    one thing (a dreamer task's place, a session's last injection, a
    transcript's import mark), the target's is kept. Returns the rows moved
    per table, plus ``folded_memories`` and ``merged_entities``.
    """
    _check_names(store, source, target)
    if not has_project(store, target):
        raise NotFound(f"no project {target!r} in store {store.path}; rename instead")
    with store.atomic():
        folded = _fold_memories(store, source, target)
        merged = _merge_entities(store, source, target)
        moved: dict[str, int] = {}
        for table in project_tables(store):
            moved[table] = store.db.update_or_ignore(table, "project", target, source)
            # What could not move is the source's copy of a record the target keeps.
            _delete_rows(store, table, "project = ?", [source])
    report = {table: n for table, n in moved.items() if n}
    return {**report, "folded_memories": folded, "merged_entities": merged}


def delete_project(store: Store, name: str) -> dict[str, int]:
    """Delete every row of project ``name``, and what hangs off those rows; rows per table."""
    if not has_project(store, name):
        raise NotFound(f"no project {name!r} in store {store.path}")
    deleted: dict[str, int] = {}
    with store.atomic():
        # Rows without a project column that point at the project's rows and
        # do not go by themselves (no ON DELETE CASCADE) go first.
        deleted["reference_sets"] = store.tables.refsets.delete_project(name)
        deleted.update(store.tables.composites.delete_project(name))
        deleted.update(store.tables.proposals.delete_project_history(name))
        store.tables.memories.unlink_successors(name)
        for table in _children_first(store, project_tables(store)):
            deleted[table] = _delete_rows(store, table, "project = ?", [name])
    return {table: n for table, n in deleted.items() if n}


def project_tables(store: Store) -> list[str]:
    """The store's tables (not views) with a ``project`` column, by name."""
    return [table for table in store.db.store_tables() if "project" in store.db.columns(table)]


def _other_projects(store: Store) -> Iterable[str]:
    for table in project_tables(store):
        if table in ("memories", "entities"):
            continue
        for (name,) in store.db.execute(f"SELECT DISTINCT project FROM [{table}]"):
            yield name


def _check_names(store: Store, old: str, new: str) -> None:
    if not new.strip():
        raise ValueError("a project name cannot be empty")
    if old == new:
        raise ValueError(f"project {old!r} is already called that")
    if not has_project(store, old):
        raise NotFound(f"no project {old!r} in store {store.path}")


def _fold_memories(store: Store, source: str, target: str) -> int:
    """Fold each memory of ``source`` that ``target`` holds too into the target's one.

    As a repeat write would: the target's seen count grows; composites
    follow it (merge fate, ``Composites.repoint``), and whatever else pointed
    at the source's copy (entity links, a successor's ``superseded_by``)
    points at the target's; then the copy goes.
    """
    pairs = store.tables.memories.repeats_between(source, target)
    references = [ref for ref in _references_to(store, "memories") if ref[0] != "composites"]
    for source_id, target_id in pairs:
        store.tables.memories.add_seen(source_id, target_id)
        store.composites.repoint(source_id, target_id)
        store.composites.mark_stale(target_id)
        for table, column in references:
            store.db.update_or_ignore(table, column, target_id, source_id)
            store.db.execute(f"DELETE FROM [{table}] WHERE [{column}] = ?", [source_id])
        store.tables.memories.delete_one(source_id)
    return len(pairs)


def _merge_entities(store: Store, source: str, target: str) -> int:
    pairs = store.tables.entities.same_names(source, target)
    references = _references_to(store, "entities")
    for source_id, target_id in pairs:
        for table, column in references:
            store.db.update_or_ignore(table, column, target_id, source_id)
            store.db.execute(f"DELETE FROM [{table}] WHERE [{column}] = ?", [source_id])
        store.tables.entities.delete_one(source_id)
    return len(pairs)


def _references_to(store: Store, parent: str) -> list[tuple[str, str]]:
    """(table, column) pairs whose foreign key points at ``parent``."""
    return [
        (table, column)
        for table in store.db.store_tables()
        for column, target in store.db.foreign_keys(table)
        if target == parent
    ]


def _children_first(store: Store, tables: list[str]) -> list[str]:
    """``tables`` ordered so a table comes before the tables its foreign keys point at."""
    parents = {
        table: {target for _column, target in store.db.foreign_keys(table) if target != table}
        for table in tables
    }
    ordered: list[str] = []
    pending = list(tables)
    while pending:
        # A table goes once no pending table still points at it.
        ready = [t for t in pending if not any(t in parents[o] for o in pending if o != t)]
        if not ready:  # a cycle: keep the rest in name order
            ready = pending[:1]
        for table in ready:
            ordered.append(table)
            pending.remove(table)
    return ordered


def _delete_rows(store: Store, table: str, where: str, params: list[Any]) -> int:
    count = where.count("?")
    return store.db.execute(f"DELETE FROM [{table}] WHERE {where}", params * count).rowcount
