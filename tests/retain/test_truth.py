"""Compiled Truth: versions chained by superseded_by, the digest, the model, the threshold."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from plugin_sdk import Store, hookimpl
from plugin_sdk.retain import truth
from plugin_sdk.retain.dark_matter import accept
from plugin_sdk.retain.job import retain
from plugin_sdk.retain.observations import get, observe
from plugin_sdk.testing import fresh_plugin_manager
from tests.retain.test_retain import FIELD, HERON, MARSH, WADER, feed, jsonl, obs, open_field_store


def fact_obs(ident: str, value: str, **extra):
    """A normal-path observation about the heron with two facts (impact 3: the threshold)."""
    return obs(
        ident,
        [HERON],
        f"The heron's nest is in the {value}.",
        facts=[(HERON, "nest", value), (HERON, "colour", "grey")],
        **extra,
    )


@pytest.fixture
def field(new_store: Callable[..., Store]) -> Store:
    return new_store(FIELD, name="truth.db", project="field", plugins=fresh_plugin_manager())


def test_two_regenerations_give_a_chain_of_three_linked_by_superseded_by(field):
    feed(field, fact_obs("t-1", "reedbed"))  # impact 1 × (1 + 2 facts) = 3, the threshold
    first = truth.current(field, HERON)
    assert first is not None and first.version == 1 and first.written_by == "digest"
    feed(field, fact_obs("t-2", "alders"))  # a new value: a conflict, and a second version
    feed(field, fact_obs("t-3", "willows", sentiment="critical"))
    chain = truth.history(field, HERON)
    assert [v.version for v in chain] == [1, 2, 3]
    assert chain[0].superseded_by == chain[1].id
    assert chain[1].superseded_by == chain[2].id
    assert chain[2].superseded_by is None
    assert field.entities.get(HERON).truth_id == chain[2].id == truth.current(field, HERON).id
    assert "reedbed" in chain[0].markdown and "alders" not in chain[0].markdown
    assert "alders" in chain[1].markdown and "Open conflicts" in chain[1].markdown
    assert "willows" in chain[2].markdown
    assert chain[2].impact >= 3.0
    assert truth.pending_impact(field, HERON) == 0.0  # starts again after each version


def test_dark_matter_gathers_impact_only_once_accepted(field):
    feed(field, obs("k-1", [WADER], "A wader.", facts=[(WADER, "a", "1"), (WADER, "b", "2")]))
    assert get(field, "k-1").route == "dark"
    assert truth.pending_impact(field, WADER) == 0.0 and truth.current(field, WADER) is None
    accept(field, "k-1")  # now it counts: 1 × (1 + 2 facts) = 3, the threshold
    assert truth.current(field, WADER).version == 1


def test_below_the_threshold_nothing_is_regenerated(field):
    feed(field, obs("b-1", [HERON], "Heron."), obs("b-2", [HERON], "Heron fishing."))
    assert truth.current(field, HERON) is None
    assert truth.pending_impact(field, HERON) == 2.0  # two neutral observations, no facts


def test_an_unchanged_digest_adds_no_version(field):
    feed(field, obs("u-1", [HERON, MARSH], "Heron.", relations=[(HERON, "seen_at", MARSH)]))
    first = truth.regenerate(field, HERON)
    assert first is not None and first.version == 1
    assert truth.regenerate(field, HERON) is None
    assert [v.version for v in truth.history(field, HERON)] == [1]


def test_the_digest_is_deterministic_and_covers_facts_conflicts_relations(field):
    feed(
        field,
        obs("g-1", [HERON, MARSH], "Heron at the marsh.", relations=[(HERON, "seen_at", MARSH)]),
    )
    feed(
        field,
        fact_obs("g-2", "reedbed"),
        fact_obs("g-3", "alders"),
        obs(
            "g-4",
            [HERON, MARSH],
            "Heron nests at the marsh.",
            relations=[(HERON, "nests_in", MARSH)],
        ),
    )
    text = truth.digest(field, field.entities.get(HERON))
    assert text == truth.digest(field, field.entities.get(HERON))
    assert text.startswith(f"# {HERON}\n")
    assert "- **nest**: alders (conflicting values)" in text
    assert "- **colour**: grey; 2 observations" in text
    assert "'reedbed' (g-2) vs 'alders' (g-3)" in text
    assert f"- nests_in -> {MARSH} (evidence 1)" in text
    assert f"- seen_at -> {MARSH} (evidence 1)" in text
    assert "(g-4)" in text.split("## Latest observations")[1]
    marsh = truth.digest(field, field.entities.get(MARSH))
    assert f"- seen_at <- {HERON}" in marsh


class TruthWriter:
    """A host model that writes compiled truths and declines everything else."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.prompts = []

    @hookimpl
    def model_complete(self, prompt):
        if prompt.purpose != "compiled-truth":
            return None
        self.prompts.append(prompt)
        return self.reply


def test_the_hosts_model_writes_the_truth_when_there_is_one(tmp_path):
    model = TruthWriter("# bird:heron:grey\n\nA grey heron that nests in the reedbed.\n")
    store = open_field_store(tmp_path / "m.db", ("host-model", model))
    observe(store, jsonl(fact_obs("m-1", "reedbed")))
    retain(store)
    written = truth.current(store, HERON)
    assert written is not None and written.written_by == "model"
    assert written.markdown == model.reply.strip()
    (prompt,) = model.prompts
    assert prompt.messages[0]["content"] == truth.digest(store, store.entities.get(HERON))
    assert "open conflict" in prompt.system
    store.close()


def test_an_empty_model_reply_falls_back_to_the_digest(tmp_path):
    store = open_field_store(tmp_path / "e.db", ("host-model", TruthWriter("  \n")))
    feed(store, obs("e-1", [HERON], "Heron."))
    written = truth.regenerate(store, HERON)
    assert written is not None and written.written_by == "digest"
    assert written.markdown == truth.digest(store, store.entities.get(HERON))
    store.close()
