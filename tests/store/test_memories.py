"""The memory API: write, dedup, write_many, get, search, update, archive, quarantine."""

from __future__ import annotations

import pytest

from plugin_sdk import MemsdkError, NotFound, UnknownCategory
from plugin_sdk.errors import DuplicateMemory, InvalidMemory
from plugin_sdk.store import driver
from plugin_sdk.store.normalize import normalized_hash

OPS_CATEGORIES = [
    "OPS_RULES",
    "ENV_STATE",
    "CONFIG_VALUES",
    "INCIDENTS",
    "RESEARCH",
    "MODEL_KNOWLEDGE",
]


def row_count(store) -> int:
    return store.db.execute("SELECT count(*) FROM memories").fetchone()[0]


def ids(hits) -> list[int]:
    return [hit.memory.id for hit in hits]


# Writing and deduplication


def test_write_creates_an_active_memory_with_the_category_kind(store):
    result = store.memories.write("Never run migrations on Fridays.", "OPS_RULES", importance=90)
    assert result.created is True
    assert result.seen_count == 1
    assert result.status == "active"
    memory = store.memories.get(result.id)
    assert memory.project == "test-project"
    assert memory.category == "OPS_RULES"
    assert memory.kind == "intent"
    assert memory.content == "Never run migrations on Fridays."
    assert memory.normalized_hash == normalized_hash("Never run migrations on Fridays.")
    assert memory.importance == 90
    assert memory.token_count == store.tokenizer.count(memory.content)
    assert store.memories.get(store.memories.write("x = 1", "CONFIG_VALUES").id).kind == "content"


def test_repeated_write_bumps_seen_count_and_returns_the_same_id(store):
    first = store.memories.write("Deploys happen on Tuesdays.", "OPS_RULES")
    again = store.memories.write("  deploys   HAPPEN on\ttuesdays ", "OPS_RULES")
    third = store.memories.write("Deploys happen on Tuesdays", "OPS_RULES")
    assert again.id == first.id == third.id
    assert (again.created, third.created) == (False, False)
    assert third.seen_count == 3
    memory = store.memories.get(first.id)
    assert memory.seen_count == 3
    assert memory.content == "Deploys happen on Tuesdays."
    assert row_count(store) == 1


def test_same_text_in_another_project_or_category_is_a_separate_memory(store):
    text = "pg-prod-01 is the primary."
    a = store.memories.write(text, "ENV_STATE")
    b = store.memories.write(text, "ENV_STATE", project="other-project")
    c = store.memories.write(text, "INCIDENTS")
    assert len({a.id, b.id, c.id}) == 3
    assert all(r.created for r in (a, b, c))
    assert store.memories.get(b.id, project="other-project").project == "other-project"
    assert row_count(store) == 3


def test_rewriting_an_archived_memory_keeps_it_archived(store):
    first = store.memories.write("Old staging host is stg-01.", "ENV_STATE")
    store.memories.archive(first.id)
    again = store.memories.write("old staging host is stg-01", "ENV_STATE")
    assert again.id == first.id
    assert again.status == "archived"
    assert again.seen_count == 2


def test_write_with_unknown_category_lists_categories_and_writes_nothing(store):
    before = row_count(store)
    with pytest.raises(UnknownCategory) as excinfo:
        store.memories.write("Tomatoes need staking.", "GARDEN_LOG")
    message = str(excinfo.value)
    assert "GARDEN_LOG" in message
    for name in OPS_CATEGORIES:
        assert name in message
    assert excinfo.value.category == "GARDEN_LOG"
    assert set(excinfo.value.known) == set(OPS_CATEGORIES)
    assert row_count(store) == before


def test_write_to_a_store_without_packs_says_so(empty_store):
    with pytest.raises(UnknownCategory, match="install a pack"):
        empty_store.memories.write("anything", "OPS_RULES")
    assert row_count(empty_store) == 0


