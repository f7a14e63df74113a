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

if TYPE_CHECKING:  # what the table serves, for type checkers and editors
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

_EXPORTS = {
    "ACTS": "plugin_sdk.store.models",
    "Admission": "plugin_sdk.plugin.records",
    "Candidate": "plugin_sdk.plugin.records",
    "CandidateRow": "plugin_sdk.plugin.records",
    "Category": "plugin_sdk.store.models",
    "CellDecision": "plugin_sdk.plugin.records",
    "Classification": "plugin_sdk.plugin.records",
    "DreamerTask": "plugin_sdk.plugin.records",
    "Entity": "plugin_sdk.grid.entities",
    "Fact": "plugin_sdk.plugin.records",
    "MEMORY_TYPES": "plugin_sdk.store.models",
    "Malformed": "plugin_sdk.plugin.records",
    "Memory": "plugin_sdk.store.models",
    "Observation": "plugin_sdk.plugin.records",
    "ObservedFact": "plugin_sdk.plugin.records",
    "ObservedRelation": "plugin_sdk.plugin.records",
    "PROJECT_NAME": "plugin_sdk.plugin.hookspecs",
    "ParsedReply": "plugin_sdk.plugin.records",
    "PluginManager": "plugin_sdk.plugin.manager",
    "Prompt": "plugin_sdk.plugin.records",
    "ProposalDraft": "plugin_sdk.proposals.filing",
    "REFERENTS": "plugin_sdk.store.models",
    "Ranked": "plugin_sdk.plugin.records",
    "RetainHandler": "plugin_sdk.plugin.records",
    "Store": "plugin_sdk.store.connection",
    "TaskContext": "plugin_sdk.stages.dreamer",
    "TokenCounter": "plugin_sdk.store.tokens",
    "act_distribution": "plugin_sdk.grid.acts:distribution",
    "dreamer_curate": "plugin_sdk.model.prompts",
    "dreamer_retrospective": "plugin_sdk.model.prompts",
    "grid": "plugin_sdk.grid.policy",
    "has_grid": "plugin_sdk.grid.policy",
    "historian_system": "plugin_sdk.model.prompts",
    "transcript_text": "plugin_sdk.model.prompts",
    "EXPLICIT_NOTE": "plugin_sdk.model.prompts",
    "hookimpl": "plugin_sdk.plugin.hookspecs",
    "hookspec": "plugin_sdk.plugin.hookspecs",
    "indent_lines": "plugin_sdk.model.boundary:contain",
    "contain": "plugin_sdk.model.boundary",
    "entry": "plugin_sdk.model.boundary",
    "make_plugin_manager": "plugin_sdk.plugin.manager",
    "parse_tagged": "plugin_sdk.model.tagged",
    "predominant_act": "plugin_sdk.grid.acts:predominant",
    "interaction_style": "plugin_sdk.grid.acts:style",
    "readable_sql": "plugin_sdk.store.visibility",
    "rule_cell": "plugin_sdk.grid.cells",
    "rule_classification": "plugin_sdk.stages.classify",
    "header_of": "plugin_sdk.stages.classify",
    "inherit_from_header": "plugin_sdk.stages.classify",
    "split_cell": "plugin_sdk.store.models",
}

__all__ = [
    "ACTS",
    "EXPLICIT_NOTE",
    "MEMORY_TYPES",
    "PROJECT_NAME",
    "REFERENTS",
    "Admission",
    "Candidate",
    "CandidateRow",
    "Category",
    "CellDecision",
    "Classification",
    "DreamerTask",
    "Entity",
    "Fact",
    "Malformed",
    "Memory",
    "Observation",
    "ObservedFact",
    "ObservedRelation",
    "ParsedReply",
    "PluginManager",
    "Prompt",
    "ProposalDraft",
    "Ranked",
    "RetainHandler",
    "Store",
    "TaskContext",
    "TokenCounter",
    "act_distribution",
    "contain",
    "dreamer_curate",
    "dreamer_retrospective",
    "entry",
    "grid",
    "has_grid",
    "header_of",
    "historian_system",
    "hookimpl",
    "hookspec",
    "indent_lines",
    "inherit_from_header",
    "interaction_style",
    "make_plugin_manager",
    "parse_tagged",
    "predominant_act",
    "readable_sql",
    "rule_cell",
    "rule_classification",
    "split_cell",
    "transcript_text",
]
__getattr__, __dir__ = exports(__name__, _EXPORTS)
