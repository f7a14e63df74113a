"""A project as reviewable JSON Lines, and back: ``memsdk export`` and ``memsdk import``.

One JSON object per line, each naming what it is in ``record``, in this order:

- ``header``: the format (:data:`FORMAT`), its version, the project, the
  store's migrations;
- ``pack``: each installed pack whose categories the project uses (its
  document, so a fresh store can install it);
- ``criteria_override``: each criteria field a person changed in the store
  (``memsdk criteria set``), which governs the project's categories;
- ``memory``: every memory of the project, of every status, as its row (with
  its place on the grid, ``cell``, when classify gave it one);
- ``composite``: each composite headed by one of them, with its members;
- ``composite_event``: what happened to those composites (merges, repairs);
- ``entity``, ``memory_entity``, ``relation``: the project's entity grid;
- ``fact``, ``conflict``, ``compiled_truth``, ``truth_impact``: what the
  Retain Job learned about the entities (typed claims, their contradictions,
  every Compiled Truth version, the impact gathered towards the next one);
- ``observation``, ``entity_observation``: the observation inbox, every line
  with its outcome (retained, dark, invalid...), and which entities each was
  about (schema_fit's familiarity counts come from these);
- ``memory_conflict``, ``memory_outcome``: near-duplicate memories whose
  values differ, and the reports that a memory helped or misled;
- ``observation_tombstone``: what stays of pruned observations that facts,
  truths or conflicts still name (never their payload);
- ``proposal``, ``proposal_event``, ``proposal_application``: the approval
  queue with each proposal's history and what applying it changed (the
  memory ids a proposal names in its evidence and diff are renumbered with
  the memories; an undo record that no longer matches its rows is refused
  by ``undo``, as any changed row is);
- ``dreamer_state``: each dreamer task's place, progress and last error;
- ``forgotten``: the tombstones of forgotten memories (never the text: the
  hash that refuses it coming back).

Left out, on purpose, each with its reason: :data:`LEFT_OUT` (the store's
own settings and logs, this machine's ledgers, what the store derives again);
``memsdk copy`` carries a whole store, or one project, with every table.

Version 1 files (before the Retain Job's records travelled) and version 2
files (before proposals and the dreamer's state did) still import.

A copy of the whole store file (``memsdk backup``) is ``store/file/backup.py``'s.

Rows are written with every stored column (generated ones aside), so a column
a later migration adds travels too. Importing into a store where the ids are
free keeps them, and exporting again gives the same lines; where an id is
taken, the import gives new ids and rewrites every reference to them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import InvalidExport, ProjectConflict
from plugin_sdk.host.projects import has_project

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

FORMAT = "memsdk-export"
VERSION = 3
READS = (1, 2, 3)
ORDER = (
    "header",
    "pack",
    "criteria_override",
    "memory",
    "composite",
    "composite_event",
    "entity",
    "memory_entity",
    "relation",
    "fact",
    "conflict",
    "compiled_truth",
    "truth_impact",
    "observation",
    "entity_observation",
    "memory_conflict",
    "memory_outcome",
    "observation_tombstone",
    "proposal",
    "proposal_event",
    "proposal_application",
    "dreamer_state",
    "forgotten",
)

#: The store's tables an export does not carry, each with its reason (the
#: tables ``memsdk copy`` leaves to the destination are ``copying.DERIVED``).
LEFT_OUT: dict[str, str] = {
    "categories": "installed from the pack record's document",
    "criteria": "installed from the pack record's document; overrides travel as criteria_override",
    "criteria_history": "the store's own audit of its criteria, of every project",
    "grid_overrides": "the store's grid settings, of every project",
    "grid_history": "the store's audit of its grid settings, of every project",
    "search_settings": "the store's search settings, of every project",
    "vector_state": "the store's embedding model and mirror",
    "memory_vectors": "embeddings: the embed task computes them again from the text",
    "vector_changes": "the sqlite-vec mirror's queue: filled again as vectors are written",
    "token_counts": "a cache of token counts, filled again as text is counted",
    "read_records": "the store's counts of records its reads wrote late",
    "observation_retention": "the store's retention setting",
    "session_meta": "per-session logs of this machine's agent sessions",
    "injections": "per-session logs of this machine's agent sessions",
    "transcript_imports": "the historian's ledger of this machine's transcript files",
    "hook_queue": "this machine's host hooks: their queue",
    "hook_runs": "this machine's host hooks: when they ran",
    "hook_notices": "this machine's host hooks: what they told a session",
    "reference_sets": "frozen snapshots of composites, as they were: freeze them again",
    "reference_set_items": "frozen snapshots of composites, as they were: freeze them again",
    "neardup_bands": "curate's near-duplicate index: curate builds it again for new memories",
    "neardup_dirty": "curate's queue: the import's new memories are queued by the triggers",
}


@attrs.frozen
class _Table:
    """A project-owned table that travels row for row, its references renumbered on import."""

    record: str
    table: str
    order: tuple[str, ...]  # the columns its rows travel in order of
    refs: dict[str, str] = attrs.field(factory=dict)  # column -> the id space it points into
    space: str | None = None  # the id space this table's own ``id`` joins
    later: dict[str, str] = attrs.field(factory=dict)  # references set once every row is in
    own_key: bool = False  # its key is the project's own (an observation's id): kept as it is
    smaller_first: bool = False  # a memory pair stored smaller id first (renumbering may flip it)


_TABLES = (
    _Table("fact", "facts", ("id",), {"entity_id": "entities"}, space="facts"),
    _Table(
        "conflict",
        "conflicts",
        ("id",),
        {"entity_id": "entities", "fact_id": "facts", "other_fact_id": "facts"},
    ),
    _Table(
        "compiled_truth",
        "compiled_truths",
        ("id",),
        {"entity_id": "entities"},
        space="compiled_truths",
        later={"superseded_by": "compiled_truths"},
    ),
    _Table("truth_impact", "truth_impacts", ("entity_id",), {"entity_id": "entities"}),
    # in the order they arrived (the inbox is worked in rowid order)
    _Table("observation", "observations", ("rowid",), {"memory_id": "memories"}, own_key=True),
    _Table(
        "entity_observation",
        "entity_observations",
        ("entity_id", "observation_id"),
        {"entity_id": "entities"},
    ),
    _Table(
        "memory_conflict",
        "memory_conflicts",
        ("id",),
        {"memory_id": "memories", "other_memory_id": "memories"},
        smaller_first=True,
    ),
    _Table("memory_outcome", "memory_outcomes", ("id",), {"memory_id": "memories"}),
    _Table("observation_tombstone", "observation_tombstones", ("rowid",), own_key=True),
)
_LATER = (  # the project's tables exported after the proposals' records
    _Table("dreamer_state", "dreamer_state", ("task",), own_key=True),
)


def export_project(store: Store, project: str | None = None) -> Iterator[dict[str, Any]]:
    """The project's records, in :data:`ORDER` (see the module docstring)."""
    name = project or store.project
    yield {
        "record": "header",
        "format": FORMAT,
        "version": VERSION,
        "project": name,
        "migrations": store.schema_version,
    }
    used = store.tables.memories.packs_used(name)
    for row in _rows(store, store.tables.packs.export_rows(), "packs"):
        if row["name"] in used:
            yield {
                "record": "pack",
                "name": row["name"],
                "version": row["version"],
                "content_hash": row["content_hash"],
                "document": json.loads(row["document"]),
            }
    for category, field, value in store.tables.packs.all_overrides():
        yield {
            "record": "criteria_override",
            "category": category,
            "field": field,
            "value": json.loads(value),
        }
    cells = {
        row.pop("memory_id"): row
        for row in _rows(store, store.tables.cells.export_rows(name), "memory_cells")
    }
    for row in _rows(store, store.tables.memories.export_rows(name), "memories"):
        row.pop("project")
        yield {"record": "memory", **row, "cell": cells.get(row["id"])}
    for row in _rows(store, store.tables.composites.export_rows(name), "composites"):
        members = store.tables.composites.export_members(row["id"])
        yield {"record": "composite", **row, "members": [list(m) for m in members]}
    for row in _rows(store, store.tables.composites.export_events(name), "composite_events"):
        yield {"record": "composite_event", **row}
    for row in _rows(store, store.tables.entities.export_rows(name), "entities"):
        row.pop("project")
        yield {"record": "entity", **row}
    for row in _rows(store, store.tables.entities.export_links(name), "memory_entities"):
        yield {"record": "memory_entity", **row}
    for row in _rows(store, store.tables.relations.export_rows(name), "relations"):
        row.pop("project")
        yield {"record": "relation", **row}
    yield from _project_rows(store, name, _TABLES)
    for row in _rows(store, store.tables.proposals.of_project(name), "proposals"):
        row.pop("project")
        yield {"record": "proposal", **row}
    for row in _rows(store, store.tables.proposals.export_events(name), "proposal_events"):
        yield {"record": "proposal_event", **row}
    for row in _rows(
        store, store.tables.proposals.export_applications(name), "proposal_applications"
    ):
        yield {"record": "proposal_application", **row}
    yield from _project_rows(store, name, _LATER)
    if store.tables.walk.has_table("forgotten"):
        for row in _rows(store, store.tables.memories.export_forgotten(name), "forgotten"):
            row.pop("project")
            yield {"record": "forgotten", **row}


