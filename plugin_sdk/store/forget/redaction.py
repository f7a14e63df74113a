"""Where stored text can be copied, and how a forget takes it out of every copy.

Every TEXT or BLOB column of the schema is in exactly one of three lists,
and ``tests/store/test_forget_schema.py`` walks ``sqlite_master`` to fail for a
column in none of them (so a table added later must be placed here):

- :data:`TEXT_COPIES`: plain text that may quote a memory, an observation or
  a fact; redacted by replacing the text.
- :data:`JSON_COPIES`: JSON documents that may hold such text as a string
  value; only string values change, never the document's shape (a value that
  is not JSON is redacted as plain text).
- :data:`NOT_STORED_TEXT`: reviewed columns that hold no stored text:
  identifiers, hashes, timestamps, statuses, names from a pack, settings, or
  text the forget itself handles (the memory's row, its vectors, the word
  index's shadow tables, which ``forget`` optimizes).

:func:`redact` takes literal needles (a forgotten memory's text, what a
``--secret`` pattern matched in it, and their normalized forms) and,
optionally, the pattern itself, which is matched in the rows of the project
(tables with a ``project`` column) so a secret in an observation that never
became a memory goes too. It counts the rows changed per table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from plugin_sdk.store.normalize import normalize

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

REDACTED = "[forgotten]"

TEXT_COPIES = (
    ("compiled_truths", "markdown"),
    ("conflicts", "detail"),
    ("conflicts", "predicate"),
    ("dreamer_state", "last_error"),
    ("hook_notices", "notice"),
    ("hook_queue", "last_error"),
    ("hook_queue", "summary"),
    ("hook_runs", "last_error"),
    ("entity_observations", "topic"),
    ("facts", "object"),
    ("facts", "object_norm"),
    ("facts", "predicate"),
    ("memories", "note"),
    ("memory_conflicts", "detail"),
    ("memory_outcomes", "note"),
    ("observations", "error"),
    ("observations", "topic"),
    ("proposals", "error"),
    ("proposals", "rationale"),
    ("reference_set_items", "content"),
    ("reference_sets", "note"),
    ("toc_rank", "head"),
    ("toc_rank", "note"),
)
JSON_COPIES = (
    ("composite_events", "detail"),
    ("composites", "layout"),
    ("conflicts", "pair"),
    ("memory_conflicts", "pair"),
    ("observations", "deferred"),
    ("observations", "document"),
    ("proposal_applications", "result"),
    ("proposal_applications", "undo"),
    ("proposal_events", "detail"),
    ("proposals", "diff"),
    ("proposals", "evidence"),
)
#: table -> its columns that hold no stored text ("*": every column), and why.
NOT_STORED_TEXT: dict[str, tuple[str, ...]] = {
    "_sqlite_migrations": ("*",),  # migration names
    "packs": ("*",),  # pack documents, from packs
    "categories": ("*",),  # category names and labels, from packs
    "criteria": ("*",),  # category criteria, from packs and overrides
    "criteria_history": ("*",),
    "grid_overrides": ("*",),  # grid settings
    "grid_history": ("*",),
    "search_settings": ("*",),
    "vector_state": ("*",),
    "session_meta": ("*",),  # session ids and prompt hashes
    "token_counts": ("*",),  # hashes and counts
    "transcript_imports": ("*",),  # paths, cursors and hashes of transcripts
    "forgotten": ("*",),  # tombstones: hash and the reason a person gave, never the text
    "insert_triggers_paused": ("*",),
    # curate's MinHash bands: integer hashes of word sets, ids and word counts, never
    # text; forget drops the forgotten memory's rows (store/tables/memories/neardup.py)
    "neardup_bands": ("*",),
    "neardup_dirty": ("*",),
    "vector_changes": ("*",),
    "read_records": ("*",),
    "observation_retention": ("*",),  # the retention setting
    "observation_tombstones": (
        "*",
    ),  # pruned observations' ids and hashes, never the text  # counts of what reads recorded late or dropped, per kind
    "hook_notices": ("session_id", "project", "at"),  # the notice itself is redacted
    # the hook queue: transcript paths and sizes, events, times
    "hook_queue": ("project", "session_id", "event", "files", "queued_at", "done_at"),
    "hook_runs": ("project", "event", "last_run_at", "last_ok_at", "last_error_at"),
    # the word index: forget deletes the row's entry and merges it away ('optimize')
    "memories_fts": ("*",),
    "memories_fts_config": ("*",),
    "memories_fts_data": ("*",),
    "memories_fts_docsize": ("*",),
    "memories_fts_idx": ("*",),
    # forget empties the forgotten row's content itself (its hash keeps the row unique)
    "memories": (
        "project",
        "kind",
        "category",
        "normalized_hash",
        "status",
        "scope",
        "merged_from",
        "tokenizer",
        "source",
        "created_at",
        "updated_at",
        "last_seen_at",
        "last_retrieved_at",
        "archived_at",
        "content",
        "occurred_at",
        "fts_scope",
    ),
    "memory_vectors": ("model", "vector", "content_hash", "embedded_at"),  # dropped by id
    "compiled_truths": ("project", "written_by", "created_at"),
    "composite_events": ("event", "at"),
    "composites": ("type", "stale_since", "created_at", "updated_at"),
    "conflicts": ("project", "kind", "status", "resolution", "created_at", "resolved_at"),
    "dreamer_state": (
        "task",
        "project",
        "cursor",
        "status",
        "lease_owner",
        "lease_until",
        "started_at",
        "updated_at",
        "finished_at",
    ),
    "entities": (
        "project",
        "name",
        "type",
        "subtype",
        "memory_type",
        "referent",
        "status",
        "emotional_tag",
        "strength_at",
        "cell_signal",
        "created_at",
        "updated_at",
        "last_seen_at",
        "last_retrieved_at",
    ),  # names are namespace:slug ids
    "entity_observations": ("project", "observation_id", "role", "category", "at"),
    "facts": ("project", "observation_id", "status", "at", "created_at"),
    "injections": ("session_id", "project", "text_hash", "shown", "created_at"),  # ids shown
    "memory_cells": ("memory_type", "referent", "act", "signal", "strength_at"),
    "memory_conflicts": ("project", "source", "status", "resolution", "created_at", "resolved_at"),
    "memory_entities": ("role",),
    "memory_outcomes": ("project", "source", "at"),
    "observations": (
        "project",
        "id",
        "status",
        "source",
        "source_ref",
        "timestamp",
        "category",
        "sentiment",
        "correlation",
        "content_hash",
        "route",
        "handler",
        "review",
        "received_at",
        "processed_at",
        "reviewed_at",
    ),
    "proposal_applications": ("target", "applied_at", "undone_at"),
    "proposal_events": ("event", "actor", "at"),
    "proposals": (
        "project",
        "diff_type",
        "status",
        "diff_hash",
        "source",
        "created_at",
        "updated_at",
    ),
    "reference_set_items": ("normalized_hash",),
    "reference_sets": ("type", "created_at"),
    "relations": ("project", "type", "created_at", "updated_at", "last_seen_at"),
    "toc_rank": ("project", "category", "kind", "last_seen_at", "tokenizer", "shared"),
    "truth_impacts": ("project", "updated_at"),
}


def needles_for(texts: Iterable[str]) -> list[str]:
    """The literal forms to look for: each text, its normalized form and its JSON escapes, longest first."""
    found: set[str] = set()
    for text in texts:
        for form in (text, normalize(text)):
            if form:
                found.update(
                    {form, json.dumps(form)[1:-1], json.dumps(form, ensure_ascii=False)[1:-1]}
                )
    return sorted(found, key=lambda s: (-len(s), s))


def redact(
    store: Store,
    needles: list[str],
    *,
    match: Callable[[str], bool] | None = None,
    substitute: Callable[[str], str] | None = None,
    project: str | None = None,
) -> dict[str, int]:
    """Redact ``needles`` (and ``match``/``substitute``, in ``project``'s rows) from every copy."""
    counts: dict[str, int] = {}
    if not needles and match is None:
        return counts
    postgres = store.engine == "postgresql"
    name = "memsdk_forget_match"
    if match is not None and not postgres:
        store.db.conn.create_function(name, 1, lambda v: int(isinstance(v, str) and match(v)))

    def clean(value: str) -> str:
        for needle in needles:
            value = value.replace(needle, REDACTED)
        return substitute(value) if substitute is not None else value

    # A row is known by SQLite's rowid; on PostgreSQL by its ctid, which
    # stays put inside this transaction (the store's writers wait for it).
    key = "ctid::text" if postgres else "rowid"
    by_key = "ctid = CAST(? AS tid)" if postgres else "rowid = ?"
    has_project = _project_tables(store)
    for table, column, is_json in _columns():
        where = [f"instr({column}, ?) > 0" for _ in needles]
        params: list[Any] = list(needles)
        scoped = match is not None and table in has_project
        if scoped:
            # PostgreSQL runs no Python inside SQL: the project's rows are
            # matched here instead, after the read.
            where.append("(project = ?)" if postgres else f"(project = ? AND {name}({column}))")
            params.append(project or store.project)
        if not where:
            continue
        rows = store.db.execute(
            f"SELECT {key}, {column} FROM {table} WHERE typeof({column}) = 'text' AND "
            f"({' OR '.join(where)})",
            params,
        ).fetchall()
        for rowid, value in rows:
            if (
                postgres
                and scoped
                and match is not None
                and not (match(value) or any(needle in value for needle in needles))
            ):
                continue
            cleaned = _clean_json(value, clean) if is_json else clean(value)
            if cleaned != value:
                store.db.execute(
                    f"UPDATE {table} SET {column} = ? WHERE {by_key}", [cleaned, rowid]
                )
                counts[table] = counts.get(table, 0) + 1
    return counts


def _columns() -> list[tuple[str, str, bool]]:
    return [(t, c, False) for t, c in TEXT_COPIES] + [(t, c, True) for t, c in JSON_COPIES]


def _project_tables(store: Store) -> set[str]:
    tables = {t for t, _c, _j in _columns()}
    return {t for t in tables if "project" in store.db.columns(t)}


def _clean_json(value: str, clean: Callable[[str], str]) -> str:
    try:
        document = json.loads(value)
    except ValueError:
        return clean(value)
    cleaned = _scrub(document, clean)
    return value if cleaned == document else json.dumps(cleaned, ensure_ascii=False, sort_keys=True)


def _scrub(value: Any, clean: Callable[[str], str]) -> Any:
    """``value`` with every string (keys too) cleaned; the shape is kept."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list):
        return [_scrub(item, clean) for item in value]
    if isinstance(value, dict):
        return {clean(key): _scrub(item, clean) for key, item in value.items()}
    return value
