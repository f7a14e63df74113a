"""docs/writing-a-plugin.md: its plugin is examples/secret_guard, and it works as described.

The plugin is installed for real: its module and a dist-info directory built
from its pyproject.toml (METADATA, entry_points.txt with the ``[memsdk]``
group) in a directory put on ``sys.path``. Its command runs through
``plugin_sdk.cli.main`` in a subprocess.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from plugin_sdk import Store
from plugin_sdk.cli import cli
from plugin_sdk.packs.documents import validate_pack
from plugin_sdk.plugin.manager import make_plugin_manager
from plugin_sdk.stages.dreamer import Dreamer
from plugin_sdk.stages.historian import run_historian
from plugin_sdk.testing import ScriptedModel, pack_document

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "writing-a-plugin.md"
EXAMPLE = ROOT / "examples" / "secret_guard"
MODULE = "secret_guard"
REASON = "secret_guard: looks like an API key (sk-...)"
API_KEY = "sk-live-0123456789abcdefghij"
GARDEN = pack_document("garden", "1.0.0", {"GARDEN_LOG": "content", "GARDEN_RULES": "intent"})


def fenced(language: str) -> list[str]:
    """The fenced blocks of one language in the doc, without their fences."""
    text = DOC.read_text("utf-8")
    return [block.split("\n```", 1)[0] + "\n" for block in text.split(f"```{language}\n")[1:]]


def example_project() -> dict:
    return tomllib.loads((EXAMPLE / "pyproject.toml").read_text("utf-8"))["project"]


@pytest.fixture(autouse=True)
def no_plugin_environment(monkeypatch):
    for variable in ("MEMSDK_LOAD_PLUGINS", "MEMSDK_BLOCK_PLUGINS", "MEMSDK_TRACE"):
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """secret_guard installed in a fake site-packages on ``sys.path``; yields that directory."""
    site = tmp_path / "site"
    site.mkdir()
    project = example_project()
    (site / f"{MODULE}.py").write_text((EXAMPLE / f"{MODULE}.py").read_text("utf-8"), "utf-8")
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n",
        "utf-8",
    )
    entry_points = project["entry-points"]["memsdk"]
    (info / "entry_points.txt").write_text(
        "[memsdk]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()), "utf-8"
    )
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    yield site
    sys.modules.pop(MODULE, None)
    importlib.invalidate_caches()


def garden(path: Path, plugins) -> Store:
    store = Store(path, project="garden", plugins=plugins)
    try:
        store.packs.install(validate_pack(GARDEN, source="test"))
    except BaseException:
        store.close()
        raise
    return store


# The doc shows the example's files, in full


def test_the_doc_shows_the_plugin_module_in_full():
    module = (EXAMPLE / f"{MODULE}.py").read_text("utf-8")
    assert module in fenced("python"), (
        "docs/writing-a-plugin.md must show examples/secret_guard/secret_guard.py in full"
    )


def test_the_doc_shows_the_pyproject_in_full():
    pyproject = (EXAMPLE / "pyproject.toml").read_text("utf-8")
    assert pyproject in fenced("toml")
    assert example_project()["entry-points"]["memsdk"] == {"secret_guard": "secret_guard"}


# Installed through its entry point, it works


def test_it_loads_through_its_entry_point(installed):
    pm = make_plugin_manager()
    assert pm.broken == []
    assert pm.origins["secret_guard"] == "memsdk-secret-guard"
    assert pm.get_plugin("secret_guard") is sys.modules[MODULE]


def test_the_doc_shows_what_memsdk_plugins_prints(installed, monkeypatch):
    monkeypatch.setenv("MEMSDK_LOAD_PLUGINS", "secret_guard")
    result = CliRunner().invoke(cli, ["plugins"], catch_exceptions=False)
    assert result.exit_code == 0
    [shown] = fenced("json")
    assert result.output == shown
    assert json.loads(shown)[0]["hooks"] == [
        "historian_admit",
        "register_commands",
        "register_dreamer_tasks",
    ]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"The staging API key is {API_KEY}.", "an API key (sk-...)"),
        ("CI uses AKIAIOSFODNN7EXAMPLE for uploads.", "an AWS access key id"),
        ("The db login is admin with password=hunter2", "a password"),
        ("Deploy key: -----BEGIN OPENSSH PRIVATE KEY----- b3Blbn...", "a private key"),
        ("Rotate the API keys every 90 days; see the password policy.", None),
        ("Sowed basil in tray 3 on May 3.", None),
    ],
)
def test_looks_like_secret(installed, text, kind):
    assert importlib.import_module(MODULE).looks_like_secret(text) == kind


def test_a_historian_pass_quarantines_the_secret_and_writes_the_rest(installed, tmp_path):
    reply = "\n".join(
        [
            '<facts category="GARDEN_LOG">',
            f"- The greenhouse sensor API key is {API_KEY}.",
            "- Sowed basil in tray 3 on May 3.",
            "</facts>",
        ]
    )
    model = ScriptedModel([reply])
    pm = make_plugin_manager(allow=["secret_guard"], plugins=[("scripted-model", model)])
    assert pm.origins["secret_guard"] == "memsdk-secret-guard"
    with garden(tmp_path / "m.db", pm) as store:
        report = run_historian(store, [{"role": "user", "content": "sensor setup and sowing"}])
        [kept] = report.quarantined
        assert (kept["category"], kept["reason"], kept["line"]) == ("GARDEN_LOG", REASON, 2)
        secret = store.memories.get(kept["id"])
        assert (secret.status, secret.note) == ("quarantined", REASON)
        assert [store.memories.get(i).content for i in report.written] == [
            "Sowed basil in tray 3 on May 3."
        ]
        assert [m.content for m in store.memories.list()] == ["Sowed basil in tray 3 on May 3."]


def test_its_dreamer_task_archives_secrets_already_in_the_store(installed, tmp_path):
    pm = make_plugin_manager(allow=["secret_guard"])
    with garden(tmp_path / "m.db", pm) as store:
        secret = store.memories.write(f"Sensor key {API_KEY}.", "GARDEN_LOG").id
        basil = store.memories.write("Sowed basil in tray 3 on May 3.", "GARDEN_LOG").id
        dreamer = Dreamer(store)
        assert dreamer.tasks["secret-sweep"].schedule == "daily"
        [report] = dreamer.run("secret-sweep")
        assert (report.handled, report.finished_pass, report.error) == (2, True, None)
        assert store.memories.get(secret).status == "archived"
        assert store.memories.get(basil).status == "active"


def run_main(installed: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSDK_")}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(installed), *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])]
    )
    env["MEMSDK_USER_PATH"] = str(cwd / "user")
    return subprocess.run(
        [sys.executable, "-c", "from plugin_sdk.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


@pytest.mark.slow
def test_its_command_runs_through_main(installed, tmp_path):
    db = tmp_path / "scan.db"
    with garden(db, make_plugin_manager(allow=())) as store:
        secret = store.memories.write(f"Sensor key {API_KEY}.", "GARDEN_LOG").id
        store.memories.write("Sowed basil in tray 3 on May 3.", "GARDEN_LOG")

    done = run_main(installed, tmp_path, "secret-scan", "--db", str(db), "--project", "garden")
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout == f"memory {secret} (GARDEN_LOG) looks like an API key (sk-...)\n"
    assert API_KEY not in done.stdout

    with Store(db, project="garden", plugins=make_plugin_manager(allow=())) as store:
        store.memories.archive(secret)
    done = run_main(installed, tmp_path, "secret-scan", "--db", str(db), "--project", "garden")
    assert (done.returncode, done.stdout) == (0, "no active memory looks like a credential\n")


def test_the_docs_test_passes(installed, tmp_path):
    [block] = [b for b in fenced("python") if b.startswith("# test_secret_guard.py")]
    namespace: dict[str, object] = {}
    exec(compile(block, "docs/writing-a-plugin.md", "exec"), namespace)
    namespace["test_a_credential_is_quarantined_and_the_rest_is_written"](tmp_path)  # type: ignore[operator]
