"""Reciprocal rank fusion: several rankings of memory ids made into one.

A memory scores ``sum(1 / (K + rank))`` over the rankings it appears in
(rank counted from 1, ``K = 60``); higher is better, ties go to the smaller
id. Ranks, not scores, are fused, so a bm25 value and a cosine similarity
never have to be put on one scale, and a memory that both rankings place
high beats one that only one of them likes.

:func:`hybrid_search` is full-text search fused with every
``search_candidates`` answer (the built-in ``vector_search`` plugin answers
with the nearest vectors). Without an embedder, or before anything is
embedded, the plugins offer nothing and it returns the full-text results.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from plugin_sdk.errors import InvalidMemory
from plugin_sdk.store.models import SearchHit

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

K = 60


def fuse(rankings: Iterable[Sequence[int]], k: int = K) -> list[tuple[int, float]]:
    """``(memory_id, score)`` best first; an id repeated within one ranking counts once."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, memory_id in enumerate(dict.fromkeys(ranking), start=1):
            scores[memory_id] = scores.get(memory_id, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def candidates(store: Store, query: str, project: str, limit: int) -> list[list[int]]:
    """The non-empty id lists the ``search_candidates`` implementations offer."""
    answers = store.plugins.hook.search_candidates(
        store=store, query=query, project=project, limit=limit
    )
    return [list(answer)[:limit] for answer in answers if answer]


def hybrid_search(
    store: Store, query: str, *, project: str | None = None, limit: int = 20
) -> list[SearchHit]:
    """Full-text search fused with the plugins' candidates; ``rank`` is minus the fused score.

    Only active memories readable from ``project`` come back (the plugins'
    lists are filtered the same way the full-text search is).
    """
    project = project or store.project
    try:
        lexical = [
            hit.memory.id for hit in store.memories.search(query, project=project, limit=limit)
        ]
    except InvalidMemory:
        lexical = []
    fused = fuse([lexical, *candidates(store, query, project, limit)])
    hits = []
    for memory_id, score in fused:
        memory = store.memories.get(memory_id)
        readable = memory.project == project or (memory.scope == "global" and memory.shareable)
        if memory.status == "active" and readable:
            hits.append(SearchHit(memory=memory, rank=-score))
        if len(hits) == limit:
            break
    return hits
