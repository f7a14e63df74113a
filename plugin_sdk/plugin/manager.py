"""The plugin manager factory.

``make_plugin_manager()`` builds a fresh manager: it adds the specs, applies
blocking, loads the ``memsdk`` entry points (memsdk's own built-ins among
them, registered the same way a third party's are), and checks that every
hookimpl matches a spec. Nothing happens at import time and there is no global
manager: a host builds one and hands it to its stores.

Environment:

- ``MEMSDK_LOAD_PLUGINS``: a comma-separated allowlist of third-party
  plugin names; ``''`` loads none. Unset loads all. memsdk's built-ins are
  not third-party and always load unless blocked.
- ``MEMSDK_BLOCK_PLUGINS``: comma-separated names never to load.
- ``MEMSDK_TRACE``: ``1`` writes every hook call to standard error.

A third-party plugin that fails to import or does not match the specs is
unregistered and recorded in ``manager.broken`` with its name and the error;
the host carries on.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from importlib import metadata
from typing import Any

import attrs
import pluggy

from plugin_sdk.plugin import hookspecs

ENTRY_POINT_GROUP = "memsdk"
BUILTIN_DISTRIBUTION = "memsdk"
LOAD_ENV = "MEMSDK_LOAD_PLUGINS"
BLOCK_ENV = "MEMSDK_BLOCK_PLUGINS"
TRACE_ENV = "MEMSDK_TRACE"


@attrs.frozen
class BrokenPlugin:
    """A plugin that could not be registered, and why."""

    name: str
    distribution: str
    error: str


class PluginManager(pluggy.PluginManager):
    """A pluggy manager that also remembers broken plugins and their origins."""

    def __init__(self) -> None:
        super().__init__(hookspecs.PROJECT_NAME)
        self.broken: list[BrokenPlugin] = []
        self.origins: dict[str, str] = {}


def make_plugin_manager(
    *,
    load_entry_points: bool = True,
    allow: Iterable[str] | None = None,
    block: Iterable[str] = (),
    plugins: Iterable[tuple[str, object]] = (),
    trace: bool | None = None,
) -> PluginManager:
    """Build a plugin manager.

    :param load_entry_points: load the ``plugin_sdk`` entry-point group.
    :param allow: third-party plugin names to load; default from
        ``MEMSDK_LOAD_PLUGINS`` (unset: all).
    :param block: names never to load, added to ``MEMSDK_BLOCK_PLUGINS``.
    :param plugins: extra ``(name, plugin)`` pairs to register after the entry
        points (a host's model, test plugins).
    :param trace: write hook calls to standard error; default from
        ``MEMSDK_TRACE``.
    """
    pm = PluginManager()
    pm.add_hookspecs(hookspecs)
    for name in [*block, *_env_names(BLOCK_ENV)]:
        pm.set_blocked(name)
    allowed = set(allow) if allow is not None else _env_allowlist()
    if load_entry_points:
        for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            distribution = ep.dist.name if ep.dist is not None else "unknown"
            builtin = distribution == BUILTIN_DISTRIBUTION
            if not builtin and allowed is not None and ep.name not in allowed:
                continue
            if pm.is_blocked(ep.name) or pm.has_plugin(ep.name):
                continue
            _register(pm, ep.name, distribution, ep.load)
    for name, plugin in plugins:
        _register(pm, name, "host", lambda plugin=plugin: plugin)
    if trace if trace is not None else os.environ.get(TRACE_ENV, "") not in ("", "0"):
        pm.trace.root.setwriter(sys.stderr.write)
        pm.enable_tracing()
    return pm


def _register(pm: PluginManager, name: str, distribution: str, load: Any) -> None:
    try:
        plugin = load()
        pm.register(plugin, name=name)
        pm.check_pending()
    except Exception as error:  # a third party's bug must not take the host down
        if pm.has_plugin(name):
            pm.unregister(name=name)
        pm.broken.append(BrokenPlugin(name, distribution, f"{type(error).__name__}: {error}"))
        return
    pm.origins[name] = distribution


def call_each(pm: PluginManager, hook_name: str, **kwargs: Any) -> list[tuple[str, str | None]]:
    """Call a hook one plugin at a time (wrappers included), so one plugin's error
    is reported by its name instead of stopping the others.

    Returns ``(plugin name, error or None)`` for every plugin implementing it.
    """
    outcomes: list[tuple[str, str | None]] = []
    caller = getattr(pm.hook, hook_name)
    for impl in caller.get_hookimpls():
        if impl.hookwrapper or impl.wrapper:
            continue
        others = [p for p in pm.get_plugins() if p is not impl.plugin]
        try:
            pm.subset_hook_caller(hook_name, remove_plugins=others)(**kwargs)
        except Exception as error:  # reported by name; the host goes on
            outcomes.append((impl.plugin_name, f"{type(error).__name__}: {error}"))
        else:
            outcomes.append((impl.plugin_name, None))
    return outcomes


def has_spec(pm: PluginManager, hook_name: str) -> bool:
    """Whether ``hook_name`` is one of memsdk's hooks (not a name a broken plugin used)."""
    caller = getattr(pm.hook, hook_name, None)
    return isinstance(caller, pluggy.HookCaller) and caller.spec is not None


def describe(pm: PluginManager, *, include_builtin: bool = False) -> list[dict[str, Any]]:
    """Registered plugins as sorted records: name, distribution, hooks, or the error."""
    rows = []
    for name, plugin in pm.list_name_plugin():
        distribution = pm.origins.get(name, "unknown")
        if plugin is None or (distribution == BUILTIN_DISTRIBUTION and not include_builtin):
            continue
        hooks = sorted(caller.name for caller in pm.get_hookcallers(plugin) or [])
        rows.append({"name": name, "distribution": distribution, "hooks": hooks})
    rows.extend(
        {"name": b.name, "distribution": b.distribution, "hooks": [], "error": b.error}
        for b in pm.broken
    )
    return sorted(rows, key=lambda row: row["name"])


def _env_names(variable: str) -> list[str]:
    return [name.strip() for name in os.environ.get(variable, "").split(",") if name.strip()]


def _env_allowlist() -> set[str] | None:
    if LOAD_ENV not in os.environ:
        return None
    return set(_env_names(LOAD_ENV))
