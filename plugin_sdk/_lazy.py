"""Lazy re-exports for the package front doors: a name is imported on first use.

``plugin_sdk`` and ``plugin_sdk.plugin`` list their public names once, as the
imports of an ``if TYPE_CHECKING:`` block: type checkers, editors and grep read
them there, and nothing runs them. The module ``__getattr__`` returned by
:func:`exports` reads that block (with :mod:`ast`, the first time any public
name, ``__all__`` or ``dir()`` is asked for) and imports a name's module the
first time the name is used, so importing one submodule loads nothing else.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported: the hooks' client imports this package
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def exports(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return ``(__getattr__, __dir__)`` for ``package``, serving its ``TYPE_CHECKING`` imports.

    ``__all__`` is served too: the names those imports bind, in order.
    """
    table: dict[str, tuple[str, str]] = {}

    def names() -> dict[str, tuple[str, str]]:
        if not table:
            table.update(read_imports(sys.modules[package].__file__ or ""))
        return table

    def __getattr__(name: str) -> Any:
        if name == "__all__":
            value: Any = list(names())
        else:
            try:
                module, attribute = names()[name]
            except KeyError:
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
            import importlib

            value = getattr(importlib.import_module(module), attribute)
        setattr(sys.modules[package], name, value)  # the next lookup is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted(names())

    return __getattr__, __dir__


def read_imports(path: str) -> dict[str, tuple[str, str]]:
    """``public name -> (module, attribute)`` for the imports under ``if TYPE_CHECKING:`` in ``path``."""
    import ast
    from pathlib import Path

    found: dict[str, tuple[str, str]] = {}
    for node in ast.parse(Path(path).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    for alias in statement.names:
                        found[alias.asname or alias.name] = (statement.module, alias.name)
    return found
