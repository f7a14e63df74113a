"""Classify: the rule-based importance, the importance order, the model-backed classifier."""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_sdk import Memory, Store, validate_pack
from plugin_sdk.plugin.records import Classification
from plugin_sdk.stages.classify import (
    IMPORTANCE_ORDER,
    by_importance,
    classify,
    rule_classification,
    rule_importance,
)
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager

PROJECT = "classify"
PLAIN = "the keeper walks around the tower every evening"  # 8 words, nothing specific

PACK = {
    "format": 1,
    "name": "lighthouse",
    "version": "1.0.0",
    "description": "A pack for classify tests.",
    "categories": {
        "KEEPER_ORDERS": {"kind": "intent", "priority": 10, "criteria": {"definition": "Orders."}},
        "LAMP_STATE": {
            "kind": "content",
            "priority": 20,
            "criteria": {"definition": "Observed state of the lamp and the lens."},
        },
        "SHIP_SIGHTINGS": {"kind": "content", "priority": 30, "criteria": {"definition": "Ships."}},
        "TOWER_NOTES": {"kind": "content", "priority": 40, "criteria": {"definition": "Notes."}},
    },
}


def memory(content: str = PLAIN, *, seen_count: int = 1, **fields) -> Memory:
    values = {
        "id": 1,
        "project": PROJECT,
        "kind": "content",
        "category": "LAMP_STATE",
        "content": content,
        "normalized_hash": "",
        "status": "active",
        "importance": 50,
        "scope": "project",
        "shareable": False,
        "superseded_by": None,
        "merged_from": [],
        "seen_count": seen_count,
        "retrieval_count": 0,
        "token_count": None,
        "tokenizer": None,
        "source": "",
        "note": None,
        "created_at": "2026-01-01T00:00:00.000000+00:00",
        "updated_at": "2026-01-01T00:00:00.000000+00:00",
        "last_seen_at": "2026-01-01T00:00:00.000000+00:00",
        "last_retrieved_at": None,
        "archived_at": None,
    }
    values.update(fields)
    return Memory(**values)


LIGHTHOUSE = validate_pack(PACK, source="test")


@pytest.fixture
def open_store(new_store: Callable[..., Store]) -> Callable[..., Store]:
    """``open_store(name, *plugins)`` -> a new store with the test pack and those plugins."""

    def open_(name: str, *plugins: tuple[str, object]) -> Store:
        return new_store(
            LIGHTHOUSE, name=name, project=PROJECT, plugins=fresh_plugin_manager(*plugins)
        )

    return open_


# rule_importance against hand-computed values


@pytest.mark.parametrize(
    ("rank", "count", "base"),
    [
        (0, 4, 70),
        (1, 4, 60),
        (2, 4, 50),
        (3, 4, 40),
        (0, 7, 70),
        (1, 7, 65),
        (3, 7, 55),
        (6, 7, 40),
        (0, 2, 70),
        (1, 2, 40),
        (0, 1, 70),
        (0, 0, 70),
        (5, 11, 55),
    ],
)
def test_rank_spacing_from_70_to_40(rank, count, base):
    assert rule_importance(memory(), rank, count, "content") == base
    assert rule_importance(memory(), rank, count, "intent") == base + 10


@pytest.mark.parametrize(
    ("content", "specific"),
    [
        (PLAIN, 0),
        ("the lamp failed at 02:10 and again at dusk", 1),
        ("set max_connections=200 in /etc/lamp.conf for port 5432 tonight", 3),
        ("lens cleaned with spare.cloth from locker e.g the east one", 2),
        (" ".join(f"reading {n}" for n in range(12)), 8),  # capped at +8
        (" ".join(f"x{n}" for n in range(30)), 8),
    ],
)
def test_specific_tokens_add_one_each_up_to_eight(content, specific):
    assert rule_importance(memory(content), 0, 4, "content") == 70 + specific


@pytest.mark.parametrize(
    ("seen", "bonus"),
    [(1, 0), (2, 4), (3, 6), (4, 8), (5, 9), (6, 10), (8, 10), (1000, 10)],
)
def test_seen_count_term_is_4_log2_capped_at_10(seen, bonus):
    assert bonus == min(10, round(4 * math.log2(seen)))
    assert rule_importance(memory(seen_count=seen), 1, 4, "content") == 60 + bonus


