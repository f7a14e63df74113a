"""The owners of the store's tables: one module per group, holding all of its statements.

``schema/schema.sql`` names each table's owner; ``tests/test_owners.py`` fails
when a table is written from anywhere else, or when SQL appears outside the
store layer. Areas reach an owner as ``store.tables.<group>`` and call its
typed methods: reads, writes, the batch forms, and the rules that go with the
rows (status transitions, half-life on insert, strength updates).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from plugin_sdk.store.tables.cells import CellRows
from plugin_sdk.store.tables.composites import CompositeRows
from plugin_sdk.store.tables.entities import EntityRows
from plugin_sdk.store.tables.facts import FactRows
from plugin_sdk.store.tables.memories import MemoryRows
from plugin_sdk.store.tables.observations import ObservationRows
from plugin_sdk.store.tables.packs import PackRows
from plugin_sdk.store.tables.proposals import ProposalRows
from plugin_sdk.store.tables.refsets import RefsetRows
from plugin_sdk.store.tables.relations import RelationRows
from plugin_sdk.store.tables.search import SearchRows
from plugin_sdk.store.tables.sessions import SessionRows
from plugin_sdk.store.tables.toc import TocRows
from plugin_sdk.store.tables.truths import TruthRows
from plugin_sdk.store.tables.vectors import VectorRows

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class Tables:
    """A store's table owners, each built on first use."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @cached_property
    def memories(self) -> MemoryRows:
        """memories, forgotten, memory_outcomes, insert_triggers_paused."""
        return MemoryRows(self._store)

    @cached_property
    def search(self) -> SearchRows:
        """memories_fts, search_settings, token_counts."""
        return SearchRows(self._store)

    @cached_property
    def packs(self) -> PackRows:
        """packs, categories, criteria, criteria_history."""
        return PackRows(self._store)

    @cached_property
    def composites(self) -> CompositeRows:
        """composites, composite_members, composite_events."""
        return CompositeRows(self._store)

    @cached_property
    def refsets(self) -> RefsetRows:
        """reference_sets, reference_set_items."""
        return RefsetRows(self._store)

    @cached_property
    def entities(self) -> EntityRows:
        """entities, memory_entities."""
        return EntityRows(self._store)

    @cached_property
    def cells(self) -> CellRows:
        """memory_cells, grid_overrides, grid_history."""
        return CellRows(self._store)

    @cached_property
    def relations(self) -> RelationRows:
        """relations."""
        return RelationRows(self._store)

    @cached_property
    def observations(self) -> ObservationRows:
        """observations, entity_observations."""
        return ObservationRows(self._store)

    @cached_property
    def facts(self) -> FactRows:
        """facts, conflicts, memory_conflicts."""
        return FactRows(self._store)

    @cached_property
    def truths(self) -> TruthRows:
        """compiled_truths, truth_impacts."""
        return TruthRows(self._store)

    @cached_property
    def proposals(self) -> ProposalRows:
        """proposals, proposal_events, proposal_applications."""
        return ProposalRows(self._store)

    @cached_property
    def sessions(self) -> SessionRows:
        """session_meta, injections, dreamer_state, transcript_imports."""
        return SessionRows(self._store)

    @cached_property
    def toc(self) -> TocRows:
        """toc_rank (kept by triggers; its reads)."""
        return TocRows(self._store)

    @cached_property
    def vectors(self) -> VectorRows:
        """memory_vectors, vector_state, vector_changes."""
        return VectorRows(self._store)
