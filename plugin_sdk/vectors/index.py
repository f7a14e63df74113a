"""The vector index of a store, reached as ``store.vectors``.

``memory_vectors`` holds one unit vector per (model, memory): the source of
truth, in the store's own file. What keeps it in step with the memories:

- **Triggers** (migration ``m014_vectors``): a memory's vectors are deleted
  when its text changes or it stops being active (archive, merge, quarantine,
  forget), and with the row itself. So an updated memory is never found by
  its old text, whichever code path changed it.
- **Writes check the text.** :meth:`Vectors.put` stores a vector only if the
  memory is still active with exactly the text that was embedded (the
  embedder is called outside any transaction, so the text may have changed
  meanwhile).
- **The dreamer task** ``embed`` (``plugins/vector_search.py``) embeds what
  is missing, in batches, and when the host's model changes it re-embeds
  everything and then prunes the old model's vectors.

Queries use only the vectors of the model that embedded the query, and only
memories that are active and readable from the project searched (its own,
or ``scope = 'global' AND shareable = 1``). They read either the sqlite-vec
mirror or, without the extension, scan (``scan.py``). The statements on the
vector tables and the mirror are their owner's (``store/tables/memories/vectors.py``,
``store.tables.vectors``); this module decides when each runs.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from plugin_sdk.store.tables.memories.vectors import MAX_K
from plugin_sdk.vectors import scan
from plugin_sdk.vectors.embed import Embedded, content_hash, to_blob

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

_CHUNK = 500


def drop_vectors(store: Store, memory_ids: Iterable[int]) -> int:
    """Delete every vector of these memories, of every model; how many rows went."""
    return store.vectors.drop(memory_ids)


class Vectors:
    """Vector operations on one store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
        self.rows = store.tables.vectors
        self._extension: tuple[str | None, str] | None = None

    # The extension

    @property
    def extension(self) -> str | None:
        """sqlite-vec's version when it is loaded into this store's connection, else ``None``."""
        if self._extension is None:
            self._extension = self.rows.load_extension()
        return self._extension[0]

    def _mirror_serves(self, model: str, dim: int) -> bool:
        return (
            self.extension is not None
            and self.rows.mirrored() == (model, dim)
            and self.rows.mirror_exists()
        )

    def sync(self) -> None:
        """Bring the sqlite-vec mirror in step (rebuilt for the newest model if it is not).

        Does nothing without the extension. Called after every write of
        vectors and by the ``embed`` task; safe to call any time.
        """
        if self.extension is None:
            return
        newest = self.rows.newest()
        with self.store.atomic():
            if newest is None:
                self.rows.drop_mirror()
            elif self.rows.mirrored() != newest or not self.rows.mirror_exists():
                self.rows.rebuild_mirror(*newest)
            else:
                self.rows.catch_up()

    # Writing

    def put(self, embedded: Embedded, items: Sequence[tuple[int, str]]) -> int:
        """Store vectors for ``items`` (``(memory_id, text)``, in ``embedded``'s order).

        A vector is kept only when its memory is still active and its text is
        still ``text``; returns how many were kept.
        """
        if len(items) != len(embedded.vectors):
            raise ValueError("one vector per item")
        now = self.store.now()
        with self.store.atomic():
            current = self._texts([memory_id for memory_id, _ in items])
            rows = [
                (
                    embedded.model,
                    memory_id,
                    embedded.dim,
                    to_blob(vector),
                    content_hash(text),
                    now,
                )
                for (memory_id, text), vector in zip(items, embedded.vectors, strict=True)
                if vector is not None and current.get(memory_id) == text
            ]
            self.rows.put(embedded.model, rows)
            self.sync()
        return len(rows)

    def _texts(self, memory_ids: list[int]) -> dict[int, str]:
        found: dict[int, str] = {}
        for start in range(0, len(memory_ids), _CHUNK):
            chunk = memory_ids[start : start + _CHUNK]
            found.update(self.store.tables.memories.active_texts(chunk))
        return found

    def drop(self, memory_ids: Iterable[int]) -> int:
        """Delete every vector of these memories; how many rows went."""
        ids = list(dict.fromkeys(memory_ids))
        with self.store.atomic():
            removed = self.rows.delete_for(ids)
            self.sync()
        return removed

    drop_vectors = drop  # the name forget (store/forget/__init__.py) calls

    def prune(self, model: str, dim: int, project: str) -> int:
        """Delete the project's vectors of other models (after a full re-embed), and any
        vector whose memory is not active; how many rows went."""
        with self.store.atomic():
            removed = self.rows.prune(model, dim, project)
            self.sync()
        return removed

    # The embedding step (see plugins/vector_search.py)

    @property
    def embed_on_write(self) -> bool:
        """Whether a written memory is embedded at once (default: no, the ``embed`` task does it)."""
        return self.rows.embed_on_write()

    @embed_on_write.setter
    def embed_on_write(self, value: bool) -> None:
        with self.store.atomic():
            self.rows.set_embed_on_write(value)

    def has_any(self) -> bool:
        """Whether the store holds any vector at all (a search embeds its query only then)."""
        return self.rows.has_any()

    def unembedded_text(self, memory_id: int) -> str | None:
        """The text of an active memory that has no vector of the newest model, else ``None``."""
        return self.store.tables.memories.unembedded_text(memory_id)

    @property
    def model(self) -> str | None:
        """The model the newest vectors were written with."""
        return self.rows.model()

    def missing(
        self, model: str | None, dim: int | None, project: str, *, after: int = 0, limit: int = 100
    ) -> list[tuple[int, str]]:
        """Active memories of ``project`` after id ``after`` with no vector of ``model``, by id."""
        return self.store.tables.memories.unembedded(model, dim, project, after, limit)

    def count_missing(self, project: str) -> int:
        """Active memories of ``project`` without a vector of the newest model."""
        return self.store.tables.memories.count_unembedded(project)

    # Reading

    def nearest(
        self, model: str, vector: array, project: str, limit: int
    ) -> list[tuple[int, float]]:
        """The ``limit`` memories readable from ``project`` whose ``model`` vectors are nearest
        to ``vector`` (a unit vector): ``(memory_id, cosine)``, best first, ties by id."""
        if limit <= 0:
            return []
        dim = len(vector)
        if self._mirror_serves(model, dim):
            found = self._nearest_mirrored(model, vector, project, limit)
            if found is not None:
                return found
        return scan.best(self.rows.readable(model, dim, project), vector, limit)

    def _nearest_mirrored(
        self, model: str, vector: array, project: str, limit: int
    ) -> list[tuple[int, float]] | None:
        behind = self.rows.behind()
        exact = self._exact(model, vector, behind)
        k = max(4 * limit, 64)
        while True:
            found = self.rows.neighbours(to_blob(vector), k)
            scores = {memory_id: score for memory_id, score in found if memory_id not in behind}
            scores.update(exact)
            readable = self._readable(list(scores), project)
            if len(readable) >= limit or len(found) < k:
                ranked = sorted(((i, scores[i]) for i in readable), key=lambda x: (-x[1], x[0]))
                return ranked[:limit]
            if k >= MAX_K:
                return None  # too few readable among the nearest: scan instead
            k = min(4 * k, MAX_K)

    def _exact(self, model: str, vector: array, memory_ids: set[int]) -> dict[int, float]:
        if not memory_ids:
            return {}
        rows = self.rows.of_memories(model, len(vector), sorted(memory_ids))
        return dict(scan.best(rows, vector, len(rows)))

    def _readable(self, memory_ids: list[int], project: str) -> list[int]:
        found: list[int] = []
        for start in range(0, len(memory_ids), _CHUNK):
            chunk = memory_ids[start : start + _CHUNK]
            found += self.store.tables.memories.readable_active_ids(chunk, project)
        return found

    # Looking at it

    def status(self) -> dict[str, Any]:
        """What the index holds: vectors per model, the mirror, what is pending."""
        from plugin_sdk.store import driver

        models = self.rows.per_model()
        state = self.rows.state()
        self.extension  # noqa: B018 (loads it once, to report why not)
        assert self._extension is not None
        behind = self.rows.count_behind()
        return {
            "driver": driver.name,
            "sqlite": driver.sqlite_version,
            "sqlite_vec": self._extension[0],
            "why_no_sqlite_vec": self._extension[1] or None,
            "model": state[0],
            "models": models,
            "mirror_model": state[1],
            "mirror_behind": behind,
            "embed_on_write": state[2],
        }

    def check(self) -> list[str]:
        """Inconsistencies between the vectors and the memories (empty when there are none)."""
        problems = []
        for memory_id, model, stored, text, status in self.rows.with_memories():
            if status != "active":
                problems.append(f"memory {memory_id} is {status} but has a {model} vector")
            elif stored != content_hash(text):
                problems.append(f"memory {memory_id}'s {model} vector was made from another text")
        mirrored, dim = self.rows.mirrored()
        if (
            mirrored is not None
            and dim is not None
            and self.extension is not None
            and self.rows.mirror_exists()
        ):
            behind = self.rows.behind()
            table = self.rows.ids_of(mirrored, dim)
            copied = self.rows.mirrored_ids()
            for memory_id in sorted((table ^ copied) - behind):
                problems.append(f"the sqlite-vec mirror disagrees on memory {memory_id}")
        return problems
