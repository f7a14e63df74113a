"""Issue 17: entity names keep their case, type/subtype come from the whole path, rules inherit."""

from __future__ import annotations

import pytest

from plugin_sdk import Store, validate_pack
from plugin_sdk.errors import DuplicateEntity
from plugin_sdk.testing import fresh_plugin_manager, grid_section, pack_document

RULES = [
    {"pattern": "world:*", "half_life_days": 365},
    {"pattern": "world:person:*", "cell": "semantic.other"},
    {"pattern": "world:person:crew:*", "half_life_days": 40},
    {"pattern": "agent:*:instruction:*", "pinned": True, "cell": "procedural.agent"},
    {"pattern": "agent:*:instruction:draft:*", "pinned": False},
]


@pytest.fixture
def store():
    document = pack_document("ns", "1.0.0", {"NOTES": "content"})
    document["grid"] = grid_section(half_life_days=30.0, namespaces=RULES)
    with Store(":memory:", project="ns", plugins=fresh_plugin_manager()) as store:
        store.packs.install(validate_pack(document, source="ns"))
        yield store


def test_the_designs_own_example_is_accepted_and_keeps_its_case(store):
    rc = store.entities.add("agent:claude-code:rc:RC-2")
    assert (rc.name, rc.slug) == ("agent:claude-code:rc:RC-2", "RC-2")
    assert store.entities.get("agent:claude-code:rc:rc-2").id == rc.id
    assert store.entities.ensure("AGENT:claude-code:rc:rc-2").id == rc.id
    with pytest.raises(DuplicateEntity, match="case-insensitively"):
        store.entities.add("agent:claude-code:rc:rc-2")
    assert [e.name for e in store.entities.list(pattern="agent:*:RC:*")] == [rc.name]


def test_type_and_subtype_come_from_the_whole_path(store):
    rc = store.entities.add("agent:claude-code:rc:RC-2")
    assert (rc.type, rc.subtype) == ("agent", "claude-code:rc")
    deep = store.entities.add("world:person:crew:deck:anya")
    assert (deep.type, deep.subtype) == ("world", "person:crew:deck")
    flat = store.entities.add("concept:kindness")
    assert (flat.type, flat.subtype) == ("concept", None)


def test_namespace_rules_inherit_from_their_parents_unless_they_override(store):
    anya = store.entities.add("world:person:anya")
    # world:person:* sets the cell only: the half-life is world:*'s, not the cell's 30
    assert (anya.cell, anya.half_life_days) == ("semantic.other", 365)
    crew = store.entities.add("world:person:crew:bo")
    # world:person:crew:* overrides the half-life and inherits the cell
    assert (crew.cell, crew.half_life_days) == ("semantic.other", 40)
    rule = store.entities.add("agent:claude-code:instruction:no-force-push")
    draft = store.entities.add("agent:claude-code:instruction:draft:maybe")
    assert (rule.pinned, rule.cell) == (True, "procedural.agent")
    assert (draft.pinned, draft.cell) == (False, "procedural.agent")  # overrides pinned only
