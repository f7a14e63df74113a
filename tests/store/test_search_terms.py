"""A word's part of the lexical score: bm25 with BM25+'s lower bound, names weighted.

``ranking.term_score`` is computed in Python from each engine's bm25
(``engine._lexical``), so SQLite and PostgreSQL rank alike; the store tests
run on both (``MEMSDK_TEST_POSTGRES``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plugin_sdk import Pack, Store
from plugin_sdk.store.postgres.search import bm25
from plugin_sdk.store.search.engine import find
from plugin_sdk.store.search.ranking import bm25_idf, set_setting, term_score
from plugin_sdk.store.tables.memories.search import Fts5Index

scores = st.floats(min_value=0.0, max_value=50.0, allow_nan=False)
deltas = st.floats(min_value=0.0, max_value=3.0, allow_nan=False)
weights = st.floats(min_value=0.0, max_value=5.0, allow_nan=False)
corpus = st.integers(min_value=1, max_value=10**6).flatmap(
    lambda rows: st.tuples(st.just(rows), st.integers(min_value=1, max_value=rows))
)


@given(scores, st.floats(min_value=1e-6, max_value=20.0), st.just(0.0))
def test_no_bound_and_no_weight_is_the_engines_bm25(score: float, idf: float, delta: float) -> None:
    assert term_score(score, idf, delta, 1.0) == score


@given(scores, scores, st.floats(min_value=1e-6, max_value=20.0), deltas, weights)
def test_the_order_within_a_word_is_bm25s_and_a_match_counts_at_least_delta_idf(
    a: float, b: float, idf: float, delta: float, weight: float
) -> None:
    low, high = sorted((a, b))
    assert term_score(low, idf, delta, weight) <= term_score(high, idf, delta, weight)
    assert term_score(low, idf, delta, weight) >= delta * idf


@given(corpus, st.integers(min_value=1, max_value=200), st.integers(min_value=1, max_value=10**4))
def test_the_bound_holds_however_long_the_memory(
    counts: tuple[int, int], length: int, longer: int
) -> None:
    """bm25 of one match falls towards 0 with the memory's length; BM25+ stays over delta × idf."""
    rows, held = counts
    idf = bm25_idf(rows, held)
    short, long = bm25(1, length, rows, held, 10.0), bm25(1, length + longer, rows, held, 10.0)
    assert long < short
    assert term_score(long, idf, 0.5) >= 0.5 * idf


@given(corpus, st.integers(min_value=1, max_value=500))
def test_bm25_idf_is_the_idf_inside_the_engines_bm25(counts: tuple[int, int], length: int) -> None:
    """At the average length one occurrence scores exactly bm25's idf (k1 cancels)."""
    rows, held = counts
    assert bm25(1, length, rows, held, float(length)) == pytest.approx(bm25_idf(rows, held))


TEXTS = [
    "kestrel nests in the quarry",
    "kestrel kestrel hovering over the quarry road today and then back to the nest",
    "a kestrel",
    "quarry gates close at six",
    "the heron fishes at dawn",
]


def _terms(store: Store, query: str) -> dict[int, dict[str, float]]:
    return {hit.memory_id: hit.terms for hit in find(store, query, project=store.project, limit=20)}


def test_every_match_of_a_word_gains_delta_times_its_idf(store: Store) -> None:
    ids = [store.memories.write(text, "OPS_RULES").id for text in TEXTS]
    set_setting(store, "bm25_delta", 0.0)
    plain = _terms(store, "kestrel")
    set_setting(store, "bm25_delta", 0.5)
    bounded = _terms(store, "kestrel")
    holding = [ids[0], ids[1], ids[2]]
    assert sorted(i for i in plain if plain[i]) == sorted(holding)
    gain = 0.5 * bm25_idf(len(TEXTS), 3)
    for memory_id in holding:
        assert bounded[memory_id]["kestrel"] == pytest.approx(plain[memory_id]["kestrel"] + gain)
    # the long memory's share grows most: the bound narrows bm25's length penalty
    ratio = {i: bounded[i]["kestrel"] / plain[i]["kestrel"] for i in holding}
    assert ratio[ids[1]] > ratio[ids[0]] > ratio[ids[2]]


def test_a_name_the_query_writes_counts_name_weight_times_its_bm25(store: Store) -> None:
    ids = [store.memories.write(text, "OPS_RULES").id for text in TEXTS]
    set_setting(store, "bm25_delta", 0.0)
    set_setting(store, "name_weight", 1.0)
    lower = _terms(store, "what about the kestrel")  # no capital: not a name
    named = _terms(store, "what about the Kestrel")
    assert named == lower
    set_setting(store, "name_weight", 2.0)
    weighted = _terms(store, "what about the Kestrel")
    unnamed = _terms(store, "what about the kestrel")
    for memory_id in (ids[0], ids[1], ids[2]):
        assert weighted[memory_id]["kestrel"] == pytest.approx(2 * lower[memory_id]["kestrel"])
        assert unnamed[memory_id]["kestrel"] == pytest.approx(lower[memory_id]["kestrel"])


@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=0, max_value=2 * 10**6))
def test_bm25_idf_is_defined_for_any_counts(total: int, held: int) -> None:
    """Counted by separate reads, a word's rows can exceed the total: the idf stays bm25's floor."""
    idf = bm25_idf(total, held)
    assert idf >= 1e-6
    assert idf == bm25_idf(total, min(held, total))


def test_a_write_between_the_count_and_the_rows_still_finds(
    tmp_path: Path, ops_pack: Pack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process writes after the row count is read and before a word's rows are:
    the word then has more rows than the count, and search answers (this raised
    "math domain error" under bench/stress.py). SQLite only: PostgreSQL counts
    both in one statement (``postgres/search.py``)."""
    path = tmp_path / "race.db"
    store = Store(path, project="p")
    store.packs.install(ops_pack)
    store.memories.write("kestrel over the quarry", "OPS_RULES")
    other = Store(path, project="p")
    counted = Fts5Index.rows

    def rows_then_a_write(index: Fts5Index) -> int:
        total = counted(index)
        for n in range(3):
            other.memories.write(f"kestrel number {n} hovers", "OPS_RULES")
        return total

    monkeypatch.setattr(Fts5Index, "rows", rows_then_a_write)
    found = find(store, "kestrel", project="p", limit=10)
    assert len(found) == 4
