"""The memory API: write, get, search, iter and list, update, archive.

A write is deduplicated on ``(project, category, normalized_hash)``: writing
the same normalized text (see ``normalize.py``) in the same category of the
same project again adds no row; it bumps ``seen_count`` and ``last_seen_at``
on the existing one and returns its id, whatever its status. An archived
memory stays archived (a person archived it on purpose); the result's
``status`` tells the caller.

A write to a category the store does not have (or has retired) raises
:class:`~plugin_sdk.errors.UnknownCategory`, listing the store's categories,
and writes nothing. Text that must be kept although its category is unknown
(a model's reply, say) goes in with :meth:`Memories.quarantine`.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from plugin_sdk.errors import (
    DuplicateMemory,
    ForgottenText,
    InvalidDocument,
    InvalidMemory,
    MemsdkError,
    MergeRefused,
    NotFound,
)
from plugin_sdk.store import driver
from plugin_sdk.store import forget as forgetting
from plugin_sdk.store.forget import FORGOTTEN_PREFIX, is_forgotten
from plugin_sdk.store.limits import check_count, check_id
from plugin_sdk.store.models import (
    ACTS,
    MEMORY_STATUSES,
    Memory,
    SearchHit,
    WriteResult,
    split_cell,
)
from plugin_sdk.store.normalize import normalized_hash
from plugin_sdk.store.search.engine import find, not_live
from plugin_sdk.store.search.ranking import Found
from plugin_sdk.store.search.when import utc_iso
from plugin_sdk.store.tables.memories.memories import memory_row
from plugin_sdk.store.visibility import check_owner, not_found, readable
from plugin_sdk.store.writing import bulk
from plugin_sdk.store.writing.checks import check_content, check_importance

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

#: The orders :meth:`Memories.iter` knows, by name (the SQL is never the caller's).
ORDERS = {
    "id": "id",
    "-id": "id DESC",
    "importance": "importance DESC, seen_count DESC, last_seen_at DESC, id ASC",
    "retrievals": "retrieval_count DESC, id",
}


class Memories:
    """Memory operations on one store; reached as ``store.memories``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # Writing

    def write(
        self,
        content: str,
        category: str,
        *,
        project: str | None = None,
        importance: int = 50,
        scope: str = "project",
        shareable: bool = False,
        source: str = "",
        occurred_at: str | datetime | None = None,
    ) -> WriteResult:
        """Write one memory (deduplicated); see the module docstring.

        ``occurred_at`` is when the remembered thing happened (ISO 8601, or a
        datetime; stored in UTC), as opposed to when it was written. A repeat
        keeps the first time it was given.
        """
        kinds = self._active_kinds()
        with self.store.atomic():
            result = self._upsert(
                kinds, content, category, project, importance, scope, shareable, source, occurred_at
            )
        self._written([result])
        return result

    def write_many(
        self, items: Iterable[Mapping[str, Any]], *, project: str | None = None
    ) -> list[WriteResult]:
        """Write many memories in one transaction: all of them, or none.

        Each item is a mapping with ``content`` and ``category`` and optionally
        ``importance``, ``scope``, ``shareable``, ``source``, ``project`` and
        ``occurred_at``.
        An error names the item's position; nothing from the batch is kept.
        The end state is that of writing the items one by one (a repeat inside
        the batch folds into the first item of its key), reached with a
        statement per table per batch: see ``store/writing/bulk.py``.
        """
        results = bulk.write_many(self.store, items, project)
        self._written(results)
        return results

    def write_here(
        self,
        kinds: Mapping[str, str],
        content: str,
        category: str,
        *,
        importance: int = 50,
        source: str = "",
        occurred_at: str | datetime | None = None,
    ) -> WriteResult:
        """:meth:`write`, inside the caller's open transaction (or savepoint), without the event.

        ``kinds`` maps the active categories to their kinds (:meth:`active_kinds`),
        read once by a caller writing many. The caller reports the write with
        :meth:`announce` (the Retain Job: inside the observation's
        :meth:`~plugin_sdk.store.connection.Store.savepoint`, so a rolled-back
        observation reports nothing).
        """
        return self._upsert(
            kinds, content, category, None, importance, "project", False, source, occurred_at
        )

    def active_kinds(self) -> dict[str, str]:
        """The active categories' kinds, by name."""
        return self._active_kinds()

    def announce(self, results: list[WriteResult]) -> None:
        """Report memories written with :meth:`write_here` (``memory_written``, after the commit).

        Registered like every store event: dropped if the enclosing block or
        savepoint rolls back.
        """
        self._written(results)

    def _written(self, results: list[WriteResult]) -> None:
        hooks = self.store.plugins.hook
        batch, each = hooks.memories_written, hooks.memory_written
        if not results or not (batch.get_hookimpls() or each.get_hookimpls()):
            return

        def notify() -> None:
            if batch.get_hookimpls():
                batch(store=self.store, written=[(r.id, r.created) for r in results])
            if each.get_hookimpls():
                for result in results:
                    each(store=self.store, memory_id=result.id, created=result.created)

        self.store.after_commit(notify)

    def quarantine(
        self,
        content: str,
        category: str,
        *,
        reason: str,
        project: str | None = None,
        source: str = "",
    ) -> WriteResult:
        """Keep text whose category the store does not know, as a quarantined row.

        Quarantined rows are never searched, listed or injected by default;
        :meth:`update` with a known category releases one.
        """
        text = check_content(content)
        project = project or self.store.project
        digest = normalized_hash(text)
        self.refuse_forgotten(project, digest)
        row = memory_row(
            project,
            "content",
            category,
            text,
            digest,
            "quarantined",
            50,
            "project",
            0,
            source,
            reason,
            None,
            None,
            self.store.now(),
            None,
        )
        with self.store.atomic():
            row_id, seen, status = self.store.tables.memories.upsert(row)
        return WriteResult(id=row_id, created=seen == 1, status=status, seen_count=seen)

    def _upsert(
        self,
        kinds: Mapping[str, str],
        content: str,
        category: str,
        project: str | None,
        importance: int,
        scope: str,
        shareable: bool,
        source: str,
        occurred_at: str | datetime | None = None,
    ) -> WriteResult:
        if category not in kinds:
            raise self.store.unknown_category(category)
        text = check_content(content)
        check_importance(importance)
        project = project or self.store.project
        digest = normalized_hash(text)
        self.refuse_forgotten(project, digest)
        occurred = utc_iso(occurred_at)
        tokenizer = self.store.tokenizer
        row_id, seen, status = self.store.tables.memories.upsert(
            memory_row(
                project,
                kinds[category],
                category,
                text,
                digest,
                "active",
                int(importance),
                scope,
                int(bool(shareable)),
                source,
                None,
                tokenizer.count(text),
                tokenizer.name,
                self.store.now(),
                occurred,
            )
        )
        return WriteResult(id=row_id, created=seen == 1, status=status, seen_count=seen)

    def refuse_forgotten(self, project: str, digest: str) -> None:
        """Raise :class:`ForgottenText` if text of this hash was forgotten in the project."""
        memory_id = self.store.tables.memories.forgotten_id(project, digest)
        if memory_id is not None:
            raise ForgottenText(memory_id)

    def _active_kinds(self) -> dict[str, str]:
        return self.store.tables.packs.active_kinds()

    # Reading

    def get(self, memory_id: int, *, project: str | None = None) -> Memory:
        """One memory by id that ``project`` (default: the store's) may read.

        :class:`NotFound` if there is none, if it is another project's and not
        shared (see ``visibility.py``), or if it was forgotten.
        """
        project = project or self.store.project
        check_id(memory_id)
        row = self.store.tables.memories.by_id(memory_id)
        if row is None or not readable(row, project):
            raise not_found(memory_id, f"project {project!r}")
        if is_forgotten(row):
            raise NotFound(f"memory {memory_id} was forgotten; its text is gone")
        return Memory.from_row(row)

    def own(self, memory_id: int, *, project: str | None = None, doing: str = "change") -> Memory:
        """A memory ``project`` (default: the store's) owns and so may change.

        Another project's memory is :class:`NotFound`, or
        :class:`~plugin_sdk.errors.ReadOnlyMemory` when it is shared.
        """
        project = project or self.store.project
        memory = self.get(memory_id, project=project)
        check_owner(memory, project, doing=doing)
        return memory

    def search(
        self,
        query: str,
        *,
        project: str | None = None,
        category: str | None = None,
        limit: int = 20,
        include_archived: bool = False,
        include_superseded: bool = False,
        raw: bool = False,
    ) -> list[SearchHit]:
        """Search the memories a project may read, best first; see ``docs/search.md``.

        That is the project's memories and other projects' shared ones (see
        ``visibility.py``).

        ``query`` is plain language, as typed: its content words are looked
        up (stopwords left out, porter stemming, any word may match), and
        memories matching more of them, and matching them as phrases, rank
        first, with context and store signals fused in (``ranking.py``).
        Nothing typed raises. ``raw=True`` passes FTS5 query syntax (``OR``,
        ``NEAR``, prefix ``*``) through instead; a malformed expression raises
        :class:`InvalidMemory`.

        Live (active) memories are searched through the full-text index.
        ``include_archived`` / ``include_superseded`` add those memories of the
        project holding a content word (a scan of those rows, ranked after
        the live ones). Quarantined memories are never searched.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidMemory("search query is empty")
        try:  # a query is read, never stored: lone surrogates are dropped, not refused
            check_count(limit, "limit", minimum=1)
        except InvalidDocument as error:
            raise InvalidMemory(str(error)) from error
        project = project or self.store.project
        found = find(self.store, query, project=project, limit=limit, category=category, raw=raw)
        hits = self._hits(found[:limit])
        statuses = [
            s
            for s, on in (("archived", include_archived), ("superseded", include_superseded))
            if on
        ]
        if statuses and len(hits) < limit and not raw:
            rows = not_live(self.store, query, project, category, statuses, limit - len(hits))
            hits += [
                SearchHit(Memory.from_row(row), rank=0.0, why=(f"{row['status']}, matched",))
                for row in rows
            ]
        ranked = self.store.plugins.hook.search_rank(store=self.store, query=query, hits=hits)
        return list(ranked) if ranked is not None else hits

    def _hits(self, found: list[Found]) -> list[SearchHit]:
        if not found:
            return []
        rows = self.store.tables.memories.by_ids([hit.memory_id for hit in found])
        return [
            SearchHit(
                memory=Memory.from_row(rows[hit.memory_id]),
                rank=-hit.score,
                score=hit.score,
                why=tuple(dict.fromkeys(hit.why)),
                evidence=round(hit.evidence, 6),
            )
            for hit in found
            if hit.memory_id in rows
        ]

    def iter(
        self,
        *,
        project: str | None = None,
        status: str | Sequence[str] | None = "active",
        category: str | Sequence[str] | None = None,
        kind: str | None = None,
        cell: str | None = None,
        act: str | None = None,
        min_id: int | None = None,
        max_id: int | None = None,
        after_id: int | None = None,
        min_seen: int | None = None,
        min_retrievals: int | None = None,
        order: str = "id",
        limit: int | None = None,
        offset: int = 0,
    ) -> Iterator[Memory]:
        """Memories of a project, streamed one at a time (never the whole table at once).

        Filters (all optional; every value is a bound parameter):

        - ``project``: default the store's; ``status``: one, several, or
          ``None`` for any (default ``"active"``); ``category``: one or
          several (an empty list matches nothing); ``kind``;
        - ``cell`` (``"episodic.self"``) and ``act`` (``"directive"``): the
          memories classify placed there (see ``cells.py``);
        - ``min_id`` and ``max_id`` (inclusive); ``after_id``: the memories
          after this id in the order (``"id"`` or ``"-id"``), for batches;
        - ``min_seen`` and ``min_retrievals``: at least this ``seen_count``
          or ``retrieval_count``.

        ``order`` is one of :data:`ORDERS`: ``"id"`` (oldest first, the
        default), ``"-id"`` (newest first), ``"importance"`` (the documented
        importance order with its tie-breaks) or ``"retrievals"`` (most
        retrieved first, then oldest). ``limit`` and ``offset`` bound the
        result. Rows are read as the caller iterates: SQLite steps the
        statement; PostgreSQL fetches 500 rows at a time from a server-side
        cursor (``WITH HOLD``: the statement's snapshot, so writes between
        rows, in or out of a transaction, do not end it). On SQLite, rows a
        caller writes while iterating may or may not come in the stream; to
        read the same way on both engines, read in batches (``list`` with
        ``after_id`` and ``limit``).
        """
        where, params = self._select(
            project=project,
            status=status,
            category=category,
            kind=kind,
            cell=cell,
            act=act,
            min_id=min_id,
            max_id=max_id,
            after_id=after_id,
            min_seen=min_seen,
            min_retrievals=min_retrievals,
            order=order,
            limit=limit,
            offset=offset,
        )
        if where is None:
            return
        paged = limit is not None or bool(offset)
        for row in self.store.tables.memories.select(where, ORDERS[order], params, paged):
            yield Memory.from_row(row)

    def list(
        self,
        *,
        project: str | None = None,
        status: str | Sequence[str] | None = "active",
        category: str | Sequence[str] | None = None,
        kind: str | None = None,
        cell: str | None = None,
        act: str | None = None,
        min_id: int | None = None,
        max_id: int | None = None,
        after_id: int | None = None,
        min_seen: int | None = None,
        min_retrievals: int | None = None,
        order: str = "id",
        limit: int | None = 100,
        offset: int = 0,
    ) -> builtins.list[Memory]:
        """Like :meth:`iter`, as a list of at most ``limit`` memories (default 100; ``None``: all).

        A pass over a large project reads it in batches by id::

            after = 0
            while batch := store.memories.list(after_id=after, limit=200):
                ...
                after = batch[-1].id
        """
        return builtins.list(
            self.iter(
                project=project,
                status=status,
                category=category,
                kind=kind,
                cell=cell,
                act=act,
                min_id=min_id,
                max_id=max_id,
                after_id=after_id,
                min_seen=min_seen,
                min_retrievals=min_retrievals,
                order=order,
                limit=limit,
                offset=offset,
            )
        )

    def find(self, content: str, category: str, *, project: str | None = None) -> Memory | None:
        """The memory, of any status, that writing ``content`` to ``category`` would fold into.

        Two texts are the same memory when their normalized forms are equal
        (see the module docstring); ``None`` when the project has no such memory.
        """
        row = self.store.tables.memories.by_key(
            project or self.store.project, category, normalized_hash(check_content(content))
        )
        return Memory.from_row(row) if row is not None else None

    def _select(
        self,
        *,
        project: str | None,
        status: str | Sequence[str] | None,
        category: str | Sequence[str] | None,
        kind: str | None,
        cell: str | None,
        act: str | None,
        min_id: int | None,
        max_id: int | None,
        after_id: int | None,
        min_seen: int | None,
        min_retrievals: int | None,
        order: str,
        limit: int | None,
        offset: int,
    ) -> tuple[str | None, builtins.list[Any]]:
        """The conditions :meth:`iter` reads with and their values (then the page's), or ``None`` when the filters match nothing."""
        if order not in ORDERS:
            raise InvalidMemory(f"unknown order {order!r}; orders are {', '.join(ORDERS)}")
        try:
            if limit is not None:
                check_count(limit, "limit")
            check_count(offset, "offset")
        except InvalidDocument as error:
            raise InvalidMemory(str(error)) from error
        clauses: builtins.list[str] = [
            "project = ?",
            f"normalized_hash NOT LIKE '{FORGOTTEN_PREFIX}%'",
        ]
        params: builtins.list[Any] = [project or self.store.project]
        statuses = _names(status)
        for value in statuses or ():
            if value not in MEMORY_STATUSES:
                raise InvalidMemory(
                    f"unknown status {value!r}; statuses are {', '.join(MEMORY_STATUSES)}"
                )
        categories = _names(category)
        if statuses == [] or categories == []:
            return None, []
        for column, values in (("status", statuses), ("category", categories)):
            if values is not None:
                clauses.append(f"{column} IN ({', '.join('?' * len(values))})")
                params.extend(values)
        if kind is not None:
            clauses.append("kind = ?")
            params.append(kind)
        if after_id is not None:
            if order not in ("id", "-id"):
                raise InvalidMemory(f"after_id needs order 'id' or '-id', not {order!r}")
            clauses.append("id > ?" if order == "id" else "id < ?")
            params.append(after_id)
        for condition, bound in (
            ("id >= ?", min_id),
            ("id <= ?", max_id),
            ("seen_count >= ?", min_seen),
            ("retrieval_count >= ?", min_retrievals),
        ):
            if bound is not None:
                clauses.append(condition)
                params.append(bound)
        if cell is not None or act is not None:
            clauses.append(_cell_clause(cell, act, params))
        if limit is not None or offset:
            params += [-1 if limit is None else limit, offset]
        return " AND ".join(clauses), params

    def count(self, *, project: str | None = None, status: str = "active") -> int:
        """How many memories of a project have a status (read from an index)."""
        return self.store.tables.memories.count(project or self.store.project, status)

    def counts(self, *, project: str | None = None) -> dict[str, dict[str, int]]:
        """Number of memories per category and status in a project."""
        result: dict[str, dict[str, int]] = {}
        for category, status, n in self.store.tables.memories.counts(project or self.store.project):
            result.setdefault(category, {})[status] = n
        return result

    # Changing

    def update(
        self,
        memory_id: int,
        *,
        content: str | None = None,
        category: str | None = None,
        importance: int | None = None,
        scope: str | None = None,
        shareable: bool | None = None,
        pinned: bool | None = None,
        project: str | None = None,
    ) -> Memory:
        """Change a memory of ``project`` (default: the store's); text and category changes re-hash it.

        If the new text and category would duplicate another memory of the
        project, :class:`DuplicateMemory` names that memory and nothing
        changes. Giving a quarantined memory a known category releases it
        (its status becomes active). New text that was forgotten is refused
        (:class:`ForgottenText`). Read and written under the write lock, so two
        updates at once never undo each other's checks.
        """
        with self.store.atomic():
            return self._update(
                memory_id, content, category, importance, scope, shareable, pinned, project
            )

    def _update(
        self,
        memory_id: int,
        content: str | None,
        category: str | None,
        importance: int | None,
        scope: str | None,
        shareable: bool | None,
        pinned: bool | None,
        project: str | None,
    ) -> Memory:
        current = self.own(memory_id, project=project, doing="update")
        changes: dict[str, Any] = {}
        new_text = current.content if content is None else check_content(content)
        new_category = current.category if category is None else category
        if category is not None:
            kinds = self._active_kinds()
            if category not in kinds:
                raise self.store.unknown_category(category, where=f"memory {memory_id}")
            changes["kind"] = kinds[category]
            if current.status == "quarantined":
                changes["status"] = "active"
        if content is not None or category is not None:
            digest = normalized_hash(new_text)
            if digest != current.normalized_hash:
                self.refuse_forgotten(current.project, digest)
            clash = self.store.tables.memories.clash(
                current.project, new_category, digest, memory_id
            )
            if clash is not None:
                raise DuplicateMemory(memory_id, clash)
            changes.update(content=new_text, category=new_category, normalized_hash=digest)
        # Count again when the text changed, or the row has no count from this
        # store's counter (a released quarantine row, a changed tokenizer).
        counter = self.store.tokenizer
        if new_text != current.content or current.tokenizer != counter.name:
            changes["token_count"] = counter.count(new_text)
            changes["tokenizer"] = counter.name
        if importance is not None:
            check_importance(importance)
            changes["importance"] = int(importance)
        if scope is not None:
            changes["scope"] = scope
        if shareable is not None:
            changes["shareable"] = int(shareable)
        if pinned is not None:
            changes["pinned"] = int(pinned)
        if not changes:
            return current
        changes["updated_at"] = self.store.now()
        with self.store.atomic():
            try:
                self.store.tables.memories.set_columns(memory_id, changes)
                if "content" in changes and new_text != current.content:
                    self.store.composites.mark_stale(memory_id)
            except driver.IntegrityError as error:
                raise MemsdkError(
                    f"memory {memory_id}: update refused by the store: {error}"
                ) from error
        return self.get(memory_id, project=current.project)

    def merge(self, source_ids: Iterable[int], into: int, *, project: str | None = None) -> Memory:
        """Fold ``source_ids`` into memory ``into``, in one transaction.

        Each source becomes ``superseded`` with ``superseded_by = into``; the
        target's ``merged_from`` gains the source ids and its ``seen_count``
        their seen counts. All must share the target's project and category
        (a cross-category merge is refused: categories key deduplication), the
        target must be active, and no source may already be superseded. All
        must be memories of ``project`` (default: the store's).
        """
        # Checked inside the transaction, which holds the write lock from its
        # start: a merge that lost a race to another sees that merge's result.
        with self.store.atomic():
            target = self.own(into, project=project, doing="merge")
            sources = [
                self.own(memory_id, project=project, doing="merge")
                for memory_id in dict.fromkeys(source_ids)
            ]
            if target.status != "active":
                raise MergeRefused(f"merge target {into} is {target.status}, not active")
            for source in sources:
                if source.id == into:
                    raise MergeRefused(f"memory {into} cannot be merged into itself")
                if (source.project, source.category) != (target.project, target.category):
                    raise MergeRefused(
                        f"memory {source.id} ({source.project}, {source.category}) and memory "
                        f"{into} ({target.project}, {target.category}) are not in the same "
                        "project and category; cross-category merges are refused"
                    )
                if source.status in ("superseded", "quarantined"):
                    raise MergeRefused(
                        f"memory {source.id} is {source.status} and cannot be merged"
                    )
            for source in sources:
                self.fold(source.id, into)
        ids = [source.id for source in sources]
        self.store.after_commit(
            lambda: self.store.plugins.hook.memories_merged(
                store=self.store, source_ids=ids, target_id=into
            )
        )
        return self.get(into, project=target.project)

    def fold(self, source_id: int, target_id: int) -> None:
        """Supersede one memory by another (call inside a transaction; no checks).

        Composites follow: see ``Composites.repoint``. So do entity links: the
        target gains the source's actors and subjects (the source keeps its own,
        as a record).
        """
        self.store.tables.memories.supersede(source_id, target_id, self.store.now())
        self.store.tables.entities.links.copy(source_id, target_id)
        self.store.composites.repoint(source_id, target_id)
        self.store.composites.mark_stale(target_id)

    def forget(
        self, memory_id: int, *, reason: str = "", project: str | None = None
    ) -> forgetting.Forgotten:
        """Forget a memory of ``project`` (default: the store's): its text leaves the store.

        See ``store/forget/__init__.py``: the row stays with its text emptied, every
        copy is redacted, and a tombstone refuses the same text coming back.
        """
        return forgetting.forget(self.store, memory_id, reason=reason, project=project)

    def record_retrievals(self, memory_ids: Iterable[int]) -> bool:
        """Count one retrieval for each memory actually shown to a model.

        A memory shown is also a retrieval of every entity it is linked to
        (``memory_entities``): the entity's retrieval boost grows, its decay
        clock does not restart (see ``grid/strength.py``). Inject, its delta,
        expand and recall all count through here.

        A short write after the read (see :meth:`Store.record`): skipped and
        logged, never raised, when the store is busy or read-only. Returns
        whether it was written.
        """
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return True
        now = self.store.now()

        def write() -> None:
            self.store.tables.memories.count_retrievals(ids, now)
            self.store.tables.entities.retrieved_through(ids, now)

        return self.store.record(write, what="retrievals")

    def outcome(
        self, memory_id: int, good: bool, *, source: str = "user", note: str | None = None
    ) -> builtins.list[int]:
        """Report that a memory helped (``good``) or misled; the ids of the entities it moved.

        The report is recorded (``memory_outcomes``) and counts as a positive
        or negative outcome of every entity the memory is linked to, which
        moves their reward factor: a longer or shorter effective half-life.
        """
        memory = self.get(memory_id)
        if memory.project != self.store.project:  # a write: only from the memory's own project
            raise NotFound(f"no memory with id {memory_id} in project {self.store.project!r}")
        now = self.store.now()
        with self.store.atomic():
            self.store.tables.memories.add_outcome(
                memory.project, memory.id, good, source, note, now
            )
            rows = self.store.tables.entities
            entities = rows.links.entity_ids(memory.id)
            rows.add_outcomes(entities, positive=good, now=now)
        return entities

    def outcomes(self, memory_id: int) -> tuple[int, int]:
        """How many good and bad outcomes were reported for a memory."""
        return self.store.tables.memories.outcome_counts(memory_id)

    def archive(self, memory_id: int, *, project: str | None = None) -> Memory:
        """Archive a memory of ``project`` (default: the store's): kept, no longer searched or injected.

        Archiving an archived memory changes nothing. A superseded memory is
        not archived: its successor is the one to archive.
        """
        now = self.store.now()
        with self.store.atomic():  # checked under the write lock: archived once
            current = self.own(memory_id, project=project, doing="archive")
            if current.status == "archived":
                return current
            if current.status == "superseded":
                raise MemsdkError(
                    f"memory {memory_id} is superseded by memory {current.superseded_by}; "
                    "archive that one"
                )
            self.store.tables.memories.archive(memory_id, current.status, now)
            self.store.composites.mark_stale(memory_id)
        self.store.after_commit(
            lambda: self.store.plugins.hook.memory_archived(store=self.store, memory_id=memory_id)
        )
        return self.get(memory_id, project=current.project)


def _names(value: str | Sequence[str] | None) -> list[str] | None:
    """One name or several as a list (``None`` stays ``None``: no filter)."""
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(dict.fromkeys(value))


def _cell_clause(cell: str | None, act: str | None, params: list[Any]) -> str:
    """A condition on ``memories.id`` for memories placed in a cell and/or typed with an act."""
    conditions = []
    if cell is not None:
        conditions.append("memory_type = ? AND referent = ?")
        params.extend(split_cell(cell))
    if act is not None:
        if act not in ACTS:
            raise InvalidMemory(f"unknown act {act!r}; acts are {', '.join(ACTS)}")
        conditions.append("act = ?")
        params.append(act)
    return f"id IN (SELECT memory_id FROM memory_cells WHERE {' AND '.join(conditions)})"
