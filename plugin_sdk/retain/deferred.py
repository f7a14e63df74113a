"""Rows the batched Retain Job writes once per batch instead of once per observation.

Per observation the job gathers (:class:`Deferred`): its entity-observation
links, its memory's links to entities and grid cell, the id of a memory it
created ``active`` while the insert triggers were paused
(``store/writing/paused.py``), to index, and the memory's write result, to
report. When the observation commits they join the batch's
(:meth:`Deferred.commit`); when it fails they are dropped with it
(:meth:`Deferred.drop`). :meth:`Deferred.write` stores the batch's: one
``executemany`` per table, then the full-text and table-of-contents rows of
the new memories; it lets the insert triggers run again and reports the
memories once (``memories_written`` once, ``memory_written`` per memory,
after the commit).

What the batch reads back before then is answered from here or kept beside
it: schema_fit's topic part asks :class:`~plugin_sdk.retain.fit.Topics`,
which this keeps up to date as links commit; the default handler asks
:meth:`Deferred.cell` for a memory's cell; the dedup pass's windows get the
batch's memory links (``dedup.py``). Code the job does not own (a plugin's
handler, ``schema_fit`` or ``classify_cell``) may read any table: the job
writes the batch's rows before it runs (``job.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plugin_sdk.retain.fit import Topics
from plugin_sdk.store.writing import paused

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store
    from plugin_sdk.store.models import WriteResult

Row = tuple[Any, ...]


class Deferred:
    """One batch's deferred rows (see the module docstring)."""

    def __init__(self, store: Store, topics: Topics) -> None:
        self.store = store
        self.topics = topics  # told of the links as observations commit
        self.paused = False  # the insert triggers, in this batch
        # Texts forgotten in the project (none: a memory's text is not looked up). Nothing
        # forgets inside a transaction (forget() refuses to), so this holds for the batch.
        self.forgotten = paused.any_forgotten(store)
        self._links: list[Row] = []
        self._memory_links: list[Row] = []
        self._cells: dict[int, Row] = {}
        self._fed: list[int] = []
        self._staged_links: list[Row] = []
        self._staged_memory_links: list[Row] = []
        self._results: list[WriteResult] = []
        self._staged_results: list[WriteResult] = []
        self._staged_cells: dict[int, Row] = {}
        self._staged_fed: list[int] = []

    def pause(self) -> None:
        """Pause the insert triggers until :meth:`write` (no-op if they are)."""
        if not self.paused:
            paused.pause(self.store)
            self.paused = True

    def link(self, rows: list[Row]) -> None:
        """The current observation's entity-observation links (``link_observation``'s rows)."""
        self._staged_links += rows

    def link_memory(self, rows: list[Row]) -> None:
        """The current observation's memory-entity links (``store.tables.entities.links.insert_many``'s rows)."""
        self._staged_memory_links += rows

    def written(self, result: WriteResult) -> None:
        """The current observation's memory write, reported with the batch's (``announce``)."""
        self._staged_results.append(result)

    def place(self, row: Row) -> None:
        """The current observation's memory cell (``memory_cells``'s columns, memory id first)."""
        self._staged_cells[row[0]] = row

    def fed(self, memory_id: int) -> None:
        """A memory the current observation inserted ``active`` while paused: index it later."""
        self._staged_fed.append(memory_id)

    def cell(self, memory_id: int) -> Row | None:
        """A memory's cell row gathered in this batch, or ``None``."""
        return self._staged_cells.get(memory_id) or self._cells.get(memory_id)

    def commit(self) -> None:
        """The current observation committed: its rows join the batch's."""
        for row in self._staged_links:
            if not row[8]:  # held links do not count as known patterns
                self.topics.add(row[0], row[5], row[4])
        self._links += self._staged_links
        self._memory_links += self._staged_memory_links
        self._results += self._staged_results
        self._cells.update(self._staged_cells)
        self._fed += self._staged_fed
        self.drop()

    def drop(self) -> None:
        """The current observation failed: forget its rows."""
        self._staged_links = []
        self._staged_memory_links = []
        self._staged_results = []
        self._staged_cells = {}
        self._staged_fed = []

    def write(self) -> None:
        """Store the batch's rows, index its new memories, resume the insert triggers."""
        if self._links:
            # By entity, as four of the table's five indexes lead (a stable sort: one
            # entity's rows keep their order, so INSERT OR IGNORE keeps the same one).
            links: list[Row] = sorted(self._links, key=_entity)
            self.store.tables.observations.link_many(links)
        if self._memory_links:
            self.store.tables.entities.links.insert_many(self._memory_links)
        if self._cells:
            self.store.tables.cells.insert_many(list(self._cells.values()))
        if self._fed:
            paused.feed(self.store, self._fed)
        if self._results:
            self.store.memories.announce(self._results)
            self._results = []
        if self.paused:
            paused.resume(self.store)
            self.paused = False
        self._links, self._memory_links, self._cells, self._fed = [], [], {}, []


def _entity(row: Row) -> int:
    return int(row[0])
