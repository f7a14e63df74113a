"""Built-in plugin ``vector_search``: hybrid retrieval with the host's embedding model.

- ``search_candidates``: the nearest memories to the query's vector (only
  vectors of the model that embedded the query), fused with full-text search
  by search's noisy OR (``docs/search.md``, Fusion with vectors). Offers
  nothing when the host has no embedder or nothing is embedded yet, so the
  store stays lexical and the embedder is not even called.
- Dreamer task ``embed``: embeds the active memories that have no vector of
  the host's current model, a batch at a time (resumable, with progress);
  when the model changes it re-embeds everything, then drops the old
  model's vectors.
- ``memories_written``: embeds a committed batch's new texts at once, 64 to
  an embedder call, when the store asks for it
  (``store.vectors.embed_on_write = True``); off by default, so writes stay
  cheap and the ``embed`` task calls the embedder in batches.
- ``memories_merged``, ``memory_archived``: bring the sqlite-vec mirror in
  step (the vectors themselves went with the change: see
  ``plugin_sdk/vectors/index.py``).

The vectors are the vectors area's (``store.vectors``); asking the host and
checking its answer is ``plugin_sdk.vectors.embed``, internal to that area,
hence the import.
"""

from __future__ import annotations

from collections.abc import Callable

from plugin_sdk.plugin import DreamerTask, Store, TaskContext, hookimpl
from plugin_sdk.vectors.embed import embed

PROBE = "memsdk"  # embedded at the start of a pass to learn the host's current model
EMBED_BATCH = 64  # texts per embedder call when a write embeds at once (the embed task's batch)


@hookimpl
def search_candidates(store: Store, query: str, project: str, limit: int) -> list[int] | None:
    if not query.strip() or not store.vectors.has_any():
        return None
    got = embed(store, [query], "query")
    if got is None or got.vectors[0] is None:
        return None
    nearest = store.vectors.nearest(got.model, got.vectors[0], project, limit)
    return [memory_id for memory_id, _ in nearest] or None


@hookimpl
def memories_written(store: Store, written: list[tuple[int, bool]]) -> None:
    vectors = store.vectors
    if not vectors.embed_on_write:
        return
    items = []
    for memory_id in dict.fromkeys(memory_id for memory_id, _ in written):
        text = vectors.unembedded_text(memory_id)
        if text is not None:  # else not active, or a repeat of a memory already embedded
            items.append((memory_id, text))
    for start in range(0, len(items), EMBED_BATCH):
        part = items[start : start + EMBED_BATCH]
        got = embed(store, [text for _, text in part])
        if got is not None:
            vectors.put(got, part)


@hookimpl
def memories_merged(store: Store, source_ids: list[int], target_id: int) -> None:
    store.vectors.sync()


@hookimpl
def memory_archived(store: Store, memory_id: int) -> None:
    store.vectors.sync()


def run(context: TaskContext) -> int:
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


def total(store: Store) -> int:
    return store.vectors.count_missing(store.project)


@hookimpl
def register_dreamer_tasks(register: Callable[[DreamerTask], None]) -> None:
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
