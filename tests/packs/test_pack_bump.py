"""The built-in packs' 1.3.0 ([prompts] session lines) upgrades a store that has 1.2.0 cleanly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from plugin_sdk import Store, resolve_pack
from plugin_sdk.cli import cli
from plugin_sdk.model.prompts import session_lines
from plugin_sdk.testing import fresh_plugin_manager

PACKS = Path(__file__).resolve().parents[2] / "packs"


def old_version(name: str) -> str:
    """The pack's file as 1.2.0 was: no ``[prompts]`` table."""
    text = (PACKS / f"{name}.toml").read_text()
    text = text.replace('version = "1.3.0"', 'version = "1.2.0"', 1)
    return re.sub(r"\n\[prompts\]\nsession = \"\"\"\n.*?\"\"\"\n", "\n", text, flags=re.S)


@pytest.mark.parametrize("name", ["dev", "ops"])
def test_a_store_with_the_old_pack_upgrades_to_the_new_one(tmp_path: Path, name: str) -> None:
    old_file = tmp_path / f"{name}-1.2.0.toml"
    old_file.write_text(old_version(name))
    db = tmp_path / "store.db"
    with Store(db, project="p", plugins=fresh_plugin_manager()) as store:
        store.packs.install(resolve_pack(str(old_file)))
        categories = store.category_names()
        kept = store.memories.write("Deploys go out on Tuesdays only.", categories[0])
        assert session_lines(store) == []
    new = resolve_pack(name)
    assert new.version == "1.3.0"
    runner = CliRunner()
    env = {"MEMSDK_DB": str(db), "MEMSDK_PROJECT": "p"}
    again = runner.invoke(cli, ["pack", "install", name], env=env)
    assert again.exit_code != 0 and "use upgrade to move to 1.3.0" in again.output
    result = runner.invoke(cli, ["pack", "upgrade", name], env=env)
    assert result.exit_code == 0, result.output
    with Store(db, project="p", plugins=fresh_plugin_manager()) as store:
        assert store.packs.get(name).version == "1.3.0"
        assert store.category_names() == categories  # same categories: no mapping needed
        assert store.memories.get(kept.id).content == "Deploys go out on Tuesdays only."
        lines = session_lines(store)
    assert any("memory_write" in line for line in lines)
    assert any("memory_recall" in line for line in lines)


def test_claude_code_install_upgrades_an_old_builtin_pack(tmp_path: Path) -> None:
    from plugin_sdk.host.claude.claude_setup import prepare_store

    old_file = tmp_path / "dev-1.2.0.toml"
    old_file.write_text(old_version("dev"))
    db = tmp_path / "store.db"
    with Store(db, project="p", plugins=fresh_plugin_manager()) as store:
        store.packs.install(resolve_pack(str(old_file)))
    lines = prepare_store(db, "p", "dev", "none", fresh_plugin_manager())
    assert "Pack: pack dev upgraded from 1.2.0 to 1.3.0" in lines[1]
    assert "already installed" in prepare_store(db, "p", "dev", "none", fresh_plugin_manager())[1]
    with Store(db, project="p", plugins=fresh_plugin_manager()) as store:
        assert any("memory_recall" in line for line in session_lines(store))
