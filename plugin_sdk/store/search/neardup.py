"""Curate's candidates: MinHash with locality-sensitive hashing over word sets.

Curate's near-duplicates (``plugins/curate.py``) are pairs whose word sets (``curate.words``) have a Jaccard
similarity of at least 0.8. Checking every pair is quadratic, and a ranked
search per memory costs ~30 ms; instead each memory gets a MinHash signature
of ``BANDS * ROWS`` minimums (Broder 1997), cut into ``BANDS`` bands of
``ROWS`` values (Leskovec, Rajaraman, Ullman, *Mining of Massive Datasets*,
ch. 3.4). Two memories become candidates when at least ``SHARED`` (2) of
their bands are equal. For a pair of Jaccard similarity ``s`` a band is equal
with probability ``p = s**ROWS``, so the number of equal bands is binomial
(``BANDS``, ``p``) and the pair is missed when fewer than two are: with 32
bands of 4 rows, at s = 0.8 that is ``(1-p)**32 + 32 p (1-p)**31 < 1.2e-6``
(the recall bound; at s = 0.9, < 1e-13), while a pair at s = 0.5 becomes a
candidate with probability 0.60, one at s = 0.3 with 0.028 and one at s = 0.1
with 5e-6. One equal band (the classic OR of bands) would miss at 0.8 with
< 5e-8 but take pairs at 0.3 with 0.23: eight times as many false
candidates, each read and cut into words for the exact check, which made
curate's time grow faster than the store (docs/benchmarks.md, "Dreamer at
scale"). Candidates are then checked exactly (``curate.similarity``), so
the definition is unchanged and only a missed pair (probability < 1.2e-6
each) could differ from an exhaustive comparison.

A band's bucket hashes project and category too, so candidates never cross
either. Word counts filter further without loss: Jaccard >= t needs the
smaller set to hold at least t of the larger.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING

from plugin_sdk.store.models import Memory

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

BANDS = 32
ROWS = 4
_PERMUTATIONS = struct.Struct(f"<{BANDS * ROWS}I")
_BUCKET = struct.Struct(f"<{ROWS}I")
#: Queued memories banded per transaction. A first dream of 100,000 memories
#: holds the write lock about 2.5 s per batch at this size; 2,000 made it
#: 50 commits instead of 5 (about 9 s of commits against 1 s, measured).
REFRESH_BATCH = 20000
SHARED = 2  # equal bands that make a pair a candidate (the module docstring)


@lru_cache(maxsize=1 << 17)
def _hashes(word: str) -> tuple[int, ...]:
    """``BANDS * ROWS`` independent 32-bit hashes of one word (SHAKE-128's output cut up)."""
    return _PERMUTATIONS.unpack(hashlib.shake_128(word.encode()).digest(_PERMUTATIONS.size))


def signature(words: set[str]) -> list[int]:
    """The MinHash signature of a non-empty word set."""
    return [min(column) for column in zip(*map(_hashes, words), strict=True)]


def buckets(project: str, category: str, words: set[str]) -> list[int]:
    """The set's ``BANDS`` bucket keys (signed 63-bit), one per band."""
    return list(_buckets(project, category, tuple(sorted(words))))


@lru_cache(maxsize=1 << 15)  # refresh computes them, the query right after reuses them
def _buckets(project: str, category: str, words: tuple[str, ...]) -> tuple[int, ...]:
    sig = signature(set(words))
    scope = f"{project}\0{category}\0".encode()
    return tuple(
        int.from_bytes(
            hashlib.blake2b(
                scope
                + band.to_bytes(1, "little")
                + _BUCKET.pack(*sig[band * ROWS : (band + 1) * ROWS]),
                digest_size=8,
            ).digest(),
            "little",
            signed=True,
        )
        for band in range(BANDS)
    )


def size_range(size: int, similarity: float) -> tuple[int, int]:
    """Word counts a set of ``size`` words can reach ``similarity`` with (exact arithmetic)."""
    t = Fraction(str(similarity))
    return math.ceil(size * t), math.floor(size / t)


def refresh(store: Store, words: Callable[[str], set[str]]) -> int:
    """Compute the bands of every queued memory (written or changed since); how many."""
    done = 0
    while rows := store.tables.neardup.dirty(REFRESH_BATCH):
        bands: list[tuple[int, int, int]] = []
        for row in rows:
            ws = words(row["content"] or "") if row["status"] == "active" else set()
            if ws:
                bands += [
                    (b, row["id"], len(ws)) for b in buckets(row["project"], row["category"], ws)
                ]
        with store.atomic():
            store.tables.neardup.replace([row["id"] for row in rows], bands)
        done += len(rows)
    return done


def neighbours(
    store: Store,
    memories: Sequence[Memory],
    similarity: float,
    words: Callable[[str], set[str]],
) -> dict[int, list[Memory]]:
    """For each of ``memories``, the memories at ``similarity`` or more by ``words``
    (itself excluded), by id.

    Candidates are the memories sharing ``SHARED`` stored bands with it whose word count can
    reach ``similarity``: one read for the whole batch, from the bands
    :func:`refresh` stored (a memory not yet indexed has none, so run it first). Each
    candidate's text is read and cut into words once a batch, however many of the
    batch it is a candidate of, and only the pairs at ``similarity`` or more are read
    as whole memories."""
    if not memories:
        return {}
    ratio = Fraction(str(similarity))
    pairs = store.tables.neardup.pairs(
        [m.id for m in memories], ratio.numerator, ratio.denominator, SHARED
    )
    if not pairs:
        return {}
    other_words = {
        i: words(text) for i, text in store.tables.neardup.texts(sorted({o for _, o in pairs}))
    }
    own = {m.id: words(m.content) for m in memories}
    kept = [
        (i, o)
        for i, o in pairs
        if o in other_words and _jaccard(own[i], other_words[o]) >= similarity
    ]
    if not kept:
        return {}
    rows = {
        row["id"]: Memory.from_row(row)
        for row in store.tables.neardup.memories(sorted({o for _, o in kept}))
    }
    found: dict[int, list[Memory]] = {}
    for i, o in kept:
        if o in rows:
            found.setdefault(i, []).append(rows[o])
    return found


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0