def test_short_text_loses_five():
    assert rule_importance(memory("keeper walks the tower"), 0, 4, "content") == 65
    assert rule_importance(memory("one two three four five"), 0, 4, "content") == 65
    assert rule_importance(memory("one two three four five six"), 0, 4, "content") == 70


def test_everything_together():
    # rank 2 of 4 (50), intent (+10), 3 specific tokens, seen 4 times (+8), 5 words (-5)
    text = "port 5432 at 02:10 /dev/lamp"
    assert len(text.split()) == 5
    assert rule_importance(memory(text, seen_count=4), 2, 4, "intent") == 50 + 10 + 3 + 8 - 5


def test_clamped_to_1_100():
    assert rule_importance(memory("a b"), 50, 2, "content") == 1
    assert rule_importance(memory("a b"), 10, 4, "content") == 1
    best = memory(" ".join(f"v{n}" for n in range(10)), seen_count=10**6)
    assert rule_importance(best, -100, 2, "intent") == 100


contents = st.text(st.sampled_from(list("abc xyz019_/=:.-\n\u00e9\u4e2d")), max_size=80)
kinds = st.sampled_from(["content", "intent"])


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(contents, st.integers(-50, 200), st.integers(-5, 200), st.integers(1, 10**9), kinds)
def test_always_between_1_and_100(content, rank, count, seen, kind):
    score = rule_importance(memory(content, seen_count=seen), rank, count, kind)
    assert isinstance(score, int)
    assert 1 <= score <= 100


@settings(max_examples=300, deadline=None)
@given(
    contents,
    st.integers(0, 30),
    st.integers(1, 31),
    st.integers(1, 10**6),
    st.integers(0, 10**6),
    kinds,
)
def test_monotone_in_seen_count(content, rank, count, seen, more, kind):
    rank = min(rank, count - 1)
    low = rule_importance(memory(content, seen_count=seen), rank, count, kind)
    high = rule_importance(memory(content, seen_count=seen + more), rank, count, kind)
    assert high >= low


@settings(max_examples=300, deadline=None)
@given(contents, st.integers(0, 30), st.integers(1, 31), st.integers(1, 10**6))
def test_intent_at_least_content(content, rank, count, seen):
    rank = min(rank, count - 1)
    m = memory(content, seen_count=seen)
    assert rule_importance(m, rank, count, "intent") >= rule_importance(m, rank, count, "content")


def test_rule_classification_uses_the_store_rank_and_kind(open_store):
    with open_store("c.db") as store:
        names = store.category_names()
        assert names == ["KEEPER_ORDERS", "LAMP_STATE", "SHIP_SIGHTINGS", "TOWER_NOTES"]
        expected = {"KEEPER_ORDERS": 80, "LAMP_STATE": 60, "SHIP_SIGHTINGS": 50, "TOWER_NOTES": 40}
        for name, importance in expected.items():
            result = store.memories.write(PLAIN, name)
            decision = rule_classification(store, store.memories.get(result.id))
            assert decision == Classification(importance, "project", False, "rules")


# The importance order: Python and SQL agree, ties broken as documented


def _store_with_rows(rows: list[tuple[int, int, int]]) -> Store:
    store = Store(":memory:", project=PROJECT, plugins=fresh_plugin_manager())
    store.packs.install(LIGHTHOUSE)
    for index, (importance, seen, day) in enumerate(rows):
        written = store.memories.write(f"memory number {index}", "LAMP_STATE")
        store.db.execute(
            "UPDATE memories SET importance = ?, seen_count = ?, last_seen_at = ? WHERE id = ?",
            [importance, seen, f"2026-01-{day:02d}T00:00:00.000000+00:00", written.id],
        )
    return store


def sql_order(store: Store) -> list[int]:
    return [r[0] for r in store.db.execute(f"SELECT id FROM memories ORDER BY {IMPORTANCE_ORDER}")]


def test_ties_break_by_seen_count_then_recency_then_id():
    rows = [
        (50, 1, 1),  # 1
        (50, 3, 1),  # 2: more seen than 1
        (50, 1, 9),  # 3: more recent than 1
        (70, 1, 1),  # 4: higher importance wins outright
        (50, 1, 1),  # 5: identical to 1, later id
        (50, 3, 5),  # 6: seen 3 like 2, more recent
    ]
    with _store_with_rows(rows) as store:
        ordered = [m.id for m in by_importance(store.memories.list(limit=None))]
        assert ordered == [4, 6, 2, 3, 1, 5]
        assert ordered == sql_order(store)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([1, 50, 51, 100]), st.integers(1, 3), st.integers(1, 3)),
        max_size=15,
    )
)
def test_by_importance_equals_sql_order(rows):
    with _store_with_rows(rows) as store:
        memories = store.memories.list(limit=None)
        python = [m.id for m in by_importance(memories)]
        assert python == sql_order(store)
        assert [
            m.id for m in by_importance(reversed(memories))
        ] == python  # input order is irrelevant


