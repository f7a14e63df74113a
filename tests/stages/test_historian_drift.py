"""Issue 17: the historian reads the shapes a model drifts to and loses nothing silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from plugin_sdk import Store, validate_pack
from plugin_sdk.cli import cli
from plugin_sdk.plugin.records import Fact
from plugin_sdk.stages.historian import run_historian
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager, pack_document

OUTSIDE = "text outside any <facts> block"
PACK = pack_document("drift", "1.0.0", {"OPS_RULES": "intent", "ENV_STATE": "content"})
CHUNK = [{"role": "user", "content": "The staging database runs Postgres 16 on db-2."}]


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def store(tmp_path: Path, model: ScriptedModel):
    store = Store(
        tmp_path / "drift.db",
        project="drift",
        plugins=fresh_plugin_manager(("scripted-model", model)),
    )
    store.packs.install(validate_pack(PACK, source="drift"))
    yield store
    store.close()


def parse(store: Store, reply: str):
    """The store's parser, as the historian calls it (the built-in knows the categories)."""
    return store.plugins.hook.historian_parse(store=store, reply=reply)


def pairs(store: Store, reply: str) -> list[tuple[str, str]]:
    return [(f.category, f.text) for f in parse(store, reply).facts]


def test_a_tag_named_block_is_a_block_of_that_category(store):
    reply = "<ENV_STATE>\n- Staging runs Postgres 16.\n- db-2 hosts it.\n</ENV_STATE>"
    assert pairs(store, reply) == [
        ("ENV_STATE", "Staging runs Postgres 16."),
        ("ENV_STATE", "db-2 hosts it."),
    ]
    assert parse(store, reply).malformed == []


def test_tag_names_match_case_insensitively_and_take_the_store_spelling(store):
    assert pairs(store, "<env_state>Staging runs Postgres 16.</env_state>") == [
        ("ENV_STATE", "Staging runs Postgres 16.")
    ]


def test_a_wrapper_tag_around_facts_blocks_loses_nothing(store):
    reply = '<response>\n<facts category="ENV_STATE">\n- one\n</facts>\n</response>'
    parsed = parse(store, reply)
    assert [(f.category, f.text) for f in parsed.facts] == [("ENV_STATE", "one")]
    assert parsed.malformed == []


def test_fenced_lists_headed_lists_and_labelled_bullets(store):
    reply = "\n".join(
        [
            "```ENV_STATE",
            "- Staging runs Postgres 16.",
            "```",
            "",
            "## OPS_RULES",
            "- Never restart db-2 during business hours.",
            "",
            "**env_state**",
            "* Cache TTL is 300 s.",
            "",
            "- [OPS_RULES] Page the on-call before a failover.",
        ]
    )
    assert pairs(store, reply) == [
        ("ENV_STATE", "Staging runs Postgres 16."),
        ("OPS_RULES", "Never restart db-2 during business hours."),
        ("ENV_STATE", "Cache TTL is 300 s."),
        ("OPS_RULES", "Page the on-call before a failover."),
    ]


def test_a_fence_around_the_tagged_format_is_read_through(store):
    reply = '```xml\n<facts category="ENV_STATE">\n- one\n</facts>\n```'
    parsed = parse(store, reply)
    assert [(f.category, f.text) for f in parsed.facts] == [("ENV_STATE", "one")]
    assert parsed.malformed == []


@pytest.mark.parametrize(
    "data",
    [
        {"facts": [{"category": "ENV_STATE", "text": "Staging runs Postgres 16."}]},
        [{"category": "env_state", "fact": "Staging runs Postgres 16."}],
        {"ENV_STATE": ["Staging runs Postgres 16."]},
        {"category": "ENV_STATE", "facts": ["Staging runs Postgres 16."]},
    ],
)
def test_json_shapes_give_facts(store, data):
    for reply in (json.dumps(data), "```json\n" + json.dumps(data, indent=2) + "\n```"):
        assert pairs(store, reply) == [("ENV_STATE", "Staging runs Postgres 16.")], reply


