"""Step 2 of the Retain Job: the content dedup pass.

A replayed observation id never reaches the job (``observations.py`` keeps
one row per id); this pass looks for a memory of the same actors that says
the same thing: among the :data:`DEDUP_WINDOW` latest active or pending
memories linked to any of the observation's actors, the first (newest) with
the same normalized text in any category, else the newest whose word set
overlaps the observation's by at least :data:`NEAR_DUPLICATE` (Jaccard).
Texts under :data:`MIN_WORDS` words are only duplicates when their
normalized text is equal; a memory whose token count is too far from the
observation's to reach the overlap is skipped without reading its text.

:class:`Dedup` keeps the word sets it has read, keyed by the memory's
normalized hash (the hash of the very text the words come from, so an entry
can never be stale), bounded to :data:`WORD_CACHE` entries, oldest dropped
first: hot actors' memories are compared again and again, and their text is
read and split once.

It also keeps each actor's window, the rows the window query returned, and
updates it as the job links memories to the actor (:meth:`Dedup.linked`), so
a hot actor's window is read once, not once per observation. Links the
batch writes only at its end (``deferred.py``) are told with
``unwritten=True``: once their observation commits (:meth:`Dedup.commit`) a
window read from the store before the batch writes them gets them too. The
job forgets the windows when anything else may have changed them: after a
failed observation (rolled back), after a plugin's handler ran, and at the
start of a batch unless nothing but the job has written since the last one
(``job.py``); at most :data:`WINDOWS_KEPT` are kept.
"""

from __future__ import annotations

import re
import sys
from bisect import insort
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from plugin_sdk.store.normalize import normalize, normalized_hash

if TYPE_CHECKING:
    from plugin_sdk.plugin.records import Observation
    from plugin_sdk.store.connection import Store

DEDUP_WINDOW = 200  # latest memories of the actors the content pass compares with
NEAR_DUPLICATE = 0.8  # word-set overlap (Jaccard) that counts as the same content
MIN_WORDS = 4  # shorter texts are only duplicates when their normalized text is equal
WORD_CACHE = 16384  # word sets kept by normalized hash (a tuple of interned words each)
WINDOWS_KEPT = 4096  # actors' windows kept at most (the oldest read dropped first)
_WORD = re.compile(r"\w+")
# The id is read from the link, the column the ORDER BY walks (the index on
# (entity_id, memory_id)): PostgreSQL refuses a DISTINCT ordered by a column it
# does not select, and it is m.id by the join.
_WINDOW = """SELECT DISTINCT l.memory_id, m.normalized_hash, m.token_count FROM memory_entities l
             JOIN memories m ON m.id = l.memory_id
             WHERE l.entity_id = ? AND m.status IN ('active', 'pending')
             ORDER BY l.memory_id DESC LIMIT ?"""


Entry = tuple[int, str, int | None]  # a window's row: memory id, normalized hash, tokens


def _add(window: list[Entry], row: Entry) -> None:
    """Put a newly linked memory in a window (oldest first), as the window query would."""
    if not window or window[-1][0] < row[0]:  # the newest (a memory just created)
        if len(window) >= DEDUP_WINDOW:
            del window[0]
        window.append(row)
        return
    if any(kept[0] == row[0] for kept in window):
        return
    if len(window) >= DEDUP_WINDOW:
        if row[0] < window[0][0]:
            return  # older than the whole window: not in it
        del window[0]
    insort(window, row)


def words(text: str) -> frozenset[str]:
    """The word set the near-duplicate test compares (of the normalized text)."""
    return frozenset(map(sys.intern, _WORD.findall(normalize(text))))


