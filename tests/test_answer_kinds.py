"""Answer kinds: a question asking for a number, a time or a name prefers memories holding one."""

from __future__ import annotations

import pytest

from plugin_sdk import Store
from plugin_sdk.store.search import answers
from plugin_sdk.store.search.ranking import set_setting


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How many replicas does billing run?", "number"),
        ("how much memory did we give the cache", "number"),
        ("When was the last failover?", "time"),
        ("And what year did we move to Postgres 16?", "time"),
        ("Who is on call this week?", "name"),
        ("Which city is the standby in?", "name"),
        ("What does the billing service do?", None),
        ("Restart the billing service", None),
        ("how", None),
    ],
)
def test_the_opening_of_a_question_names_the_kind_of_answer(question: str, kind: str) -> None:
    assert answers.asked(question, "en") == kind


def test_a_memory_holds_an_answer_by_its_digits_words_or_names() -> None:
    assert answers.holds("number", "The cache has 512 MB.", "how much memory", "en")
    assert answers.holds("number", "We run three replicas.", "how many replicas", "en")
    assert not answers.holds("number", "We run replicas.", "how many replicas", "en")
    assert answers.holds("time", "We moved on Tuesday.", "when did we move", "en")
    assert answers.holds("time", "Moved in 2024.", "when did we move", "en")
    assert not answers.holds("time", "We moved the database.", "when did we move", "en")
    assert answers.holds("name", "The standby is in Frankfurt now.", "Which city?", "en")
    # a name the question writes is not an answer to it, nor is a sentence's first word
    assert not answers.holds("name", "The standby runs Postgres.", "Where is Postgres?", "en")
    assert not answers.holds("name", "Standby is far away.", "Where is the standby?", "en")
    assert answers.asked("How many?", "xx") is None  # no list for the language: no kinds


def test_a_memory_holding_the_kind_of_answer_ranks_first_and_says_why(store: Store) -> None:
    plain = store.memories.write("The billing service runs replicas behind pgbouncer.", "OPS_RULES")
    counted = store.memories.write("The billing service runs 4 replicas at peak.", "OPS_RULES")
    hits = store.memories.search("How many replicas does the billing service run?")
    assert [hit.memory.id for hit in hits[:2]] == [counted.id, plain.id]
    assert "holds a number, as the question asks" in hits[0].why
    set_setting(store, "answer", 0)
    hits = store.memories.search("How many replicas does the billing service run?")
    assert "holds a number, as the question asks" not in hits[0].why
    assert {hit.memory.id for hit in hits[:2]} == {counted.id, plain.id}


def test_a_question_without_an_answer_kind_ranks_as_before(store: Store) -> None:
    store.memories.write("The billing service runs replicas behind pgbouncer.", "OPS_RULES")
    store.memories.write("The billing service runs 4 replicas at peak.", "OPS_RULES")
    before = [h.memory.id for h in store.memories.search("billing service replicas")]
    set_setting(store, "answer", 0)
    assert [h.memory.id for h in store.memories.search("billing service replicas")] == before
    assert all("as the question asks" not in h.why for h in store.memories.search("billing"))
