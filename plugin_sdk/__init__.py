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
loop with ``inject_toc``, ``run_historian``, ``delta``, ``expand`` and
``Dreamer``; ``docs/host-guide.md`` walks through it. What ``__all__``
lists is the host API.
"""

from .dreamer import Dreamer, LeaseLost, RunReport, TaskBusy
from .errors import (
    DuplicateMemory,
    MemsdkError,
    MigrationRequired,
    NotFound,
    PackConflict,
    PackError,
    SchemaTooNew,
    StoreError,
    UnknownCategory,
)
from .historian import (
    HistorianReplyError,
    HistorianReport,
    InvalidTranscript,
    NoModel,
    run_historian,
)
from .hookspecs import hookimpl
from .hooktypes import DreamerTask, Prompt
from .host import HostModel, ModelConflict, ensure_packs, open_store
from .inject import Delta, Expansion, Injection, delta, expand
from .inject import inject as inject_toc  # the module keeps the name plugin_sdk.inject
from .memories import InvalidMemory, MergeRefused
from .models import Category, Memory, SearchHit, WriteResult
from .pack_sources import available_packs, resolve_pack
from .packs import Pack, load_pack_file, validate_pack
from .plugins import PluginManager, make_plugin_manager
from .project import project_for
from .store import Store

__all__ = [
    "Category",
    "Delta",
    "Dreamer",
    "DreamerTask",
    "DuplicateMemory",
    "Expansion",
    "HistorianReplyError",
    "HistorianReport",
    "HostModel",
    "Injection",
    "InvalidMemory",
    "InvalidTranscript",
    "LeaseLost",
    "Memory",
    "MemsdkError",
    "MergeRefused",
    "MigrationRequired",
    "ModelConflict",
    "NoModel",
    "NotFound",
    "Pack",
    "PackConflict",
    "PackError",
    "PluginManager",
    "Prompt",
    "RunReport",
    "SchemaTooNew",
    "SearchHit",
    "Store",
    "StoreError",
    "TaskBusy",
    "UnknownCategory",
    "WriteResult",
    "available_packs",
    "delta",
    "ensure_packs",
    "expand",
    "hookimpl",
    "inject_toc",
    "load_pack_file",
    "make_plugin_manager",
    "open_store",
    "project_for",
    "resolve_pack",
    "run_historian",
    "validate_pack",
]