class Dedup:
    """The content dedup pass over one store (see the module docstring)."""

    def __init__(self, store: Store, *, remember: bool = True) -> None:
        self.store = store
        # The batched job keeps word sets and reads each actor's window along an index;
        # the reference path reads every text, and the window in one sorted query.
        self.remember = remember
        self._words: dict[str, tuple[str, ...]] = {}
        # entity id -> its window's rows, oldest first (the query's order reversed)
        self._windows: dict[int, list[Entry]] = {}
        # Links the batch writes at its end: of committed observations, by entity, and
        # of the current one (entity ids, row).
        self._unwritten: dict[int, list[Entry]] = {}
        self._staged: list[tuple[set[int], Entry]] = []
        # The last text the pass counted the tokens of, and the count (the memory's
        # write need not count it again).
        self.counted: tuple[str, int] | None = None

    def forget(self) -> None:
        """Drop the kept windows (they may no longer be what the store holds)."""
        self._windows.clear()

    def linked(
        self,
        memory_id: int,
        entity_ids: Iterable[int],
        row: Entry | None = None,
        *,
        unwritten: bool = False,
    ) -> None:
        """A memory was just linked to these entities: update their kept windows.

        ``row``: the memory's (id, normalized hash, token count), when the
        caller knows it (an active or pending memory it has just created).
        ``unwritten``: the links are not in the store yet (the batch writes
        them at its end): windows read from the store until then get them
        too, once the observation commits (:meth:`commit`).
        """
        ids = set(entity_ids)
        windows = [self._windows[e] for e in ids if e in self._windows]
        if not windows and not unwritten:
            return
        if row is None:
            found = self.store.tables.memories.dedup_row(memory_id)
            if found is None or found[3] not in ("active", "pending"):
                return
            row = (int(found[0]), found[1], found[2])
        for window in windows:
            _add(window, row)
        if unwritten:
            self._staged.append((ids, row))

    def commit(self) -> None:
        """The observation whose links :meth:`linked` was told of committed."""
        for ids, row in self._staged:
            for entity_id in ids:
                self._unwritten.setdefault(entity_id, []).append(row)
        self._staged = []

    def drop(self) -> None:
        """The observation failed: its links were never written."""
        self._staged = []

    def written(self) -> None:
        """The batch's links are in the store now."""
        self._unwritten.clear()
        self._staged = []

    def _window(self, entity_id: int) -> list[Entry]:
        window = self._windows.get(entity_id)
        if window is None:
            rows = self.store.db.conn.execute(_WINDOW, [entity_id, DEDUP_WINDOW]).fetchall()
            if len(self._windows) >= WINDOWS_KEPT:
                del self._windows[next(iter(self._windows))]
            window = self._windows[entity_id] = rows[::-1]
            for row in self._unwritten.get(entity_id, ()):
                _add(window, row)
        return window

    def duplicate(self, observation: Observation, actor_ids: Sequence[int]) -> int | None:
        """The memory the observation duplicates, or ``None``."""
        if not actor_ids:
            return None
        conn = self.store.db.conn
        digest = normalized_hash(observation.text)
        rows: list[Entry] = []
        if not self.remember:  # the reference path: one query, sorted by SQLite
            ids = sorted(set(actor_ids))
            rows = conn.execute(
                f"""SELECT DISTINCT m.id, m.normalized_hash, m.token_count FROM memory_entities l
                    JOIN memories m ON m.id = l.memory_id
                    WHERE l.entity_id IN ({", ".join("?" * len(ids))})
                      AND m.status IN ('active', 'pending')
                    ORDER BY m.id DESC LIMIT ?""",
                [*ids, DEDUP_WINDOW],
            ).fetchall()
        else:  # each actor's latest, newest first along an index; then the latest of them all
            actors = set(actor_ids)
            if len(actors) == 1:
                rows = self._window(next(iter(actors)))[::-1]
            else:
                for entity_id in actors:
                    rows += self._window(entity_id)
                rows = sorted(set(rows), reverse=True)[:DEDUP_WINDOW]
        for memory_id, other_hash, _tokens in rows:
            if other_hash == digest:
                return int(memory_id)
        mine = words(observation.text)
        if self.remember and digest not in self._words:
            # the words of any text of this hash: the memory the observation may become
            self._remember(digest, tuple(mine))
        size = len(mine)
        if size < MIN_WORDS:
            return None
        # Word sets this far apart in size cannot reach the overlap: skip their text.
        tokens = self.store.tokenizer.count(observation.text)
        self.counted = (observation.text, tokens)
        low, high = tokens * NEAR_DUPLICATE, tokens / NEAR_DUPLICATE
        kept = self._words if self.remember else {}
        for memory_id, other_hash, other_tokens in rows:
            if other_tokens is not None and not low <= other_tokens <= high:
                continue
            other = kept.get(other_hash)
            if other is None:
                content = self.store.tables.memories.content(memory_id)
                other = self._remember(other_hash, tuple(words(content)))
            # Jaccard overlap with the other's distinct words; it is at most the smaller
            # set's size over the larger's: sets of sizes that far apart are skipped.
            n = len(other)
            if (n / size if n < size else size / n) < NEAR_DUPLICATE:
                continue
            shared = len(mine.intersection(other))
            if shared / (size + n - shared) >= NEAR_DUPLICATE:
                return int(memory_id)
        return None

    def _remember(self, digest: str, found: tuple[str, ...]) -> tuple[str, ...]:
        if not self.remember:
            return found
        if len(self._words) >= WORD_CACHE:
            del self._words[next(iter(self._words))]
        self._words[digest] = found
        return found
