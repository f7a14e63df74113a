"""The owner of memories_fts, search_settings, token_counts: every statement that touches them.

The full-text index (``memories_fts``, FTS5) is kept by triggers on
``memories`` (see ``schema.sql``) except inside a batch, when the insert
trigger is paused (``insert_triggers_paused``) and the batch's new rows are
indexed here in one statement. What search reads from the index (its
``MATCH`` queries) is the search engine's (``store/search/engine.py``). The
index's checks and rebuild take a bare database, for ``memsdk doctor``,
which opens a file that may not be a working store.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.store.search import query as q

if TYPE_CHECKING:
    from sqlite_utils import Database

    from plugin_sdk.store.connection import Store

#: FTS5's bm25 with the scope column weighted 0: it carries no relevance.
BM25 = "bm25(memories_fts, 1.0, 0.0)"
_SELECT_IDS = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?"


def fulltext(store: Store) -> Any:
    """The store's full-text index reads: FTS5 on SQLite, ``tsvector`` on PostgreSQL."""
    index = store.__dict__.get("_fulltext")
    if index is None:
        if store.engine == "postgresql":
            from plugin_sdk.store.postgres.search import TsIndex

            index = TsIndex(store)
        else:
            index = Fts5Index(store)
        store.__dict__["_fulltext"] = index
    return index


def scope_match(project: str) -> str:
    """The FTS5 condition for memories readable from ``project`` (the cross-project rule)."""
    token = "p" + project.encode("utf-8").hex().upper()
    return f'fts_scope : ("{token}" OR "shared")'


def common_cutoff(total: int, common_min: int, common_share: float) -> int:
    """A word held by more than this many of ``total`` rows is common (``docs/search.md``)."""
    return max(common_min, int(total * common_share))


@attrs.define
class Matches:
    """What the index holds for a query's words: one answer of :meth:`Fts5Index.matches`."""

    #: Rows in the index (live memories).
    total: int = 0
    #: A word held by more rows than this is common (:func:`common_cutoff`).
    cutoff: int = 0
    #: The words held by at most the cutoff's rows, in the query's order.
    rare: list[str] = attrs.field(factory=list)
    #: Each rare word's live rows.
    held: dict[str, int] = attrs.field(factory=dict)
    #: Each rare word's readable rows with its score, best first (score, then id), at most ``cap``.
    best: dict[str, list[tuple[int, float]]] = attrs.field(factory=dict)
    #: For each pair of adjacent rare words, in order: the rows holding it as a phrase, scored.
    phrases: list[list[tuple[int, float]]] = attrs.field(factory=list)


