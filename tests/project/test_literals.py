"""No category name from packs/ is a literal in plugin_sdk/ or plugins/.

Every list of categories must come from the DB, which comes from a pack.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def category_names() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "packs").glob("*.toml"):
        names.update(tomllib.loads(path.read_text("utf-8"))["categories"])
    return names


def string_constants(path: Path):
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def test_packs_declare_categories():
    assert len(category_names()) >= 10


def test_no_category_literal_in_code():
    names = category_names()
    found = []
    for folder in ("plugin_sdk", "plugins"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for lineno, value in string_constants(path):
                hits = [name for name in names if name in value]
                if hits:
                    found.append(f"{path.relative_to(ROOT)}:{lineno}: {', '.join(sorted(hits))}")
    assert not found, "category names written into the code:\n" + "\n".join(found)
