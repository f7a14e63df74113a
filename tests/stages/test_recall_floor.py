"""Recall's relevance floor (issue 24 item 5) and sequence context without timestamps (issue 28
item 1): ``docs/search.md``, "Recall's relevance floor" and "Neighbours"."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin_sdk import Store, recall
from plugin_sdk.store.search.episodes import together
from plugin_sdk.store.search.query import names, tokens
from plugin_sdk.store.search.ranking import set_setting

FACTS = [
    "Postgres failover: run patronictl switchover on pg-01, then repoint pgbouncer.",
    "The pager rotation changes every Monday at 09:00; escalate after 15 minutes.",
    "Staging deploys go through the deploy-staging workflow; prod needs two approvals.",
    "Redis sessions expire after 30 minutes; the TTL lives in auth-service settings.",
]
OFF_TOPIC = [
    "Add a dark-mode toggle to the settings page",
    "Write a haiku about autumn leaves",
    "How do magnets work?",
    "Thanks, that's all for now",
    "Center a div horizontally with flexbox",
]


def _four(store: Store) -> list[int]:
    return [store.memories.write(text, "OPS_RULES").id for text in FACTS]


def test_a_prompt_the_store_knows_nothing_about_gets_no_block(store: Store) -> None:
    _four(store)
    for prompt in OFF_TOPIC:
        result = recall(store, prompt)
        assert (result.text, result.shown) == ("", []), prompt


def test_a_four_memory_store_does_not_return_all_of_them_for_every_prompt(store: Store) -> None:
    ids = _four(store)
    asked = {
        "how do we fail over postgres?": ids[0],
        "when does the pager rotation change?": ids[1],
        "who approves a prod deploy?": ids[2],
        "how long do redis sessions last?": ids[3],
    }
    for prompt, wanted in asked.items():
        shown = recall(store, prompt).shown
        assert wanted in shown, prompt
        assert len(shown) < len(ids), (prompt, shown)


def test_the_floor_is_a_setting_and_zero_restores_the_unfloored_block(store: Store) -> None:
    _four(store)
    prompt = "Add a dark-mode toggle to the settings page"  # "settings" is in the store
    assert store.memories.search(prompt)  # search still lists what matched
    assert recall(store, prompt).shown == []
    set_setting(store, "recall_floor", 0)
    assert recall(store, prompt).shown


def test_evidence_is_the_idf_weighted_share_of_the_query_held(store: Store) -> None:
    ids = _four(store)
    hits = {hit.memory.id: hit for hit in store.memories.search("postgres pgbouncer zebra")}
    both = hits[ids[0]].evidence
    assert 0.3 < both < 1.0  # two of three rare words; the unknown word weighs the most
    only = store.memories.search("postgres pgbouncer")[0]
    assert only.memory.id == ids[0] and only.evidence == 1.0


def test_weak_words_count_less_than_topic_words(store: Store) -> None:
    ids = _four(store)
    [hit] = [h for h in store.memories.search("pager magnets") if h.memory.id == ids[1]]
    [weak] = [h for h in store.memories.search("pager work") if h.memory.id == ids[1]]
    assert weak.evidence > hit.evidence  # "work" (weak) counts a quarter: less is missing


def _chat(store: Store) -> list[int]:
    """A conversation where a speaker's name is in half the turns (a low idf)."""
    texts = [
        f"{who}: {text}"
        for who, text in [
            ("Tom", "Beagles will eat anything, honestly"),
            ("Maya", "ha, what did he get into this time?"),
            ("Tom", "a whole loaf of bread off the counter"),
            ("Maya", "did you call the clinic?"),
            ("Tom", "yes, they said to watch him tonight"),
            ("Maya", "keep me posted"),
        ]
    ]
    return [
        r.id
        for r in store.memories.write_many([{"content": t, "category": "OPS_RULES"} for t in texts])
    ]


def test_a_name_the_store_holds_counts_as_topic_evidence(store: Store) -> None:
    ids = _chat(store)
    asked = "What breed is Tom's dog?"  # breed, dog: in no memory; Tom: in half of them
    assert ids[0] in recall(store, asked).shown
    assert recall(store, "what breed is tom's dog?").shown == []  # no name written: no block
    set_setting(store, "recall_name", 0)  # a name counts its own idf: below the floor
    assert recall(store, asked).shown == []
    set_setting(store, "recall_name", None)
    assert recall(store, "Add type hints to this Python module").shown == []  # an unknown name


