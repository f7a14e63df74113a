"""Lazy re-exports for the package front doors: a name is imported on first use.

``plugin_sdk`` and ``plugin_sdk.plugin`` list their public names in a table
(name -> module); a module ``__getattr__`` imports the module the first time
the name is asked for, so importing one submodule loads nothing else.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing is not imported: the hooks' client imports this package
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def exports(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return ``(__getattr__, __dir__)`` for ``package`` serving ``table``.

    ``table`` maps a public name to ``"module"`` or ``"module:attribute"``
    (when the attribute's name differs from the public one).
    """

    def __getattr__(name: str) -> Any:
        try:
            target = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        module, _, attribute = target.partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        import sys

        setattr(sys.modules[package], name, value)  # the next lookup is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted(table)

    return __getattr__, __dir__
