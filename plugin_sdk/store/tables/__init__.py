"""The owners of the store's tables: one module per group, holding all of its statements.

The owners sit in four packages: ``memories/`` (a memory's rows and its
indexes), ``composites/`` (composites, reference sets, the table of
contents), ``grid/`` (entities, cells, relations, facts, truths) and
``queues/`` (observations, proposals, the hook queue, sessions);
``packs.py`` (packs, categories, criteria) and ``walk.py`` (any table by
name) stand beside them. ``schema/schema.sql`` names each table's owner;
``tests/store/test_owners.py`` fails when a table is written from anywhere
else, or when SQL appears outside the store layer. Areas reach an owner as
``store.tables.<group>`` and call its typed methods: reads, writes, the
batch forms, and the rules that go with the rows (status transitions,
half-life on insert, strength updates). Each owner is imported on first use,
so importing ``tables.queues.hooks`` (what the lean hook entry point runs)
imports no sqlite-utils.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store
    from plugin_sdk.store.tables.composites.composites import CompositeRows
    from plugin_sdk.store.tables.composites.refsets import RefsetRows
    from plugin_sdk.store.tables.composites.toc import TocRows
    from plugin_sdk.store.tables.grid.cells import CellRows
    from plugin_sdk.store.tables.grid.entities import EntityRows
    from plugin_sdk.store.tables.grid.facts import FactRows
    from plugin_sdk.store.tables.grid.relations import RelationRows
    from plugin_sdk.store.tables.grid.truths import TruthRows
    from plugin_sdk.store.tables.memories.memories import MemoryRows
    from plugin_sdk.store.tables.memories.neardup import NeardupRows
    from plugin_sdk.store.tables.memories.search import SearchRows
    from plugin_sdk.store.tables.memories.vectors import VectorRows
    from plugin_sdk.store.tables.packs import PackRows
    from plugin_sdk.store.tables.queues.observations import ObservationRows
    from plugin_sdk.store.tables.queues.proposals import ProposalRows
    from plugin_sdk.store.tables.queues.sessions import SessionRows
    from plugin_sdk.store.tables.walk import TableWalk


class Tables:
    """A store's table owners, each built on first use."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @cached_property
    def memories(self) -> MemoryRows:
        """memories, forgotten, memory_outcomes, insert_triggers_paused."""
        if self._store.engine == "postgresql":
            from plugin_sdk.store.postgres.memories import PgMemoryRows

            return PgMemoryRows(self._store)
        from plugin_sdk.store.tables.memories.memories import MemoryRows

        return MemoryRows(self._store)

    @cached_property
    def search(self) -> SearchRows:
        """memories_fts, search_settings, token_counts."""
        from plugin_sdk.store.tables.memories.search import SearchRows

        return SearchRows(self._store)

    @cached_property
    def toc(self) -> TocRows:
        """toc_rank (outside its triggers)."""
        from plugin_sdk.store.tables.composites.toc import TocRows

        return TocRows(self._store)

    @cached_property
    def packs(self) -> PackRows:
        """packs, categories, criteria, criteria_history."""
        from plugin_sdk.store.tables.packs import PackRows

        return PackRows(self._store)

    @cached_property
    def composites(self) -> CompositeRows:
        """composites, composite_members, composite_events."""
        from plugin_sdk.store.tables.composites.composites import CompositeRows

        return CompositeRows(self._store)

    @cached_property
    def refsets(self) -> RefsetRows:
        """reference_sets, reference_set_items."""
        from plugin_sdk.store.tables.composites.refsets import RefsetRows

        return RefsetRows(self._store)

    @cached_property
    def entities(self) -> EntityRows:
        """entities, memory_entities."""
        from plugin_sdk.store.tables.grid.entities import EntityRows

        return EntityRows(self._store)

    @cached_property
    def cells(self) -> CellRows:
        """memory_cells, grid_overrides, grid_history."""
        from plugin_sdk.store.tables.grid.cells import CellRows

        return CellRows(self._store)

    @cached_property
    def relations(self) -> RelationRows:
        """relations."""
        from plugin_sdk.store.tables.grid.relations import RelationRows

        return RelationRows(self._store)

    @cached_property
    def observations(self) -> ObservationRows:
        """observations, entity_observations."""
        from plugin_sdk.store.tables.queues.observations import ObservationRows

        return ObservationRows(self._store)

    @cached_property
    def facts(self) -> FactRows:
        """facts, conflicts, memory_conflicts."""
        from plugin_sdk.store.tables.grid.facts import FactRows

        return FactRows(self._store)

    @cached_property
    def truths(self) -> TruthRows:
        """compiled_truths, truth_impacts."""
        from plugin_sdk.store.tables.grid.truths import TruthRows

        return TruthRows(self._store)

    @cached_property
    def proposals(self) -> ProposalRows:
        """proposals, proposal_events, proposal_applications."""
        from plugin_sdk.store.tables.queues.proposals import ProposalRows

        return ProposalRows(self._store)

    @cached_property
    def sessions(self) -> SessionRows:
        """session_meta, injections, dreamer_state, transcript_imports."""
        from plugin_sdk.store.tables.queues.sessions import SessionRows

        return SessionRows(self._store)

    @cached_property
    def vectors(self) -> VectorRows:
        """memory_vectors, vector_state, vector_changes."""
        if self._store.engine == "postgresql":
            from plugin_sdk.store.postgres.vectors import PgVectorRows

            return PgVectorRows(self._store)
        from plugin_sdk.store.tables.memories.vectors import VectorRows

        return VectorRows(self._store)

    @cached_property
    def neardup(self) -> NeardupRows:
        """neardup_bands, neardup_dirty."""
        from plugin_sdk.store.tables.memories.neardup import NeardupRows

        return NeardupRows(self._store)

    @cached_property
    def walk(self) -> TableWalk:
        """Any table by name, checked against the schema (project moves, exports, copies)."""
        from plugin_sdk.store.tables.walk import TableWalk

        return TableWalk(self._store)
