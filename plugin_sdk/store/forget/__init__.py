"""Forget: a memory's text leaves the store for good, and stays out.

``store.memories.forget(id, reason=...)`` (a memory of the store's project):

- **the row** stays, because other rows refer to its id, but its text is
  emptied, its hash becomes ``forgotten:<id>``, and it is archived, unpinned
  and no longer shared. ``memories.get`` says it was forgotten; no list,
  search, injection or expand shows it. The full-text index drops its words
  through its trigger.
- **copies** of the text are removed: its membership in composites (and the
  composites it heads; their members stay), the exact pieces fragmentation
  kept in a composite's layout, its items in frozen reference sets, the
  payload of the observations that wrote it, and every place that quotes the
  text in full: Compiled Truth versions, facts, proposals (diff, rationale,
  error), the queue's history and undo records, composite events and the
  dreamer's last errors. Text is replaced by :data:`REDACTED`; inside JSON
  only string values change, never the document's shape. An undo record
  that no longer matches is refused by ``undo`` as any changed row is.
- **a tombstone** in ``forgotten`` says what was forgotten: the id, project,
  category, when and why, never the text. It keeps the text's normalized
  hash, so the same text coming back (a write, the historian, a retain run of
  a replayed observation) is refused with
  :class:`~plugin_sdk.errors.ForgottenText` and reported, until
  :func:`undo` lifts the tombstone (the text is not restored).

Other memories that hold the text inside theirs (the original a fragment
came from, say) are not changed: :attr:`Forgotten.also_in` names them, and
``memsdk forget --secret PATTERN`` finds and forgets every memory a pattern
matches.

Deleted text can linger in free pages and the write-ahead log until they are
reused. :func:`vacuum` checkpoints the log (truncating it), optimizes the
full-text index (merging away its deleted entries) and runs ``VACUUM``, so
the file holds nothing of it; ``secure_delete`` is on while forgetting, so
freed cells are zeroed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import MemsdkError, NotFound
from plugin_sdk.store.forget import redaction
from plugin_sdk.store.limits import check_id
from plugin_sdk.store.patterns import compile_pattern
from plugin_sdk.store.visibility import check_owner, not_found

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

FORGOTTEN_PREFIX = "forgotten:"


@attrs.frozen
class Forgotten:
    """What one forget did: the tombstone's fields, what was redacted where, and what still holds the text."""

    memory_id: int
    project: str
    category: str
    reason: str
    forgotten_at: str
    redacted: dict[str, int]
    also_in: list[int]

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class Tombstone:
    """One row of ``forgotten``: what was forgotten, never the text."""

    memory_id: int
    project: str
    category: str
    reason: str
    forgotten_at: str
    undone_at: str | None

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def forget(
    store: Store, memory_id: int, *, reason: str = "", project: str | None = None
) -> Forgotten:
    """Forget one memory of ``project`` (default: the store's); see the module docstring."""
    with _secure_delete(store), store.atomic():
        done = _forget_row(store, memory_id, reason, project or store.project)
        _merge_word_index(store)
    _checkpoint(store)
    return done


def forget_secret(
    store: Store, pattern: str, *, reason: str = "", project: str | None = None
) -> tuple[list[Forgotten], dict[str, int]]:
    """Forget every memory ``pattern`` matches, and the matched text wherever it is copied.

    One transaction: each matching memory is forgotten as :func:`forget` does,
    then what the pattern matched in them (and, in the project's rows, the
    pattern itself) is redacted from every copy (``redaction.py``): a fact's
    object, an observation's payload, a Compiled Truth, a proposal's diff.
    Returns the forgets and what the pattern's pass redacted where.
    """
    project = project or store.project
    compiled = _compile(pattern)
    with _secure_delete(store), store.atomic():
        ids = matching(store, pattern, project=project)
        if not ids:
            raise NotFound(f"no memory of project {project!r} matches {pattern!r}")
        texts = store.tables.memories.contents(ids)
        done = [_forget_row(store, i, reason, project) for i in ids]
        found = {m.group(0) for text in texts for m in compiled.finditer(text) if m.group(0)}
        counts = redaction.redact(
            store,
            redaction.needles_for(found),
            match=lambda value: compiled.search(value) is not None,
            substitute=lambda value: compiled.sub(redaction.REDACTED, value),
            project=project,
        )
        _merge_word_index(store)
    _checkpoint(store)
    return done, counts


def _forget_row(store: Store, memory_id: int, reason: str, project: str) -> Forgotten:
    check_id(memory_id)
    now = store.now()
    # checked under the write lock: two forgets at once forget once
    row = store.tables.memories.to_forget(memory_id)
    if row is None:
        raise not_found(memory_id, f"project {project!r}")
    fields = dict(zip(("id", "project", "scope", "shareable"), row[:4], strict=True))
    check_owner(fields, project, doing="forget")
    category, text, digest = row[4], row[5], row[6]
    if str(digest).startswith(FORGOTTEN_PREFIX):
        raise MemsdkError(
            f"memory {memory_id} is forgotten already "
            "(memsdk forget --vacuum scrubs what earlier forgets left in the file)"
        )
    store.tables.memories.forget(
        memory_id, project, category, digest, reason, f"{FORGOTTEN_PREFIX}{memory_id}", now
    )
    redacted = _add(
        {
            "reference_set_items": store.tables.refsets.forget_memory(
                memory_id, f"{FORGOTTEN_PREFIX}{memory_id}"
            )
        },
        redaction.redact(store, redaction.needles_for([text]) if text else []),
    )
    store.composites.drop_forgotten(memory_id)
    store.tables.neardup.drop([memory_id])  # curate's bands of the forgotten text
    if hasattr(store, "vectors"):  # the vector index, where it is installed
        store.vectors.drop_vectors([memory_id])
    also_in = store.tables.memories.holding(project, text, memory_id)
    return Forgotten(memory_id, project, category, reason, now, redacted, also_in)


