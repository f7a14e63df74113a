"""Issue 28 item 5: curate's candidates come from a MinHash/LSH index, not the ranked search.

The recall property: every pair the exact definition (``curate.similarity``
>= ``SIMILARITY``) calls near-duplicate shares two bands and passes the word-count
filter, so it is among the candidates (miss probability < 1.2e-6 per pair at
0.8, see ``plugin_sdk/store/search/neardup.py``).
"""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from plugin_sdk_plugins.curate import SIMILARITY, near_duplicates, similarity, words

from plugin_sdk import Dreamer, Store, validate_pack
from plugin_sdk.store.search import neardup
from plugin_sdk.testing import fresh_plugin_manager, pack_document


def dupes(store: Store, memory) -> list:
    return near_duplicates(store, [memory], "ops").get(memory.id, [])


PACK = pack_document("ops", "1.0.0", {"OPS_RULES": "intent", "CONFIG_VALUES": "content"})
VOCAB = [f"w{i}" for i in range(60)]


def open_store(path) -> Store:
    store = Store(path, project="ops", plugins=fresh_plugin_manager())
    store.packs.install(validate_pack(PACK, source="ops"))
    return store


@st.composite
def near_pairs(draw):
    left = draw(st.sets(st.sampled_from(VOCAB), min_size=1, max_size=40))
    dropped = draw(st.sets(st.sampled_from(sorted(left)), max_size=max(len(left) // 5, 0)))
    added = draw(st.sets(st.sampled_from(VOCAB), max_size=max(len(left) // 4, 0)))
    right = (left - dropped) | added
    return " ".join(sorted(left)), " ".join(sorted(right))


@settings(max_examples=300, deadline=None)
@given(near_pairs())
def test_every_exact_near_duplicate_pair_is_an_lsh_candidate(pair):
    a, b = pair
    assume(similarity(a, b) >= SIMILARITY)
    wa, wb = words(a), words(b)
    shared = set(neardup.buckets("p", "C", wa)) & set(neardup.buckets("p", "C", wb))
    assert len(shared) >= neardup.SHARED, (a, b)
    low, high = neardup.size_range(len(wa), SIMILARITY)
    assert low <= len(wb) <= high


def test_the_size_filter_is_exact():
    for n in range(1, 60):
        low, high = neardup.size_range(n, SIMILARITY)
        for m in range(1, 90):
            reachable = min(n, m) / max(n, m) >= SIMILARITY
            assert (low <= m <= high) == reachable, (n, m)


def test_buckets_never_cross_a_category_or_a_project():
    ws = words("the replica in eu-west runs postgres fourteen")
    assert not set(neardup.buckets("p", "A", ws)) & set(neardup.buckets("p", "B", ws))
    assert not set(neardup.buckets("p", "A", ws)) & set(neardup.buckets("q", "A", ws))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.sets(st.sampled_from(VOCAB[:15]), min_size=3, max_size=12), min_size=2, max_size=25)
)
def test_candidates_find_what_an_exhaustive_comparison_finds(tmp_path_factory, sets):
    store = open_store(tmp_path_factory.mktemp("nd") / "m.db")
    memories = []
    for ws in sets:
        result = store.memories.write(" ".join(sorted(ws)), category="CONFIG_VALUES")
        memories.append(store.memories.get(result.id))
    neardup.refresh(store, words)
    memories = list({m.id: m for m in memories}.values())
    batch = near_duplicates(store, memories, "ops")  # the whole batch in one read
    for memory in memories:
        exhaustive = {
            o.id
            for o in memories
            if o.id != memory.id and similarity(memory.content, o.content) >= SIMILARITY
        }
        assert {m.id for m in dupes(store, memory)} == exhaustive
        assert {m.id for m in batch.get(memory.id, [])} == exhaustive


def test_the_index_follows_updates_and_forget(tmp_path):
    store = open_store(tmp_path / "m.db")
    a = store.memories.write(
        "alpha bravo charlie delta echo foxtrot golf", category="CONFIG_VALUES"
    )
    b = store.memories.write("kilo lima mike november oscar papa quebec", category="CONFIG_VALUES")
    neardup.refresh(store, words)
    assert store.tables.neardup.queued() == 0
    assert dupes(store, store.memories.get(a.id)) == []
    # an update after indexing queues the row again: its new bands are found
    store.memories.update(b.id, content="alpha bravo charlie delta echo foxtrot golf hotel")
    assert store.tables.neardup.queued() == 1
    neardup.refresh(store, words)
    assert [m.id for m in dupes(store, store.memories.get(a.id))] == [b.id]
    store.memories.forget(b.id, reason="test")
    rows = store.db.execute("SELECT count(*) FROM neardup_bands WHERE memory_id = ?", [b.id])
    assert rows.fetchone()[0] == 0
    neardup.refresh(store, words)
    assert dupes(store, store.memories.get(a.id)) == []


def test_curate_merges_rows_written_after_its_first_batch(tmp_path):
    store = open_store(tmp_path / "m.db")
    first = store.memories.write(
        "the cache in eu-west keeps entries for ten minutes", category="CONFIG_VALUES"
    )
    Dreamer(store).run("curate")
    later = store.memories.write(
        "the cache in eu-west keeps entries for ten minutes now", category="CONFIG_VALUES"
    )
    Dreamer(store).run("curate")
    merged = {m.id: m.status for m in store.memories.iter(status=None)}
    assert merged[first.id] == "superseded" or merged[later.id] == "superseded"


def test_a_pair_is_a_candidate_only_with_shared_equal_bands(tmp_path):
    store = open_store(tmp_path / "m.db")
    a = store.memories.write("alpha bravo charlie delta echo", category="CONFIG_VALUES").id
    b = store.memories.write("kilo lima mike november oscar", category="CONFIG_VALUES").id
    neardup.refresh(store, words)
    assert store.tables.neardup.pairs([a], 4, 5, neardup.SHARED) == []
    # one common bucket: a pair under the classic OR of bands, not under SHARED = 2
    with store.atomic():
        store.tables.neardup.replace([], [(7, a, 5), (7, b, 5)])
    assert store.tables.neardup.pairs([a], 4, 5, 1) == [(a, b)]
    assert store.tables.neardup.pairs([a], 4, 5, 2) == []
    with store.atomic():
        store.tables.neardup.replace([], [(8, a, 5), (8, b, 5)])
    assert store.tables.neardup.pairs([a], 4, 5, 2) == [(a, b)]
