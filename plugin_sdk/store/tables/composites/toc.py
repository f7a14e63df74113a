"""The owner of toc_rank (``TocRows``), and the annotation SQL read with it.

``toc_rank`` is kept by triggers (see ``schema.sql``); this module holds the
statements that read a head's annotation at read time, the same SQL the
``toc_rank_source`` view runs (a test keeps the two equal: a change here is a
new migration that replaces the view).

:meth:`TocRows.reader` gives one injection its own cursor whose rows are
``driver.Row``: read by position in ``COLUMNS`` order (memory_id, category,
kind, importance, token_count, tokenizer, seen_count, last_seen_at,
strength, tier, head, note, content, normalized_hash) or by name.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from plugin_sdk.store import driver
from plugin_sdk.store.visibility import readable_sql

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

# What one expand of a memory shows, as the block writes it inside the id
# bracket: per composite it heads with active members, in type order,
# "9 details", "12 groups, 480 memories" (a group of the map: its sizes as
# the map task recorded them), "3 causes", "4 alternatives"; NULL for none.
NOTE_SQL = """(SELECT group_concat(words, '; ') FROM (
    SELECT CASE
        WHEN json_extract(c.layout, '$.map.groups') > 0
            THEN json_extract(c.layout, '$.map.groups') || ' groups, '
                 || json_extract(c.layout, '$.map.memories') || ' memories'
        WHEN json_extract(c.layout, '$.map.memories') IS NOT NULL
            THEN json_extract(c.layout, '$.map.memories')
                 || CASE json_extract(c.layout, '$.map.memories') WHEN 1 THEN ' memory'
                    ELSE ' memories' END
        ELSE c.n || ' ' || CASE c.type
            WHEN 'sequence' THEN CASE c.n WHEN 1 THEN 'detail' ELSE 'details' END
            WHEN 'theme' THEN CASE c.n WHEN 1 THEN 'memory' ELSE 'memories' END
            WHEN 'cause' THEN CASE c.n WHEN 1 THEN 'cause' ELSE 'causes' END
            ELSE CASE c.n WHEN 1 THEN 'alternative' ELSE 'alternatives' END END
    END AS words
    FROM (SELECT t.id, t.type, t.layout,
                 (SELECT count(*) FROM composite_members d JOIN memories x
                  ON x.id = d.member_memory_id AND x.status = 'active'
                  WHERE d.composite_id = t.id) AS n
          FROM composites t WHERE t.head_memory_id = {head}) AS c
    WHERE c.n > 0
    ORDER BY CASE c.type WHEN 'sequence' THEN 0 WHEN 'theme' THEN 1 WHEN 'cause' THEN 2
             ELSE 3 END, c.id))"""
# The same words on PostgreSQL: the layout's numbers compared as integers (its
# json_extract gives text), the derived table named (PostgreSQL 15 needs it).
POSTGRES_NOTE_SQL = (
    NOTE_SQL.replace(
        "WHEN json_extract(c.layout, '$.map.groups') > 0",
        "WHEN CAST(json_extract(c.layout, '$.map.groups') AS INTEGER) > 0",
    )
    .replace(
        "CASE json_extract(c.layout, '$.map.memories') WHEN 1",
        "CASE CAST(json_extract(c.layout, '$.map.memories') AS INTEGER) WHEN 1",
    )
    .replace("ELSE 3 END, c.id))", "ELSE 3 END, c.id) AS notes)")
)
HEAD_SQL = """(SELECT t.type FROM composites t WHERE t.head_memory_id = {head}
    AND EXISTS (SELECT 1 FROM composite_members d JOIN memories x
                ON x.id = d.member_memory_id AND x.status = 'active' WHERE d.composite_id = t.id)
    ORDER BY CASE t.type WHEN 'sequence' THEN 0 WHEN 'theme' THEN 1 WHEN 'cause' THEN 2
             ELSE 3 END, t.id LIMIT 1)"""


# What another project's reader may see of a head: the same words, counting
# only the active members that reader may read (one ``?``: the reader). The
# map's recorded sizes count the owner's memories, so a reader elsewhere gets
# the plain count of the group's members it may read.
_READABLE = f"""(SELECT count(*) FROM composite_members d JOIN memories x
    ON x.id = d.member_memory_id AND x.status = 'active'
    WHERE d.composite_id = t.id AND {readable_sql("x")})"""
READER_NOTE_SQL = f"""(SELECT group_concat(c.n || ' ' || CASE c.type
        WHEN 'sequence' THEN CASE c.n WHEN 1 THEN 'detail' ELSE 'details' END
        WHEN 'theme' THEN CASE c.n WHEN 1 THEN 'memory' ELSE 'memories' END
        WHEN 'cause' THEN CASE c.n WHEN 1 THEN 'cause' ELSE 'causes' END
        ELSE CASE c.n WHEN 1 THEN 'alternative' ELSE 'alternatives' END END, '; ')
    FROM (SELECT t.id, t.type, {_READABLE} AS n FROM composites t
          WHERE t.head_memory_id = {{head}}
          ORDER BY CASE t.type WHEN 'sequence' THEN 0 WHEN 'theme' THEN 1
                   WHEN 'cause' THEN 2 ELSE 3 END, t.id) AS c
    WHERE c.n > 0)"""
READER_HEAD_SQL = f"""(SELECT t.type FROM composites t WHERE t.head_memory_id = {{head}}
    AND {_READABLE} > 0
    ORDER BY CASE t.type WHEN 'sequence' THEN 0 WHEN 'theme' THEN 1 WHEN 'cause' THEN 2
             ELSE 3 END, t.id LIMIT 1)"""


FETCH = 16  # rows read at a time from one tier of one category
PAGE_MAX = 4096  # the largest page of a paged stream (RankReader)

COLUMNS = """r.memory_id AS memory_id, r.category, r.kind, r.importance, r.token_count, r.tokenizer,
    r.seen_count, r.last_seen_at, r.strength, r.tier, r.head, r.note, m.content,
    m.normalized_hash"""
# Another project's shared rows: ``toc_rank``'s head and note are the owner's
# view (members the reader may not see counted); these count what the reader
# may read (two ``?``: the reader, twice).
_SHARED_COLUMNS = COLUMNS.replace(
    "r.head, r.note",
    f"""CASE WHEN r.head IS NULL THEN NULL ELSE {READER_HEAD_SQL.format(head="r.memory_id")} END,
    CASE WHEN r.note IS NULL THEN NULL ELSE {READER_NOTE_SQL.format(head="r.memory_id")} END""",
)
_FROM = "toc_rank r JOIN memories m ON m.id = r.memory_id"
ORDER = "r.importance DESC, r.strength DESC, r.seen_count DESC, r.last_seen_at DESC, r.memory_id"
# The rows after one in ``ORDER`` (importance, strength, seen_count, last_seen_at
# descending, memory_id ascending; all NOT NULL): where a paged stream goes on.
# The first bound is an index condition of toc_rank_order; the rest filter the
# rows of equal importance.
_AFTER = """r.importance <= ? AND (r.importance < ? OR (r.importance = ? AND (r.strength < ?
    OR (r.strength = ? AND (r.seen_count < ? OR (r.seen_count = ? AND (r.last_seen_at < ?
    OR (r.last_seen_at = ? AND r.memory_id > ?))))))))"""


class TocRows:
    """Statements on toc_rank outside its triggers; reached as ``store.tables.toc``.

    Inside a batch the insert trigger that ranks a new memory is paused
    (``insert_triggers_paused``); the batch ranks its new rows here, in one
    statement pair, from the ``toc_rank_source`` view the trigger reads.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    def rank_range(self, first: int, last: int) -> None:
        """Rank the memories with ids from ``first`` to ``last`` (the paused insert trigger's work)."""
        conn = self.db.conn
        conn.execute("DELETE FROM toc_rank WHERE memory_id BETWEEN ? AND ?", [first, last])
        conn.execute(
            """INSERT INTO toc_rank SELECT * FROM toc_rank_source
               WHERE memory_id BETWEEN ? AND ? AND tier IS NOT NULL""",
            [first, last],
        )

    def rank_ids(self, ids_json: str) -> None:
        """Rank the memories of these ids (a JSON list, each id once)."""
        conn = self.db.conn
        conn.execute(
            "DELETE FROM toc_rank WHERE memory_id IN (SELECT value FROM json_each(?))", [ids_json]
        )
        conn.execute(
            """INSERT INTO toc_rank SELECT * FROM toc_rank_source
               WHERE memory_id IN (SELECT value FROM json_each(?)) AND tier IS NOT NULL""",
            [ids_json],
        )

    def reader(self) -> RankReader:
        """A reader of the ranking on a cursor of its own (rows are ``driver.Row``)."""
        cursor = self.db.conn.cursor()
        cursor.row_factory = driver.Row
        return RankReader(cursor, paged=self.store.engine != "sqlite")