@pytest.mark.parametrize("content", ["", "   \n\t "])
def test_empty_content_is_refused(store, content):
    with pytest.raises(InvalidMemory):
        store.memories.write(content, "OPS_RULES")
    assert row_count(store) == 0


@pytest.mark.parametrize("importance", [0, 101, 50.5, True])
def test_importance_out_of_range_is_refused(store, importance):
    with pytest.raises(InvalidMemory, match="importance"):
        store.memories.write("text", "OPS_RULES", importance=importance)
    assert row_count(store) == 0


# write_many


def test_write_many_writes_all_in_order_and_dedups_within_the_batch(store):
    results = store.memories.write_many(
        [
            {"content": "Rule one.", "category": "OPS_RULES"},
            {"content": "api v2 runs on k8s-prod.", "category": "ENV_STATE", "importance": 80},
            {"content": "rule ONE", "category": "OPS_RULES"},
        ]
    )
    assert [r.created for r in results] == [True, True, False]
    assert results[2].id == results[0].id
    assert results[2].seen_count == 2
    assert store.memories.get(results[1].id).importance == 80
    assert row_count(store) == 2


def test_write_many_with_a_bad_category_in_the_middle_writes_nothing(store):
    existing = store.memories.write("Rule zero.", "OPS_RULES")
    with pytest.raises(UnknownCategory) as excinfo:
        store.memories.write_many(
            [
                {"content": "Rule zero.", "category": "OPS_RULES"},
                {"content": "Rule one.", "category": "OPS_RULES"},
                {"content": "Tomatoes need staking.", "category": "GARDEN_LOG"},
                {"content": "Rule three.", "category": "OPS_RULES"},
            ]
        )
    assert "item 2" in str(excinfo.value)
    assert "GARDEN_LOG" in str(excinfo.value)
    assert row_count(store) == 1
    assert store.memories.get(existing.id).seen_count == 1


@pytest.mark.parametrize(
    "bad_item",
    [
        {"category": "OPS_RULES"},
        {"content": "", "category": "OPS_RULES"},
        {"content": "x", "category": "OPS_RULES", "importance": 700},
    ],
)
def test_write_many_with_an_invalid_item_names_its_position(store, bad_item):
    with pytest.raises(InvalidMemory, match="item 1"):
        store.memories.write_many(
            [
                {"content": "Rule one.", "category": "OPS_RULES"},
                bad_item,
                {"content": "Rule two.", "category": "OPS_RULES"},
            ]
        )
    assert row_count(store) == 0


# get


def test_get_of_a_missing_id_raises_not_found_naming_the_id(store):
    with pytest.raises(NotFound, match="12345"):
        store.memories.get(12345)


# search


def test_search_ranks_the_stronger_match_first(store):
    weak = store.memories.write(
        "The analytics platform team mentioned kafka once while discussing the quarterly "
        "roadmap, hiring plans, office moves and the budget for next year.",
        "RESEARCH",
    )
    strong = store.memories.write("kafka brokers: kafka retention for kafka topics.", "RESEARCH")
    store.memories.write("Nothing about streaming here.", "RESEARCH")
    hits = store.memories.search("kafka")
    assert ids(hits) == [strong.id, weak.id]
    assert hits[0].rank < hits[1].rank


def test_search_ranks_memories_holding_more_words_first_and_stems(store):
    both = store.memories.write("Rebooting nodes requires draining them first.", "OPS_RULES")
    one = store.memories.write("Rebooting the laptop fixed it.", "INCIDENTS")
    store.memories.write("Nothing to see here.", "INCIDENTS")
    assert ids(store.memories.search("reboot drain")) == [both.id, one.id]


def test_search_is_scoped_to_the_project(store):
    mine = store.memories.write("Grafana lives on grafana.ops.", "ENV_STATE")
    theirs = store.memories.write("Grafana lives elsewhere.", "ENV_STATE", project="elsewhere")
    assert ids(store.memories.search("grafana")) == [mine.id]
    assert ids(store.memories.search("grafana", project="elsewhere")) == [theirs.id]


