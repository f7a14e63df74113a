"""The llm adapter: a model registered through llm's own plugin hook runs the stages.

No network and no real llm configuration: ``LLM_USER_PATH`` points at a
temporary directory, and the model is a deterministic ``llm.Model`` subclass
registered with ``llm.pm`` through a ``register_models`` hookimpl.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from plugin_sdk import Store
from plugin_sdk.errors import LlmModelError, LlmNotInstalled
from plugin_sdk.model.llm import LlmModel, import_llm
from plugin_sdk.model.prompts import dreamer_curate, historian_system
from plugin_sdk.packs.documents import validate_pack
from plugin_sdk.plugin.records import Prompt
from plugin_sdk.stages.dreamer import Dreamer
from plugin_sdk.stages.historian import run_historian
from plugin_sdk.store import driver
from plugin_sdk.testing import fresh_plugin_manager, pack_document

llm = pytest.importorskip("llm")

MODEL_ID = "memsdk-test-harbour"
PLUGIN_NAME = "memsdk-test-harbour-plugin"
PACK = pack_document("harbour", "1.0.0", {"BERTH_RULES": "intent", "QUAY_STATE": "content"})


class HarbourModel(llm.Model):
    """Answers from a list, in order; keeps every prompt it was sent."""

    model_id = MODEL_ID
    can_stream = False

    def __init__(self) -> None:
        self.answers: list[str | Exception] = []
        self.seen: list[dict[str, object]] = []

    def execute(self, prompt, stream, response, conversation):
        self.seen.append(
            {
                "system": prompt.system,
                "prompt": prompt.prompt,
                "roles": [m.role for m in prompt.messages],
                "texts": [
                    "".join(getattr(part, "text", "") for part in m.parts) for m in prompt.messages
                ],
            }
        )
        if not self.answers:
            raise AssertionError("HarbourModel has no answer left")
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        yield answer


class HarbourPlugin:
    __name__ = PLUGIN_NAME  # llm.get_plugins() reads a plugin's __name__

    def __init__(self, model: HarbourModel) -> None:
        self.model = model

    @llm.hookimpl
    def register_models(self, register):
        register(self.model, aliases=["harbour"])


@pytest.fixture
def harbour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HarbourModel]:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm-home"))
    model = HarbourModel()
    plugin = HarbourPlugin(model)
    llm.pm.register(plugin, name=PLUGIN_NAME)
    try:
        yield model
    finally:
        llm.pm.unregister(plugin)


def open_store(tmp_path: Path, model_id: str = MODEL_ID) -> Store:
    plugins = fresh_plugin_manager(("llm-model", LlmModel(model_id)))
    store = Store(tmp_path / "m.db", project="harbour", plugins=plugins)
    store.packs.install(validate_pack(PACK, source="harbour"))
    return store


def test_the_model_comes_from_llms_plugin_hook_and_llms_config_is_the_temp_dir(harbour, tmp_path):
    assert PLUGIN_NAME in [p["name"] for p in llm.get_plugins()]
    assert llm.get_model("harbour") is harbour  # the alias resolves too
    assert llm.user_dir() == tmp_path / "llm-home"


def test_the_historian_runs_on_an_llm_model(harbour, tmp_path):
    store = open_store(tmp_path)
    harbour.answers.append(
        '<facts category="QUAY_STATE">\n- Quay 1 fender 3 is split; a replacement is ordered.\n'
        '</facts>\n<facts category="BERTH_RULES">\n'
        "- Vessels over 9 m draught berth at quay 1 only.\n</facts>"
    )
    chunk = [
        {
            "role": "user",
            "content": "Fender 3 on quay 1 is split. Anything over 9 m goes to quay 1.",
        },
        {"role": "assistant", "content": "Noted both."},
    ]
    report = run_historian(store, chunk)
    assert len(report.written) == 2 and report.quarantined == []
    assert sorted(m.content for m in store.memories.list()) == [
        "Quay 1 fender 3 is split; a replacement is ordered.",
        "Vessels over 9 m draught berth at quay 1 only.",
    ]
    sent = harbour.seen[0]
    # the criteria-built prompt is llm's system prompt
    assert str(sent["system"]).strip() == historian_system(store).strip()
    assert "Fender 3 on quay 1 is split." in str(sent["prompt"])
    store.close()


def test_the_dreamer_runs_on_an_llm_model(harbour, tmp_path):
    store = open_store(tmp_path)
    first = store.memories.write("Quay 2 is closed for dredging until April 2026.", "QUAY_STATE")
    second = store.memories.write(
        "Quay 2 is closed for dredging until April 2026 too.", "QUAY_STATE"
    )
    harbour.answers.append("Quay 2 is closed for dredging until the end of April 2026.")
    [result] = Dreamer(store).run("curate")
    assert result.finished_pass
    active = [m.content for m in store.memories.list()]
    assert active == ["Quay 2 is closed for dredging until the end of April 2026."]
    assert store.memories.get(first.id).superseded_by == second.id
    sent = harbour.seen[0]
    assert str(sent["system"]).strip() == dreamer_curate(store).strip()
    assert str(sent["prompt"]).startswith("[2] Quay 2 is closed")
    store.close()


def test_several_messages_go_to_llm_as_messages(harbour):
    harbour.answers.append("ok")
    model = LlmModel(MODEL_ID)
    prompt = Prompt(
        "test",
        "Be brief.",
        [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "second"},
            {"role": "user", "content": "third"},
        ],
    )
    assert model.complete(prompt) == "ok"
    sent = harbour.seen[0]
    assert sent["roles"] == ["system", "user", "assistant", "user"]
    assert sent["texts"] == ["Be brief.", "first", "second", "third"]
    # The system prompt goes once: as the leading message, not also as system=
    # (which an adapter reading both prompt.system and prompt.messages would send twice).
    assert sent["system"] == ""
    assert model.calls == 1


def test_the_system_prompt_is_sent_once_either_way(harbour):
    harbour.answers += ["one", "two"]
    model = LlmModel(MODEL_ID)
    model.complete(Prompt("test", "Be brief.", [{"role": "user", "content": "only"}]))
    model.complete(
        Prompt(
            "test",
            "",
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
        )
    )
    single, several = harbour.seen
    assert (single["system"], single["prompt"]) == ("Be brief.", "only")
    assert single["roles"] == ["system", "user"]  # llm's own view of system= and the prompt
    assert several["roles"] == ["user", "assistant"] and several["system"] == ""


def test_an_unknown_model_is_one_clear_error(harbour):
    with pytest.raises(LlmModelError, match=r"llm has no model 'no-such-model'.*`llm models`"):
        LlmModel("no-such-model").complete(
            Prompt("historian", "s", [{"role": "user", "content": "x"}])
        )


def test_a_failing_model_is_one_clear_error(harbour):
    harbour.answers.append(llm.ModelError("rate limited, retry in 20s"))
    with pytest.raises(LlmModelError) as caught:
        LlmModel(MODEL_ID).complete(Prompt("historian", "s", [{"role": "user", "content": "x"}]))
    assert str(caught.value) == (
        f"llm model '{MODEL_ID}' failed on a historian prompt: ModelError: rate limited, retry in 20s"
    )


def test_without_llm_installed_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "llm", None)  # import llm now raises ImportError
    with pytest.raises(LlmNotInstalled, match=r"pip install -e '\.\[llm\]'"):
        import_llm()
    model = LlmModel("anything")  # constructing never imports llm
    with pytest.raises(LlmNotInstalled):
        model.complete(Prompt("historian", "s", [{"role": "user", "content": "x"}]))


@pytest.mark.slow
def test_a_conversation_logged_by_the_installed_llm_imports(harbour, tmp_path):
    """The logs.db importer reads what this version of llm writes (whichever schema)."""
    import sqlite_utils

    from plugin_sdk.transcripts import load_transcript

    try:
        from llm.migrations import migrate
    except ImportError:  # pragma: no cover - every llm since 0.4 has it
        pytest.skip("this llm has no migrations module")
    path = tmp_path / "logs.db"
    db = sqlite_utils.Database(path)
    migrate(db)
    harbour.answers += ["Quay 3 takes 8.5 m at most.", "Then quay 1."]
    conversation = harbour.conversation()
    for text in ("What draught does quay 3 take?", "And for 9.2 m?"):
        response = conversation.prompt(text, system="You are Harbourmaster.")
        response.text()
        response.log_to_db(db)
    db.close()
    transcript = load_transcript(path)
    assert [(m.role, m.text) for m in transcript.messages] == [
        ("user", "What draught does quay 3 take?"),
        ("assistant", "Quay 3 takes 8.5 m at most."),
        ("user", "And for 9.2 m?"),
        ("assistant", "Then quay 1."),
    ]
    assert transcript.report.conversations == 1
    assert transcript.report.skipped["system prompt"] >= 1


def test_a_legacy_conversation_continued_by_this_llm_is_imported_once(harbour, tmp_path):
    """llm stores a continued conversation's history again in its thread: no duplicates."""

    import sqlite_utils
    from llm.cli import load_conversation

    from plugin_sdk.transcripts import load_transcript

    path = tmp_path / "logs.db"
    db = driver.connect(path)
    sql = Path(__file__).parents[1] / "data" / "transcripts" / "llm-logs.sql"
    db.executescript(sql.read_text("utf-8"))
    db.close()
    legacy = "01jwb3k1t8q4m2d9v6x0c5r7ye"  # the lock gates conversation, legacy rows only
    before = [m for m in load_transcript(path).messages if m.conversation.endswith(legacy)]
    assert [m.role for m in before] == ["user", "assistant", "tool", "assistant"]

    conversation = load_conversation(legacy, database=str(path))
    conversation.model = harbour
    harbour.answers.append("They close at 18:30 local time, every day.")
    response = conversation.prompt("When do the lock gates close?")
    response.text()
    response.log_to_db(sqlite_utils.Database(path))

    transcript = load_transcript(path)
    after = [m for m in transcript.messages if m.conversation.endswith(legacy)]
    assert {m.conversation for m in after} == {f"llm thread {legacy}"}
    texts = [m.text for m in after]
    assert texts[0] == "what time is it in Dublin? we close the lock gates at 18:30 local every day"
    assert texts[-2:] == [
        "When do the lock gates close?",
        "They close at 18:30 local time, every day.",
    ]
    assert len(texts) == len(set(texts))  # nothing twice
    assert transcript.report.skipped["response row repeated in the message store"] == 2


