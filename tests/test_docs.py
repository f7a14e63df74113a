"""The generated docs stay in sync, and every command has help.

Regenerate docs/cli.md with: MEMSDK_REGEN_DOCS=1 python -m pytest tests/test_docs.py
"""

from __future__ import annotations

import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from plugin_sdk.cli import cli

ROOT = Path(__file__).resolve().parent.parent
CLI_DOC = ROOT / "docs" / "cli.md"


def walk(command: click.Command, path: tuple[str, ...] = ()):
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command)  # asks the group, so lazily loaded commands are seen
        for name in sorted(command.list_commands(ctx)):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            yield from walk(sub, (*path, name))


def render_cli_doc() -> str:
    runner = CliRunner()
    parts = [
        "# Command line reference\n",
        "Generated from `memsdk --help` and each command's help; do not edit by hand.",
        "Regenerate: `MEMSDK_REGEN_DOCS=1 python -m pytest tests/test_docs.py`.\n",
        "Every command that prints a result takes `--json` (except `mcp`, which serves a",
        "protocol, and the two whose output is JSON already: `hook claude-code` and `export`).",
        "Progress bars appear only when standard error is a terminal. The environment",
        "variables memsdk reads are listed under `memsdk --help` below.\n",
        "Shell completion (click's): add to `~/.bashrc`",
        "",
        "```sh",
        'eval "$(_MEMSDK_COMPLETE=bash_source memsdk)"',
        "```",
        "",
        "For zsh use `zsh_source` (in `~/.zshrc`); for fish,",
        "`_MEMSDK_COMPLETE=fish_source memsdk > ~/.config/fish/completions/memsdk.fish`.\n",
    ]
    for path, _command in walk(cli):
        result = runner.invoke(cli, [*path, "--help"], prog_name="memsdk", terminal_width=88)
        assert result.exit_code == 0, result.output
        parts.append(f"## memsdk {' '.join(path)}".rstrip() + "\n")
        parts.append("```text\n" + result.output.rstrip() + "\n```\n")
    return "\n".join(parts)


def test_cli_doc_is_current():
    expected = render_cli_doc()
    if os.environ.get("MEMSDK_REGEN_DOCS"):
        CLI_DOC.write_text(expected, "utf-8")
    assert CLI_DOC.read_text("utf-8") == expected, (
        "docs/cli.md is stale: MEMSDK_REGEN_DOCS=1 python -m pytest tests/test_docs.py"
    )


@pytest.mark.parametrize("path", [p for p, _ in walk(cli)], ids=lambda p: " ".join(p) or "memsdk")
def test_every_command_has_help(path):
    command = cli
    for name in path:
        command = command.get_command(click.Context(command), name)
    assert command.help and command.help.strip(), f"memsdk {' '.join(path)} has no help text"


def test_readme_links_exist():
    readme = (ROOT / "README.md").read_text("utf-8")
    for line in readme.splitlines():
        for piece in line.split("](")[1:]:
            target = piece.split(")", 1)[0]
            if target.startswith("http"):
                continue
            assert (ROOT / target).exists(), f"README links to missing {target}"


def test_ci_runs_the_readme_commands():
    readme = (ROOT / "README.md").read_text("utf-8")
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    blocks = readme.split("```sh\n")[1:3]
    commands = [block.split("\n```", 1)[0].strip() for block in blocks]
    assert len(commands) == 2
    for command in commands:
        assert command in ci.splitlines(), f".ci/run does not run the README command: {command}"


def fenced(text: str, language: str) -> list[str]:
    return [block.split("\n```", 1)[0] for block in text.split(f"```{language}\n")[1:]]


@pytest.mark.parametrize("doc", ["README.md", "docs/pack-format.md"])
def test_pack_examples_in_docs_validate(doc, tmp_path):
    from plugin_sdk.packs.documents import parse_pack_text

    blocks = [b for b in fenced((ROOT / doc).read_text("utf-8"), "toml") if "[categories." in b]
    assert blocks, f"{doc} has no pack example"
    for block in blocks:
        pack = parse_pack_text(block, source=doc, suffix=".toml")
        assert pack.categories


def test_readme_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    host, plugin = fenced((ROOT / "README.md").read_text("utf-8"), "python")
    namespace: dict[str, object] = {}
    exec(compile(host, "README.md", "exec"), namespace)
    namespace["store"].close()  # type: ignore[attr-defined]

    from plugin_sdk.plugin.records import Fact

    exec(compile(plugin, "README.md", "exec"), namespace)
    admit = namespace["historian_admit"]
    verdict = admit(None, Fact("ANY", "db password is hunter2", 1))  # type: ignore[operator]
    assert verdict.action == "quarantine"
    assert admit(None, Fact("ANY", "deploys on Tuesdays", 1)) is None  # type: ignore[operator]


def test_architecture_names_every_module_in_its_area() -> None:
    """docs/architecture.md's module tables name every module (a folder may name its own)."""
    import re

    root = Path(__file__).resolve().parents[1]
    doc = (root / "docs" / "architecture.md").read_text(encoding="utf-8")
    sections = {}
    for part in re.split(r"\n### ", doc)[1:]:
        name = re.match(r"`([\w/]+)/?`|top level", part)
        if name:
            sections[(name.group(1) or "").rstrip("/")] = part
    missing = []
    for folder in ("plugin_sdk", "plugins"):
        for path in sorted((root / folder).rglob("*.py")):
            if path.name in ("__init__.py", "__main__.py"):
                continue
            rel = (
                path.relative_to(root / "plugin_sdk")
                if folder == "plugin_sdk"
                else path.relative_to(root)
            )
            area = rel.parts[0] if len(rel.parts) > 1 else ""
            text = sections.get(area, "")
            inner = "/".join(rel.parts[1:-1])
            if f"`{path.name}`" not in text and not (
                inner and f"`{inner}/`" in text and path.name in text
            ):
                missing.append(str(path.relative_to(root)))
    assert not missing, f"docs/architecture.md does not name: {missing}"