def test_search_filters_by_category(store):
    rule = store.memories.write("Reload nginx, never restart it.", "OPS_RULES")
    incident = store.memories.write("Restarting nginx dropped traffic.", "INCIDENTS")
    assert ids(store.memories.search("nginx", category="OPS_RULES")) == [rule.id]
    assert set(ids(store.memories.search("nginx"))) == {rule.id, incident.id}


def test_search_leaves_out_archived_and_superseded_unless_asked(store):
    active = store.memories.write("Redis cache runs on cache-01.", "ENV_STATE")
    archived = store.memories.write("Redis cache ran on cache-00.", "ENV_STATE")
    superseded = store.memories.write("Redis cache was on cache-old.", "ENV_STATE")
    store.memories.archive(archived.id)
    store.db.execute(
        "UPDATE memories SET status = 'superseded', superseded_by = ? WHERE id = ?",
        [active.id, superseded.id],
    )
    assert ids(store.memories.search("redis")) == [active.id]
    assert set(ids(store.memories.search("redis", include_archived=True))) == {
        active.id,
        archived.id,
    }
    assert set(ids(store.memories.search("redis", include_superseded=True))) == {
        active.id,
        superseded.id,
    }
    assert set(
        ids(store.memories.search("redis", include_archived=True, include_superseded=True))
    ) == {active.id, archived.id, superseded.id}


def test_search_never_returns_quarantined_memories(store):
    store.memories.quarantine("Redis is flaky.", "GARDEN_LOG", reason="unknown category")
    assert store.memories.search("redis") == []
    assert store.memories.search("redis", include_archived=True, include_superseded=True) == []


@pytest.mark.parametrize(
    "query",
    [
        "on-call",
        '"on-call"',
        '"pager',
        'pager"',
        "don't",
        "NOT primary",
        "primary NOT",
        "pager AND",
        "OR pager",
        "pager*",
        "(pager)",
        "pager)",
        "NEAR(pager primary)",
        "content:pager",
        "^pager",
        "pager + primary",
    ],
)
def test_queries_with_fts_syntax_are_plain_terms_when_not_raw(store, query):
    memory = store.memories.write(
        "Don't wake the on-call pager for NOT-primary replicas: NEAR(pager primary) "
        "content:pager AND OR rules.",
        "OPS_RULES",
    )
    assert ids(store.memories.search(query)) == [memory.id]


@pytest.mark.parametrize("query", ['"', '""', '"""', "*", "()", "-", "+", ":", "^", "'"])
def test_queries_without_words_find_nothing_and_do_not_raise(store, query):
    store.memories.write("Don't page the on-call pager.", "OPS_RULES")
    assert store.memories.search(query) == []


@pytest.mark.sqlite_only("FTS5's query syntax; PostgreSQL's raw queries are websearch_to_tsquery's")
def test_raw_queries_pass_fts_syntax_through(store):
    a = store.memories.write("Kafka retention is seven days.", "CONFIG_VALUES")
    b = store.memories.write("Loki keeps thirty days of logs.", "RESEARCH")
    assert set(ids(store.memories.search("kafka OR loki", raw=True))) == {a.id, b.id}
    # Not raw: OR is a word (a stopword), and any content word may match.
    assert set(ids(store.memories.search("kafka OR loki"))) == {a.id, b.id}
    assert ids(store.memories.search("kaf*")) == []
    assert ids(store.memories.search("kaf*", raw=True)) == [a.id]


@pytest.mark.sqlite_only("FTS5 refuses malformed syntax; websearch_to_tsquery reads any text")
def test_bad_raw_query_raises_invalid_memory(store):
    # A row to match against: a newer SQLite's planner may skip the MATCH on an empty project.
    store.memories.write("Postgres primary is pg-prod-01.", "ENV_STATE")
    with pytest.raises(InvalidMemory, match="bad search query"):
        store.memories.search('"unbalanced', raw=True)


