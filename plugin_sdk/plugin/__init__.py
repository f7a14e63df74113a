"""The plugin-author API: everything a plugin needs, in one place.

A plugin is a module of functions marked ``@hookimpl`` whose names match the
specifications in :mod:`plugin_sdk.plugin.hookspecs` (the reference: when each
hook fires, its parameters, its return contract). The records those hooks take
and return are exported here too, as are the store types they receive::

    from plugin_sdk.plugin import Candidate, Store, hookimpl

    @hookimpl
    def injection_rank(store: Store, candidates: list[Candidate]) -> list[Candidate]:
        return sorted(candidates, key=lambda c: c.memory_id)

Register the module through the ``memsdk`` entry-point group (see
``docs/writing-a-plugin.md``); test it with the fixtures in
:mod:`plugin_sdk.testing`. Modules not exported here or from ``plugin_sdk``
are internal and may change without notice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plugin_sdk._lazy import exports

if TYPE_CHECKING:  # what the table serves, for type checkers and editors
    from plugin_sdk.grid.entities import (
        Entity,
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
    from plugin_sdk.store.connection import (
        Store,
    )
    from plugin_sdk.store.models import (
        Category,
        Memory,
    )
    from plugin_sdk.store.tokens import (
        TokenCounter,
    )

_EXPORTS = {
    "Admission": "plugin_sdk.plugin.records",
    "Candidate": "plugin_sdk.plugin.records",
    "Category": "plugin_sdk.store.models",
    "CellDecision": "plugin_sdk.plugin.records",
    "Classification": "plugin_sdk.plugin.records",
    "DreamerTask": "plugin_sdk.plugin.records",
    "Entity": "plugin_sdk.grid.entities",
    "Fact": "plugin_sdk.plugin.records",
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
    "Ranked": "plugin_sdk.plugin.records",
    "RetainHandler": "plugin_sdk.plugin.records",
    "Store": "plugin_sdk.store.connection",
    "TokenCounter": "plugin_sdk.store.tokens",
    "hookimpl": "plugin_sdk.plugin.hookspecs",
    "hookspec": "plugin_sdk.plugin.hookspecs",
    "make_plugin_manager": "plugin_sdk.plugin.manager",
}

__all__ = [
    "PROJECT_NAME",
    "Admission",
    "Candidate",
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
    "TokenCounter",
    "hookimpl",
    "hookspec",
    "make_plugin_manager",
]
__getattr__, __dir__ = exports(__name__, _EXPORTS)