class Fts5Index:
    """What search reads from the FTS5 index: words in, memory ids (and bm25) out.

    Each method takes plain words (tokens of :mod:`~plugin_sdk.store.search.query`);
    the FTS5 expressions are built here, every word a quoted string. The
    PostgreSQL engine's :class:`~plugin_sdk.store.postgres.search.TsIndex`
    answers the same calls.
    """

    def __init__(self, store: Store) -> None:
        self.db = store.db

    def rows(self) -> int:
        """Rows in the index, read from FTS5's own record (no scan)."""
        row = self.db.execute("SELECT block FROM memories_fts_data WHERE id = 1").fetchone()
        if row is None or not row[0]:
            return 0
        value = 0
        for byte in row[0][:9]:  # an SQLite varint: 7 bits a byte, high bit continues
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        return value

    def matches(
        self,
        words: list[str],
        pairs: list[tuple[str, str]],
        project: str,
        cap: int,
        common: tuple[int, float],
    ) -> Matches:
        """The index's answer for a query's ``words`` and adjacent ``pairs`` (see :class:`Matches`).

        A word held by more rows than the cutoff (``common``: ``(common_min,
        common_share)``, :func:`common_cutoff`) is common: it has no rows here
        (its cost would grow with the store). None rare: nothing else is read.
        """
        total = self.rows()
        cutoff = common_cutoff(total, *common)
        found = Matches(total=total, cutoff=cutoff)
        found.rare = [w for w in words if not self.more_than(w, cutoff)]
        if not found.rare:
            return found
        # The project, inside the MATCH: which rows holding a rare word this
        # project may read. No bm25 here (FTS5's bm25 would count every row of
        # the scope token); each word's bm25 comes from its own, bounded, lookup.
        readable = self.readable(found.rare, project)
        for word in found.rare:
            every = self.scored(word)
            found.held[word] = len(every)
            # rows() and scored() are separate reads: a write between them can
            # make a word's rows more than the count (bm25's idf needs n ≤ N).
            found.total = max(found.total, len(every))
            rows = sorted((r for r in every if r[0] in readable), key=lambda r: (-r[1], r[0]))
            found.best[word] = rows[:cap]
        found.phrases = [
            self.scored_phrase(pair)
            for pair in pairs
            if pair[0] in found.rare and pair[1] in found.rare
        ]
        return found

    def more_than(self, word: str, cutoff: int) -> bool:
        """Whether more than ``cutoff`` indexed memories hold ``word`` (counting stops there)."""
        sql = f"SELECT count(*) FROM ({_SELECT_IDS} LIMIT ?)"
        (count,) = self.db.execute(sql, [f"content : {q.term(word)}", cutoff + 1]).fetchone()
        return bool(count > cutoff)

    def scored(self, word: str) -> list[tuple[int, float]]:
        """Every memory holding ``word`` with its bm25 (callers keep this bounded)."""
        return self._scored(f"content : {q.term(word)}")

    def scored_phrase(self, pair: tuple[str, str]) -> list[tuple[int, float]]:
        """Every memory holding the two words as a phrase, with its bm25."""
        return self._scored(q.phrase(pair))

    def _scored(self, match: str) -> list[tuple[int, float]]:
        sql = f"SELECT rowid, -{BM25} FROM memories_fts WHERE memories_fts MATCH ?"
        return [(row[0], row[1]) for row in self.db.execute(sql, [match])]

    def readable(self, words: list[str], project: str) -> set[int]:
        """Memories holding any of ``words`` that ``project`` may read."""
        match = f"{q.any_of(words)} AND {scope_match(project)}"
        return {row[0] for row in self.db.execute(_SELECT_IDS, [match])}

    def recent(self, words: list[str], project: str, cap: int) -> list[int]:
        """The ``cap`` newest readable memories holding any of ``words``, newest first."""
        sql = f"{_SELECT_IDS} ORDER BY rowid DESC LIMIT ?"
        match = f"{q.any_of(words)} AND {scope_match(project)}"
        return [row[0] for row in self.db.execute(sql, [match, cap])]

    def holding(self, word: str, project: str, oldest: int) -> list[int]:
        """Readable memories from id ``oldest`` on holding ``word``."""
        sql = f"{_SELECT_IDS} AND rowid >= ?"
        match = f"content : {q.term(word)} AND {scope_match(project)}"
        return [row[0] for row in self.db.execute(sql, [match, oldest])]

    def raw(self, expression: str, project: str, cap: int) -> list[tuple[int, float]]:
        """FTS5 syntax as given, within what ``project`` may read; best first."""
        sql = f"""SELECT rowid, -{BM25} FROM memories_fts WHERE memories_fts MATCH ?
                  ORDER BY rank, rowid LIMIT ?"""
        match = f"({expression}) AND {scope_match(project)}"
        return [(row[0], row[1]) for row in self.db.execute(sql, [match, cap])]


def check_index(db: Database) -> None:
    """FTS5's own structural check of the index (raises the driver's error when it fails).

    On PostgreSQL the index is a generated column: there is nothing to check.
    """
    if _postgres(db):
        return
    db.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 0)")


def index_check(db: Database) -> dict[str, list[int]]:
    """Compare the full-text index with the table: what ``memsdk doctor`` reports.

    ``missing``: live memories the index lacks; ``extra``: indexed rows that
    are not live memories (archived, superseded, quarantined or gone). Both
    empty means the index holds exactly the live memories. Reads FTS5's own
    per-row table (``memories_fts_docsize``), one row per indexed memory.
    (FTS5's ``integrity-check`` against the content table does not apply: the
    index holds only some of the table's rows, by design.)
    """
    if _postgres(db):  # a generated column of every row: complete by construction
        return {"missing": [], "extra": []}
    indexed = {row[0] for row in db.execute("SELECT id FROM memories_fts_docsize")}
    live = {row[0] for row in db.execute("SELECT id FROM memories WHERE status = 'active'")}
    return {"missing": sorted(live - indexed), "extra": sorted(indexed - live)}


def rebuild_index(db: Database) -> None:
    """Rebuild the full-text index from the live memories (call inside a transaction).

    Not FTS5's ``rebuild``, which would index every row of the table. On
    PostgreSQL the index is a generated column, always complete.
    """
    if _postgres(db):
        return
    db.execute("INSERT INTO memories_fts (memories_fts) VALUES ('delete-all')")
    db.execute(
        """INSERT INTO memories_fts (rowid, content, fts_scope)
           SELECT id, content, fts_scope FROM memories WHERE status = 'active' ORDER BY id"""
    )


def _postgres(db: Any) -> bool:
    return getattr(db, "engine", "sqlite") == "postgresql"