def test_fts_follows_content_updates(store):
    memory = store.memories.write("Postgres primary is pg-prod-01.", "ENV_STATE")
    assert ids(store.memories.search("postgres")) == [memory.id]
    store.memories.update(memory.id, content="MySQL primary is db-main.")
    assert store.memories.search("postgres") == []
    assert store.memories.search("pg-prod-01") == []
    assert ids(store.memories.search("mysql")) == [memory.id]
    assert ids(store.memories.search("primary")) == [memory.id]


def test_fts_follows_archive_and_include(store):
    memory = store.memories.write("Jenkins runs on ci-01.", "ENV_STATE")
    store.memories.archive(memory.id)
    assert store.memories.search("jenkins") == []
    assert ids(store.memories.search("jenkins", include_archived=True)) == [memory.id]


# update


def test_update_content_rehashes_and_recounts(store):
    memory = store.memories.write("short", "CONFIG_VALUES")
    text = "max_connections = 400 in /etc/postgresql/16/main/postgresql.conf"
    updated = store.memories.update(memory.id, content=text)
    assert updated.content == text
    assert updated.normalized_hash == normalized_hash(text)
    assert updated.token_count == store.tokenizer.count(text)
    again = store.memories.write(text.upper(), "CONFIG_VALUES")
    assert again.id == memory.id
    assert again.created is False


def test_update_category_changes_kind_and_dedup_key(store):
    memory = store.memories.write("Always reload nginx.", "INCIDENTS")
    updated = store.memories.update(memory.id, category="OPS_RULES")
    assert (updated.category, updated.kind) == ("OPS_RULES", "intent")
    assert store.memories.write("always reload nginx", "OPS_RULES").id == memory.id
    assert store.memories.write("always reload nginx", "INCIDENTS").created is True


def test_update_that_collides_raises_duplicate_naming_the_other_and_changes_nothing(store):
    other = store.memories.write("Backups run at 02:00 UTC.", "CONFIG_VALUES")
    memory = store.memories.write("Backups run at 03:00 UTC.", "CONFIG_VALUES")
    before = store.memories.get(memory.id)
    with pytest.raises(DuplicateMemory) as excinfo:
        store.memories.update(memory.id, content="backups run at 02:00 utc", importance=90)
    assert excinfo.value.other_id == other.id
    assert f"memory {other.id}" in str(excinfo.value)
    assert store.memories.get(memory.id) == before
    assert ids(store.memories.search("03")) == [memory.id]


def test_update_category_that_collides_raises_duplicate(store):
    rule = store.memories.write("Reload nginx after edits.", "OPS_RULES")
    note = store.memories.write("Reload nginx after edits.", "INCIDENTS")
    before = store.memories.get(note.id)
    with pytest.raises(DuplicateMemory) as excinfo:
        store.memories.update(note.id, category="OPS_RULES")
    assert excinfo.value.other_id == rule.id
    assert store.memories.get(note.id) == before


def test_update_to_an_unknown_category_is_refused(store):
    memory = store.memories.write("Tomatoes need staking.", "RESEARCH")
    before = store.memories.get(memory.id)
    with pytest.raises(UnknownCategory) as excinfo:
        store.memories.update(memory.id, category="GARDEN_LOG")
    assert "OPS_RULES" in str(excinfo.value)
    assert store.memories.get(memory.id) == before


def test_update_of_a_missing_memory_raises_not_found(store):
    with pytest.raises(NotFound, match="777"):
        store.memories.update(777, content="x")


# archive


def test_archive_sets_status_and_is_idempotent(store):
    memory = store.memories.write("Old Grafana host.", "ENV_STATE")
    archived = store.memories.archive(memory.id)
    assert archived.status == "archived"
    assert archived.archived_at is not None
    assert store.memories.list() == []
    assert [m.id for m in store.memories.list(status="archived")] == [memory.id]
    again = store.memories.archive(memory.id)
    assert again == archived


