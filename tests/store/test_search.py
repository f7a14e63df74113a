"""Search: plain-language queries, the live-only index, ranking signals, hooks, time."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin_sdk import InvalidMemory, Store, hookimpl, make_plugin_manager, resolve_pack
from plugin_sdk.store.search.query import parse, shipped_stopwords, tokens
from plugin_sdk.store.search.ranking import DEFAULTS, combine, set_setting
from plugin_sdk.store.search.ranking import settings as search_settings
from plugin_sdk.store.tables.memories.search import fulltext, index_check

FIXED = datetime(2026, 6, 15, 12, 0, tzinfo=timezone.utc)


def ids(hits: list) -> list[int]:
    return [hit.memory.id for hit in hits]


def test_a_question_as_typed_finds_the_memory_it_asks_about(store: Store) -> None:
    failover = store.memories.write(
        "To fail over the postgres primary, run patronictl switchover on pg-01.", "OPS_RULES"
    )
    store.memories.write("Deploys happen on Tuesdays.", "OPS_RULES")
    store.memories.write("The primary colour of the dashboard is blue.", "ENV_STATE")
    hits = store.memories.search("how do we fail over the postgres primary?")
    assert ids(hits)[0] == failover.id
    assert "phrase" in hits[0].why
    assert hits[0].score > hits[-1].score and hits[0].rank == -hits[0].score


def test_stopwords_are_left_out_and_a_stopword_only_query_still_looks() -> None:
    stop = shipped_stopwords("en")
    assert {"the", "how", "do", "we", "what", "t", "s"} <= stop
    assert "won" not in stop  # "won't" splits to won + t; "won" is a word
    query = parse("How do we fail over the Postgres primary?", stop)
    assert query.words == ("fail", "postgres", "primary")
    assert query.phrases == (("postgres", "primary"),)
    assert parse("The Who", stop).words == ("the", "who")
    assert tokens("don't stop_me NOW") == ["don", "t", "stop", "me", "now"]


def test_a_pack_adds_stopwords_through_its_search_field(store: Store, tmp_path: Path) -> None:
    from plugin_sdk import validate_pack
    from plugin_sdk.testing import pack_document

    document = pack_document("chatter", "1.0.0", {"CHAT": "content"})
    document["search"] = {"stopwords": ["orchard"]}
    store.packs.install(validate_pack(document, source="chatter"))
    plain = store.memories.write("Orchard row four has pears.", "CHAT")
    store.memories.write("Orchard row five has apples.", "CHAT")
    assert ids(store.memories.search("orchard pears")) == [plain.id]


@pytest.mark.sqlite_only("FTS5's expert syntax and its errors")
def test_expert_syntax_stays_available_and_its_errors_are_invalid_memory(store: Store) -> None:
    kafka = store.memories.write("Kafka retention is seven days.", "CONFIG_VALUES")
    store.memories.write("Loki keeps logs.", "CONFIG_VALUES")
    assert ids(store.memories.search("kaf*", raw=True)) == [kafka.id]
    assert ids(store.memories.search('"retention is"', raw=True)) == [kafka.id]
    for bad in ('"open', "NEAR(", "a AND", "nosuchcolumn: x"):
        with pytest.raises(InvalidMemory, match="bad search query"):
            store.memories.search(bad, raw=True)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(min_size=1, max_size=60))
def test_no_query_string_raises(store: Store, text: str) -> None:
    store.memories.write(
        "Don't page on-call for NOT-primary replicas: NEAR(a b) content:x", "OPS_RULES"
    )
    if not text.strip():
        with pytest.raises(InvalidMemory):
            store.memories.search(text)
        return
    hits = store.memories.search(text)
    assert len(hits) <= 20
    for fragment in ("OR", "NEAR(", "*", '"', "content:", "fts_scope:", "\ud800", "'", "^", "-"):
        store.memories.search(text + fragment)


VOCABULARY = ["kafka", "nginx", "pager", "tomato", "bramley", "grafana", "rootstock", "ferry"]
FILLER = ["the", "and", "of", "what", "is", "how"]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    memories=st.lists(
        st.lists(st.sampled_from(VOCABULARY + FILLER), min_size=1, max_size=6),
        min_size=1,
        max_size=8,
    ),
    question=st.lists(st.sampled_from(VOCABULARY + FILLER), min_size=1, max_size=6),
    limit=st.integers(1, 5),
)
def test_a_question_finds_a_memory_whenever_one_holds_a_content_word(
    tmp_path_factory: pytest.TempPathFactory,
    memories: list[list[str]],
    question: list[str],
    limit: int,
) -> None:
    with Store(tmp_path_factory.mktemp("s") / "m.db", project="p") as store:
        store.packs.install(resolve_pack("ops"))
        for n, words in enumerate(memories):
            store.memories.write(" ".join(words) + f" item{n}", "RESEARCH")
        query = parse(" ".join(question), shipped_stopwords("en"))
        content = set(query.words)
        holders = [words for words in memories if content & set(words)]
        hits = store.memories.search(" ".join(question) + "?", limit=limit)
        if holders:
            assert any(content & set(tokens(hit.memory.content)) for hit in hits)


def test_search_reads_only_the_project_and_what_is_shared_with_it(store: Store) -> None:
    mine = store.memories.write("Grafana lives on grafana.ops.", "ENV_STATE")
    theirs = store.memories.write("Grafana lives elsewhere.", "ENV_STATE", project="other")
    shared = store.memories.write(
        "Grafana dashboards use UTC.", "ENV_STATE", project="other", scope="global", shareable=True
    )
    store.memories.write(
        "Grafana admin password rotates.", "ENV_STATE", project="other", scope="global"
    )
    assert set(ids(store.memories.search("grafana"))) == {mine.id, shared.id}
    assert set(ids(store.memories.search("grafana", project="other"))) >= {theirs.id, shared.id}
    assert mine.id not in ids(store.memories.search("grafana", project="other"))


def test_the_index_holds_live_memories_only_and_follows_every_change(store: Store) -> None:
    a = store.memories.write("Kafka brokers run on k1.", "ENV_STATE")
    b = store.memories.write("Kafka brokers run on k2.", "ENV_STATE")
    c = store.memories.quarantine("Kafka mystery.", "NOPE", reason="unknown category")

    def indexed() -> set[int]:
        if store.engine == "sqlite":  # FTS5's own per-row table: exactly the rows indexed
            return {row[0] for row in store.db.execute("SELECT id FROM memories_fts_docsize")}
        # PostgreSQL: a generated column; what the index answers for the memories' words
        return fulltext(store).readable(["kafka", "mystery"], store.project)

    assert indexed() == {a.id, b.id}
    store.memories.archive(a.id)
    store.memories.merge(
        [b.id], into=store.memories.write("Kafka brokers: k2, k3.", "ENV_STATE").id
    )
    assert a.id not in indexed() and b.id not in indexed() and c.id not in indexed()
    released = store.memories.update(c.id, category="ENV_STATE")
    assert released.id in indexed()
    store.memories.update(released.id, content="Zookeeper is gone.")
    assert ids(store.memories.search("zookeeper")) == [released.id]
    assert released.id not in ids(store.memories.search("mystery"))
    store.memories.update(released.id, scope="global", shareable=True)
    assert ids(store.memories.search("zookeeper", project="far")) == [released.id]
    assert index_check(store.db) == {"missing": [], "extra": []}
    archived = ids(store.memories.search("kafka k1", include_archived=True))
    assert a.id in archived


@pytest.mark.sqlite_only("sqlite-utils and Datasette read SQLite files")
def test_sqlite_utils_and_datasette_detect_the_index(store: Store) -> None:
    assert store.db["memories"].detect_fts() == "memories_fts"
    # Datasette's detect_fts query (datasette/utils/__init__.py), verbatim in spirit.
    sql = """SELECT name FROM sqlite_master WHERE rootpage = 0 AND (
                sql LIKE '%VIRTUAL TABLE%USING FTS%content="memories"%'
                OR sql LIKE '%VIRTUAL TABLE%USING FTS%content=[memories]%'
                OR (tbl_name = 'memories' AND sql LIKE '%VIRTUAL TABLE%USING FTS%'))"""
    assert [row[0] for row in store.db.execute(sql)] == ["memories_fts"]


def test_common_words_are_left_out_and_an_all_common_query_takes_recent_rows(store: Store) -> None:
    set_setting(store, "common_min", 2)
    set_setting(store, "common_share", 0.0)
    set_setting(store, "candidates", 3)
    old = [store.memories.write(f"note {i} about the build", "RESEARCH").id for i in range(4)]
    rare = store.memories.write("note about ferries", "RESEARCH").id
    assert ids(store.memories.search("note ferries")) == [rare]
    # Every word common: the 3 most recent memories holding any, those holding
    # both words first; the older ones are not looked at.
    hits = store.memories.search("note build", limit=3)
    assert set(ids(hits)[:2]) == {old[2], old[3]} and ids(hits)[2] == rare
    assert "common words" in hits[0].why[0]


def test_ranking_uses_importance_pinning_recency_and_breaks_ties_by_id(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db", project="p", clock=lambda: FIXED) as store:
        store.packs.install(resolve_pack("ops"))
        low = store.memories.write("Ferry leaves at nine.", "RESEARCH", importance=20)
        high = store.memories.write("Ferry leaves at ten.", "RESEARCH", importance=90)
        same = store.memories.write("Ferry leaves at one.", "RESEARCH", importance=20)
        assert ids(store.memories.search("ferry")) == [high.id, low.id, same.id]
        store.memories.update(same.id, pinned=True)
        assert ids(store.memories.search("ferry"))[:2] == [high.id, same.id]
        older = store.memories.write(
            "Ferry leaves at two.", "RESEARCH", importance=20, occurred_at="2020-01-01"
        )
        assert ids(store.memories.search("ferry"))[-1] == older.id


def test_neighbours_in_one_episode_are_found_through_the_question(store: Store) -> None:
    at = "2026-05-02T10:00:00Z"
    store.memories.write_many(
        [
            {
                "content": "Maya: what did the vet say about Kiwi?",
                "category": "RESEARCH",
                "occurred_at": at,
            },
            {
                "content": "Tom: he's plucking a bit, stress from the move",
                "category": "RESEARCH",
                "occurred_at": at,
            },
            {
                "content": "Maya: unrelated, lunch?",
                "category": "RESEARCH",
                "occurred_at": "2026-05-09",
            },
        ]
    )
    hits = store.memories.search("What did the vet notice about Kiwi?")
    assert [h.memory.content[:3] for h in hits][:2] == ["May", "Tom"]
    assert "next to a match" in hits[1].why


def test_a_header_ranks_with_its_matching_details(store: Store) -> None:
    header = store.memories.write("Release checklist", "OPS_RULES", importance=80)
    steps = [
        store.memories.write(f"Step {i}: tag vX and push the tag", "OPS_RULES").id for i in range(2)
    ]
    store.composites.create("sequence", header.id, steps)
    hits = store.memories.search("push the tag")
    assert header.id in ids(hits) and "heads a match" in hits[ids(hits).index(header.id)].why


def test_occurred_at_is_kept_in_utc_and_a_dated_query_prefers_its_span(tmp_path: Path) -> None:
    with Store(tmp_path / "t.db", project="p", clock=lambda: FIXED) as store:
        store.packs.install(resolve_pack("ops"))
        may = store.memories.write(
            "Ferry strike in town.", "RESEARCH", occurred_at="2026-05-03T09:00:00+02:00"
        )
        june = store.memories.write(
            "Ferry strike again.", "RESEARCH", occurred_at=datetime(2026, 6, 14)
        )
        (undated,) = store.memories.write_many(
            [{"content": "Ferry strike rumour.", "category": "RESEARCH"}]
        )
        assert store.memories.get(may.id).occurred_at == "2026-05-03T07:00:00.000000+00:00"
        assert store.memories.get(june.id).occurred_at == "2026-06-14T00:00:00.000000+00:00"
        assert store.memories.get(undated.id).occurred_at is None
        assert ids(store.memories.search("ferry strike in May"))[0] == may.id
        assert ids(store.memories.search("ferry strike yesterday"))[0] == june.id
        assert ids(store.memories.search("what happened last month?"))[0] == may.id
        with pytest.raises(InvalidMemory, match="occurred_at"):
            store.memories.write("x", "RESEARCH", occurred_at="last tuesday")
        with pytest.raises(InvalidMemory, match="item 0"):
            store.memories.write_many(
                [{"content": "x", "category": "RESEARCH", "occurred_at": "soon"}]
            )


def test_time_expressions_are_read_against_the_clock() -> None:
    from plugin_sdk.store.search.when import time_range

    def span(text: str) -> tuple[str | None, str | None]:
        found = time_range(text, FIXED)
        assert found is not None, text
        return (found.start or "")[:10] or None, (found.end or "")[:10] or None

    assert span("yesterday") == ("2026-06-14", "2026-06-15")
    assert span("last week") == ("2026-06-08", "2026-06-15")
    assert span("in May") == ("2026-05-01", "2026-06-01")
    assert span("in August") == ("2025-08-01", "2025-09-01")
    assert span("March 2024") == ("2024-03-01", "2024-04-01")
    assert span("before 2026-02-03") == (None, "2026-02-03")
    assert span("after 2026-02-03") == ("2026-02-04", None)
    assert span("2 weeks ago") == ("2026-06-01", "2026-06-08")
    assert time_range("may I ask about kafka", FIXED) is None


def test_search_settings_are_kept_in_the_store(store: Store) -> None:
    assert search_settings(store) == DEFAULTS
    set_setting(store, "coverage", 2.5)
    assert search_settings(store)["coverage"] == 2.5
    set_setting(store, "coverage", None)
    assert search_settings(store)["coverage"] == DEFAULTS["coverage"]
    with pytest.raises(InvalidMemory, match="unknown search setting"):
        set_setting(store, "nope", 1)
    with pytest.raises(InvalidMemory, match="cannot be negative"):
        set_setting(store, "phrase", -1)


def test_search_candidates_are_fused_by_score_share_and_search_rank_reorders(
    tmp_path: Path,
) -> None:
    offered: list[int] = []

    class Vectors:
        @hookimpl
        def search_candidates(self, store, query, project, limit):  # type: ignore[no-untyped-def]
            assert (project, limit >= 20) == ("p", True)
            return [*offered, 10_000] if query == "tuesday deploys" else None

    class Reverse:
        @hookimpl
        def search_rank(self, store, query, hits):  # type: ignore[no-untyped-def]
            return list(reversed(hits)) if query == "reverse me" else None

    plugins = make_plugin_manager(load_entry_points=False)
    plugins.register(Vectors())
    plugins.register(Reverse())
    with Store(tmp_path / "h.db", project="p", plugins=plugins) as store:
        store.packs.install(resolve_pack("ops"))
        lexical = store.memories.write("Deploys happen on Tuesdays.", "OPS_RULES").id
        semantic = store.memories.write("Releases ship once a week.", "OPS_RULES").id
        offered.append(semantic)
        hits = store.memories.search("tuesday deploys")
        # The lexical hit holds the best score (1 as its share); the offered one, first
        # in the plugin's list, gains plugin_weight (0.3). The unknown id 10000 is dropped.
        assert ids(hits) == [lexical, semantic]
        assert hits[0].score == pytest.approx(1.0)
        assert hits[1].score == pytest.approx(0.3)
        assert "offered by a search_candidates plugin" in hits[1].why
        store.memories.write("reverse me one", "OPS_RULES")
        store.memories.write("reverse me one two", "OPS_RULES")
        forward = ids(store.memories.search("reverse"))
        assert len(forward) == 2
        assert ids(store.memories.search("reverse me")) == list(reversed(forward))


@given(
    st.dictionaries(st.integers(0, 30), st.floats(0, 100), max_size=20),
    st.lists(st.lists(st.integers(0, 40), max_size=30), max_size=2),
    st.floats(0, 1),
)
def test_fusion_lifts_by_the_weight_of_what_the_share_leaves_open(scores, lists, weight) -> None:  # type: ignore[no-untyped-def]
    fused = combine(scores, lists, weight, 60)
    top = max(scores.values(), default=0.0) or 1.0
    share = {m: max(scores.get(m, 0.0), 0.0) / top for m in fused}
    ceiling = {m: share[m] + weight * len(lists) * (1 - share[m]) for m in fused}
    for memory_id, value in fused.items():
        assert share[memory_id] - 1e-9 <= value <= min(1.0, ceiling[memory_id]) + 1e-9
    for a in fused:  # a lexical lead larger than what the lists can add to the other is kept
        for b in fused:
            if share[a] > ceiling[b] + 1e-9:
                assert fused[a] > fused[b]
    if weight < 1 and scores and max(scores.values()) > 0:  # the lexical leader stays first
        leader = max(scores, key=lambda m: scores[m])
        assert all(fused[leader] >= fused[m] for m in fused)


def test_search_limit_and_empty_queries_are_refused(store: Store) -> None:
    with pytest.raises(InvalidMemory, match="empty"):
        store.memories.search("   ")
    with pytest.raises(InvalidMemory, match="limit"):
        store.memories.search("kafka", limit=0)


def test_doctor_finds_and_repairs_an_index_holding_what_cannot_be_found(tmp_path: Path) -> None:
    from plugin_sdk.store.doctor import doctor

    path = tmp_path / "d.db"
    with Store(path, project="p") as store:
        store.packs.install(resolve_pack("ops"))
        kept = store.memories.write("Ferry leaves at nine.", "RESEARCH")
        gone = store.memories.write("Ferry leaves at ten.", "RESEARCH")
        store.memories.archive(gone.id)
        with store.atomic():  # an archived row slips back into the index
            store.db.execute(
                "INSERT INTO memories_fts (rowid, content, fts_scope) "
                "SELECT id, content, fts_scope FROM memories WHERE id = ?",
                [gone.id],
            )
        assert index_check(store.db) == {"missing": [], "extra": [gone.id]}
    found = [f.detail for f in doctor(path).findings if f.check == "fts"]
    assert found == [
        "the full-text index does not match the memories "
        "(0 live memories missing, 1 rows that are not live memories)"
    ]
    assert doctor(path, repair=True).findings[0].repaired
    assert doctor(path).findings == []
    with Store(path, project="p") as store:
        assert ids(store.memories.search("ferry")) == [kept.id]