def test_memsdk_dream_run_takes_an_llm_model(harbour, tmp_path):
    from click.testing import CliRunner

    from plugin_sdk.cli import cli

    db = tmp_path / "m.db"
    store = Store(db, project="harbour", plugins=fresh_plugin_manager())
    store.packs.install(validate_pack(PACK, source="harbour"))
    store.memories.write("Quay 2 is closed for dredging until April 2026.", "QUAY_STATE")
    store.memories.write("Quay 2 is closed for dredging until April 2026 too.", "QUAY_STATE")
    store.close()
    harbour.answers.append("Quay 2 is closed for dredging until the end of April 2026.")
    env = {"MEMSDK_LOAD_PLUGINS": "", "LLM_USER_PATH": str(tmp_path / "llm-home")}
    args = ["dream", "run", "curate", "--model", "harbour", "--db", str(db), "--project", "harbour"]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    assert "curate: " in result.stdout and "pass complete" in result.stdout
    with Store(db, project="harbour", plugins=fresh_plugin_manager()) as reopened:
        assert [m.content for m in reopened.memories.list()] == [
            "Quay 2 is closed for dredging until the end of April 2026."
        ]
    unknown = CliRunner().invoke(cli, [*args[:3], "--model", "no-such-model", "--db", str(db)])
    assert unknown.exit_code == 1
    assert "no-such-model" in unknown.output


