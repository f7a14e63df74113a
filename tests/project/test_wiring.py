"""Wiring you can follow: facades, registries and front doors named in code, not in strings."""

from __future__ import annotations

import ast
import sys
from functools import cached_property
from pathlib import Path

import pytest

from plugin_sdk.store import connection
from plugin_sdk.store.connection import Store, attach

ROOT = Path(__file__).resolve().parents[2]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def area_imports_of(function: object) -> list[str]:
    """The modules a property's body imports."""
    source = Path(connection.__file__).read_text()
    name = getattr(function, "__name__", "")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return [n.module for n in ast.walk(node) if isinstance(n, ast.ImportFrom) and n.module]
    raise AssertionError(f"no function {name}")


def test_each_facade_is_an_explicit_property_and_its_upward_import_is_declared() -> None:
    facades = {
        name: value.func
        for name, value in vars(Store).items()
        if isinstance(value, cached_property)
    }
    assert set(facades) == {"criteria", "packs", "composites", "entities", "relations", "vectors"}
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ][0]
    declared = set(contract["ignore_imports"])
    imported = {
        f"plugin_sdk.store.connection -> {module}"
        for function in facades.values()
        for module in area_imports_of(function)
    }
    assert imported == declared
    assert connection.FACADES == {}  # no built-in facade is served by name any more


def test_a_facade_is_built_once_per_store_and_has_its_area_type() -> None:
    from plugin_sdk.composites.composite import Composites

    with Store(":memory:", project="p") as store:
        assert isinstance(store.composites, Composites)
        assert store.composites is store.composites


def test_a_plugin_still_attaches_its_own_facade_and_cannot_take_a_builtin_name() -> None:
    with pytest.raises(ValueError, match="already attached"):
        attach("composites", "plugin_sdk.composites.composite:Composites")
    attach("wiring_probe", "plugin_sdk.store.memories:Memories")
    try:
        with Store(":memory:", project="p") as store:
            assert store.wiring_probe is store.wiring_probe  # type: ignore[attr-defined]
    finally:
        del connection.FACADES["wiring_probe"]


@pytest.mark.parametrize("door", ["plugin_sdk", "plugin_sdk.plugin"])
def test_each_front_door_writes_each_public_name_once(door: str) -> None:
    import importlib

    module = importlib.import_module(door)
    source = Path(module.__file__ or "").read_text()
    code = source[source.index('"""', 3) + 3 :]  # after the docstring
    assert "_EXPORTS" not in code and "__all__ =" not in code
    bound = [
        alias.asname or alias.name
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__"
        for alias in node.names
        if alias.name not in ("TYPE_CHECKING", "exports")
    ]
    assert len(bound) == len(set(bound)) and bound == module.__all__
    for name in module.__all__:
        assert getattr(module, name) is not None


def test_the_plugin_front_door_exports_every_hook_record() -> None:
    import plugin_sdk.plugin
    from plugin_sdk.plugin import records

    defined = {
        name
        for name, value in vars(records).items()
        if isinstance(value, type) and value.__module__ == records.__name__
    }
    assert "Embeddings" in defined
    assert defined <= set(plugin_sdk.plugin.__all__)
