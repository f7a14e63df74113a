"""Issue 17: the interaction-style detector finds the design's patterns, with pack thresholds,
and proposes memory entries and instructions-file notes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from plugin_sdk import Store, resolve_pack, validate_pack
from plugin_sdk.grid.cells import place
from plugin_sdk.plugin.records import CellDecision
from plugin_sdk.proposals.detect import run_detectors
from plugin_sdk.proposals.filing import pending
from plugin_sdk.proposals.target import Target
from plugin_sdk.testing import fresh_plugin_manager


@pytest.fixture(autouse=True)
def quiet_git(tmp_path, monkeypatch):
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Test\n\temail = test@example.invalid\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def repo(tmp_path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    (path / "CLAUDE.md").write_text("# Project agent\n\n## Rules\n\n- Be brief.\n")
    subprocess.run(["git", "-C", str(path), "add", "."], check=True)
    subprocess.run(["git", "-C", str(path), "commit", "-q", "-m", "first"], check=True)
    return path


def say(store: Store, actor: str, acts: list[str]) -> None:
    for n, act in enumerate(acts):
        memory_id = store.memories.write(f"{actor} said thing {n}", "WORKFLOWS").id
        store.entities.link(memory_id, [actor])
        place(store, [(memory_id, CellDecision("episodic", "other", act, "test"))])


def test_directive_plus_expressive_with_one_contact_is_proposed_as_entry_and_note(tmp_path, repo):
    with Store(tmp_path / "s.db", project="dev", plugins=fresh_plugin_manager()) as store:
        store.packs.install(resolve_pack("dev"))
        say(store, "world:person:mara", ["directive"] * 3 + ["expressive"] * 3 + ["assertive"])
        report = run_detectors(store, target=Target(repo=repo))
        proposals = pending(store)
        assert report.filed == [p.id for p in proposals]
        entry, note = proposals
        content = (
            "Interactions with world:person:mara are mostly directive and expressive together "
            "(instructions and requests with feelings and reactions)."
        )
        assert entry.diff == {"action": "write", "category": "USER_PREFERENCES", "content": content}
        assert note.diff_type == "claude_md"
        assert note.diff["path"] == "CLAUDE.md" and f"- {content}" in note.diff["after"]
        assert note.rationale.startswith("3 directive and 3 expressive of world:person:mara's 7")


def test_the_thresholds_are_pack_data(tmp_path):
    document = resolve_pack("dev").document
    document = {**document, "name": "strict", "grid": {**document["grid"]}}
    document["grid"]["styles"] = {"min_interactions": 10}
    document["categories"] = {
        f"STRICT_{name}": spec for name, spec in document["categories"].items()
    }
    document["grid"]["category_cells"] = {
        f"STRICT_{name}": cell for name, cell in document["grid"]["category_cells"].items()
    }
    with Store(tmp_path / "t.db", project="dev", plugins=fresh_plugin_manager()) as store:
        store.packs.install(validate_pack(document, source="strict"))
        for n, act in enumerate(["directive"] * 6):
            memory_id = store.memories.write(f"mara said thing {n}", "STRICT_WORKFLOWS").id
            store.entities.link(memory_id, ["world:person:mara"])
            place(store, [(memory_id, CellDecision("episodic", "other", act, "test"))])
        assert run_detectors(store).filed == []  # 6 interactions: under this pack's 10
