"""examples/host/host.py, the host of docs/host-guide.md, runs and does what it says.

It runs as a script in a subprocess with this interpreter, on a temp store,
twice: the second run starts from what the first one remembered.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_sdk_plugins.injection import OPEN_TAG

from plugin_sdk import (
    HostModel,
    NoModel,
    PackError,
    Prompt,
    Store,
    ensure_packs,
    expand,
    load_pack_file,
    open_store,
    run_historian,
)
from plugin_sdk.errors import ModelConflict, PackConflict, StoreError
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager, pack_document

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "host" / "host.py"
PACK = ROOT / "examples" / "host" / "assistant.toml"
PROJECT = "billing-demo"


def run_example(db: Path) -> str:
    env = {**os.environ, "MEMSDK_LOAD_PLUGINS": ""}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--db", str(db)],
        capture_output=True,
        text=True,
        cwd=db.parent,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


def section(output: str, title: str) -> str:
    return output.split(f"== {title}\n", 1)[1].split("\n== ", 1)[0]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("host") / "memory.db"
    return db, run_example(db)


@pytest.mark.slow
def test_first_session_starts_empty_and_remembers_through_the_historian(first_run):
    _db, output = first_run
    one = section(output, "session-1")
    assert one.startswith(
        "memory block: 0/1000 tokens, 0 memories shown\n(no memories to inject)\n"
    )
    written = [int(n) for n in re.findall(r"^historian: (\d+) written", one, re.M)]
    assert written == [1, 2, 1]
    assert re.search(r"^fragmented \[\d+\] into header \[\d+\] and 3 details$", one, re.M)
    # The delta carries each new memory into the running session.
    assert "New:\n- [1] Always run the tests with `make check` before a commit." in one
    assert "Never push to main directly." in one.split("delta:")[-1]
    assert re.search(r"^dreamer: \S+ handled \d+ \((done|paused)\)$", one, re.M)


@pytest.mark.slow
def test_second_session_is_given_the_memory_and_expands_on_demand(first_run):
    _db, output = first_run
    two = section(output, "session-2")
    block = two.split(OPEN_TAG + "\n", 1)[1].split("</memory>", 1)[0]
    assert "- [1] Always run the tests with `make check` before a commit." in block
    header = re.search(r"^- \[(\d+): 3 details\] To cut a release of billing:$", block, re.M)
    assert header, block
    assert block.index("# Directives") < block.index("# Known facts")
    port = re.search(r"^- \[(\d+)\] The billing service listens on port 8081\.$", block, re.M)
    assert port
    assert f"assistant: From memory [{port[1]}]: The billing service listens on port 8081." in two
    assert f"(expanding [{header[1]}]: 3 details)" in two
    assert (
        "assistant: From memory: 1. Bump the version in pyproject.toml. "
        "2. Run `make check` and fix what fails. 3. Tag the commit vX.Y.Z and push the tag."
    ) in two
    assert "- [" in two.split("delta: 1 new, 0 updated\n")[1]
    assert "The staging database is billing-stg." in two


@pytest.mark.slow
def test_the_store_holds_what_the_host_was_told(first_run):
    db, output = first_run
    pack = load_pack_file(PACK)
    with Store(db, project=PROJECT) as store:
        assert store.category_names() == sorted(
            pack.categories, key=lambda n: pack.categories[n].priority
        )
        rules = [
            m.content for m in store.memories.list(category="USER_RULES") if m.source == "historian"
        ]
        assert rules == [
            "Always run the tests with `make check` before a commit.",
            "Never push to main directly.",
        ]
        hit = store.memories.search("staging database")[0]
        assert hit.memory.category == "USER_FACTS"
        header = store.memories.search("cut release")[0]
        assert len(expand(store, header.memory.id).shown) == 3
        sessions = [
            row[0] for row in store.db.execute("SELECT session_id FROM injections ORDER BY 1")
        ]
        assert sessions == ["session-1", "session-2"]
    counts = dict(re.findall(r"^(USER_\w+): (\d+) active$", section(output, "store"), re.M))
    assert set(counts) == {"USER_RULES", "USER_FACTS"}


@pytest.mark.slow
def test_a_second_run_starts_from_what_the_first_remembered(first_run):
    db, _output = first_run
    again = run_example(db)
    one = section(again, "session-1")
    assert "- [1] Always run the tests with `make check` before a commit." in one.split("user:")[0]
    assert re.findall(r"^historian: (\d+) written", one, re.M) == ["0", "0", "0"]
    assert "assistant: From memory [" in one  # billing is already known on the first line


GUIDE = ROOT / "docs" / "host-guide.md"


def test_the_host_guide_code_runs_in_order(tmp_path, monkeypatch):
    """Every python block of docs/host-guide.md, in order, with a fake ``chat`` client."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMSDK_LOAD_PLUGINS", "")
    asked: list[str] = []

    def chat(messages: list[dict[str, str]]) -> str | None:
        asked.append(messages[0]["content"].split(".")[0])
        if messages[0]["content"].startswith("You are the historian"):
            return (
                '<facts category="PROJECT_RULES">\n'
                "- Run the tests with `make check` before every commit.\n"
                "</facts>"
            )
        return None  # memsdk's model-free fallbacks take over

    text = GUIDE.read_text("utf-8")
    blocks = [b.split("\n```", 1)[0] for b in text.split("```python\n")[1:]]
    assert len(blocks) >= 8
    namespace: dict[str, object] = {"chat": chat}
    for block in blocks:
        exec(compile(block, str(GUIDE), "exec"), namespace)
    report = namespace["report"]
    assert len(report.written) == 1  # type: ignore[attr-defined]
    assert namespace["details"].shown == report.written  # type: ignore[attr-defined]
    assert "You are the historian of a long-running agent session" in asked
    with Store(tmp_path / "memory.db", project="my-app") as store:
        rules = store.memories.list(category="PROJECT_RULES")
        assert [m.content for m in rules] == [
            "Run the tests with `make check` before every commit."
        ]
        archived = store.memories.list(status="archived")
        assert [m.content for m in archived] == ["The API listens on port 8081."]


