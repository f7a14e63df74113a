"""The full-text index's one read of a query (``matches``), the same on both engines.

SQLite answers it with FTS5 (``Fts5Index``), PostgreSQL with one statement
over the ``tsvector`` column (``TsIndex``): the same rare words, row counts,
best rows in the same order and bm25 scores as the formula gives them.
"""

from __future__ import annotations

import pytest

from plugin_sdk import Store
from plugin_sdk.store.postgres.search import bm25
from plugin_sdk.store.tables.memories.search import fulltext

TEXTS = [
    "kestrel nests in the quarry",  # 1: 5 tokens
    "kestrel kestrel hovering over the quarry road today",  # 2: tf 2, 8 tokens
    "a kestrel",  # 3: short
    "quarry gates close at six",
    "lanterns by the quarry",
    "the heron fishes at dawn",
]
LENGTHS = [5, 8, 2, 5, 4, 5]


def lengths(store: Store, tokens: list[int] = LENGTHS) -> list[int]:
    """bm25's row lengths: FTS5 counts every column's tokens, so the project token too."""
    return [n + (store.engine == "sqlite") for n in tokens]


def _write(store: Store) -> list[int]:
    return [store.memories.write(text, "OPS_RULES").id for text in TEXTS]


def test_scores_are_bm25_and_the_best_rows_come_best_first(store: Store) -> None:
    ids = _write(store)
    found = fulltext(store).matches(["kestrel", "heron"], [], "test-project", 200, (1000, 0.01))
    assert (found.total, found.cutoff) == (6, 1000)
    assert found.rare == ["kestrel", "heron"] and found.held == {"kestrel": 3, "heron": 1}
    size = lengths(store)
    average = sum(size) / len(size)
    expected = {ids[i]: bm25(tf, size[i], 6, 3, average) for i, tf in ((0, 1), (1, 2), (2, 1))}
    got = found.best["kestrel"]
    # bm25's order (the two-token row, then tf 2 in eight tokens, then five), not the ids'
    assert [memory_id for memory_id, _ in got] == [ids[2], ids[1], ids[0]]
    assert sorted(expected, key=lambda i: -expected[i]) == [ids[2], ids[1], ids[0]]
    for memory_id, score in got:
        assert score == pytest.approx(expected[memory_id], rel=1e-12)
    assert [memory_id for memory_id, _ in found.best["heron"]] == [ids[5]]


def test_a_word_past_the_cutoff_is_common_and_reads_no_rows(store: Store) -> None:
    _write(store)
    # common_min 2: "quarry" (4 rows) and "kestrel" (3) are common, "lanterns" (1) is not
    found = fulltext(store).matches(
        ["quarry", "lanterns", "kestrel"], [], "test-project", 200, (2, 0.0)
    )
    assert found.cutoff == 2
    assert found.rare == ["lanterns"]
    assert set(found.best) == {"lanterns"} and set(found.held) == {"lanterns"}
    none = fulltext(store).matches(["quarry", "kestrel"], [], "test-project", 200, (2, 0.0))
    assert none.rare == [] and none.best == {} and none.phrases == []


def test_best_rows_are_capped_and_only_the_readable_ones(store: Store) -> None:
    ids = _write(store)
    away = store.memories.write("kestrel seen far away", "OPS_RULES", project="elsewhere")
    index = fulltext(store)
    found = index.matches(["kestrel"], [], "test-project", 2, (1000, 0.01))
    assert found.held == {"kestrel": 4}  # counted over every live row, as bm25's idf is
    every = index.matches(["kestrel"], [], "test-project", 200, (1000, 0.01)).best["kestrel"]
    assert {memory_id for memory_id, _ in every} == {ids[0], ids[1], ids[2]}
    assert found.best["kestrel"] == every[:2]
    elsewhere = index.matches(["kestrel"], [], "elsewhere", 200, (1000, 0.01))
    assert [memory_id for memory_id, _ in elsewhere.best["kestrel"]] == [away.id]


def test_phrases_are_the_adjacent_pairs_of_rare_words(store: Store) -> None:
    ids = _write(store)
    pairs = [("kestrel", "quarry"), ("quarry", "road"), ("kestrel", "nests")]
    found = fulltext(store).matches(
        ["kestrel", "quarry", "road", "nests"], pairs, "test-project", 200, (1000, 0.01)
    )
    assert [[memory_id for memory_id, _ in rows] for rows in found.phrases] == [
        [],
        [ids[1]],
        [ids[0]],
    ]
    size = lengths(store)
    average = sum(size) / len(size)
    assert found.phrases[1][0][1] == pytest.approx(bm25(1, size[1], 6, 1, average), rel=1e-12)
    # a pair with a common word is not looked up
    common = fulltext(store).matches(
        ["kestrel", "quarry"], pairs[:1], "test-project", 200, (3, 0.0)
    )
    assert common.rare == ["kestrel"] and common.phrases == []


def test_a_phrase_counts_each_adjacent_pair_once(store: Store) -> None:
    texts = ["red fox red fox and red fox", "red red fox fox", "fox red", "quiet hills"]
    ids = [store.memories.write(text, "OPS_RULES").id for text in texts]
    found = fulltext(store).matches(
        ["red", "fox"], [("red", "fox")], "test-project", 200, (1000, 0.01)
    )
    size = lengths(store, [7, 4, 2, 2])
    average = sum(size) / len(size)
    scores = dict(found.phrases[0])  # "red fox" three times, once (red red fox fox), never
    assert scores.keys() == {ids[0], ids[1]}
    assert scores[ids[0]] == pytest.approx(bm25(3, size[0], 4, 2, average), rel=1e-12)
    assert scores[ids[1]] == pytest.approx(bm25(1, size[1], 4, 2, average), rel=1e-12)