def test_json_values_under_a_category_keep_their_key(store):
    assert pairs(store, json.dumps({"ENV_STATE": {"max_connections": 400}})) == [
        ("ENV_STATE", "max_connections: 400")
    ]


def test_json_text_with_no_category_comes_back_malformed(store):
    parsed = parse(store, json.dumps(["Staging runs Postgres 16."]))
    assert parsed.facts == []
    assert [m.text for m in parsed.malformed] == ["Staging runs Postgres 16."]


def test_empty_json_means_nothing_to_report(store):
    assert parse(store, '{"facts": []}').empty is True


def test_an_unknown_tag_name_is_a_fact_of_that_name_for_admission_to_quarantine(store):
    assert parse(store, "<SERVER_NOTES>\n- db-2 is loud\n</SERVER_NOTES>").facts == [
        Fact("SERVER_NOTES", "db-2 is loud", 2)
    ]


def test_historian_writes_facts_from_tag_named_blocks(store, model):
    model.add("<ENV_STATE>\n- Staging runs Postgres 16 on db-2.\n</ENV_STATE>")
    report = run_historian(store, CHUNK)
    assert [store.memories.get(i).content for i in report.written] == [
        "Staging runs Postgres 16 on db-2."
    ]
    assert report.ignored == [] and report.lost_text is False


def test_historian_quarantines_an_unknown_tag_and_reports_every_piece_not_written(store, model):
    model.add("Notes follow.\n<SERVER_NOTES>\n- db-2 is loud\n</SERVER_NOTES>")
    report = run_historian(store, CHUNK)
    assert report.written == []
    [kept] = report.quarantined
    assert store.memories.get(kept["id"]).status == "quarantined"
    assert "unknown category 'SERVER_NOTES'" in kept["reason"]
    assert [(p["text"], p["kept"]) for p in report.not_written()] == [
        ("Notes follow.", False),
        ("db-2 is loud", True),
    ]
    assert report.lost_text is True
    assert report.to_dict()["not_written"][0]["reason"] == OUTSIDE


def test_historian_run_shows_what_was_not_written_and_exits_non_zero_on_lost_text(tmp_path):
    db = tmp_path / "cli.db"
    setup = Store(db, project="drift", plugins=fresh_plugin_manager())
    setup.packs.install(validate_pack(PACK, source="drift"))
    setup.close()

    def invoke(reply: str):
        transcript = tmp_path / f"chat-{len(list(tmp_path.glob('chat-*')))}.json"
        transcript.write_text(json.dumps(CHUNK), "utf-8")  # a new file: the ledger sends it
        model = ScriptedModel([reply])
        return CliRunner().invoke(
            cli,
            [
                "historian",
                "run",
                "--transcript",
                str(transcript),
                "--db",
                str(db),
                "--project",
                "drift",
            ],
            obj={"plugins": fresh_plugin_manager(("scripted-model", model))},
            env={"MEMSDK_DB": None, "MEMSDK_PROJECT": None, "MEMSDK_MODEL": None},
            catch_exceptions=False,
        )

    ok = invoke("<ENV_STATE>\n- Staging runs Postgres 16 on db-2.\n</ENV_STATE>")
    assert ok.exit_code == 0, ok.output
    assert "admitted: 1 (1 new, 0 folded into existing memories)" in ok.stdout
    assert "not stored: 0 piece(s) of reply text" in ok.stdout

    lost = invoke(
        "I also think db-2 should be replaced soon.\n"
        "<SERVER_NOTES>\n- db-2 is loud\n</SERVER_NOTES>"
    )
    assert lost.exit_code == 1
    assert "not stored: 1 piece(s) of reply text" in lost.stdout
    assert "not stored (text outside any <facts> block): I also think db-2" in lost.stdout
    assert "quarantined as memory" in lost.stdout and "db-2 is loud" in lost.stdout
    assert "text lost in 1 chunk(s) (chat-1.json chunk 1)" in lost.stderr
