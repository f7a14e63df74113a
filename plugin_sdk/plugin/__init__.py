"""The plugin-author API: everything a plugin needs, in one place.

A plugin is a module of functions marked ``@hookimpl`` whose names match the
specifications in :mod:`plugin_sdk.plugin.hookspecs` (the reference: when each
hook fires, its parameters, its return contract). The records those hooks take
and return are exported here too, as are the store types they receive::

    from plugin_sdk.plugin import Candidate, Store, hookimpl

    @hookimpl
    def injection_rank(store: Store, candidates: list[Candidate]) -> list[Candidate]:
        return sorted(candidates, key=lambda c: c.memory_id)

Besides the marker, the records and the types, the helpers memsdk's own
plugins use are exported too, so a plugin can reuse them: the tagged parser
and the prompt builders, the rule-based classifiers' fallbacks, the grid's
vocabulary and policy, act distributions, the boundary for rendering memory
text (``contain``, ``entry``; ``indent_lines`` is ``contain`` by its old
name), and ``readable_sql``: the SQL condition for what a project may read
(its own memories and other projects' shared ones). The built-in plugins
import from here, as a third party would.

Register the module through the ``memsdk`` entry-point group (see
``docs/writing-a-plugin.md``); test it with the fixtures in
:mod:`plugin_sdk.testing`. Modules not exported here or from ``plugin_sdk``
are internal and may change without notice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plugin_sdk._lazy import exports

if TYPE_CHECKING:  # the public names, each written once: served lazily by _lazy.exports
    from plugin_sdk.grid.acts import (
        distribution as act_distribution,
    )
    from plugin_sdk.grid.acts import (
        predominant as predominant_act,
    )
    from plugin_sdk.grid.acts import (
        style as interaction_style,
    )
    from plugin_sdk.grid.cells import (
        rule_cell,
    )
    from plugin_sdk.grid.entities import (
        Entity,
    )
    from plugin_sdk.grid.policy import (
        grid,
        has_grid,
    )
    from plugin_sdk.model.boundary import (
        contain,
        entry,
    )
    from plugin_sdk.model.boundary import (
        contain as indent_lines,
    )
    from plugin_sdk.model.prompts import (
        EXPLICIT_NOTE,
        dreamer_curate,
        dreamer_retrospective,
        historian_system,
        transcript_text,
    )
    from plugin_sdk.model.tagged import (
        parse_tagged,
    )
    from plugin_sdk.plugin.hookspecs import (
        PROJECT_NAME,
        hookimpl,
        hookspec,
    )
    from plugin_sdk.plugin.manager import (
        PluginManager,
        make_plugin_manager,
    )
    from plugin_sdk.plugin.records import (
        Admission,
        Candidate,
        CandidateRow,
        CellDecision,
        Classification,
        DreamerTask,
        Embeddings,
        Fact,
        Malformed,
        Observation,
        ObservedFact,
        ObservedRelation,
        ParsedReply,
        Prompt,
        Ranked,
        RetainHandler,
    )
    from plugin_sdk.proposals.filing import (
        ProposalDraft,
    )
    from plugin_sdk.stages.classify import (
        header_of,
        inherit_from_header,
        rule_classification,
    )
    from plugin_sdk.stages.dreamer import (
        TaskContext,
    )
    from plugin_sdk.store.connection import (
        Store,
    )
    from plugin_sdk.store.models import (
        ACTS,
        MEMORY_TYPES,
        REFERENTS,
        Category,
        Memory,
        split_cell,
    )
    from plugin_sdk.store.tokens import (
        TokenCounter,
    )
    from plugin_sdk.store.visibility import (
        readable_sql,
    )

__getattr__, __dir__ = exports(__name__)
