"""Installing and upgrading packs: defaults, overrides, migrations with mappings."""

from __future__ import annotations

import pytest

from plugin_sdk import UnknownCategory, resolve_pack, validate_pack
from plugin_sdk.errors import MigrationRequired, PackConflict
from plugin_sdk.packs.criteria import Criteria


@pytest.fixture
def garden(pack_doc, category):
    """``garden(version, **categories)`` -> a validated pack named ``garden``."""

    def build(version="1.0.0", name="garden", **categories):
        if not categories:
            categories = {"GARDEN_LOG": category()}
        return validate_pack(pack_doc(categories, name=name, version=version), source="test")

    return build


def sources(events):
    return [e.source for e in events]


# install


def test_install_writes_categories_in_priority_order_with_pack_criteria(
    empty_store, garden, category
):
    pack = garden(
        ZETA_NOTES=category(priority=5, definition="Zeta.", exclusions=["Secrets."]),
        ALPHA_NOTES=category(kind="intent", priority=30, definition="Alpha."),
        MID_NOTES=category(priority=20, definition="Mid.", positive_examples=["An example."]),
    )
    report = empty_store.packs.install(pack)
    assert sorted(report.added) == ["ALPHA_NOTES", "MID_NOTES", "ZETA_NOTES"]
    assert empty_store.category_names() == ["ZETA_NOTES", "MID_NOTES", "ALPHA_NOTES"]
    categories = {c.name: c for c in empty_store.categories()}
    assert categories["ALPHA_NOTES"].kind == "intent"
    assert categories["ALPHA_NOTES"].pack == "garden"
    zeta = categories["ZETA_NOTES"]
    assert zeta.value("definition") == "Zeta."
    assert zeta.value("exclusions") == ["Secrets."]
    assert zeta.value("positive_examples") == []
    assert {c.source for c in zeta.criteria.values()} == {"pack"}
    assert all(c.user_override is None for c in zeta.criteria.values())
    assert categories["MID_NOTES"].value("positive_examples") == ["An example."]
    events = empty_store.criteria.history("ZETA_NOTES")
    assert len(events) == 4
    assert set(sources(events)) == {"install"}
    assert {(e.pack, e.pack_version) for e in events} == {("garden", "1.0.0")}
    (installed,) = empty_store.packs.installed()
    assert (installed.name, installed.version) == ("garden", "1.0.0")


def test_ops_fixture_has_its_six_categories_in_priority_order(store):
    assert store.category_names() == [
        "OPS_RULES",
        "ENV_STATE",
        "CONFIG_VALUES",
        "INCIDENTS",
        "RESEARCH",
        "MODEL_KNOWLEDGE",
    ]
    assert [c.priority for c in store.categories()] == sorted(
        c.priority for c in store.categories()
    )


def test_installing_twice_is_a_conflict(store, table_dump):
    before = table_dump(store)
    with pytest.raises(PackConflict, match="already installed"):
        store.packs.install(resolve_pack("ops"))
    assert table_dump(store) == before


def test_a_pack_declaring_another_packs_category_is_refused(store, garden, category, table_dump):
    store.memories.write("Reload nginx.", "OPS_RULES")
    before = table_dump(store)
    intruder = garden(GARDEN_LOG=category(), OPS_RULES=category(definition="Mine now."))
    with pytest.raises(PackConflict) as excinfo:
        store.packs.install(intruder)
    message = str(excinfo.value)
    assert "OPS_RULES" in message and "'ops'" in message and "'garden'" in message
    assert table_dump(store) == before
    assert [p.name for p in store.packs.installed()] == ["ops"]
    with pytest.raises(UnknownCategory):
        store.memories.write("Sowed basil.", "GARDEN_LOG")


# upgrade: criteria text only


