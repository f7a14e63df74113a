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

from plugin_sdk._lazy import exports

TYPE_CHECKING = False  # not typing's: importing typing costs the hooks' client (hook_client.py)

if TYPE_CHECKING:  # the public names, each written once: served lazily by _lazy.exports
    from plugin_sdk.errors import (
        InvalidMemory,
        MemsdkError,
        ModelError,
        NoModel,
        NotFound,
        PackError,
        SchemaTooNew,
        StoreBusy,
        StoreError,
        UnknownCategory,
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

__getattr__, __dir__ = exports(__name__)
