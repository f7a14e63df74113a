"""The house's rooms hold: lazy front doors, a store that loads no area, small packages.

The allowed import order itself is checked by import-linter (``lint-imports``,
configured in pyproject.toml); these tests check what it cannot see: what a
fresh interpreter actually loads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import plugin_sdk
import plugin_sdk.plugin

ROOT = Path(__file__).resolve().parents[2]
AREAS = (
    "composites",
    "grid",
    "host",
    "model",
    "packs",
    "proposals",
    "retain",
    "stages",
    "transcripts",
    "cli",
)


def loaded_after(code: str) -> list[str]:
    """The plugin_sdk modules a fresh interpreter has loaded after running ``code``."""
    script = (
        f"{code}\nimport json, sys\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('plugin_sdk'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return list(json.loads(result.stdout.splitlines()[-1]))


def areas_in(modules: list[str]) -> set[str]:
    return {m.split(".")[1] for m in modules if m.count(".") >= 1 and m.split(".")[1] in AREAS}


def test_importing_the_store_loads_no_area() -> None:
    modules = loaded_after("import plugin_sdk.store.connection")
    assert "plugin_sdk.store.connection" in modules
    assert areas_in(modules) == set()


def test_opening_a_store_loads_an_area_only_when_its_facade_is_used() -> None:
    # Without entry points: the built-in plugins are areas' clients and load them.
    open_store = (
        "from plugin_sdk.plugin.manager import make_plugin_manager\n"
        "from plugin_sdk.store.connection import Store\n"
        "s = Store(':memory:', project='p', plugins=make_plugin_manager(load_entry_points=False))\n"
    )
    assert areas_in(loaded_after(open_store)) == set()
    assert areas_in(loaded_after(open_store + "s.composites")) == {"composites"}
    assert areas_in(loaded_after(open_store + "s.packs.installed()")) == {"packs"}


def test_the_front_doors_load_nothing_until_a_name_is_used() -> None:
    assert loaded_after("import plugin_sdk") == ["plugin_sdk", "plugin_sdk._lazy"]
    assert areas_in(loaded_after("import plugin_sdk.plugin")) == set()
    assert "plugin_sdk.stages.inject" in loaded_after("from plugin_sdk import inject")


def test_every_exported_name_resolves() -> None:
    for door in (plugin_sdk, plugin_sdk.plugin):
        for name in door.__all__:
            assert getattr(door, name) is not None, f"{door.__name__}.{name}"
        assert set(door.__all__) <= set(dir(door))


def test_an_unknown_name_is_an_attribute_error() -> None:
    import pytest

    with pytest.raises(AttributeError, match="no_such_thing"):
        _ = plugin_sdk.no_such_thing  # type: ignore[attr-defined]


def test_packages_are_small_and_module_names_have_one_meaning() -> None:
    sdk = ROOT / "plugin_sdk"
    for package in sorted(p for p in sdk.iterdir() if (p / "__init__.py").exists()):
        modules = [m for m in package.glob("*.py") if m.name != "__init__.py"]
        # store/ holds one more: driver.py, the SQLite driver alias every area uses
        limit = 17 if package.name == "store" else 16
        assert len(modules) <= limit, f"{package.name} holds {len(modules)} modules"
    # cli/ modules are named after the command groups they define, which front
    # the area of the same name, and store/tables/ modules (in its group
    # packages) after the tables they own, as is an owner's PostgreSQL form in
    # store/postgres/ (named as the store/tables/<group>/ module it stands
    # beside); everywhere else a module name is used once.
    owners = {path.stem for path in (sdk / "store" / "tables").rglob("*.py")}
    names = Counter(
        path.stem
        for folder in (sdk, ROOT / "plugins")
        for path in folder.rglob("*.py")
        if path.stem != "__init__"
        and "cli" not in path.relative_to(ROOT).parts
        and "tables" not in path.relative_to(ROOT).parts
        and not (path.parent.name == "postgres" and path.stem in owners)
    )
    assert [name for name, count in names.items() if count > 1] == []


def test_every_package_is_in_the_wheel() -> None:
    # pyproject.toml lists packages by hand (plugins/ and packs/ install under
    # other names); a package missing there imports from a checkout and fails
    # from a wheel.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "plugin_sdk").rglob("__init__.py")
    }
    assert found - listed == set()