def test_criteria_only_upgrade_updates_defaults_keeps_override_and_reset_gets_new_default(
    empty_store, garden, category
):
    store = empty_store
    store.packs.install(
        garden("1.0.0", GARDEN_LOG=category(definition="Old default.", exclusions=["Old."]))
    )
    store.criteria.set("GARDEN_LOG", "definition", "My own definition.")

    report = store.packs.upgrade(
        garden("1.1.0", GARDEN_LOG=category(definition="New default.", exclusions=["New."]))
    )
    assert "GARDEN_LOG.definition" in report.changed
    assert report.overrides_kept == ["GARDEN_LOG.definition"]
    cat = store.category("GARDEN_LOG")
    assert cat.criteria["definition"].pack_default == "New default."
    assert cat.criteria["definition"].user_override == "My own definition."
    assert cat.criteria["definition"].source == "override"
    assert cat.value("definition") == "My own definition."
    assert cat.value("exclusions") == ["New."]  # no override: the new default shows
    assert cat.criteria["exclusions"].source == "pack"
    assert store.packs.get("garden").version == "1.1.0"

    cat = store.criteria.reset("GARDEN_LOG", "definition")
    assert cat.value("definition") == "New default."
    assert cat.criteria["definition"].source == "pack"

    events = store.criteria.history("GARDEN_LOG", "definition")
    assert sources(events) == ["install", "override", "upgrade", "reset"]
    assert [(e.old_value, e.new_value) for e in events] == [
        (None, "Old default."),
        ("Old default.", "My own definition."),
        ("Old default.", "New default."),
        ("My own definition.", "New default."),
    ]
    assert events[2].pack_version == "1.1.0"
    assert [e.id for e in events] == sorted(e.id for e in events)


def test_criteria_only_upgrade_needs_no_mapping_and_moves_no_memory(empty_store, garden, category):
    store = empty_store
    store.packs.install(garden("1.0.0"))
    written = store.memories.write("Sowed basil on May 3.", "GARDEN_LOG")
    store.packs.upgrade(garden("1.0.1", GARDEN_LOG=category(definition="Reworded.")))
    assert store.memories.get(written.id).category == "GARDEN_LOG"
    assert store.memories.get(written.id).status == "active"


# upgrade: migration events


def test_rename_without_mapping_is_refused_and_changes_nothing(
    empty_store, garden, category, table_dump
):
    store = empty_store
    store.packs.install(garden("1.0.0", OLD_LOG=category(), KEEP_LOG=category(priority=20)))
    store.memories.write("Sowed basil on May 3.", "OLD_LOG")
    store.criteria.set("OLD_LOG", "definition", "Mine.")
    before = table_dump(store)
    renamed = garden("2.0.0", NEW_LOG=category(), KEEP_LOG=category(priority=20))
    with pytest.raises(MigrationRequired) as excinfo:
        store.packs.upgrade(renamed)
    assert "OLD_LOG" in str(excinfo.value)
    assert table_dump(store) == before
    with pytest.raises(MigrationRequired):
        store.packs.upgrade(renamed, mapping={})
    assert table_dump(store) == before


def test_rename_with_mapping_moves_memories_retires_old_and_carries_overrides(
    empty_store, garden, category
):
    store = empty_store
    store.packs.install(
        garden("1.0.0", OLD_LOG=category(definition="Old."), KEEP_LOG=category(priority=20))
    )
    a = store.memories.write("Sowed basil on May 3.", "OLD_LOG")
    b = store.memories.write("Tomatoes went in on May 20.", "OLD_LOG", project="allotment")
    c = store.memories.write("Slugs ate the lettuce.", "OLD_LOG")
    store.memories.archive(c.id)
    store.criteria.set("OLD_LOG", "definition", "My definition.")
    store.criteria.set("OLD_LOG", "exclusions", ["Shopping lists."])

    report = store.packs.upgrade(
        garden(
            "2.0.0",
            NEW_LOG=category(kind="intent", definition="New."),
            KEEP_LOG=category(priority=20),
        ),
        mapping={"OLD_LOG": "NEW_LOG"},
    )
    assert report.renamed == {"OLD_LOG": "NEW_LOG"}
    assert report.moved == 3
    for memory_id, project in ((a.id, None), (b.id, "allotment"), (c.id, None)):
        memory = store.memories.get(memory_id, project=project)
        assert (memory.category, memory.kind) == ("NEW_LOG", "intent")
    assert store.memories.get(a.id).status == "active"
    assert store.memories.get(c.id).status == "archived"
    assert [m.id for m in store.memories.list(category="NEW_LOG")] == [a.id]
    assert [h.memory.id for h in store.memories.search("basil")] == [a.id]

    retired = {c.name: c for c in store.categories(include_retired=True)}["OLD_LOG"]
    assert (retired.status, retired.renamed_to) == ("retired", "NEW_LOG")
    assert "OLD_LOG" not in store.category_names()

    new = store.category("NEW_LOG")
    assert new.value("definition") == "My definition."
    assert new.criteria["definition"].pack_default == "New."
    assert new.value("exclusions") == ["Shopping lists."]
    assert store.criteria.reset("NEW_LOG", "definition").value("definition") == "New."

    with pytest.raises(UnknownCategory):
        store.memories.write("Sowed chard.", "OLD_LOG")
    assert store.memories.write("sowed basil on may 3", "NEW_LOG").id == a.id


