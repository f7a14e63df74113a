"""Pack sections that other areas own: their checks, attached from above.

A pack document's ``categories`` and ``prompts`` belong to this area. Other
top-level sections (``grid`` and ``graph`` for the entity grid, ``retain`` for
the Retain Job) are read and checked by the area that gives them meaning. The
JSON Schema shipped with the package covers their shape; what a schema cannot
say (regexes compile, thresholds do not cross, a key another pack already set)
is checked by the functions registered here.

The registry names each function as ``"module:function"`` and imports it only
when a pack is checked, so this area never imports the areas above it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from plugin_sdk.packs.documents import Pack


@attrs.frozen
class Section:
    """Checks for the pack sections one area owns.

    :param validate: ``"module:function"``; the function takes ``(document,
        source)`` and raises :class:`~plugin_sdk.errors.PackError` naming the field.
    :param kept: optional ``"module:function"`` taking ``(installed, pack)``
        (``installed`` is ``[(name, document), ...]`` in install order) and
        returning the keys of ``pack`` an earlier pack already sets differently.
    """

    validate: str
    kept: str | None = None


SECTIONS: dict[str, Section] = {
    "grid": Section("plugin_sdk.grid.policy:validate_grid", "plugin_sdk.grid.policy:conflicts"),
    "retain": Section("plugin_sdk.retain.routing:validate_retain"),
}


def register_section(owner: str, section: Section) -> None:
    """Add the checks of ``owner``'s pack sections; an owner registers once."""
    if owner in SECTIONS:
        raise ValueError(f"pack sections of {owner!r} are already registered")
    SECTIONS[owner] = section


def _load(target: str) -> Callable[..., Any]:
    module, _, name = target.partition(":")
    function: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return function


def validate_sections(document: Mapping[str, Any], source: str) -> None:
    """Run every registered section check on a document the schema accepted."""
    for section in SECTIONS.values():
        _load(section.validate)(document, source)


def kept_keys(installed: Iterable[tuple[str, Mapping[str, Any]]], pack: Pack) -> list[str]:
    """Keys of ``pack`` that packs installed before it already set differently."""
    before = list(installed)
    found: list[str] = []
    for section in SECTIONS.values():
        if section.kept is not None:
            found.extend(_load(section.kept)(before, pack))
    return found