# classify(): the store's classifiers


def test_classify_without_a_model_uses_the_rules(open_store):
    with open_store("c.db") as store:
        ids = [store.memories.write(PLAIN, name).id for name in store.category_names()]
        report = classify(store)
        assert report.classified == 4
        assert report.signals == {"rules": 4}
        assert [store.memories.get(i).importance for i in ids] == [80, 60, 50, 40]
        assert report.changed == 3  # SHIP_SIGHTINGS already had 50
        assert classify(store).changed == 0


def test_model_backed_classifier_uses_a_valid_json_reply(open_store):
    model = ScriptedModel(['{"importance": 77, "scope": "global", "shareable": true}'])
    with open_store("c.db", ("scripted-model", model)) as store:
        written = store.memories.write("The lamp failed at 02:10.", "LAMP_STATE").id
        report = classify(store)
        assert report.signals == {"model": 1}
        m = store.memories.get(written)
        assert (m.importance, m.scope, m.shareable) == (77, "global", True)
        [prompt] = model.prompts
        assert prompt.purpose == "classify"
        assert "Observed state of the lamp and the lens." in prompt.messages[0]["content"]
        assert "The lamp failed at 02:10." in prompt.messages[0]["content"]


def test_model_reply_in_a_code_fence_is_accepted(open_store):
    model = ScriptedModel(
        ['```json\n{"importance": 12, "scope": "project", "shareable": false}\n```']
    )
    with open_store("c.db", ("scripted-model", model)) as store:
        written = store.memories.write(PLAIN, "LAMP_STATE").id
        assert classify(store).signals == {"model": 1}
        assert store.memories.get(written).importance == 12


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("I would say it is important.", "JSONDecodeError"),
        ('{"importance": 0, "scope": "project", "shareable": false}', "ValueError"),
        ('{"importance": 101, "scope": "project", "shareable": false}', "ValueError"),
        ('{"importance": true, "scope": "project", "shareable": false}', "ValueError"),
        ('{"importance": 50.5, "scope": "project", "shareable": false}', "ValueError"),
        ('{"importance": 50, "scope": "galaxy", "shareable": false}', "ValueError"),
        ('{"importance": 50, "scope": "project", "shareable": "yes"}', "ValueError"),
        ('{"importance": 50, "scope": "project"}', "KeyError"),
        ("[1, 2, 3]", "TypeError"),
    ],
)
def test_invalid_model_reply_falls_back_to_rules(open_store, reply, error):
    model = ScriptedModel([reply])
    with open_store("c.db", ("scripted-model", model)) as store:
        written = store.memories.write(PLAIN, "LAMP_STATE").id
        report = classify(store)
        [signal] = report.signals
        assert signal.startswith("rules")
        assert error in signal
        m = store.memories.get(written)
        assert (m.importance, m.scope, m.shareable) == (60, "project", False)


def test_classify_never_changes_a_category(open_store):
    reply = '{"importance": 90, "scope": "global", "shareable": true, "category": "KEEPER_ORDERS"}'
    model = ScriptedModel([reply] * 3)
    with open_store("c.db", ("scripted-model", model)) as store:
        for text, name in [("a", "LAMP_STATE"), ("b", "SHIP_SIGHTINGS"), ("c", "TOWER_NOTES")]:
            store.memories.write(f"{text} fact written for the classify test", name)
        before = [(m.id, m.category, m.kind, m.content) for m in store.memories.list()]
        classify(store)
        after = [(m.id, m.category, m.kind, m.content) for m in store.memories.list()]
        assert after == before
        assert {m.importance for m in store.memories.list()} == {90}
    assert "category" not in {f.name for f in attrs.fields(Classification)}


def test_classify_given_ids_touches_only_those(open_store):
    with open_store("c.db") as store:
        first = store.memories.write(PLAIN, "KEEPER_ORDERS").id
        second = store.memories.write(PLAIN, "LAMP_STATE").id
        report = classify(store, ids=[second])
        assert report.classified == 1
        assert store.memories.get(first).importance == 50
        assert store.memories.get(second).importance == 60