def test_rename_happens_in_one_transaction(empty_store, garden, category, table_dump, monkeypatch):
    store = empty_store
    store.packs.install(garden("1.0.0", OLD_LOG=category()))
    store.memories.write("Sowed basil on May 3.", "OLD_LOG")
    store.criteria.set("OLD_LOG", "definition", "Mine.")
    before = table_dump(store)
    real_record = Criteria.record

    def failing_record(self, category, field, source, *args, **kwargs):
        if source == "rename":  # after the memories moved and OLD_LOG was retired
            raise RuntimeError("disk full")
        return real_record(self, category, field, source, *args, **kwargs)

    monkeypatch.setattr(Criteria, "record", failing_record)
    with pytest.raises(RuntimeError, match="disk full"):
        store.packs.upgrade(garden("2.0.0", NEW_LOG=category()), mapping={"OLD_LOG": "NEW_LOG"})
    assert table_dump(store) == before


def test_retire_mapping_archives_active_memories_without_deleting(empty_store, garden, category):
    store = empty_store
    store.packs.install(garden("1.0.0", OLD_LOG=category(), KEEP_LOG=category(priority=20)))
    active = store.memories.write("Sowed basil on May 3.", "OLD_LOG")
    elsewhere = store.memories.write("Sowed basil on May 3.", "OLD_LOG", project="allotment")
    archived = store.memories.write("Slugs ate the lettuce.", "OLD_LOG")
    store.memories.archive(archived.id)
    kept = store.memories.write("Compost turned.", "KEEP_LOG")
    count = store.db.execute("SELECT count(*) FROM memories").fetchone()[0]

    report = store.packs.upgrade(
        garden("2.0.0", KEEP_LOG=category(priority=20)), mapping={"OLD_LOG": None}
    )
    assert report.retired == ["OLD_LOG"]
    assert report.archived == 2
    assert store.db.execute("SELECT count(*) FROM memories").fetchone()[0] == count
    for memory_id, project in ((active.id, None), (elsewhere.id, "allotment")):
        memory = store.memories.get(memory_id, project=project)
        assert (memory.status, memory.category) == ("archived", "OLD_LOG")
        assert memory.archived_at is not None
    assert store.memories.get(kept.id).status == "active"
    retired = {c.name: c for c in store.categories(include_retired=True)}["OLD_LOG"]
    assert (retired.status, retired.renamed_to) == ("retired", None)
    assert store.category_names() == ["KEEP_LOG"]
    with pytest.raises(UnknownCategory) as excinfo:
        store.memories.write("Sowed chard.", "OLD_LOG")
    assert "KEEP_LOG" in str(excinfo.value)
    with pytest.raises(UnknownCategory):
        store.criteria.set("OLD_LOG", "definition", "x")
    assert [h.memory.id for h in store.memories.search("basil", include_archived=True)] == [
        active.id
    ]


def test_rename_into_an_existing_category_folds_same_text(empty_store, garden, category):
    store = empty_store
    store.packs.install(garden("1.0.0", OLD_LOG=category(), KEEP_LOG=category(priority=20)))
    keeper = store.memories.write("Tomatoes need staking.", "KEEP_LOG")
    duplicate = store.memories.write("tomatoes need staking", "OLD_LOG")
    store.memories.write("TOMATOES NEED STAKING.", "OLD_LOG")  # seen twice in OLD_LOG
    other = store.memories.write("Basil bolts in heat.", "OLD_LOG")

    report = store.packs.upgrade(
        garden("2.0.0", KEEP_LOG=category(priority=20)), mapping={"OLD_LOG": "KEEP_LOG"}
    )
    assert (report.moved, report.folded) == (1, 1)
    folded = store.memories.get(duplicate.id)
    assert folded.status == "superseded"
    assert folded.superseded_by == keeper.id
    target = store.memories.get(keeper.id)
    assert target.seen_count == 3
    assert duplicate.id in target.merged_from
    assert target.status == "active"
    moved = store.memories.get(other.id)
    assert (moved.category, moved.status) == ("KEEP_LOG", "active")
    assert [h.memory.id for h in store.memories.search("tomatoes")] == [keeper.id]
    assert {h.memory.id for h in store.memories.search("tomatoes", include_superseded=True)} == {
        keeper.id,
        duplicate.id,
    }
    retired = {c.name: c for c in store.categories(include_retired=True)}["OLD_LOG"]
    assert (retired.status, retired.renamed_to) == ("retired", "KEEP_LOG")