def test_archiving_a_superseded_memory_is_refused(store):
    keeper = store.memories.write("Primary is pg-prod-02.", "ENV_STATE")
    old = store.memories.write("Primary is pg-prod-01.", "ENV_STATE")
    store.db.execute(
        "UPDATE memories SET status = 'superseded', superseded_by = ? WHERE id = ?",
        [keeper.id, old.id],
    )
    with pytest.raises(MemsdkError, match=str(keeper.id)):
        store.memories.archive(old.id)
    assert store.memories.get(old.id).status == "superseded"


def test_archive_of_a_missing_memory_raises_not_found(store):
    with pytest.raises(NotFound, match="4242"):
        store.memories.archive(4242)


# quarantine


def test_quarantine_keeps_text_with_an_unknown_category_out_of_sight(store):
    result = store.memories.quarantine(
        "Tomatoes need staking.", "GARDEN_LOG", reason="historian used an unknown category"
    )
    memory = store.memories.get(result.id)
    assert memory.status == "quarantined"
    assert memory.category == "GARDEN_LOG"
    assert memory.content == "Tomatoes need staking."
    assert memory.note == "historian used an unknown category"
    assert store.memories.list() == []
    assert [m.id for m in store.memories.list(status="quarantined")] == [result.id]
    assert [m.id for m in store.memories.list(status=None)] == [result.id]
    assert store.memories.search("tomatoes") == []


def test_update_with_a_known_category_releases_a_quarantined_memory(store):
    result = store.memories.quarantine("Never restart nginx at noon.", "NGINX_RULES", reason="?")
    released = store.memories.update(result.id, category="OPS_RULES")
    assert released.status == "active"
    assert (released.category, released.kind) == ("OPS_RULES", "intent")
    assert [m.id for m in store.memories.list()] == [result.id]
    assert ids(store.memories.search("nginx")) == [result.id]
    assert store.memories.write("never restart nginx at noon", "OPS_RULES").id == result.id


def test_released_memory_has_a_token_count_like_a_written_one(store):
    text = "Never restart nginx at noon."
    result = store.memories.quarantine(text, "NGINX_RULES", reason="?")
    released = store.memories.update(result.id, category="OPS_RULES")
    assert released.token_count == store.tokenizer.count(text)
    assert released.tokenizer == store.tokenizer.name


def test_update_with_an_unknown_category_keeps_it_quarantined(store):
    result = store.memories.quarantine("Tomatoes need staking.", "GARDEN_LOG", reason="?")
    with pytest.raises(UnknownCategory):
        store.memories.update(result.id, category="STILL_UNKNOWN")
    assert store.memories.get(result.id).status == "quarantined"


# The database itself guards categories


def raw_insert(store, category: str, status: str) -> None:
    store.db.execute(
        """INSERT INTO memories (project, kind, category, content, normalized_hash, status,
           created_at, updated_at, last_seen_at)
           VALUES ('test-project', 'content', ?, 'raw text', 'h-' || ?, ?, 'now', 'now', 'now')""",
        [category, category + status, status],
    )


@pytest.mark.parametrize("status", ["active", "archived", "pending"])
def test_the_db_refuses_a_live_memory_in_an_unknown_category(store, status):
    with pytest.raises(driver.IntegrityError, match="not an active category"):
        raw_insert(store, "GARDEN_LOG", status)
    assert row_count(store) == 0


def test_the_db_accepts_quarantined_rows_and_known_categories(store):
    raw_insert(store, "GARDEN_LOG", "quarantined")
    raw_insert(store, "OPS_RULES", "active")
    assert row_count(store) == 2


def test_the_db_refuses_moving_a_live_memory_to_an_unknown_category(store):
    memory = store.memories.write("Reload nginx.", "OPS_RULES")
    with pytest.raises(driver.IntegrityError, match="not an active category"):
        store.db.execute("UPDATE memories SET category = 'GARDEN_LOG' WHERE id = ?", [memory.id])
    assert store.memories.get(memory.id).category == "OPS_RULES"
