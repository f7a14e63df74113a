"""The built-in plugins are written like a third party's: typed like the hookspecs, front-door imports.

mypy checks each plugin's body against the types it declares, but it cannot
see that a ``@hookimpl`` matches its ``@hookspec``; these tests do. Every
parameter of a built-in hookimpl is annotated exactly as the spec annotates
it, and its return type is the spec's (a ``firstresult`` fallback may leave
out the spec's ``| None``). A built-in imports memsdk through ``plugin_sdk``
and ``plugin_sdk.plugin``; the few that need an internal module name it in
their docstring, with the reason. Memories are read through ``store.memories``;
SQL on the ``memories`` table is left only where no facade covers the read.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

from plugin_sdk.plugin import hookspecs

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(p.stem for p in (ROOT / "plugins").glob("*.py") if p.stem != "__init__")
# The two front doors, and the error tree every error is imported from (issue 26:
# only the errors a host catches are exported at the front door).
FRONT_DOORS = {"plugin_sdk", "plugin_sdk.plugin", "plugin_sdk.errors"}


def hookimpls():
    for name in MODULES:
        module = importlib.import_module(f"plugin_sdk_plugins.{name}")
        for attribute, function in vars(module).items():
            options = getattr(function, f"{hookspecs.PROJECT_NAME}_impl", None)
            if options is not None:
                yield f"{name}.{attribute}", function, options.get("specname") or attribute


IMPLS = list(hookimpls())


def test_every_plugin_module_is_seen():
    assert len(MODULES) >= 14
    assert {label.split(".")[0] for label, _, _ in IMPLS} == set(MODULES)


@pytest.mark.parametrize(("label", "function", "spec_name"), IMPLS, ids=[i[0] for i in IMPLS])
def test_hookimpl_is_annotated_like_its_spec(label, function, spec_name):
    spec = inspect.signature(getattr(hookspecs, spec_name))
    impl = inspect.signature(function)
    for name, parameter in impl.parameters.items():
        assert parameter.annotation == spec.parameters[name].annotation, f"{label}({name})"
    returns = spec.return_annotation
    fallback = returns.removesuffix(" | None")
    assert impl.return_annotation in (returns, fallback), f"{label} returns"


@pytest.mark.parametrize("name", MODULES)
def test_plugin_imports_memsdk_through_the_front_doors(name):
    path = ROOT / "plugins" / f"{name}.py"
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    internal = set()
    for node in ast.walk(tree):
        modules = []
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        internal.update(
            m for m in modules if m.split(".")[0] == "plugin_sdk" and m not in FRONT_DOORS
        )
    docstring = ast.get_docstring(tree) or ""
    for module in sorted(internal):
        assert module in docstring, f"plugins/{name}.py imports {module} without saying why"


@pytest.mark.parametrize("name", MODULES)
def test_no_parameter_is_typed_any(name):
    path = ROOT / "plugins" / f"{name}.py"
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    untyped = [
        f"{node.name}({arg.arg})"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        for arg in node.args.args
        if arg.annotation is None or ast.unparse(arg.annotation) == "Any"
    ]
    assert not untyped, f"plugins/{name}.py: untyped parameters {untyped}"


# SQL against the memories table in a plugin: none. The injector's ranked read
# (toc_rank joined with memories) is the ranking's owner's
# (``store.tables.toc.reader()``); a detector's evidence (links, cells,
# memories) is the links' owner's (``store.tables.entities.links.with_acts``).
SQL_ON_MEMORIES: set[str] = set()
_MEMORIES_SQL = re.compile(r"\b(FROM|JOIN|UPDATE|INTO)\s+memories\b", re.IGNORECASE)


def test_plugins_read_memories_through_the_facade():
    found = set()
    for name in MODULES:
        path = ROOT / "plugins" / f"{name}.py"
        tree = ast.parse(path.read_text("utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and _MEMORIES_SQL.search(str(node.value)):
                found.add(name)
    assert found == SQL_ON_MEMORIES, "read memories with store.memories.iter/list/get/find"