def test_pure_addition_needs_an_explicit_empty_mapping(empty_store, garden, category, table_dump):
    store = empty_store
    store.packs.install(garden("1.0.0"))
    memory = store.memories.write("Sowed basil on May 3.", "GARDEN_LOG")
    before = table_dump(store)
    bigger = garden("1.1.0", GARDEN_LOG=category(), SEED_BANK=category(priority=5))
    with pytest.raises(MigrationRequired, match="SEED_BANK"):
        store.packs.upgrade(bigger)
    assert table_dump(store) == before

    report = store.packs.upgrade(bigger, mapping={})
    assert report.added == ["SEED_BANK"]
    assert store.category_names() == ["SEED_BANK", "GARDEN_LOG"]
    assert store.category("SEED_BANK").value("definition") == "A test category."
    assert sources(store.criteria.history("SEED_BANK", "definition")) == ["upgrade"]
    assert store.memories.write("Saved tomato seed, 2026.", "SEED_BANK").created
    assert store.memories.get(memory.id).category == "GARDEN_LOG"


def test_mapping_must_cover_removed_categories_and_only_them(
    empty_store, garden, category, table_dump
):
    store = empty_store
    store.packs.install(garden("1.0.0", OLD_LOG=category(), KEEP_LOG=category(priority=20)))
    before = table_dump(store)
    smaller = garden("2.0.0", KEEP_LOG=category(priority=20))
    for mapping in ({"KEEP_LOG": None}, {"OLD_LOG": "NOWHERE_LOG"}, {}):
        with pytest.raises(MigrationRequired):
            store.packs.upgrade(smaller, mapping=mapping)
        assert table_dump(store) == before


@pytest.mark.parametrize(
    ("installed", "older"),
    [
        ("1.2.0", "1.1.9"),
        ("2.0.0", "1.99.99"),
        ("1.0.0", "1.0.0-rc.1"),
        ("1.0.0-beta", "1.0.0-alpha"),
        ("1.0.0-rc.2", "1.0.0-rc.1"),
    ],
)
def test_a_downgrade_is_refused(empty_store, garden, category, table_dump, installed, older):
    store = empty_store
    store.packs.install(garden(installed))
    before = table_dump(store)
    with pytest.raises(PackConflict, match="downgrade"):
        store.packs.upgrade(garden(older, GARDEN_LOG=category(definition="Older text.")))
    assert table_dump(store) == before
    assert store.packs.get("garden").version == installed


def test_upgrading_a_pack_that_is_not_installed_is_refused(empty_store, garden):
    from plugin_sdk import NotFound

    with pytest.raises(NotFound, match="garden"):
        empty_store.packs.upgrade(garden("1.0.0"))


def test_categories_read_again_after_any_change_from_anywhere(tmp_path, garden, category):
    """``store.categories()`` may keep its last read, never past a change: one made
    through the API, one in raw SQL on the same connection, one committed by
    another connection, and one rolled back (read inside the transaction, then
    after it)."""
    import sqlite3

    from plugin_sdk import Store

    store = Store(tmp_path / "c.db", project="p")
    store.packs.install(garden(GARDEN_LOG=category(), GARDEN_PLAN=category(priority=5)))

    def definition(name):
        return store.category(name).value("definition")

    assert store.category_names() == ["GARDEN_PLAN", "GARDEN_LOG"]
    first = store.categories()
    assert store.categories() == first and store.categories() is not first  # a copy each time
    store.criteria.set("GARDEN_LOG", "definition", "Through the API.")
    assert definition("GARDEN_LOG") == "Through the API."
    store.db.execute("UPDATE categories SET priority = 1 WHERE name = 'GARDEN_LOG'")
    assert store.category_names() == ["GARDEN_LOG", "GARDEN_PLAN"]
    other = sqlite3.connect(tmp_path / "c.db")
    with other:
        other.execute(
            "UPDATE criteria SET user_override = ? WHERE category = ? AND field = ?",
            ['"From another connection."', "GARDEN_LOG", "definition"],
        )
    other.close()
    assert definition("GARDEN_LOG") == "From another connection."
    with pytest.raises(RuntimeError), store.atomic():
        store.db.execute("UPDATE categories SET status = 'retired' WHERE name = 'GARDEN_PLAN'")
        assert store.category_names() == ["GARDEN_LOG"]
        raise RuntimeError("roll it back")
    assert store.category_names() == ["GARDEN_LOG", "GARDEN_PLAN"]
    assert [c.name for c in store.categories()] == ["GARDEN_LOG", "GARDEN_PLAN"]
    store.close()