class HarbourEmbedding(llm.EmbeddingModel):
    """A deterministic embedding model: letter counts of a few letters."""

    model_id = "memsdk-test-harbour-embed"
    batch_size = 2

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def embed_batch(self, items, *, key=None):
        items = list(items)
        self.batches.append(items)
        for item in items:
            yield [float(item.lower().count(letter)) for letter in "aeiouqdr"]


class HarbourEmbeddingPlugin:
    __name__ = PLUGIN_NAME + "-embed"

    def __init__(self, model: HarbourEmbedding) -> None:
        self.model = model

    @llm.hookimpl
    def register_embedding_models(self, register):
        register(self.model, aliases=["harbour-embed"])


@pytest.fixture
def harbour_embed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HarbourEmbedding]:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm-home"))
    model = HarbourEmbedding()
    plugin = HarbourEmbeddingPlugin(model)
    llm.pm.register(plugin, name=PLUGIN_NAME + "-embed")
    try:
        yield model
    finally:
        llm.pm.unregister(plugin)


def test_an_llm_embedding_model_embeds_the_store_and_serves_vector_search(harbour_embed, tmp_path):
    from plugin_sdk.model.llm import LlmEmbedder
    from plugin_sdk.vectors.fusion import hybrid_search

    plugins = fresh_plugin_manager(("llm-embedder", LlmEmbedder("harbour-embed")))
    store = Store(tmp_path / "e.db", project="harbour", plugins=plugins)
    store.packs.install(validate_pack(PACK, source="harbour"))
    ids = [
        store.memories.write(text, "QUAY_STATE").id
        for text in ("Quay 2 is dredged", "Fuel barge at pier", "Road closed")
    ]
    [report] = Dreamer(store).run("embed")
    assert report.finished_pass
    assert harbour_embed.batches == [
        ["memsdk"],
        ["Quay 2 is dredged", "Fuel barge at pier"],
        ["Road closed"],
    ]
    status = store.vectors.status()
    assert status["models"] == {"llm:memsdk-test-harbour-embed": {"dim": 8, "vectors": 3}}
    hits = hybrid_search(store, "quay dredging", limit=3)
    assert hits[0].memory.id == ids[0]
    store.close()


def test_an_unknown_embedding_model_is_one_clear_error(harbour_embed):
    from plugin_sdk.model.llm import LlmEmbedder

    with pytest.raises(LlmModelError, match=r"no embedding model 'nope'.*`llm embed-models`"):
        LlmEmbedder("nope").embed(["x"])