class SearchRows:
    """Statements on memories_fts, search_settings, token_counts; reached as ``store.tables.search``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # The full-text index.

    def index_range(self, first: int, last: int) -> None:
        """Index the live memories with ids from ``first`` to ``last`` (the paused insert trigger's work)."""
        if _postgres(self.db):
            return  # a generated column: indexed as it is written
        self.db.conn.execute(
            """INSERT INTO memories_fts (rowid, content, fts_scope)
               SELECT id, content, fts_scope FROM memories
               WHERE id BETWEEN ? AND ? AND status = 'active'""",
            [first, last],
        )

    def index_ids(self, ids_json: str) -> None:
        """Index the live memories of these ids (a JSON list, each id once)."""
        if _postgres(self.db):
            return  # a generated column: indexed as it is written
        self.db.conn.execute(
            """INSERT INTO memories_fts (rowid, content, fts_scope)
               SELECT id, content, fts_scope FROM memories
               WHERE id IN (SELECT value FROM json_each(?)) AND status = 'active'""",
            [ids_json],
        )

    def optimize(self) -> None:
        """Merge the index's segments (deleted entries leave the file with them)."""
        if _postgres(self.db):
            return  # a generated column: indexed as it is written
        self.db.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")

    def rebuild(self) -> None:
        """:func:`rebuild_index` on the store (call inside a transaction)."""
        rebuild_index(self.db)

    # Search settings.

    def settings(self) -> list[tuple[str, str]]:
        """The stored ``(name, JSON value)`` of each changed setting."""
        return self.db.execute("SELECT name, value FROM search_settings").fetchall()

    def set_setting(self, name: str, value_json: str, now: str) -> None:
        """Store a setting's value (JSON)."""
        self.db.execute(
            """INSERT INTO search_settings (name, value, updated_at) VALUES (?, ?, ?)
               ON CONFLICT (name) DO UPDATE SET value = excluded.value,
               updated_at = excluded.updated_at""",
            [name, value_json, now],
        )

    def reset_setting(self, name: str) -> None:
        """Drop a stored setting (it is its default again)."""
        self.db.execute("DELETE FROM search_settings WHERE name = ?", [name])

    # Cached token counts.

    def token_count(self, text_hash: str, tokenizer: str) -> int | None:
        """The cached count of a text (by hash) for a tokenizer, or ``None``."""
        row = self.db.execute(
            "SELECT tokens FROM token_counts WHERE text_hash = ? AND tokenizer = ?",
            [text_hash, tokenizer],
        ).fetchone()
        return None if row is None else int(row[0])

    def token_counts(self, tokenizer: str, hashes: Sequence[str]) -> list[tuple[str, int]]:
        """``(hash, count)`` of the cached ones among ``hashes`` (the caller keeps the list short)."""
        return self.db.execute(
            f"SELECT text_hash, tokens FROM token_counts WHERE tokenizer = ? "
            f"AND text_hash IN ({','.join('?' * len(hashes))})",
            [tokenizer, *hashes],
        ).fetchall()

    def keep_token_counts(self, rows: Iterable[tuple[str, str, int, str]], cap: int) -> None:
        """Record ``(hash, tokenizer, count, now)`` rows, then keep only the ``cap`` newest."""
        # A count recorded again moves to the newest rowid (SQLite's REPLACE
        # deletes and inserts; PostgreSQL's upsert draws the rowid anew).
        upsert = (
            "INSERT INTO token_counts (text_hash, tokenizer, tokens, used_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (text_hash, tokenizer) DO UPDATE SET tokens = excluded.tokens, "
            "used_at = excluded.used_at, rowid = nextval(pg_get_serial_sequence('token_counts', 'rowid'))"
            if _postgres(self.db)
            else "INSERT OR REPLACE INTO token_counts (text_hash, tokenizer, tokens, used_at) "
            "VALUES (?, ?, ?, ?)"
        )
        self.db.conn.executemany(upsert, rows)
        # Rows are added in rowid order: the oldest recorded go first.
        self.db.execute(
            "DELETE FROM token_counts WHERE rowid <= (SELECT max(rowid) FROM token_counts) - ?",
            [cap],
        )

    def drop_token_counts(self, tokenizer: str | None = None, hashes: Sequence[str] = ()) -> None:
        """Drop cached counts: all of them (no ``tokenizer``), or these hashes' for a tokenizer."""
        sql: str
        params: list[Any]
        if tokenizer is None:
            sql, params = "DELETE FROM token_counts", []
        else:
            sql = (
                "DELETE FROM token_counts WHERE tokenizer = ? "
                f"AND text_hash IN ({','.join('?' * len(hashes))})"
            )
            params = [tokenizer, *hashes]
        self.db.execute(sql, params)