def test_names_are_capitalised_words_inside_a_sentence() -> None:
    assert names("What breed is Tom's dog? Ask Maya.") == {"tom", "maya"}
    assert names("Tom said so") == set()  # a sentence's first word is no name
    assert names("Write A Function That Checks Strings") == set()  # a title names nothing
    assert names("I met Anya in May") == {"anya", "may"}


@given(st.text(max_size=80))
def test_names_are_tokens_of_the_text(text: str) -> None:
    assert names(text) <= set(tokens(text))


def _turns(store: Store, dated: bool) -> list[int]:
    texts = [
        "Maya: what did the vet say about Biscuit?",
        "Tom: he's plucking a bit, so more toys and less stress",
        "Maya: poor bird",
    ]
    items = [
        {"content": t, "category": "OPS_RULES", **({"occurred_at": "2026-05-03"} if dated else {})}
        for t in texts
    ]
    return [r.id for r in store.memories.write_many(items)]


def test_an_undated_batch_has_neighbours_like_a_dated_one(store: Store) -> None:
    ids = _turns(store, dated=False)
    hits = {h.memory.id: h for h in store.memories.search("what did the vet notice?")}
    assert ids[1] in hits and "next to a match" in hits[ids[1]].why
    assert hits[ids[1]].evidence == hits[ids[0]].evidence  # lent by the turn it answers
    row = store.db.execute("SELECT batch FROM memories WHERE id = ?", [ids[1]]).fetchone()
    assert row[0] == ids[0]  # the batch's label: the first id it took


def test_single_undated_writes_have_no_neighbours(store: Store) -> None:
    first = store.memories.write("Maya: what did the vet say about Biscuit?", "OPS_RULES").id
    second = store.memories.write("Tom: he's plucking a bit", "OPS_RULES").id
    ids = [h.memory.id for h in store.memories.search("what did the vet notice?")]
    assert first in ids and second not in ids


def test_two_sessions_in_one_batch_stay_two_episodes(store: Store) -> None:
    items = [
        {
            "content": "Maya: the vet visit is on Friday",
            "category": "OPS_RULES",
            "occurred_at": "2026-05-01",
        },
        {
            "content": "Tom: I start the new job on Monday",
            "category": "OPS_RULES",
            "occurred_at": "2026-06-01",
        },
    ]
    first, second = (r.id for r in store.memories.write_many(items))
    ids = [h.memory.id for h in store.memories.search("vet visit")]
    assert first in ids and second not in ids


rows = st.tuples(
    st.sampled_from(["p", "q"]),
    st.one_of(st.none(), st.sampled_from(["2026-01-01", "2026-02-01"])),
    st.one_of(st.none(), st.sampled_from([1, 2])),
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows, rows)
def test_episode_rule_is_symmetric_and_never_crosses_projects_or_dates(a, b) -> None:  # type: ignore[no-untyped-def]
    assert together(a, b) == together(b, a)
    if together(a, b):
        assert a[0] == b[0]
        assert not (a[1] and b[1] and a[1] != b[1])
        assert (a[1] is not None and a[1] == b[1]) or (a[2] is not None and a[2] == b[2])


def test_m022_labels_rows_written_together_before_it(tmp_path, ops_pack) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "old.db"
    store = Store(path, project="p")
    store.packs.install(ops_pack)
    together_ids = [
        r.id
        for r in store.memories.write_many(
            [{"content": f"line {n} of one note", "category": "OPS_RULES"} for n in range(3)]
        )
    ]
    alone = store.memories.write("a fact on its own", "OPS_RULES").id
    # The rows as they were before m022 (no batch column), then the step run on
    # them as the migrations run it (later steps depend on it, so the file's own
    # records are left alone).
    from plugin_sdk.store.migrations import m022_write_batches

    store.db.executescript("DROP INDEX memories_batch; ALTER TABLE memories DROP COLUMN batch;")
    m022_write_batches(store.db)
    labels = dict(store.db.execute("SELECT id, batch FROM memories").fetchall())
    assert [labels[i] for i in together_ids] == [together_ids[0]] * 3
    assert labels[alone] is None
    store.close()
