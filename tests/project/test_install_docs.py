"""Install truth: until memsdk is on PyPI, no instruction sends people to the index for it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from plugin_sdk.host.mcp_server import INSTALL_HINT as MCP_HINT
from plugin_sdk.model.llm import INSTALL_HINT as LLM_HINT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
# "pip install memsdk", "pip install 'memsdk[mcp]'", "pip install -U memsdk" ...
FROM_THE_INDEX = re.compile(r"pip install (-\S+ )*['\"]?memsdk\b(?![-_\w])")


def instruction_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    files += sorted((ROOT / "plugin_sdk").rglob("*.py")) + sorted((ROOT / "examples").rglob("*"))
    return [f for f in files if f.is_file() and f.suffix in (".md", ".py", ".toml")]


def test_no_instruction_installs_memsdk_from_the_index():
    offenders = []
    for path in instruction_files():
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if FROM_THE_INDEX.search(line) or "memsdk[" in line:
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    # install.md says what will work once memsdk is published, and says so
    allowed = {"docs/install.md"}
    assert [o for o in offenders if o.split(":")[0] not in allowed] == []
    published = (ROOT / "docs" / "install.md").read_text("utf-8")
    assert "not published on PyPI yet" in published and "Once memsdk is on PyPI" in published


def test_extra_hints_name_a_package_that_exists():
    for hint in (LLM_HINT, MCP_HINT):
        assert "memsdk[" not in hint and "pip install -e '.[" in hint


def test_the_plugin_template_says_how_to_depend_on_memsdk_now_and_once_published():
    text = (ROOT / "examples" / "secret_guard" / "pyproject.toml").read_text("utf-8")
    assert "memsdk @ file://" in text and "memsdk @ git+" in text  # now: a path or VCS reference
    assert tomllib.loads(text)["project"]["dependencies"] == ["memsdk>=0.1"]  # met by the checkout
    guide = (ROOT / "docs" / "writing-a-plugin.md").read_text("utf-8")
    assert "pip install -e .                          # memsdk itself, from the checkout" in guide
