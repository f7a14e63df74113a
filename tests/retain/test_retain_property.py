"""Properties of the Retain Job: schema_fit stays in 0..1 and replays never change anything."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin_sdk import Store
from plugin_sdk.retain.dark_matter import accept, pending
from plugin_sdk.retain.fit import WEIGHTS, combine, measure
from plugin_sdk.retain.job import retain
from plugin_sdk.retain.observations import from_document, observe
from plugin_sdk.testing import StoreTemplates, fresh_plugin_manager
from tests.retain.test_retain import FIELD, dump_all, jsonl, obs

PLUGINS = fresh_plugin_manager()
NAMES = [
    "bird:heron:grey",
    "bird:raptor:kestrel",
    "site:marsh:north",
    "odd:wader:x",  # no namespace rule: unclassified
    "odd:site:y",
]
TOPICS = ["dawn count", "nesting", "weather"]
VALUES = ["reedbed", "alders", "Reedbed", "willows"]
RELATION_TYPES = ["seen_at", "nests_in", "preys_on"]
SENTIMENTS = [None, "neutral", "positive", "critical"]


@pytest.fixture(scope="module")
def copy_of(
    memsdk_templates: StoreTemplates, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[], Store]:
    """``copy_of()`` -> a new store with the field pack, for each example."""
    directory = tmp_path_factory.mktemp("retain-examples")
    return lambda: memsdk_templates.open(
        directory / f"{uuid.uuid4().hex}.db", FIELD, project="field", plugins=PLUGINS
    )


@st.composite
def observation_docs(draw: Any, ident: str) -> dict[str, Any]:
    actors = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True))
    facts = draw(
        st.lists(
            st.tuples(
                st.sampled_from(NAMES), st.sampled_from(["nest", "size"]), st.sampled_from(VALUES)
            ),
            max_size=2,
        )
    )
    relations = [
        (source, kind, target)
        for source, kind, target in draw(
            st.lists(
                st.tuples(
                    st.sampled_from(NAMES), st.sampled_from(RELATION_TYPES), st.sampled_from(NAMES)
                ),
                max_size=2,
            )
        )
        if source != target
    ]
    return obs(
        ident,
        actors,
        draw(
            st.sampled_from(
                ["Heron at dawn.", "A kestrel hovers.", "Rain on the marsh.", "x y z w"]
            )
        ),
        category=draw(st.sampled_from(["SIGHTINGS", "FIELD_NOTES"])),
        topic=draw(st.sampled_from(TOPICS)),
        sentiment=draw(st.sampled_from(SENTIMENTS)),
        facts=facts,
        relations=relations,
    )


@st.composite
def streams(draw: Any) -> list[dict[str, Any]]:
    size = draw(st.integers(min_value=1, max_value=8))
    return [draw(observation_docs(f"obs-{i}")) for i in range(size)]


@given(
    st.fixed_dictionaries(
        {name: st.one_of(st.none(), st.floats(0, 1, allow_nan=False)) for name in WEIGHTS}
    )
)
def test_combine_is_always_in_0_1(parts):
    assert 0.0 <= combine(parts) <= 1.0


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams(), probe=observation_docs("probe"))
def test_schema_fit_is_always_in_0_1(copy_of, stream, probe):
    store = copy_of()
    try:
        observe(store, jsonl(*stream))
        retain(store, batch_size=3)
        fits = [row[0] for row in store.db.execute("SELECT schema_fit FROM observations")]
        assert fits and all(0.0 <= fit <= 1.0 for fit in fits)
        observation = from_document(probe)
        known = {}
        for name in observation.names():
            found = store.entities.list(pattern=name, limit=1)
            known[name] = found[0] if found else None
        assert 0.0 <= measure(store, observation, known) <= 1.0
    finally:
        store.close()


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    stream=streams(),
    replays=st.lists(st.lists(st.integers(min_value=0, max_value=7), max_size=6), max_size=4),
    review=st.booleans(),
)
def test_any_sequence_of_replays_changes_nothing(copy_of, stream, replays, review):
    store = copy_of()
    try:
        report = observe(store, jsonl(*stream))
        assert report.ok
        retain(store, batch_size=2)
        if review:  # decisions made before the replays stay as they are
            for stored in pending(store):
                accept(store, stored.id)
        before = dump_all(store)
        for picks in replays:
            again = observe(store, jsonl(*(stream[i % len(stream)] for i in picks)))
            assert again.queued == [] and again.bad == []
            assert retain(store).processed == 0
        assert dump_all(store) == before
        statuses = [row[0] for row in store.db.execute("SELECT status FROM observations")]
        assert len(statuses) == len(stream)
        assert set(statuses) <= {"retained", "dark"}
    finally:
        store.close()
