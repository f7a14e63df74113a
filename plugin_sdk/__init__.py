"""memsdk: long-term memory for agent hosts.

The import package is ``plugin_sdk``; the distribution and the command line
are ``memsdk``. Start with :class:`Store`::

    from plugin_sdk import Store, resolve_pack

    store = Store("memory.db", project="my-app")
    store.packs.install(resolve_pack("ops"))
    rules = store.category_names()[0]  # categories come from the DB, never from code
    store.memories.write("Deploys happen on Tuesdays only.", rules)
"""

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
from .hookspecs import hookimpl
from .models import Category, Memory, SearchHit, WriteResult
from .pack_sources import available_packs, resolve_pack
from .packs import Pack, load_pack_file, validate_pack
from .project import project_for
from .store import Store

__all__ = [
    "Category",
    "DuplicateMemory",
    "Memory",
    "MemsdkError",
    "MigrationRequired",
    "NotFound",
    "Pack",
    "PackConflict",
    "PackError",
    "SchemaTooNew",
    "SearchHit",
    "Store",
    "StoreError",
    "UnknownCategory",
    "WriteResult",
    "available_packs",
    "hookimpl",
    "load_pack_file",
    "project_for",
    "resolve_pack",
    "validate_pack",
]
