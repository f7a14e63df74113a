"""memsdk: long-term memory for agent hosts.

The import package is ``plugin_sdk``; the distribution and the command line
are ``memsdk``. Start with :class:`Store`::

    from plugin_sdk import Store, resolve_pack

    store = Store("memory.db", project="my-app")
    store.packs.install(resolve_pack("ops"))
    rules = store.category_names()[0]  # categories come from the DB, never from code
    store.memories.write("Deploys happen on Tuesdays only.", rules)

A host opens its store with its model and packs in one call,
``open_store(path, model=complete, packs=["dev"])``, then runs the session
loop with ``inject``, ``run_historian``, ``delta``, ``expand`` and
``Dreamer``; ``docs/host-guide.md`` walks through it. What ``__all__``
lists is the host API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plugin_sdk._lazy import exports

if TYPE_CHECKING:  # what the table serves, for type checkers and editors
    from plugin_sdk.errors import (
        ApplyFailed,
        CategoryError,
        CompositeError,
        DuplicateEntity,
        DuplicateMemory,
        ForgottenText,
        GitError,
        GridError,
        HistorianReplyError,
        HostError,
        InvalidCriteria,
        InvalidDocument,
        InvalidEntityName,
        InvalidMemory,
        InvalidObservation,
        InvalidProposal,
        InvalidTranscript,
        LeaseLost,
        LlmModelError,
        LlmNotInstalled,
        MemsdkError,
        MergeRefused,
        MigrationRequired,
        MissingExtra,
        ModelConflict,
        ModelError,
        NoGrid,
        NoModel,
        NoRetainPolicy,
        NotFound,
        PackConflict,
        PackError,
        ProposalError,
        QueueError,
        ReadOnlyMemory,
        RetainError,
        SchemaMismatch,
        SchemaTooNew,
        StageError,
        StoreBusy,
        StoreError,
        TaskBusy,
        ToolError,
        TranscriptError,
        UndoRefused,
        UnknownCategory,
        UnknownProposalCategory,
        WrongRepository,
        WrongStatus,
    )
    from plugin_sdk.host.opening import (
        HostModel,
        ensure_packs,
        open_store,
    )
    from plugin_sdk.packs.documents import (
        Pack,
        load_pack_file,
        validate_pack,
    )
    from plugin_sdk.packs.sources import (
        available_packs,
        resolve_pack,
    )
    from plugin_sdk.plugin.hookspecs import (
        hookimpl,
    )
    from plugin_sdk.plugin.manager import (
        PluginManager,
        make_plugin_manager,
    )
    from plugin_sdk.plugin.records import (
        DreamerTask,
        Prompt,
    )
    from plugin_sdk.stages.dreamer import (
        Dreamer,
        RunReport,
    )
    from plugin_sdk.stages.historian import (
        HistorianReport,
        run_historian,
    )
    from plugin_sdk.stages.inject import (
        Delta,
        Expansion,
        Injection,
        delta,
        expand,
        inject,
    )
    from plugin_sdk.stages.recall import (
        Recall,
        recall,
    )
    from plugin_sdk.store.connection import (
        Store,
    )
    from plugin_sdk.store.models import (
        Category,
        Memory,
        SearchHit,
        WriteResult,
    )
    from plugin_sdk.store.project import (
        project_for,
    )

_EXPORTS = {
    "ApplyFailed": "plugin_sdk.errors",
    "Category": "plugin_sdk.store.models",
    "CategoryError": "plugin_sdk.errors",
    "CompositeError": "plugin_sdk.errors",
    "Delta": "plugin_sdk.stages.inject",
    "Dreamer": "plugin_sdk.stages.dreamer",
    "DreamerTask": "plugin_sdk.plugin.records",
    "DuplicateEntity": "plugin_sdk.errors",
    "DuplicateMemory": "plugin_sdk.errors",
    "InvalidDocument": "plugin_sdk.errors",
    "ForgottenText": "plugin_sdk.errors",
    "ReadOnlyMemory": "plugin_sdk.errors",
    "Expansion": "plugin_sdk.stages.inject",
    "GitError": "plugin_sdk.errors",
    "GridError": "plugin_sdk.errors",
    "HistorianReplyError": "plugin_sdk.errors",
    "HistorianReport": "plugin_sdk.stages.historian",
    "HostError": "plugin_sdk.errors",
    "HostModel": "plugin_sdk.host.opening",
    "Injection": "plugin_sdk.stages.inject",
    "InvalidCriteria": "plugin_sdk.errors",
    "InvalidEntityName": "plugin_sdk.errors",
    "InvalidMemory": "plugin_sdk.errors",
    "InvalidObservation": "plugin_sdk.errors",
    "InvalidProposal": "plugin_sdk.errors",
    "InvalidTranscript": "plugin_sdk.errors",
    "LeaseLost": "plugin_sdk.errors",
    "LlmModelError": "plugin_sdk.errors",
    "LlmNotInstalled": "plugin_sdk.errors",
    "Memory": "plugin_sdk.store.models",
    "MemsdkError": "plugin_sdk.errors",
    "MergeRefused": "plugin_sdk.errors",
    "MigrationRequired": "plugin_sdk.errors",
    "MissingExtra": "plugin_sdk.errors",
    "ModelConflict": "plugin_sdk.errors",
    "ModelError": "plugin_sdk.errors",
    "NoGrid": "plugin_sdk.errors",
    "NoModel": "plugin_sdk.errors",
    "NoRetainPolicy": "plugin_sdk.errors",
    "NotFound": "plugin_sdk.errors",
    "Pack": "plugin_sdk.packs.documents",
    "PackConflict": "plugin_sdk.errors",
    "PackError": "plugin_sdk.errors",
    "PluginManager": "plugin_sdk.plugin.manager",
    "Prompt": "plugin_sdk.plugin.records",
    "ProposalError": "plugin_sdk.errors",
    "QueueError": "plugin_sdk.errors",
    "Recall": "plugin_sdk.stages.recall",
    "RetainError": "plugin_sdk.errors",
    "RunReport": "plugin_sdk.stages.dreamer",
    "SchemaMismatch": "plugin_sdk.errors",
    "SchemaTooNew": "plugin_sdk.errors",
    "SearchHit": "plugin_sdk.store.models",
    "StageError": "plugin_sdk.errors",
    "StoreBusy": "plugin_sdk.errors",
    "Store": "plugin_sdk.store.connection",
    "StoreError": "plugin_sdk.errors",
    "TaskBusy": "plugin_sdk.errors",
    "ToolError": "plugin_sdk.errors",
    "TranscriptError": "plugin_sdk.errors",
    "UndoRefused": "plugin_sdk.errors",
    "UnknownCategory": "plugin_sdk.errors",
    "UnknownProposalCategory": "plugin_sdk.errors",
    "WriteResult": "plugin_sdk.store.models",
    "WrongRepository": "plugin_sdk.errors",
    "WrongStatus": "plugin_sdk.errors",
    "available_packs": "plugin_sdk.packs.sources",
    "delta": "plugin_sdk.stages.inject",
    "ensure_packs": "plugin_sdk.host.opening",
    "expand": "plugin_sdk.stages.inject",
    "hookimpl": "plugin_sdk.plugin.hookspecs",
    "inject": "plugin_sdk.stages.inject",
    "load_pack_file": "plugin_sdk.packs.documents",
    "make_plugin_manager": "plugin_sdk.plugin.manager",
    "open_store": "plugin_sdk.host.opening",
    "project_for": "plugin_sdk.store.project",
    "recall": "plugin_sdk.stages.recall",
    "resolve_pack": "plugin_sdk.packs.sources",
    "run_historian": "plugin_sdk.stages.historian",
    "validate_pack": "plugin_sdk.packs.documents",
}

__all__ = [
    "ApplyFailed",
    "Category",
    "CategoryError",
    "CompositeError",
    "Delta",
    "Dreamer",
    "DreamerTask",
    "DuplicateEntity",
    "DuplicateMemory",
    "Expansion",
    "ForgottenText",
    "GitError",
    "GridError",
    "HistorianReplyError",
    "HistorianReport",
    "HostError",
    "HostModel",
    "Injection",
    "InvalidCriteria",
    "InvalidDocument",
    "InvalidEntityName",
    "InvalidMemory",
    "InvalidObservation",
    "InvalidProposal",
    "InvalidTranscript",
    "LeaseLost",
    "LlmModelError",
    "LlmNotInstalled",
    "Memory",
    "MemsdkError",
    "MergeRefused",
    "MigrationRequired",
    "MissingExtra",
    "ModelConflict",
    "ModelError",
    "NoGrid",
    "NoModel",
    "NoRetainPolicy",
    "NotFound",
    "Pack",
    "PackConflict",
    "PackError",
    "PluginManager",
    "Prompt",
    "ProposalError",
    "QueueError",
    "ReadOnlyMemory",
    "Recall",
    "RetainError",
    "RunReport",
    "SchemaMismatch",
    "SchemaTooNew",
    "SearchHit",
    "StageError",
    "Store",
    "StoreBusy",
    "StoreError",
    "TaskBusy",
    "ToolError",
    "TranscriptError",
    "UndoRefused",
    "UnknownCategory",
    "UnknownProposalCategory",
    "WriteResult",
    "WrongRepository",
    "WrongStatus",
    "available_packs",
    "delta",
    "ensure_packs",
    "expand",
    "hookimpl",
    "inject",
    "load_pack_file",
    "make_plugin_manager",
    "open_store",
    "project_for",
    "recall",
    "resolve_pack",
    "run_historian",
    "validate_pack",
]
__getattr__, __dir__ = exports(__name__, _EXPORTS)