# The host API's own entry point: open_store, ensure_packs, HostModel.


def garden_pack(tmp_path: Path, name: str, category: str) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(pack_document(name, "1.0.0", {category: "content"})), "utf-8")
    return path


def test_open_store_installs_only_the_packs_the_store_lacks(tmp_path):
    first = garden_pack(tmp_path, "garden", "GARDEN_LOG")
    with open_store(tmp_path / "m.db", project="p", packs=[first]) as store:
        assert store.category_names() == ["GARDEN_LOG"]
    newer = tmp_path / "garden2.json"
    newer.write_text(
        json.dumps(
            pack_document("garden", "2.0.0", {"GARDEN_LOG": "content", "GARDEN_TOOLS": "content"})
        ),
        "utf-8",
    )
    second = garden_pack(tmp_path, "orchard", "ORCHARD_LOG")
    with open_store(tmp_path / "m.db", project="p") as store:
        reports = ensure_packs(store, [newer, second])
        assert [(r.pack, r.added) for r in reports] == [("orchard", ["ORCHARD_LOG"])]
        assert {p.name: p.version for p in store.packs.installed()} == {
            "garden": "1.0.0",  # upgrading is deliberate: store.packs.upgrade
            "orchard": "1.0.0",
        }


def test_packs_go_in_all_or_none_and_a_failed_open_closes_the_store(tmp_path):
    one = garden_pack(tmp_path, "garden", "SHARED_LOG")
    two = garden_pack(tmp_path, "orchard", "SHARED_LOG")  # the same category name
    with pytest.raises(PackConflict, match="SHARED_LOG"):
        open_store(tmp_path / "m.db", project="p", packs=[one, two])
    with pytest.raises(PackError, match="no-such-pack"):
        open_store(tmp_path / "m.db", project="p", packs=[one, "no-such-pack"])
    with Store(tmp_path / "m.db", project="p") as store:
        assert store.packs.installed() == []


