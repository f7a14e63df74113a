"""Classify onto the grid: rule-based cells from pack cues and category hints, acts of
interaction memories, the acts per actor, the model-backed classifier, the classify_cell hook."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import attrs
import pytest

from plugin_sdk import Dreamer, Store, hookimpl, validate_pack
from plugin_sdk.grid import acts as speech_acts
from plugin_sdk.grid.cells import CATEGORY_VOTES, cell_of, classify_cells, is_interaction, rule_cell
from plugin_sdk.grid.policy import merge
from plugin_sdk.plugin.records import CellDecision, Prompt
from plugin_sdk.stages.classify import classify
from plugin_sdk.store.models import ACTS
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager, pack_document

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
PROJECT = "lighthouse"
MEMORY_TYPES = ("episodic", "semantic", "procedural")
REFERENTS = ("self", "agent", "other", "object", "abstract")
PROCEDURAL_WORDS = ["how to", "step", "first", "then"]  # one procedural cue each

GRID: dict[str, Any] = {
    "default_cell": "semantic.abstract",
    "cells": {
        t: {r: {"half_life_days": 10, "emotional_multiplier": 1.0} for r in REFERENTS}
        for t in MEMORY_TYPES
    },
    "emotions": {"neutral": 1.0, "positive": 1.3, "negative": 1.5, "critical": 2.0},
    "namespaces": [
        {"pattern": "crew:*", "cell": "semantic.other"},
        {"pattern": "bot:*", "cell": "semantic.agent"},
    ],
    "category_cells": {
        "KEEPER_ORDERS": "procedural.self",
        "LAMP_LOG": "episodic.object",
        "SHIP_NOTES": "semantic.other",
    },
    "cues": {
        "memory_type": {
            "episodic": [r"\blast night\b", r"\byesterday\b", r"\bat dawn\b"],
            "semantic": [r"\bis made of\b", r"\bweighs\b"],
            "procedural": [rf"\b{word}\b" for word in PROCEDURAL_WORDS],
        },
        "referent": {
            "self": [r"\bkeeper\b"],
            "agent": [r"\bbot\b"],
            "other": [r"\bsailors?\b", r"\bcaptain\b"],
            "object": [r"\blamp\b", r"\blens\b"],
            "abstract": [r"\bsafety\b"],
        },
    },
    "acts": {
        "directive": [r"^\s*(please\s+)?(light|trim|check|clean)\b", r"\bmust\b"],
        "commissive": [r"\bi will\b"],
        "expressive": [r"\bthank(s| you)\b", r"!\s*$"],
        "declarative": [r"\bhereby\b"],
    },
}
PACK = pack_document(
    "lighthouse",
    "1.0.0",
    {
        "KEEPER_ORDERS": "intent",
        "LAMP_LOG": "content",
        "SHIP_NOTES": "content",
        "TOWER_NOTES": "content",
    },
    grid=GRID,
    graph={"relations": {"guards": {"sigma_days": 30}}},
)
LIGHTHOUSE = validate_pack(PACK, source="test")
POLICY = merge([("lighthouse", LIGHTHOUSE.document)])
PLAIN = "the tower stands on the northern rocks"  # no cue votes


def open_store(*plugins: tuple[str, object]) -> Store:
    store = Store(
        ":memory:", project=PROJECT, plugins=fresh_plugin_manager(*plugins), clock=lambda: T0
    )
    store.packs.install(LIGHTHOUSE)
    return store


@pytest.fixture
def store() -> Iterator[Store]:
    with open_store() as s:
        yield s


def cells_table(store: Store) -> dict[int, tuple[str, str, str | None, str]]:
    return {
        row["memory_id"]: (row["memory_type"], row["referent"], row["act"], row["signal"])
        for row in store.db.query("SELECT * FROM memory_cells ORDER BY memory_id")
    }


# The rule-based classifier (pack data only)


@pytest.mark.parametrize(
    ("text", "category", "cell", "signal"),
    [
        # Nothing votes: the grid's default cell.
        (PLAIN, None, "semantic.abstract", "rules (default)"),
        (PLAIN, "TOWER_NOTES", "semantic.abstract", "rules (default)"),  # a category with no hint
        # Cues vote; an axis without any vote takes the default cell's value.
        ("the lamp went out last night", None, "episodic.object", "rules"),
        ("the lens is made of glass", None, "semantic.object", "rules"),
        ("how to clean the lens: step one", None, "procedural.object", "rules"),
        ("the captain waved", None, "semantic.other", "rules"),
        ("a sailor waved at dawn", None, "episodic.other", "rules"),
        ("THE LAMP", None, "semantic.object", "rules"),  # case-insensitive
        # The category's usual cell alone.
        (PLAIN, "LAMP_LOG", "episodic.object", "rules"),
        (PLAIN, "KEEPER_ORDERS", "procedural.self", "rules"),
        # Cues and the hint agree.
        ("the captain came by", "SHIP_NOTES", "semantic.other", "rules"),
        ("the lamp went out last night", "LAMP_LOG", "episodic.object", "rules"),
        # Ties without a hint: the default cell's value when it leads, else axis order.
        ("the keeper values safety", None, "semantic.abstract", "rules"),
        ("the keeper and the captain", None, "semantic.self", "rules"),
        ("yesterday I read how to do it", None, "episodic.abstract", "rules"),
    ],
)
def test_rule_cell(text, category, cell, signal):
    decision = rule_cell(POLICY, text, category, False)
    assert (decision.cell, decision.signal, decision.act) == (cell, signal, None)


@pytest.mark.parametrize("extra", [0, 1])
def test_the_category_hint_wins_its_ties_and_more_cues_beat_it(extra):
    # SHIP_NOTES' usual cell is semantic.other; procedural cues vote against it.
    words = PROCEDURAL_WORDS[: CATEGORY_VOTES + extra]
    text = "the crew asked " + " and ".join(words)
    decision = rule_cell(POLICY, text, "SHIP_NOTES", False)
    assert decision.memory_type == ("semantic" if extra == 0 else "procedural")
    assert decision.referent == "other"
    # Referent cues against the hint, in the same way.
    lamp = " ".join(["the lamp", "the lens"][: CATEGORY_VOTES + extra])
    assert rule_cell(POLICY, lamp, "SHIP_NOTES", False).referent == (
        "other" if extra == 0 else "object"
    )


@pytest.mark.parametrize(
    ("text", "act"),
    [
        ("trim the wick before dusk", "directive"),
        ("please check the lens tonight", "directive"),
        ("we must clean the lamp", "directive"),
        ("thank you for the new lens", "expressive"),
        ("the lamp is lit!", "expressive"),
        ("i will light it at dusk", "commissive"),
        ("i hereby name this the north light", "declarative"),
        ("the lamp is lit", "assertive"),  # no vote: a statement of how things are
        (PLAIN, "assertive"),
    ],
)
def test_acts_of_interactions(text, act):
    assert rule_cell(POLICY, text, None, True).act == act
    assert rule_cell(POLICY, text, None, False).act is None
    assert act in ACTS


# Classify places memories on the grid; acts for interaction memories only


def write(store: Store, text: str, category: str = "TOWER_NOTES") -> int:
    return store.memories.write(text, category).id


def test_classify_places_memories_and_types_interactions(store):
    said = write(store, "trim the wick before dusk", "KEEPER_ORDERS")
    thanked = write(store, "thank you for the new lens", "SHIP_NOTES")
    logged = write(store, "the lamp went out last night", "LAMP_LOG")
    about = write(store, "the captain is made of sterner stuff")
    store.entities.link(said, ["crew:anya"])
    store.entities.link(thanked, ["crew:anya", "bot:lamplighter"])
    store.entities.link(about, ["crew:ben"], role="subject")  # a subject: not an interaction
    assert [is_interaction(store, i) for i in (said, thanked, logged, about)] == [
        True,
        True,
        False,
        False,
    ]
    report = classify(store)
    assert report.placed == 4
    assert cells_table(store) == {
        said: ("procedural", "self", "directive", "rules"),
        thanked: ("semantic", "other", "expressive", "rules"),
        logged: ("episodic", "object", None, "rules"),
        about: ("semantic", "other", None, "rules"),
    }
    assert cell_of(store, logged)["act"] is None
    assert classify(store).placed == 0  # nothing changed
    # Linked later: the next classify gives it an act.
    store.entities.link(logged, ["bot:lamplighter"])
    assert classify(store).placed == 1
    assert cells_table(store)[logged] == ("episodic", "object", "assertive", "rules")


def test_the_classify_dreamer_task_places_memories(store):
    said = write(store, "trim the wick before dusk", "KEEPER_ORDERS")
    logged = write(store, "the lamp went out last night", "LAMP_LOG")
    store.entities.link(said, ["crew:anya"])
    [report] = Dreamer(store).run("classify")
    assert report.finished_pass
    assert cells_table(store) == {
        said: ("procedural", "self", "directive", "rules"),
        logged: ("episodic", "object", None, "rules"),
    }


def test_acts_distribution_per_actor(store):
    anya = [
        ("thank you for the new lens", "expressive"),
        ("the lamp is lit!", "expressive"),
        ("check the lens tonight", "directive"),
    ]
    bot = [
        ("trim the wick before dusk", "directive"),
        ("we must clean the lamp", "directive"),
        ("i will light it at dusk", "commissive"),
        ("please check the lamp at dawn", "directive"),
    ]
    ids = {}
    for actor, lines in (("crew:anya", anya), ("bot:lamplighter", bot)):
        for text, _ in lines:
            ids[text] = write(store, text)
            store.entities.link(ids[text], [actor])
    write(store, "thanks for nothing, said nobody!")  # no actor: not counted
    subject = write(store, "thank you, said the sea!")
    store.entities.link(subject, ["crew:anya"], role="subject")  # a subject is no actor
    classify(store)
    zero = dict.fromkeys(ACTS, 0)
    distribution = speech_acts.distribution(store)
    assert distribution == {
        "bot:lamplighter": {**zero, "directive": 3, "commissive": 1},
        "crew:anya": {**zero, "expressive": 2, "directive": 1},
    }
    assert speech_acts.predominant(distribution["bot:lamplighter"]) == "directive"
    assert speech_acts.predominant(distribution["crew:anya"]) == "expressive"
    assert speech_acts.distribution(store, actor="crew:anya") == {
        "crew:anya": {**zero, "expressive": 2, "directive": 1}
    }
    # Archived memories no longer count: Anya is now evenly split.
    store.memories.archive(ids["the lamp is lit!"])
    evenly = speech_acts.distribution(store, actor="crew:anya")["crew:anya"]
    assert evenly == {**zero, "expressive": 1, "directive": 1}
    assert speech_acts.predominant(evenly) is None
    assert speech_acts.distribution(store, project="elsewhere") == {}


@pytest.mark.parametrize(
    ("counts", "share", "expected"),
    [
        ({}, 0.5, None),
        (dict.fromkeys(ACTS, 0), 0.5, None),
        ({"directive": 3, "expressive": 1}, 0.5, "directive"),
        ({"directive": 1, "expressive": 1}, 0.5, None),  # half is not more than half
        ({"directive": 2, "expressive": 1, "assertive": 1}, 0.5, None),
        ({"directive": 2, "expressive": 1, "assertive": 1}, 0.4, "directive"),
        ({"commissive": 1}, 0.5, "commissive"),
    ],
)
def test_predominant(counts, share, expected):
    assert speech_acts.predominant(counts, share=share) == expected


# The model-backed classifier


def cell_reply(memory_type: str, referent: str, act: str | None = None, **extra: Any) -> str:
    data: dict[str, Any] = {"memory_type": memory_type, "referent": referent, **extra}
    if act is not None:
        data["act"] = act
    return json.dumps(data)


def test_the_model_places_memories_when_it_answers():
    model = ScriptedModel([cell_reply("procedural", "agent")])
    with open_store(("scripted-model", model)) as store:
        logged = write(store, "the lamp went out last night", "LAMP_LOG")
        assert classify_cells(store, [store.memories.get(logged)]) == 1
        assert cells_table(store) == {logged: ("procedural", "agent", None, "model")}
        [prompt] = model.prompts
        assert prompt.purpose == "classify-cell"
        content = prompt.messages[0]["content"]
        assert "the lamp went out last night" in content
        assert "LAMP_LOG" in content
        assert '"act"' not in prompt.system  # no act asked of a non-interaction


def test_the_model_types_interactions():
    model = ScriptedModel(
        ['```json\n{"memory_type": "episodic", "referent": "other", "act": "commissive"}\n```']
    )
    with open_store(("scripted-model", model)) as store:
        said = write(store, "trim the wick before dusk", "KEEPER_ORDERS")
        store.entities.link(said, ["crew:anya"])  # placed by its namespace rule: no model call
        classify_cells(store, [store.memories.get(said)])
        assert cells_table(store) == {said: ("episodic", "other", "commissive", "model")}
        [prompt] = model.prompts
        assert '"act"' in prompt.system
        for act in ACTS:
            assert act in prompt.system


def test_the_model_places_an_entity_no_rule_places():
    model = ScriptedModel([cell_reply("episodic", "abstract")])
    with open_store(("scripted-model", model)) as store:
        tide = store.entities.add("world:tide:spring")
        assert (tide.cell, tide.cell_signal) == ("episodic.abstract", "model")
        [prompt] = model.prompts
        assert "world tide spring" in prompt.messages[0]["content"]
        assert store.entities.add("crew:anya").cell == "semantic.other"  # its rule: no call
        assert len(model.prompts) == 1


@pytest.mark.parametrize(
    ("reply", "interaction", "error"),
    [
        ("It is about the lamp, I think.", False, "JSONDecodeError"),
        (cell_reply("dreamy", "object"), False, "ValueError"),
        (cell_reply("episodic", "robot"), False, "ValueError"),
        ('{"memory_type": "episodic"}', False, "KeyError"),
        ('["episodic", "object"]', False, "TypeError"),
        ('"episodic.object"', False, "TypeError"),
        (cell_reply("episodic", "object"), True, "KeyError"),  # no act for an interaction
        (cell_reply("episodic", "object", act="shouting"), True, "ValueError"),
    ],
)
def test_a_broken_model_reply_falls_back_to_the_rules(reply, interaction, error):
    model = ScriptedModel([reply])
    with open_store(("scripted-model", model)) as store:
        text = "trim the lamp wick last night"
        memory_id = write(store, text, "LAMP_LOG")
        if interaction:
            store.entities.link(memory_id, ["crew:anya"])
        classify_cells(store, [store.memories.get(memory_id)])
        rules = rule_cell(POLICY, text, "LAMP_LOG", interaction)
        memory_type, referent, act, signal = cells_table(store)[memory_id]
        assert (memory_type, referent, act) == (rules.memory_type, rules.referent, rules.act)
        assert signal.startswith("rules")
        assert "model reply unusable" in signal
        assert error in signal
        assert len(model.prompts) == 1


def test_without_a_model_the_rules_decide(store):
    logged = write(store, "the lamp went out last night", "LAMP_LOG")
    classify_cells(store, [store.memories.get(logged)])
    assert cells_table(store)[logged] == ("episodic", "object", None, "rules")


# Classify never changes a category


def answer_by_purpose(prompt: Prompt) -> str:
    if prompt.purpose == "classify-cell":
        return cell_reply("procedural", "abstract", act="declarative", category="KEEPER_ORDERS")
    assert prompt.purpose == "classify"
    return json.dumps(
        {"importance": 90, "scope": "project", "shareable": False, "category": "KEEPER_ORDERS"}
    )


def memory_fields(store: Store) -> list[tuple[int, str, str, str]]:
    return [(m.id, m.category, m.kind, m.content) for m in store.memories.list()]


def test_classify_never_changes_a_category():
    # The model's replies name another category; classify ignores it.
    model = ScriptedModel([answer_by_purpose] * 20)
    with open_store(("scripted-model", model)) as store:
        said, waved, plain = (
            write(store, text, category)
            for text, category in [
                ("the lamp went out last night", "LAMP_LOG"),
                ("a sailor waved at dawn", "SHIP_NOTES"),
                (PLAIN, "TOWER_NOTES"),
            ]
        )
        store.entities.link(said, ["crew:anya"])
        before = memory_fields(store)
        report = classify(store)
        assert report.placed == 3
        assert memory_fields(store) == before
        assert cells_table(store) == {
            said: ("procedural", "abstract", "declarative", "model"),
            waved: ("procedural", "abstract", None, "model"),
            plain: ("procedural", "abstract", None, "model"),
        }
        # The classify task too.
        with store.atomic():
            store.db.execute("DELETE FROM memory_cells")
        [run] = Dreamer(store).run("classify")
        assert run.finished_pass
        assert memory_fields(store) == before
        assert len(cells_table(store)) == 3
    assert "category" not in {field.name for field in attrs.fields(CellDecision)}


# The classify_cell hook: a plugin can decide first


def test_a_plugin_overrides_the_classify_cell_hook():
    class HarbourCells:
        """Places everything in procedural.abstract; declines texts about sailors."""

        def __init__(self) -> None:
            self.calls: list[tuple[str, str | None, bool]] = []

        @hookimpl(tryfirst=True)
        def classify_cell(
            self, store: Any, text: str, category: str | None, interaction: bool
        ) -> CellDecision | None:
            self.calls.append((text, category, interaction))
            if "sailor" in text:
                return None  # the built-ins decide
            return CellDecision(
                "procedural", "abstract", "declarative" if interaction else None, "harbour"
            )

    plugin = HarbourCells()
    with open_store(("harbour-cells", plugin)) as store:
        said = write(store, "the lamp went out last night", "LAMP_LOG")
        other = write(store, "a sailor waved from the deck", "SHIP_NOTES")
        store.entities.link(said, ["crew:anya"])
        classify(store)
        assert cells_table(store) == {
            said: ("procedural", "abstract", "declarative", "harbour"),
            other: ("semantic", "other", None, "rules"),
        }
        assert ("the lamp went out last night", "LAMP_LOG", True) in plugin.calls
        # Entities no rule places go through the hook too.
        tide = store.entities.add("world:tide:spring")
        assert (tide.cell, tide.cell_signal) == ("procedural.abstract", "harbour")
        # The hook called directly.
        decision = store.plugins.hook.classify_cell(
            store=store, text="anything", category=None, interaction=True
        )
        assert decision == CellDecision("procedural", "abstract", "declarative", "harbour")
