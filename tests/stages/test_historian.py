"""The historian: a transcript chunk in, memories out; nothing dropped silently."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from plugin_sdk import Store, hookimpl, validate_pack
from plugin_sdk.errors import HistorianReplyError, InvalidTranscript, NoModel
from plugin_sdk.plugin.records import Admission, Fact
from plugin_sdk.stages.historian import VIEW_BUDGET_TOKENS, VIEW_LIMIT, run_historian
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager

PROJECT = "hist"
CATEGORIES = ["KEEPER_ORDERS", "LAMP_STATE", "SHIP_SIGHTINGS"]
CHUNK = [
    {"role": "user", "content": "The lamp failed at 02:10 and the keeper wants a log entry."},
    {"role": "assistant", "content": "Noted: lamp failure logged."},
]

PACK = {
    "format": 1,
    "name": "lighthouse",
    "version": "1.0.0",
    "description": "A pack for historian tests.",
    "categories": {
        "KEEPER_ORDERS": {
            "kind": "intent",
            "priority": 10,
            "criteria": {
                "definition": "Standing orders the keeper gives the agent.",
                "positive_examples": ["Log every lamp failure within the hour."],
            },
        },
        "LAMP_STATE": {
            "kind": "content",
            "priority": 20,
            "criteria": {
                "definition": "Observed state of the lamp and the lens.",
                "exclusions": ["Weather reports."],
            },
        },
        "SHIP_SIGHTINGS": {
            "kind": "content",
            "priority": 30,
            "criteria": {"definition": "Ships seen from the tower, with time and bearing."},
        },
    },
}


LIGHTHOUSE = validate_pack(PACK, source="test")


@pytest.fixture
def open_store(new_store: Callable[..., Store]) -> Callable[..., Store]:
    """``open_store(name, *plugins)`` -> a new store with the lighthouse pack and those plugins."""

    def open_(name: str, *plugins: tuple[str, object]) -> Store:
        return new_store(
            LIGHTHOUSE, name=name, project=PROJECT, plugins=fresh_plugin_manager(*plugins)
        )

    return open_


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def store(open_store: Callable[..., Store], model: ScriptedModel) -> Store:
    return open_store("hist.db", ("scripted-model", model))


def rows(store: Store, status: str | None = None) -> list[dict]:
    sql = "SELECT * FROM memories" + (" WHERE status = ?" if status else "") + " ORDER BY id"
    return list(store.db.query(sql, [status] if status else []))


def block(category: str, *facts: str) -> str:
    return "\n".join([f'<facts category="{category}">', *(f"- {f}" for f in facts), "</facts>"])


# Facts in known categories


def test_known_category_facts_are_written(store, model):
    model.add(
        block("LAMP_STATE", "The lamp failed at 02:10.", "Spare bulbs are in the east locker.")
        + "\n"
        + block("KEEPER_ORDERS", "Log every lamp failure within the hour.")
    )
    report = run_historian(store, CHUNK)
    assert len(report.written) == 3
    assert report.folded == [] and report.quarantined == [] and report.ignored == []
    assert report.nothing_new is False
    written = [store.memories.get(i) for i in report.written]
    assert [(m.category, m.kind, m.content, m.status, m.source) for m in written] == [
        ("LAMP_STATE", "content", "The lamp failed at 02:10.", "active", "historian"),
        ("LAMP_STATE", "content", "Spare bulbs are in the east locker.", "active", "historian"),
        (
            "KEEPER_ORDERS",
            "intent",
            "Log every lamp failure within the hour.",
            "active",
            "historian",
        ),
    ]
    assert all(m.project == PROJECT for m in written)


def test_a_repeated_fact_folds_into_the_existing_memory(store, model):
    model.add(block("LAMP_STATE", "The lamp failed at 02:10.", "the lamp  FAILED at 02:10"))
    first = run_historian(store, CHUNK)
    assert len(first.written) == 1
    assert first.folded == first.written
    model.add(block("LAMP_STATE", "The lamp failed at 02:10."))
    again = run_historian(store, CHUNK)
    assert again.written == []
    assert again.folded == first.written
    memory = store.memories.get(first.written[0])
    assert memory.seen_count == 3
    assert len(rows(store)) == 1


def test_same_text_in_two_categories_is_two_memories(store, model):
    model.add(block("LAMP_STATE", "Bearing 270.") + "\n" + block("SHIP_SIGHTINGS", "Bearing 270."))
    report = run_historian(store, CHUNK)
    assert len(report.written) == 2


def test_historian_writes_into_the_given_project(store, model):
    model.add(block("LAMP_STATE", "Lens cleaned on Sunday."))
    report = run_historian(store, CHUNK, project="other-tower", source="import")
    memory = store.memories.get(report.written[0], project="other-tower")
    assert (memory.project, memory.source) == ("other-tower", "import")


# Unknown categories and broken replies: kept as quarantined, reported


def test_unknown_category_is_quarantined_with_raw_text_and_reported(store, model):
    model.add(
        block("LAMP_STATE", "The lamp failed at 02:10.")
        + "\n"
        + block("WEATHER", "Gale force 8 from the west.")
    )
    report = run_historian(store, CHUNK)
    assert len(report.written) == 1
    [entry] = report.quarantined
    assert entry["category"] == "WEATHER"
    assert entry["line"] == 5
    for name in CATEGORIES:
        assert name in entry["reason"]
    assert "WEATHER" in entry["reason"]
    kept = store.memories.get(entry["id"])
    assert kept.status == "quarantined"
    assert kept.content == "Gale force 8 from the west."
    assert kept.category == "WEATHER"
    assert kept.note == entry["reason"]
    # quarantined rows are not searched or listed by default
    assert store.memories.search("gale") == []
    assert [m.id for m in store.memories.list()] == report.written


def test_partly_broken_reply_writes_the_good_block_and_quarantines_the_broken_one(store, model):
    reply = (
        block("LAMP_STATE", "The lamp failed at 02:10.")
        + "\n"
        + '<facts category="SHIP_SIGHTINGS">\n- Trawler at bearing 270, 03:00.\n- and a fer'
    )
    model.add(reply)
    report = run_historian(store, CHUNK)
    [written] = report.written
    assert store.memories.get(written).content == "The lamp failed at 02:10."
    [entry] = report.quarantined
    assert entry["reason"] == "block not closed before the reply ended"
    assert entry["line"] == 4
    kept = store.memories.get(entry["id"])
    assert kept.status == "quarantined"
    assert kept.content == "- Trawler at bearing 270, 03:00.\n- and a fer"
    assert not any(m.category == "SHIP_SIGHTINGS" for m in store.memories.list())


def test_block_without_category_is_quarantined(store, model):
    model.add("<facts>\n- A fact of no category.\n</facts>\n" + block("LAMP_STATE", "Lens ok."))
    report = run_historian(store, CHUNK)
    assert len(report.written) == 1
    [entry] = report.quarantined
    assert "category" in entry["reason"]
    assert store.memories.get(entry["id"]).content == "- A fact of no category."


def test_prose_around_blocks_is_reported_not_stored(store, model):
    model.add("Here is what I found:\n" + block("LAMP_STATE", "Lens ok."))
    report = run_historian(store, CHUNK)
    assert len(report.written) == 1
    assert report.quarantined == []
    assert [(p.text, p.line) for p in report.ignored] == [("Here is what I found:", 1)]
    assert len(rows(store)) == 1


def test_reply_with_no_block_raises_naming_the_kept_reply(store, model):
    reply = "I think the keeper likes tea.\nNothing else."
    model.add(reply)
    with pytest.raises(HistorianReplyError) as caught:
        run_historian(store, CHUNK)
    [kept] = rows(store)
    assert kept["status"] == "quarantined"
    assert kept["content"] == reply
    assert kept["note"] == "historian reply with no <facts> block"
    assert f"quarantined memory {kept['id']}" in str(caught.value)


def test_empty_reply_raises_and_writes_nothing(store, model):
    model.add("   \n")
    with pytest.raises(HistorianReplyError, match="empty"):
        run_historian(store, CHUNK)
    assert rows(store) == []


def test_no_facts_writes_nothing(store, model):
    model.add("<no-facts/>")
    report = run_historian(store, CHUNK)
    assert report.nothing_new is True
    assert report.written == report.folded == report.quarantined == []
    assert rows(store) == []


def test_admission_is_one_transaction(open_store):
    class Refuses:
        calls = 0

        @hookimpl(tryfirst=True)
        def historian_admit(self, store, fact: Fact) -> Admission | None:
            Refuses.calls += 1
            if Refuses.calls == 2:
                raise RuntimeError("admission plugin broke")
            return None

    model = ScriptedModel([block("LAMP_STATE", "One.", "Two.", "Three.")])
    with open_store("t.db", ("scripted-model", model), ("refuses", Refuses())) as store:
        with pytest.raises(RuntimeError, match="admission plugin broke"):
            run_historian(store, CHUNK)
        assert rows(store) == []


def test_an_admit_plugin_can_quarantine_with_its_own_reason(open_store):
    class NoSecrets:
        @hookimpl(tryfirst=True)
        def historian_admit(self, store, fact: Fact) -> Admission | None:
            if "password" in fact.text:
                return Admission("quarantine", "looks like a secret")
            return None

    model = ScriptedModel([block("LAMP_STATE", "Lens ok.", "The password is hunter2.")])
    with open_store("t.db", ("scripted-model", model), ("ns", NoSecrets())) as store:
        report = run_historian(store, CHUNK)
        assert len(report.written) == 1
        assert [q["reason"] for q in report.quarantined] == ["looks like a secret"]


# No model, bad input


def test_no_model_registered_raises_no_model(open_store):
    with open_store("nomodel.db") as store:
        with pytest.raises(NoModel, match="model_complete"):
            run_historian(store, CHUNK)
        assert rows(store) == []


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([{"role": "user", "content": "ok"}, {"role": "user"}], "message 1"),
        ([{"role": "user", "content": "ok"}, "just text"], "message 1 is str"),
        ([{"role": "user", "content": 5}], "message 0"),
        ([{"content": "no role"}], "message 0"),
        ("a plain string", "list"),
        ([], "empty"),
        (None, "list"),
    ],
)
def test_invalid_messages_raise_invalid_transcript_naming_the_index(
    store, model, messages, message
):
    with pytest.raises(InvalidTranscript, match=message):
        run_historian(store, messages)
    assert model.prompts == []  # the model was not asked
    assert rows(store) == []


def test_invalid_transcript_is_a_value_error():
    assert issubclass(InvalidTranscript, ValueError)


# The prompt the model receives


def test_prompt_has_every_category_definition_and_the_chunk(store, model):
    model.add("<no-facts/>")
    run_historian(store, CHUNK)
    [prompt] = model.prompts
    assert prompt.purpose == "historian"
    for category in store.categories():
        assert category.value("definition") in prompt.system
    assert "Log every lamp failure within the hour." in prompt.system
    assert "Weather reports." in prompt.system
    [message] = prompt.messages
    assert message["role"] == "user"
    assert "[user]\nThe lamp failed at 02:10" in message["content"]
    assert "[assistant]\nNoted: lamp failure logged." in message["content"]
    assert "Already known" not in message["content"]  # empty store, nothing known


def test_prompt_follows_a_criteria_edit(store, model):
    store.criteria.set("LAMP_STATE", "definition", "Only the lens, never the bulb.")
    model.add("<no-facts/>")
    run_historian(store, CHUNK)
    assert "Only the lens, never the bulb." in model.prompts[0].system
    assert "Observed state of the lamp and the lens." not in model.prompts[0].system


def test_prompt_lists_relevant_known_memories(store, model):
    known = store.memories.write("The lamp failed twice last winter.", "LAMP_STATE").id
    store.memories.write("A ferry passed at noon.", "SHIP_SIGHTINGS")
    model.add("<no-facts/>")
    report = run_historian(store, CHUNK)
    assert report.view == [known]
    content = model.prompts[0].messages[0]["content"]
    assert (
        "# Already known (do not repeat)\n- [LAMP_STATE] The lamp failed twice last winter."
        in content
    )
    assert "ferry" not in content


def known_section(prompt_text: str) -> list[str]:
    if "# Already known" not in prompt_text:
        return []
    section = prompt_text.split("# Already known (do not repeat)\n", 1)[1]
    return [line for line in section.splitlines() if line.startswith("- [")]


@pytest.mark.parametrize("words_per_memory", [8, 120])
def test_view_is_bounded_even_with_500_matching_memories(open_store, words_per_memory):
    model = ScriptedModel(["<no-facts/>"])
    with open_store("big.db", ("scripted-model", model)) as store:
        filler = " ".join(f"beacon{i % 7}" for i in range(words_per_memory))
        store.memories.write_many(
            {
                "content": f"Lamp failure number {i} logged by the keeper. {filler}",
                "category": "LAMP_STATE",
            }
            for i in range(500)
        )
        assert len(store.memories.list(limit=None)) == 500
        report = run_historian(store, CHUNK)
        view = [store.memories.get(i) for i in report.view]
        assert 0 < len(view) <= VIEW_LIMIT
        assert sum(store.tokenizer.count(m.content) for m in view) <= VIEW_BUDGET_TOKENS
        lines = known_section(model.prompts[0].messages[0]["content"])
        assert len(lines) == len(view)
        assert lines == [f"- [LAMP_STATE] {' '.join(m.content.split())}" for m in view]
        if words_per_memory == 8:
            assert len(view) == VIEW_LIMIT  # short memories: the count binds
        else:
            assert len(view) < VIEW_LIMIT  # long memories: the token budget binds


def test_facts_from_a_timed_chunk_carry_when_it_happened(store, model):
    model.add(block("LAMP_STATE", "The lamp failed at 02:10."))
    timed = [
        {**CHUNK[0], "timestamp": "2026-03-01T02:10:00Z"},
        {**CHUNK[1], "timestamp": "2026-03-01T02:12:00Z"},
    ]
    report = run_historian(store, timed)
    assert store.memories.get(report.written[0]).occurred_at == "2026-03-01T02:12:00.000000+00:00"
    model.add(block("LAMP_STATE", "Spare bulbs are in the east locker."))
    untimed = run_historian(store, CHUNK)
    assert store.memories.get(untimed.written[0]).occurred_at is None