def test_the_model_is_a_function_or_a_plugin(tmp_path):
    prompts: list[Prompt] = []

    def complete(prompt: Prompt) -> str | None:
        prompts.append(prompt)
        return "<no-facts/>"

    chunk = [{"role": "user", "content": "Nothing worth keeping here."}]
    pack = garden_pack(tmp_path, "garden", "GARDEN_LOG")
    with open_store(tmp_path / "a.db", project="p", model=complete, packs=[pack]) as store:
        assert run_historian(store, chunk).nothing_new
        assert [p.purpose for p in prompts] == ["historian"]
        assert "GARDEN_LOG" in prompts[0].system
    scripted = ScriptedModel(["<no-facts/>"])
    with open_store(tmp_path / "b.db", project="p", model=scripted, packs=[pack]) as store:
        assert store.plugins.get_plugin("host-model") is scripted
        assert run_historian(store, chunk).nothing_new
    with (
        open_store(
            tmp_path / "c.db", project="p", model=lambda prompt: None, packs=[pack]
        ) as store,
        pytest.raises(NoModel),
    ):
        run_historian(store, chunk)
    with pytest.raises(TypeError, match="model must be a function"):
        open_store(tmp_path / "d.db", project="p", model="gpt")
    assert isinstance(HostModel(complete), HostModel)


def test_two_stores_share_a_plugin_manager_and_its_model(tmp_path):
    plugins = fresh_plugin_manager()
    pack = garden_pack(tmp_path, "garden", "GARDEN_LOG")
    asked: list[str] = []

    def complete(prompt: Prompt) -> str:
        asked.append(prompt.purpose)
        return "<no-facts/>"

    chunk = [{"role": "user", "content": "Nothing worth keeping here."}]
    with (
        open_store(
            tmp_path / "a.db", project="p", model=complete, packs=[pack], plugins=plugins
        ) as first,
        open_store(
            tmp_path / "b.db", project="q", model=complete, packs=[pack], plugins=plugins
        ) as second,
    ):
        assert first.plugins is second.plugins is plugins
        assert [name for name, _ in plugins.list_name_plugin()].count("host-model") == 1
        assert run_historian(first, chunk).nothing_new and run_historian(second, chunk).nothing_new
    assert asked == ["historian", "historian"]
    scripted = ScriptedModel(["<no-facts/>"])
    again = fresh_plugin_manager()
    for name in ("c.db", "d.db"):  # the same plugin object is reused as well
        open_store(tmp_path / name, project="p", model=scripted, plugins=again).close()
    assert again.get_plugin("host-model") is scripted


def test_another_model_on_a_manager_that_has_one_is_refused(tmp_path):
    plugins = fresh_plugin_manager()
    with open_store(tmp_path / "a.db", project="p", model=lambda prompt: "a", plugins=plugins):
        registered = plugins.get_plugin("host-model")
        with pytest.raises(ModelConflict, match="already has a host model"):
            open_store(tmp_path / "b.db", project="p", model=lambda prompt: "b", plugins=plugins)
        assert plugins.get_plugin("host-model") is registered
    assert not (tmp_path / "b.db").exists()


def test_a_failed_open_leaves_no_model_registered(tmp_path):
    plugins = fresh_plugin_manager()
    scripted = ScriptedModel([])
    with pytest.raises(PackError, match="no-such-pack"):
        open_store(tmp_path / "m.db", project="p", model=scripted, packs=["no-such-pack"],
                   plugins=plugins)  # fmt: skip
    assert plugins.get_plugin("host-model") is None
    with pytest.raises(StoreError, match="cannot open store"):
        open_store(tmp_path, project="p", model=scripted, plugins=plugins)  # a directory
    assert plugins.get_plugin("host-model") is None
    # A model that was already there stays when a later open fails.
    with open_store(tmp_path / "m.db", project="p", model=scripted, plugins=plugins):
        with pytest.raises(StoreError):
            open_store(tmp_path, project="p", model=scripted, plugins=plugins)
        assert plugins.get_plugin("host-model") is scripted
