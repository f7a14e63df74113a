"""Meta-tests that keep the hook surface honest.

Every hookspec in ``plugin_sdk.plugin.hookspecs`` (a function carrying pluggy's
``plugin_sdk_spec`` marker attribute):

- is documented in docs/hooks.md under a ``### `name` `` heading, with its
  signature line exactly as ``def name(params) -> return``, built from the
  source (so a multi-line signature is written on one line), and with the
  call semantics the spec declares (``**Semantics:** firstresult`` or
  ``**Semantics:** plain``);
- is exercised by a test. The rule: some ``test_*`` function in a file under
  tests/ other than this one contains the hook's name as a word in its body
  (the function's own source, including inline plugin classes defined in it).
  A name mentioned only in a module-level helper does not count.

And the built-in plugins: every module in plugins/ is registered through an
entry point of the ``memsdk`` group in pyproject.toml (and every such entry
point names a module there), and no hookimpl in plugins/ gives a parameter a
default.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
import sys
from pathlib import Path

import pytest

from plugin_sdk.plugin import hookspecs

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
HOOKS_DOC = ROOT / "docs" / "hooks.md"
SPEC_ATTRIBUTE = f"{hookspecs.PROJECT_NAME}_spec"
IMPL_ATTRIBUTE = f"{hookspecs.PROJECT_NAME}_impl"
BUILTIN_PACKAGE = "plugin_sdk_plugins"


def hookspec_names() -> list[str]:
    return sorted(
        name
        for name, value in vars(hookspecs).items()
        if inspect.isfunction(value) and getattr(value, SPEC_ATTRIBUTE, None) is not None
    )


HOOKS = hookspec_names()


def signature_lines() -> dict[str, str]:
    """``def name(params) -> return`` for each hookspec, from the source."""
    tree = ast.parse(Path(hookspecs.__file__).read_text("utf-8"))
    return {
        node.name: f"def {node.name}({ast.unparse(node.args)}) -> {ast.unparse(node.returns)}"
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name in HOOKS and node.returns is not None
    }


def doc_sections() -> dict[str, str]:
    """Each ``### `name` `` section of docs/hooks.md, up to the next heading of level 2 or 3."""
    text = HOOKS_DOC.read_text("utf-8")
    parts = re.split(r"^(#{2,3} .*)$", text, flags=re.MULTILINE)
    sections = {}
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        match = re.fullmatch(r"### `(\w+)`", heading.strip())
        if match:
            sections[match.group(1)] = body
    return sections


def test_hookspecs_are_found():
    assert {"historian_admit", "model_complete", "register_commands"} <= set(HOOKS)
    assert set(signature_lines()) == set(HOOKS), "every hookspec declares a return type"


def test_docs_have_a_section_for_each_hook_and_no_other():
    assert sorted(doc_sections()) == HOOKS


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_documented_with_its_exact_signature_and_semantics(hook):
    section = doc_sections().get(hook)
    assert section is not None, f"docs/hooks.md has no ### `{hook}` section"
    line = signature_lines()[hook]
    assert line in [row.strip() for row in section.splitlines()], (
        f"docs/hooks.md: the {hook} section lacks the signature line\n    {line}"
    )
    spec = getattr(getattr(hookspecs, hook), SPEC_ATTRIBUTE)
    semantics = "firstresult" if spec["firstresult"] else "plain"
    assert f"**Semantics:** {semantics}." in section, (
        f"docs/hooks.md: {hook} is {semantics}; its section must say **Semantics:** {semantics}."
    )


def test_hook_examples_in_the_docs_are_valid_python():
    text = HOOKS_DOC.read_text("utf-8")
    blocks = [b.split("\n```", 1)[0] for b in text.split("```python\n")[1:]]
    examples = [b for b in blocks if "@hookimpl" in b]
    assert examples
    for block in examples:
        ast.parse(block)


@functools.cache
def bodies_of_test_functions() -> dict[str, tuple[str, ...]]:
    """Source of every ``test_*`` function under tests/, except this file, by file."""
    bodies: dict[str, tuple[str, ...]] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name == Path(__file__).name:
            continue
        source = path.read_text("utf-8")
        lines = source.splitlines()
        bodies[path.name] = tuple(
            "\n".join(lines[node.lineno - 1 : node.end_lineno])
            for node in ast.walk(ast.parse(source, filename=str(path)))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name.startswith("test_")
        )
    return bodies


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_exercised_by_a_test(hook):
    word = re.compile(rf"\b{re.escape(hook)}\b")
    users = [
        name
        for name, bodies in bodies_of_test_functions().items()
        if any(word.search(body) for body in bodies)
    ]
    assert users, f"no test function under tests/ mentions the hook {hook}"


def builtin_entry_points() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    return dict(project["entry-points"]["memsdk"])


def builtin_modules() -> list[str]:
    return sorted(
        f"{BUILTIN_PACKAGE}.{path.stem}"
        for path in (ROOT / "plugins").glob("*.py")
        if path.name != "__init__.py"
    )


def test_every_builtin_plugin_module_is_registered_through_an_entry_point():
    targets = set(builtin_entry_points().values())
    missing = [module for module in builtin_modules() if module not in targets]
    assert not missing, f"plugins/ modules without a memsdk entry point: {missing}"
    unknown = sorted(targets - set(builtin_modules()))
    assert not unknown, f"memsdk entry points naming no module in plugins/: {unknown}"


def test_installed_metadata_matches_pyproject():
    from importlib import metadata

    installed = {
        ep.name: ep.value
        for ep in metadata.entry_points(group="memsdk")
        if ep.dist is not None and ep.dist.name == "memsdk"
    }
    assert installed == builtin_entry_points(), (
        "the installed memsdk entry points differ from pyproject.toml: pip install -e ."
    )


@pytest.mark.parametrize("module_name", builtin_modules())
def test_no_builtin_hookimpl_has_parameter_defaults(module_name):
    module = importlib.import_module(module_name)
    impls = [
        (name, value)
        for name, value in vars(module).items()
        if inspect.isfunction(value) and getattr(value, IMPL_ATTRIBUTE, None) is not None
    ]
    assert impls, f"{module_name} has no hookimpl"
    for name, function in impls:
        defaults = [
            parameter.name
            for parameter in inspect.signature(function).parameters.values()
            if parameter.default is not inspect.Parameter.empty
        ]
        assert not defaults, f"{module_name}.{name}: hookimpl parameters with defaults {defaults}"
