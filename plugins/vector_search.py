"""Built-in plugin ``vector_search``: hybrid retrieval with the host's embedding model.

- ``search_candidates``: the nearest memories to the query's vector (only
  vectors of the model that embedded the query), fused with full-text search
  by reciprocal rank fusion (``plugin_sdk/vectors/fusion.py``). Offers
  nothing when the host has no embedder or nothing is embedded yet, so the
  store stays lexical and the embedder is not even called.
- Dreamer task ``embed``: embeds the active memories that have no vector of
  the host's current model, a batch at a time (resumable, with progress);
  when the model changes it re-embeds everything, then drops the old
  model's vectors.
- ``memory_written``: embeds the memory at once when the store asks for it
  (``store.vectors.embed_on_write = True``); off by default, so writes stay
  cheap and the embedder is called in batches.
- ``memories_merged``, ``memory_archived``: bring the sqlite-vec mirror in
  step (the vectors themselves went with the change: see
  ``plugin_sdk/vectors/index.py``).
"""

from __future__ import annotations

from typing import Any

from plugin_sdk import hookimpl
from plugin_sdk.plugin.records import DreamerTask
from plugin_sdk.vectors.embed import embed

PROBE = "memsdk"  # embedded at the start of a pass to learn the host's current model


@hookimpl
def search_candidates(store: Any, query: str, project: str, limit: int) -> list[int] | None:
    if not query.strip() or not _has_vectors(store):
        return None
    got = embed(store, [query], "query")
    if got is None or got.vectors[0] is None:
        return None
    nearest = store.vectors.nearest(got.model, got.vectors[0], project, limit)
    return [memory_id for memory_id, _ in nearest] or None


@hookimpl
def memory_written(store: Any, memory_id: int, created: bool) -> None:
    vectors = store.vectors
    if not vectors.embed_on_write:
        return
    row = store.db.execute(
        """SELECT m.content, EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id
               AND v.model = (SELECT model FROM vector_state WHERE id = 1))
           FROM memories m WHERE m.id = ? AND m.status = 'active'""",
        [memory_id],
    ).fetchone()
    if row is None or row[1]:
        return  # not active, or a repeat of a memory already embedded
    got = embed(store, [row[0]])
    if got is not None:
        vectors.put(got, [(memory_id, row[0])])


@hookimpl
def memories_merged(store: Any, source_ids: list[int], target_id: int) -> None:
    store.vectors.sync()


@hookimpl
def memory_archived(store: Any, memory_id: int) -> None:
    store.vectors.sync()


def _has_vectors(store: Any) -> bool:
    return store.db.execute("SELECT 1 FROM memory_vectors LIMIT 1").fetchone() is not None


def run(context: Any) -> int:
    """One batch of the ``embed`` task; see the module docstring."""
    store, vectors = context.store, context.store.vectors
    cursor = context.cursor
    if cursor is None:
        probe = embed(store, [PROBE])
        if probe is None:
            return 0  # no embedder: nothing to do
        cursor = {"model": probe.model, "dim": probe.dim, "after": 0}
    model, dim = cursor["model"], cursor["dim"]
    items = vectors.missing(
        model, dim, context.project, after=cursor["after"], limit=context.batch_size
    )
    if not items:
        with context.batch():
            vectors.prune(model, dim, context.project)
            context.save(None, 0)
        return 0
    got = embed(store, [text for _, text in items])
    if got is None:
        return 0  # the embedder went away; the next pass starts over
    if (got.model, got.dim) != (model, dim):
        # The host's model changed during the pass: walk again from the start.
        following = {"model": got.model, "dim": got.dim, "after": 0}
    else:
        following = {**cursor, "after": items[-1][0]}
    with context.batch():
        written = vectors.put(got, items)
        context.save(following, written)
    return max(written, 1)  # a batch whose memories all changed meanwhile still moves on


def total(store: Any) -> int:
    return int(store.vectors.count_missing(store.project))


@hookimpl
def register_dreamer_tasks(register: Any) -> None:
    register(
        DreamerTask(
            name="embed",
            description="Embed the memories that have no vector of the host's embedding model.",
            run=run,
            schedule="hourly",
            batch_size=64,
            total=total,
        )
    )