def _project_rows(store: Store, name: str, specs: Iterable[_Table]) -> Iterator[dict[str, Any]]:
    """The rows of ``name`` in each table of ``specs``, as records."""
    walk = store.tables.walk
    for spec in specs:
        if not walk.has_table(spec.table):
            continue
        for row in _rows(store, walk.rows(spec.table, {"project": name}, spec.order), spec.table):
            row.pop("project")
            yield {"record": spec.record, **row}


def dump_lines(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    """Each record as one line of JSON (keys sorted, so two exports compare line by line)."""
    for record in records:
        yield json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"


def import_project(
    store: Store, lines: Iterable[str], *, project: str | None = None
) -> dict[str, int]:
    """Load an export into ``store`` as ``project`` (default: the exported project's name).

    The project must not exist in the store yet (:class:`ProjectConflict`);
    packs the store lacks are installed from the export; an override is
    applied only where the store has no override of its own. One
    transaction: a bad line (:class:`InvalidExport`, naming it) writes
    nothing. Returns the records loaded per type.
    """
    records = list(_parse(lines))
    header = records[0][1]
    name = project or header["project"]
    if has_project(store, name):
        raise ProjectConflict(
            f"project {name!r} already exists in store {store.path}; "
            "import under another name (--project NAME) or delete it first"
        )
    loaded = dict.fromkeys(ORDER[1:], 0)
    ids: dict[str, dict[int, int]] = {
        space: {}
        for space in (
            "memories",
            "entities",
            "composites",
            "facts",
            "compiled_truths",
            "proposals",
        )
    }
    links: list[tuple[int, int | None, str | None]] = []  # new id, successor, merged_from
    later: list[_Later] = []  # references to rows that may come after this one
    with store.atomic():
        for number, record in records[1:]:
            kind = record.pop("record")
            try:
                if kind == "memory":
                    links.append(_load_memory(store, record, name, ids))
                elif kind == "entity":
                    truth = record.pop("truth_id", None)  # its Compiled Truth comes later
                    if header["version"] < 2:  # version 1 carried no truths: none to point at
                        truth = None
                    new = _insert(store, "entities", {**record, "project": name}, ids["entities"])
                    later.append(
                        _Later(number, "entities", new, "truth_id", "compiled_truths", truth)
                    )
                elif kind in _BY_RECORD:
                    later.extend(_load_row(store, _BY_RECORD[kind], record, name, ids, number))
                else:
                    _LOADERS[kind](store, record, name, ids)
            except KeyError as error:
                raise InvalidExport(
                    f"line {number}: the {kind} record names an unknown id or field {error}"
                ) from error
            except store.db.conn.IntegrityError as error:
                raise InvalidExport(f"line {number}: the {kind} record: {error}") from error
            loaded[kind] += 1
        _relink(store, ids["memories"], links)
        _relink_rows(store, ids, later)
    return loaded


def _rows(store: Store, rows: Iterable[dict[str, Any]], table: str) -> Iterator[dict[str, Any]]:
    """``rows`` of ``table`` with their stored columns only (generated ones aside)."""
    stored = _stored_columns(store, table)
    for row in rows:
        yield {key: value for key, value in row.items() if key in stored}


def _stored_columns(store: Store, table: str) -> list[str]:
    return store.tables.walk.columns(table)


def _parse(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each record with its line number, checked for type and order."""
    position = 0
    seen = False
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InvalidExport(f"line {number}: not JSON ({error.msg})") from error
        kind = record.get("record") if isinstance(record, dict) else None
        if kind not in ORDER:
            raise InvalidExport(f"line {number}: unknown record type {kind!r}")
        if not seen and kind != "header":
            raise InvalidExport(f"line {number}: an export starts with its header")
        if not seen and (record.get("format") != FORMAT or record.get("version") not in READS):
            raise InvalidExport(
                f"line {number}: not a {FORMAT} file of version "
                f"{' or '.join(map(str, READS))} "
                f"(format {record.get('format')!r}, version {record.get('version')!r})"
            )
        if seen and (kind == "header" or ORDER.index(kind) < position):
            raise InvalidExport(f"line {number}: a {kind} record after the {ORDER[position]}s")
        position = ORDER.index(kind)
        seen = True
        yield number, record
    if not seen:
        raise InvalidExport("the export is empty")


def _insert(
    store: Store,
    table: str,
    row: dict[str, Any],
    ids: dict[int, int] | None = None,
    *,
    keep_id: bool = False,
) -> int:
    """Insert ``row`` keeping its id when it is free (else a new one, noted in ``ids``).

    ``keep_id``: the row's key is the project's own (an observation's id), so
    it is inserted as it is.
    """
    columns = set(_stored_columns(store, table))
    unknown = sorted(set(row) - columns)
    if unknown:
        raise InvalidExport(f"{table}: this store has no column(s) {', '.join(unknown)}")
    old = None if keep_id else row.get("id")
    if old is not None and store.tables.walk.has_rows(table, {"id": old}):
        row = {k: v for k, v in row.items() if k != "id"}
    new = store.tables.walk.insert(table, row)
    if ids is not None and old is not None:
        ids[old] = new
    return new


def _load_pack(store: Store, record: dict[str, Any], project: str, ids: Any) -> None:
    from plugin_sdk.packs.documents import validate_pack

    if any(p.name == record["name"] for p in store.packs.installed()):
        return  # the store's own version of the pack governs it
    store.packs.install(validate_pack(record["document"], source=f"export:{record['name']}"))


def _load_override(store: Store, record: dict[str, Any], project: str, ids: Any) -> None:
    store.tables.packs.import_override(
        record["category"], record["field"], json.dumps(record["value"], ensure_ascii=False)
    )


def _load_memory(
    store: Store, record: dict[str, Any], project: str, ids: dict[str, dict[int, int]]
) -> tuple[int, int | None, str | None]:
    cell = record.pop("cell", None)
    # References to other memories are set once every memory is in (_relink).
    successor = record.pop("superseded_by", None)
    merged_from = record.pop("merged_from", None)
    # A memory of a retired category (archived when its pack dropped it) goes in
    # quarantined, which the insert trigger allows, and gets its status back.
    status = record.get("status")
    retired = (
        status not in ("active", "pending", "quarantined")
        and record.get("category") not in store.category_names()
    )
    row = {**record, "project": project, **({"status": "quarantined"} if retired else {})}
    try:
        new = _insert(store, "memories", row, ids["memories"])
        if retired:
            store.tables.memories.set_columns(new, {"status": status})
    except store.db.conn.IntegrityError as error:
        raise InvalidExport(f"memory {record.get('id')}: {error}") from error
    if cell:
        _insert(store, "memory_cells", {**cell, "memory_id": new})
    return new, successor, merged_from


def _load_composite(store: Store, record: dict[str, Any], project: str, ids: Any) -> None:
    members = record.pop("members")
    record["head_memory_id"] = ids["memories"][record["head_memory_id"]]
    new = _insert(store, "composites", record, ids["composites"])
    for member, position in members:
        _insert(
            store,
            "composite_members",
            {
                "composite_id": new,
                "member_memory_id": ids["memories"][member],
                "position": position,
            },
        )


def _load_memory_entity(store: Store, record: dict[str, Any], project: str, ids: Any) -> None:
    record["memory_id"] = ids["memories"][record["memory_id"]]
    record["entity_id"] = ids["entities"][record["entity_id"]]
    _insert(store, "memory_entities", record)


def _load_relation(store: Store, record: dict[str, Any], project: str, ids: Any) -> None:
    record["source_id"] = ids["entities"][record["source_id"]]
    record["target_id"] = ids["entities"][record["target_id"]]
    _insert(store, "relations", {**record, "project": project}, {})


@attrs.frozen
class _Later:
    """A reference set once every row is in: ``table.column`` of row ``new``, ``old`` in ``space``."""

    line: int
    table: str
    new: int
    column: str
    space: str
    old: int | None


def _load_row(
    store: Store,
    spec: _Table,
    record: dict[str, Any],
    project: str,
    ids: dict[str, dict[int, int]],
    line: int,
) -> list[_Later]:
    """Insert one row of a :data:`_TABLES` table; its later references wait for :func:`_relink_rows`."""
    deferred = {column: record.pop(column, None) for column in spec.later}
    for column, space in spec.refs.items():
        if record.get(column) is not None:
            record[column] = ids[space][record[column]]
    if spec.smaller_first and record["memory_id"] > record["other_memory_id"]:
        _flip_pair(record)
    row = {**record, "project": project}
    own = {} if spec.space is None else ids[spec.space]
    new = _insert(store, spec.table, row, own, keep_id=spec.own_key)
    return [
        _Later(line, spec.table, new, column, spec.later[column], old)
        for column, old in deferred.items()
    ]


def _flip_pair(record: dict[str, Any]) -> None:
    """Store a memory conflict smaller id first again, its values swapped with it."""
    record["memory_id"], record["other_memory_id"] = record["other_memory_id"], record["memory_id"]
    pair = json.loads(record["pair"])
    flipped = {"values": pair["other_values"], "other_values": pair["values"]}
    record["pair"] = json.dumps(flipped, ensure_ascii=False)


def _relink_rows(store: Store, ids: dict[str, dict[int, int]], later: list[_Later]) -> None:
    """Set the references to rows that came later (an entity's truth, a truth's successor)."""
    for ref in later:
        if ref.old is None:
            continue
        try:
            target = ids[ref.space][ref.old]
        except KeyError:
            raise InvalidExport(
                f"line {ref.line}: {ref.column} {ref.old} names no {ref.space} row of the export"
            ) from None
        store.tables.walk.update(ref.table, {ref.column: target}, {"id": ref.new})


def _load_forgotten(store: Store, record: dict[str, Any], project: str, ids: Any) -> None:
    record["memory_id"] = ids["memories"][record["memory_id"]]
    _insert(store, "forgotten", {**record, "project": project})


def _load_composite_event(store: Store, record: dict[str, Any], project: str, ids: Any) -> None:
    record["composite_id"] = ids["composites"][record["composite_id"]]
    _insert(store, "composite_events", record, {})


def _load_proposal(store: Store, record: dict[str, Any], project: str, ids: Any) -> None:
    """A proposal, the memory ids its evidence and diff name renumbered with the memories."""
    from plugin_sdk.proposals.filing import diff_hash

    memories = ids["memories"]
    evidence = json.loads(record["evidence"])
    if any(memories.get(i, i) != i for i in evidence):
        record["evidence"] = json.dumps(sorted(memories.get(i, i) for i in evidence))
    diff = json.loads(record["diff"])
    if record["diff_type"] == "memory_entry" and isinstance(diff, dict):
        for key in ("id", "into"):
            if isinstance(diff.get(key), int):
                diff[key] = memories.get(diff[key], diff[key])
        if isinstance(diff.get("sources"), list):
            diff["sources"] = [memories.get(i, i) for i in diff["sources"]]
        if diff != json.loads(record["diff"]):  # renumbered: the text and its hash follow
            record["diff"] = json.dumps(diff, ensure_ascii=False)
            record["diff_hash"] = diff_hash(diff)
    _insert(store, "proposals", {**record, "project": project}, ids["proposals"])


def _load_proposal_event(store: Store, record: dict[str, Any], project: str, ids: Any) -> None:
    record["proposal_id"] = ids["proposals"][record["proposal_id"]]
    _insert(store, "proposal_events", record, {})


def _load_proposal_application(
    store: Store, record: dict[str, Any], project: str, ids: Any
) -> None:
    record["proposal_id"] = ids["proposals"][record["proposal_id"]]
    _insert(store, "proposal_applications", record)


def _load_header(store: Store, record: dict[str, Any], project: str, ids: Any) -> None:
    raise InvalidExport("a second header")


_LOADERS = {
    "header": _load_header,
    "pack": _load_pack,
    "criteria_override": _load_override,
    "composite": _load_composite,
    "memory_entity": _load_memory_entity,
    "relation": _load_relation,
    "forgotten": _load_forgotten,
    "composite_event": _load_composite_event,
    "proposal": _load_proposal,
    "proposal_event": _load_proposal_event,
    "proposal_application": _load_proposal_application,
}
_BY_RECORD = {spec.record: spec for spec in (*_TABLES, *_LATER)}


def _relink(
    store: Store, ids: dict[int, int], links: list[tuple[int, int | None, str | None]]
) -> None:
    """Restore ``superseded_by`` and ``merged_from`` through the id map."""
    for new, successor, merged_from in links:
        if successor is None and merged_from is None:
            continue
        if merged_from is not None:
            merged_from = json.dumps([ids.get(i, i) for i in json.loads(merged_from)])
        store.tables.memories.relink(
            new, None if successor is None else ids.get(successor, successor), merged_from
        )
