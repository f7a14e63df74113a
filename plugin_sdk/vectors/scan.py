"""Nearest vectors without an extension: a streaming pass over float32 rows in Python.

Stored vectors have unit length, so the score is a plain dot product (the
cosine similarity). The rows stream from a cursor; ``heapq`` keeps the best
``k``. Pure Python costs about 12 ms per 1,000 vectors of 384 numbers on a
small machine (docs/benchmarks.md), so this serves stores of some ten
thousand memories; sqlite-vec (the mirror: ``store/tables/memories/vectors.py``) serves larger ones.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterable
from operator import mul

from plugin_sdk.vectors.embed import from_blob


def best(rows: Iterable[tuple[int, bytes]], query: array, k: int) -> list[tuple[int, float]]:
    """The ``k`` rows most similar to ``query``: ``(memory_id, score)``, best first, ties by id."""
    scored = ((memory_id, sum(map(mul, query, from_blob(blob)))) for memory_id, blob in rows)
    return heapq.nsmallest(k, scored, key=lambda item: (-item[1], item[0]))
