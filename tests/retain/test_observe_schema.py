"""observe's fast schema check says yes and no exactly where ``jsonschema`` does.

The compiled check (``fastjsonschema``, the schema's ``$ref``s inlined) decides
whether a line is valid; ``jsonschema`` only words the refusal. They must
agree on every document, or a line would be stored that the schema refuses.
The stored document is the canonical dump the content hash is taken of.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_sdk import Store
from plugin_sdk.retain.observations import (
    _compiled,
    _inlined,
    _valid,
    _validator,
    canonical,
    content_hash,
    observation_schema,
    observe,
)
from plugin_sdk.testing import fresh_plugin_manager
from tests.retain.test_retain import FIELD, HERON, MARSH, obs

GOOD: dict[str, Any] = {
    "id": "o-1",
    "source": "test",
    "timestamp": "2026-03-01T10:00:00Z",
    "category": "EVENTS",  # the schema's pattern; no store is involved
    "topic": "cache",
    "actors": ["svc:cache", "person:ann"],
    "sentiment": "neutral",
    "payload_typed": {
        "text": "The cache restarted.",
        "facts": [{"subject": "svc:cache", "predicate": "status", "object": "up"}],
        "relations": [{"source": "svc:cache", "type": "uses", "target": "svc:disk"}],
    },
}

# Each a path into GOOD and values to put there, valid or not.
EDITS: list[tuple[tuple[Any, ...], list[Any]]] = [
    (("actors", 0), ["svc", "svc:", ":x", "a:b:c", "A.b:c-d", "x" * 301 + ":y", 5, None]),
    (("actors",), [[], ["a:b", "a:b"], ["a:b"] * 51, "a:b"]),
    (("payload_typed", "facts", 0, "subject"), ["bad", "ok:ok", "", 1]),
    (("payload_typed", "relations", 0, "source"), ["bad", "ok:ok", "a b:c"]),
    (("payload_typed", "relations", 0, "target"), ["bad", "ok:ok", []]),
    (("payload_typed", "relations", 0, "type"), ["Uses", "uses_2", ""]),
    (("payload_typed", "text"), ["", " ", "x", 3]),
    (("timestamp",), ["2026-03-01", "2026-03-01 10:00Z", "2026-03-01T10:00:00.1234567Z"]),
    (("category",), ["events", "E", "E" * 65, "EV_1"]),
]


@pytest.fixture
def field(new_store: Callable[..., Store]) -> Store:
    return new_store(FIELD, name="field.db", project="field", plugins=fresh_plugin_manager())


def edited(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    document = copy.deepcopy(GOOD)
    target: Any = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return document


CASES = [(path, value) for path, values in EDITS for value in values]


@pytest.mark.parametrize(("path", "value"), CASES)
def test_the_compiled_check_agrees_with_jsonschema(path, value):
    document = edited(path, value)
    assert _valid(document) == _validator().is_valid(document)


@settings(max_examples=200, deadline=None)
@given(
    names=st.lists(st.text(alphabet="ab:._- A", min_size=0, max_size=6), min_size=0, max_size=4),
    extra=st.dictionaries(st.sampled_from(["x", "source_ref", "correlation"]), st.none()),
)
def test_the_compiled_check_agrees_on_generated_names(names, extra):
    document = copy.deepcopy(GOOD)
    document["actors"] = names
    if names:
        document["payload_typed"]["relations"][0]["target"] = names[-1]
    document.update(extra)
    assert _valid(document) == _validator().is_valid(document)


def test_the_inlined_schema_has_no_references_left():
    inlined = json.dumps(_inlined(observation_schema()))
    assert "$ref" not in inlined and "$defs" not in inlined
    assert _compiled()(GOOD) == GOOD


def test_the_stored_document_is_the_hashed_canonical_dump(field):
    document = obs("o-1", [HERON, MARSH], "A grey heron at the sluice, ünder the willows.")
    text = canonical(document)
    assert text == json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert content_hash(document) == hashlib.sha256(text.encode("utf-8")).hexdigest()
    loose = json.dumps(document, indent=1)  # the same content, written another way
    assert observe(field, [loose]).queued == ["o-1"]
    stored = field.db.execute("SELECT document, content_hash FROM observations").fetchall()
    assert stored == [(text, content_hash(document))]
    again = observe(field, [json.dumps(document)])  # a replay, however it is written
    assert again.replayed == ["o-1"] and not again.queued and not again.bad