def _add(first: dict[str, int], second: dict[str, int]) -> dict[str, int]:
    total = {k: v for k, v in first.items() if v}
    for key, value in second.items():
        total[key] = total.get(key, 0) + value
    return total


def _merge_word_index(store: Store) -> None:
    """Merge the word index's segments so no deleted entry stays readable in the file.

    SQLite 3.40's FTS5 has no 'secure-delete' option: a deleted row's terms
    stay in the old segment until a merge; 'optimize' merges them all now
    (with ``secure_delete`` on, the pages it frees are zeroed).
    """
    store.tables.search.optimize()


def _checkpoint(store: Store) -> None:
    """Copy the log into the file and empty it (best effort: a reader may hold it)."""
    if store.engine == "sqlite" and not store.db.conn.in_transaction:
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def _compile(pattern: str) -> Any:
    try:
        return compile_pattern(pattern)
    except ValueError as error:
        raise MemsdkError(f"--secret {error}") from error


def matching(store: Store, pattern: str, *, project: str | None = None) -> list[int]:
    """Ids of the project's memories (any status, not forgotten) whose text ``pattern`` matches.

    The pattern is a regular expression in RE2's syntax, matched in linear
    time (``patterns.py``).
    """
    compiled = _compile(pattern)
    rows = store.tables.memories.texts_not_like(project or store.project, f"{FORGOTTEN_PREFIX}%")
    return [memory_id for memory_id, content in rows if compiled.search(content)]


def undo(store: Store, memory_id: int, *, project: str | None = None) -> Tombstone:
    """Lift a tombstone: the text may be stored again (it is not restored)."""
    project = project or store.project
    check_id(memory_id)
    with store.atomic():
        if not store.tables.memories.lift_tombstone(memory_id, project, store.now()):
            raise NotFound(f"no forgotten memory with id {memory_id} in project {project!r}")
    return tombstones(store, project=project, memory_id=memory_id)[0]


def tombstones(
    store: Store, *, project: str | None = None, memory_id: int | None = None
) -> list[Tombstone]:
    """The project's tombstones, oldest first (lifted ones too)."""
    return [
        Tombstone(
            memory_id=row["memory_id"],
            project=row["project"],
            category=row["category"],
            reason=row["reason"],
            forgotten_at=row["forgotten_at"],
            undone_at=row["undone_at"],
        )
        for row in store.tables.memories.tombstones(project or store.project, memory_id)
    ]


def vacuum(store: Store) -> None:
    """Leave no freed page holding old text: checkpoint, optimize the index, ``VACUUM``."""
    if store.db.conn.in_transaction:
        raise MemsdkError("vacuum cannot run inside a transaction")
    if store.engine == "postgresql":
        # VACUUM FULL rewrites each table and index into new files: no old
        # row version of a forgotten text stays in them (docs/postgres.md).
        for table in store.db.table_names():
            store.db.execute(f'VACUUM FULL "{table}"')
        return
    with _secure_delete(store):
        with store.atomic():  # merges the index's segments, dropping deleted entries
            _merge_word_index(store)
        store.db.execute("VACUUM")  # rewrites the file: no free page keeps old text
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # and the log is emptied


@contextmanager
def _secure_delete(store: Store) -> Iterator[None]:
    """``PRAGMA secure_delete`` on for a block: freed cells are overwritten with zeros.

    The block's commit is also made durable (``synchronous = FULL``) whatever
    the store's setting: a forget must not come undone with a power loss.
    On PostgreSQL: ``synchronous_commit = on`` for the block.
    """
    if store.engine == "postgresql":
        store.db.execute("SET synchronous_commit = on")
        try:
            yield
        finally:
            store.db.execute("RESET synchronous_commit")
        return
    before = int(store.db.execute("PRAGMA secure_delete").fetchone()[0])
    synchronous = int(store.db.execute("PRAGMA synchronous").fetchone()[0])
    store.db.execute("PRAGMA secure_delete = 1")
    store.db.execute(f"PRAGMA synchronous = {max(synchronous, 2):d}")
    try:
        yield
    finally:
        store.db.execute(f"PRAGMA secure_delete = {before}")
        store.db.execute(f"PRAGMA synchronous = {synchronous:d}")


def is_forgotten(row: Mapping[str, Any]) -> bool:
    """Whether a ``memories`` row is a forgotten one (its hash is ``forgotten:<id>``)."""
    return str(row["normalized_hash"]).startswith(FORGOTTEN_PREFIX)