class RankReader:
    """One injection's reads of ``toc_rank`` joined with the rows' text.

    A category's tier is read as far as the block needs it. SQLite's cursor
    steps through the statement, so one statement serves: the rows past the
    budget are never read. psycopg's cursor holds a statement's whole result
    once it has run, which at 100,000 memories is most of the store's text for
    one category (140 ms of a 166 ms inject): on ``paged`` engines the stream
    is read in pages along ``toc_rank_order``, each page four times the last,
    from ``FETCH`` to ``PAGE_MAX``, and each page goes on after the last row
    of the one before (``_AFTER``, by its rank keys, not an ``OFFSET``). Each
    page is its own snapshot, so a row another writer changes between two
    pages may be missed or, moved later, come again (it is given once); every
    other row comes once, in rank order.
    """

    def __init__(self, cursor: driver.Cursor, *, paged: bool = False) -> None:
        self.db = cursor
        self.paged = paged

    def any_shared(self, project: str) -> bool:
        """Whether another project shares a ranked row (an index probe)."""
        return self._any("shared = 1 AND project != ?", [project])

    def any_in_tier(self, project: str, tier: int) -> bool:
        """Whether ``project`` has a ranked row in ``tier`` (an index probe)."""
        # The order keeps it a probe of toc_rank_order on PostgreSQL. There the
        # statement is prepared after a few runs, and its generic plan, priced for
        # a tier of average size, scanned the whole table for an empty tier (18 ms
        # at 100,000 memories, against 0.06 ms along the index).
        return self._any("project = ? AND tier = ? ORDER BY category", [project, tier])

    def tier(self, project: str, number: int) -> list[driver.Row]:
        """``project``'s rows of tier ``number``, by category then rank."""
        return self.db.execute(
            f"SELECT {COLUMNS} FROM {_FROM} WHERE r.project = ? AND r.tier = ? "
            f"ORDER BY r.category, {ORDER}",
            [project, number],
        ).fetchall()

    def shared_tier(self, project: str, number: int) -> list[driver.Row]:
        """Other projects' shared rows of tier ``number`` as ``project`` may see them (no order)."""
        return self.db.execute(
            f"SELECT {_SHARED_COLUMNS} FROM {_FROM} "
            "WHERE r.shared = 1 AND r.tier = ? AND r.project != ?",
            [project, project, number, project],
        ).fetchall()

    def category_tier(self, project: str, number: int, category: str) -> Iterator[driver.Row]:
        """``project``'s rows of tier ``number`` in ``category``, in rank order, read ``FETCH`` at a time."""
        return self._stream(
            f"SELECT {COLUMNS} FROM {_FROM} WHERE r.project = ? AND r.tier = ? AND r.category = ?",
            [project, number, category],
        )

    def shared_category_tier(
        self, project: str, number: int, category: str
    ) -> Iterator[driver.Row]:
        """Other projects' shared rows of tier ``number`` in ``category``, in rank order."""
        return self._stream(
            f"SELECT {_SHARED_COLUMNS} FROM {_FROM} WHERE r.shared = 1 AND r.tier = ? "
            "AND r.category = ? AND r.project != ?",
            [project, project, number, category, project],
        )

    def category_counts(self, project: str) -> list[tuple[str, int]]:
        """``(category, ranked rows)`` that ``project`` may read."""
        return self.db.execute(
            """SELECT category, count(*) FROM toc_rank
               WHERE project = ? OR (shared = 1 AND project != ?) GROUP BY category""",
            [project, project],
        ).fetchall()

    def _stream(self, select: str, params: list[Any]) -> Iterator[driver.Row]:
        """The rows of ``select`` (a ``SELECT … WHERE …`` of ``COLUMNS``' shape) in rank order."""
        if not self.paged:
            cursor = self.db.execute(f"{select} ORDER BY {ORDER}", params)
            while rows := cursor.fetchmany(FETCH):
                yield from rows
            return
        given: set[int] = set()
        after: list[Any] = []
        size = FETCH
        while True:
            where = f" AND {_AFTER}" if after else ""
            rows = self.db.execute(
                f"{select}{where} ORDER BY {ORDER} LIMIT ?", [*params, *after, size]
            ).fetchall()
            for row in rows:
                if row[0] not in given:
                    given.add(row[0])
                    yield row
            if len(rows) < size:
                return
            last = rows[-1]  # its keys, in COLUMNS' positions, as _AFTER takes them
            i, s, c, t = last[3], last[8], last[6], last[7]
            after = [i, i, i, s, s, c, c, t, t, last[0]]
            size = min(4 * size, PAGE_MAX)

    def _any(self, where: str, params: list[Any]) -> bool:
        return (
            self.db.execute(f"SELECT 1 FROM toc_rank WHERE {where} LIMIT 1", params).fetchone()
            is not None
        )
