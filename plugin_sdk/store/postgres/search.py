"""Full text on PostgreSQL: the reads search makes of its index, as FTS5's answer them.

The index is a generated ``tsvector`` column of ``memories`` (``search``,
text search configuration ``memsdk``: the content cut into runs of letters
and digits as the query parser cuts it, English Snowball stemming, no
stopword list: stopwords are the query parser's), with a GIN index on the
live memories, and ``search_len``, the number of tokens. The corpus counts
bm25 needs (live rows, their total length) are kept in ``search_stats`` by
statement triggers, so reading them costs one row.

Scores are FTS5's bm25, the same formula (k1 = 1.2, b = 0.75, idf =
ln((N − n + 0.5)/(n + 0.5)), at least 1e-6; ``docs/postgres.md``), computed
here from each matching row's term frequency and length, so both engines
rank alike; ``ts_rank_cd`` was measured beside it (``docs/benchmarks.md``).
Expert queries (``raw=True``) are PostgreSQL's ``websearch_to_tsquery``
syntax, ranked by ``ts_rank_cd``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from plugin_sdk.store.visibility import readable_sql

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

K1 = 1.2
B = 0.75
CONFIG = "memsdk"
_LIVE = "status = 'active'"
_READABLE = readable_sql("")


def bm25(tf: int, length: int, rows: int, held: int, average: float) -> float:
    """FTS5's bm25 of one term in one row (``tf`` occurrences in ``length`` tokens)."""
    idf = max(math.log((rows - held + 0.5) / (held + 0.5)), 1e-6)
    norm = K1 * (1 - B + B * length / (average or 1.0))
    return idf * tf * (K1 + 1) / (tf + norm)


class TsIndex:
    """What search reads from the ``tsvector`` index; the calls of the FTS5 owner's ``Fts5Index``."""

    def __init__(self, store: Store) -> None:
        self.db = store.db
        self._lexemes: dict[str, list[str]] = {}

    def lexemes(self, text: str) -> list[str]:
        """``text`` as the index stores it: its stemmed lexemes, in order."""
        found = self._lexemes.get(text)
        if found is None:
            row = self.db.execute(
                f"SELECT ARRAY(SELECT lexeme FROM unnest(to_tsvector('{CONFIG}', "
                "memsdk_words(?))) ORDER BY positions[1]) ",
                [text],
            ).fetchone()
            found = list(row[0] or [])
            if len(self._lexemes) > 10_000:
                self._lexemes.clear()
            self._lexemes[text] = found
        return found

    def stats(self) -> tuple[int, float]:
        """``(live rows, average length)`` from ``search_stats``."""
        row = self.db.execute("SELECT rows, total_len FROM search_stats").fetchone()
        if row is None or not row[0]:
            return 0, 0.0
        return int(row[0]), float(row[1]) / int(row[0])

    def rows(self) -> int:
        return self.stats()[0]

    def more_than(self, word: str, cutoff: int) -> bool:
        sql = (
            f"SELECT count(*) FROM (SELECT 1 FROM memories WHERE {_LIVE} "
            f"AND search @@ plainto_tsquery('{CONFIG}', ?) LIMIT ?) held"
        )
        (count,) = self.db.execute(sql, [word, cutoff + 1]).fetchone()
        return bool(count > cutoff)

    def _positions(self, where: str, lexemes: list[str], params: list[Any]) -> list[Any]:
        columns = ", ".join(
            "(SELECT positions FROM unnest(search) u WHERE u.lexeme = ?)" for _ in lexemes
        )
        sql = f"SELECT id, search_len, {columns} FROM memories WHERE {_LIVE} AND {where}"
        return self.db.execute(sql, [*lexemes, *params]).fetchall()

    def scored(self, word: str) -> list[tuple[int, float]]:
        lexemes = self.lexemes(word)
        if not lexemes:
            return []
        rows = self._positions(f"search @@ plainto_tsquery('{CONFIG}', ?)", lexemes[:1], [word])
        total, average = self.stats()
        held = len(rows)
        return [
            (row[0], bm25(len(row[2] or ()), int(row[1] or 0), total, held, average))
            for row in rows
        ]

    def scored_phrase(self, pair: tuple[str, str]) -> list[tuple[int, float]]:
        first, second = (self.lexemes(word) for word in pair)
        if not first or not second:
            return []
        where = f"search @@ phraseto_tsquery('{CONFIG}', ?)"
        rows = self._positions(where, [first[0], second[0]], [f"{pair[0]} {pair[1]}"])
        total, average = self.stats()
        counted = []
        for memory_id, length, at_first, at_second in rows:
            follows = set(at_second or ())
            tf = sum(1 for p in at_first or () if p + 1 in follows)
            if tf:
                counted.append((memory_id, tf, int(length or 0)))
        held = len(counted)
        return [(i, bm25(tf, length, total, held, average)) for i, tf, length in counted]

    def _any(self, words: list[str]) -> str:
        return " || ".join(f"plainto_tsquery('{CONFIG}', ?)" for _ in words)

    def readable(self, words: list[str], project: str) -> set[int]:
        sql = f"SELECT id FROM memories WHERE {_LIVE} AND search @@ ({self._any(words)}) AND {_READABLE}"
        return {row[0] for row in self.db.execute(sql, [*words, project])}

    def recent(self, words: list[str], project: str, cap: int) -> list[int]:
        sql = (
            f"SELECT id FROM memories WHERE {_LIVE} AND search @@ ({self._any(words)}) "
            f"AND {_READABLE} ORDER BY id DESC LIMIT ?"
        )
        return [row[0] for row in self.db.execute(sql, [*words, project, cap])]

    def holding(self, word: str, project: str, oldest: int) -> list[int]:
        sql = (
            f"SELECT id FROM memories WHERE {_LIVE} AND search @@ plainto_tsquery('{CONFIG}', ?) "
            f"AND {_READABLE} AND id >= ?"
        )
        return [row[0] for row in self.db.execute(sql, [word, project, oldest])]

    def raw(self, expression: str, project: str, cap: int) -> list[tuple[int, float]]:
        sql = (
            f"SELECT id, ts_rank_cd(search, query) FROM memories, "
            f"websearch_to_tsquery('{CONFIG}', ?) query WHERE {_LIVE} AND search @@ query "
            f"AND {_READABLE} ORDER BY 2 DESC, id LIMIT ?"
        )
        return [(row[0], float(row[1])) for row in self.db.execute(sql, [expression, project, cap])]
