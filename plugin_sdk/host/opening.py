"""A host's first call: a store with the host's model and packs, in one step.

Everything a host does after that goes through the real components, which
``plugin_sdk`` re-exports (``docs/host-guide.md`` walks through them):
``store.memories`` to write, search, get, update, merge and archive;
``inject``, ``delta`` and ``expand`` for the memory block;
``run_historian`` for transcript chunks; ``Dreamer`` for maintenance.

The host's model is a plain function ``complete(prompt) -> str``, where
``prompt`` is a :class:`~plugin_sdk.plugin.records.Prompt` (purpose, system text,
chat messages). :class:`HostModel` registers such a function as the
``model_complete`` hook, which is how every stage reaches the model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from plugin_sdk.errors import ModelConflict
from plugin_sdk.packs.install import UpgradeReport
from plugin_sdk.packs.sources import resolve_pack
from plugin_sdk.plugin.hookspecs import hookimpl
from plugin_sdk.plugin.manager import PluginManager, make_plugin_manager
from plugin_sdk.plugin.records import Prompt
from plugin_sdk.store.connection import Clock, Store, utc_now
from plugin_sdk.store.paths import default_db_path
from plugin_sdk.store.tokens import TokenCounter

ModelFunction = Callable[[Prompt], str | None]
MODEL_PLUGIN_NAME = "host-model"


class HostModel:
    """The host's model as a plugin: ``complete(prompt)`` answers ``model_complete``.

    ``complete`` returns the reply text, or ``None`` to let another plugin
    answer (a stage with no answer at all uses its model-free fallback, or
    raises :class:`~plugin_sdk.errors.NoModel`). Exceptions propagate to the
    stage that asked, and from there to the host.
    """

    def __init__(self, complete: ModelFunction) -> None:
        if not callable(complete):
            raise TypeError(f"HostModel needs a callable, got {type(complete).__name__}")
        self.complete = complete

    @hookimpl
    def model_complete(self, prompt: Prompt) -> str | None:
        return self.complete(prompt)


def open_store(
    path: str | Path | None = None,
    *,
    project: str | None = None,
    model: ModelFunction | object | None = None,
    packs: Iterable[str | Path] = (),
    plugins: PluginManager | None = None,
    tokenizer: TokenCounter | None = None,
    clock: Clock = utc_now,
) -> Store:
    """Open (or create) a store for a host, with its model and packs.

    :param path: the SQLite file; default: ``memory.db`` under
        ``MEMSDK_USER_PATH``, else the platform's user app directory.
    :param project: the project reads and writes default to; default: derived
        from the current directory's git repository.
    :param model: a function ``complete(prompt) -> str`` (wrapped in
        :class:`HostModel`), or any plugin object implementing
        ``model_complete``; registered as ``host-model`` (a second store on the
        same ``plugins`` shares it; another model there is refused with
        :class:`ModelConflict`). A failed open unregisters it again.
    :param packs: pack names or files to install when the store does not have
        them yet (in one transaction). A pack already installed is left as it
        is, whatever its version: upgrading is a deliberate step
        (``store.packs.upgrade``), because it can need a category mapping.
    :param plugins: the plugin manager; default: a fresh
        :func:`~plugin_sdk.plugin.manager.make_plugin_manager` (built-ins plus the
        installed third-party plugins, filtered by ``MEMSDK_LOAD_PLUGINS``).
    """
    manager = plugins if plugins is not None else make_plugin_manager()
    registered = model is not None and register_model(manager, model)
    try:
        store = Store(
            default_db_path() if path is None else path,
            project=project,
            tokenizer=tokenizer,
            clock=clock,
            plugins=manager,
        )
        try:
            ensure_packs(store, packs)
        except BaseException:
            store.close()
            raise
    except BaseException:
        if registered:  # a failed open leaves the caller's manager as it was
            manager.unregister(name=MODEL_PLUGIN_NAME)
        raise
    return store


def register_model(manager: PluginManager, model: object) -> bool:
    """Register ``model`` as ``host-model``; ``False`` if the manager already has that model.

    The model answers ``model_complete`` for every store on the manager, so
    another model on a manager that has one is refused (:class:`ModelConflict`)
    rather than left to answer for both.
    """
    plugin = model_plugin(model)
    existing = manager.get_plugin(MODEL_PLUGIN_NAME)
    if existing is None:
        manager.register(plugin, name=MODEL_PLUGIN_NAME)
        return True
    if existing is model or (isinstance(existing, HostModel) and existing.complete == model):
        return False
    raise ModelConflict(
        f"this plugin manager already has a host model ({MODEL_PLUGIN_NAME!r}), and it "
        "answers for every store on the manager; open a store with another model on its "
        "own plugin manager (leave plugins= out)"
    )


def model_plugin(model: object) -> object:
    """A plugin object as it is; a function wrapped in :class:`HostModel`."""
    if hasattr(model, "model_complete"):
        return model
    if callable(model):
        return HostModel(model)
    raise TypeError(
        f"model must be a function complete(prompt) -> str or a plugin with model_complete, "
        f"got {type(model).__name__}"
    )


def ensure_packs(store: Store, packs: Iterable[str | Path]) -> list[UpgradeReport]:
    """Install each pack (by name or file) the store does not have yet; all or none.

    Returns what was installed; packs already installed (by pack name) are
    skipped, whatever their version.
    """
    wanted = [resolve_pack(name, store.plugins) for name in packs]
    installed = {pack.name for pack in store.packs.installed()}
    reports = []
    with store.atomic():
        for pack in wanted:
            if pack.name not in installed:
                reports.append(store.packs.install(pack))
                installed.add(pack.name)
    return reports
