"""Where packs come from: entry points of the ``memsdk.packs`` group, the
``register_packs`` hook of plugins, or a path.

An entry point names an object that is one of:

- a path to a pack file (``str``, ``os.PathLike`` or an ``importlib.resources``
  ``Traversable``), ``.toml`` or ``.json``;
- a mapping (the pack document itself);
- a callable taking no arguments that returns either of the above.

The entry point's name must equal the pack's ``name``. The built-in packs are
registered through this same group by memsdk's own distribution metadata.
A plugin's ``register_packs(register)`` offers the same kinds of object. A
pack name offered twice (by two entry points, two plugins, or one of each) is
an error naming both origins; neither is used until one goes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs

from plugin_sdk.errors import PackError
from plugin_sdk.packs.documents import Pack, load_pack_file, parse_pack_text, validate_pack
from plugin_sdk.plugin.manager import PluginManager, make_plugin_manager

ENTRY_POINT_GROUP = "memsdk.packs"
PACK_SUFFIXES = (".toml", ".json")


@attrs.frozen
class Available:
    """A pack found through an entry point: the pack, or why it failed to load."""

    name: str
    origin: str
    pack: Pack | None
    error: str | None


def pack_entry_points() -> list[metadata.EntryPoint]:
    """The entry points of the pack group, sorted by name."""
    return sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def available_packs(plugins: PluginManager | None = None) -> list[Available]:
    """Every pack offered by name (entry points and plugins), sorted.

    ``plugins`` defaults to a fresh :func:`~plugin_sdk.plugin.manager.make_plugin_manager`.
    A broken pack is reported in its ``error``, not raised.
    """
    found = []
    for ep in pack_entry_points():
        origin = _origin(ep)
        try:
            found.append(Available(ep.name, origin, load_entry_point(ep), None))
        except PackError as error:
            found.append(Available(ep.name, origin, None, str(error)))
    found.extend(plugin_packs(plugins if plugins is not None else make_plugin_manager()))
    return _refuse_twice(found)


def plugin_packs(plugins: PluginManager) -> list[Available]:
    """Packs offered through the ``register_packs`` hook, one plugin at a time."""
    found: list[Available] = []
    for impl in plugins.hook.register_packs.get_hookimpls():
        offered: list[Any] = []
        others = [p for p in plugins.get_plugins() if p is not impl.plugin]
        origin = f"plugin {impl.plugin_name}"
        try:
            plugins.subset_hook_caller("register_packs", remove_plugins=others)(
                register=offered.append
            )
        except Exception as error:  # a third party's bug is reported, not raised
            found.append(
                Available(impl.plugin_name, origin, None, f"register_packs raised {error!r}")
            )
            continue
        for index, target in enumerate(offered):
            try:
                pack = _from_object(target() if _is_factory(target) else target, origin)
            except Exception as error:
                found.append(Available(f"{impl.plugin_name}[{index}]", origin, None, str(error)))
            else:
                found.append(Available(pack.name, origin, pack, None))
    return found


def _refuse_twice(found: list[Available]) -> list[Available]:
    origins: dict[str, list[str]] = {}
    for item in found:
        origins.setdefault(item.name, []).append(item.origin)
    result = []
    for item in found:
        if len(origins[item.name]) > 1:
            both = " and ".join(origins[item.name])
            item = Available(
                item.name, item.origin, None, f"pack name {item.name!r} is offered twice: by {both}"
            )
        result.append(item)
    return sorted(result, key=lambda item: (item.name, item.origin))


def load_entry_point(ep: metadata.EntryPoint) -> Pack:
    """Load and validate the pack an entry point names."""
    origin = f"entry point {ep.name!r} ({_origin(ep)})"
    try:
        target = ep.load()
    except Exception as error:  # a third party's import error must not take us down
        raise PackError(
            origin, f"cannot load {ep.value}: {type(error).__name__}: {error}"
        ) from error
    if _is_factory(target):
        try:
            target = target()
        except Exception as error:
            raise PackError(
                origin, f"{ep.value}() raised {type(error).__name__}: {error}"
            ) from error
    pack = _from_object(target, origin)
    if pack.name != ep.name:
        raise PackError(
            origin, f"entry point is named {ep.name!r} but the pack is named {pack.name!r}"
        )
    return pack


def resolve_pack(name_or_path: str | Path, plugins: PluginManager | None = None) -> Pack:
    """A pack from a file path, else the pack offered by that name (see :func:`available_packs`)."""
    text = str(name_or_path)
    path = Path(text).expanduser()
    if path.suffix.lower() in PACK_SUFFIXES or path.exists() or os.sep in text:
        return load_pack_file(path)
    offered = available_packs(plugins)
    for item in offered:
        if item.name == text:
            if item.pack is None:
                raise PackError(item.origin, item.error or "cannot load")
            return item.pack
    names = ", ".join(sorted({item.name for item in offered})) or "none"
    raise PackError(text, f"no such pack file or installed pack; packs available by name: {names}")


def _from_object(target: Any, origin: str) -> Pack:
    if isinstance(target, Mapping):
        return validate_pack(target, source=origin)
    if isinstance(target, (str, os.PathLike)):
        return load_pack_file(Path(target))
    if _is_traversable(target):
        suffix = Path(target.name).suffix.lower()
        return parse_pack_text(
            target.read_text("utf-8"), source=f"{origin}: {target.name}", suffix=suffix
        )
    raise PackError(
        origin, f"expected a pack path, mapping or callable, got {type(target).__name__}"
    )


def _is_factory(target: Any) -> bool:
    return (
        callable(target)
        and not isinstance(target, (str, os.PathLike, Mapping))
        and not _is_traversable(target)
    )


def _is_traversable(target: Any) -> bool:
    return hasattr(target, "read_text") and hasattr(target, "name") and hasattr(target, "is_file")


def _origin(ep: metadata.EntryPoint) -> str:
    dist = ep.dist.name if ep.dist is not None else "unknown distribution"
    return f"{dist}: {ep.value}"
