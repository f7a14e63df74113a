"""Full text on PostgreSQL: the reads search makes of its index, as FTS5's answer them.

The index is a generated ``tsvector`` column of ``memories`` (``search``,
text search configuration ``memsdk``: the content cut into runs of letters
and digits as the query parser cuts it, English Snowball stemming, no
stopword list: stopwords are the query parser's), with a GIN index on the
live memories, and ``search_len``, the number of tokens. The corpus counts
bm25 needs (live rows, their total length) are kept in ``search_stats`` by
statement triggers, so reading them costs one row, and each lexeme's count of
live rows in ``search_terms`` (migration m028), so whether a word is common
costs one row too: a GIN index finds a word's rows only through the table.

A query's words are read in one statement (:meth:`TsIndex.matches`,
``_MATCHES``): one round trip, the rows of each rare word from
``search_postings`` (migration m031: each live memory's lexemes with their
counts, the memory's length and its read rule, kept by statement triggers),
the project applied there, and only each rare word's best ``cap`` rows sent
back. Scores are FTS5's bm25, the same formula (k1 = 1.2, b = 0.75, idf =
ln((N − n + 0.5)/(n + 0.5)), at least 1e-6), computed in that statement
from each matching row's term frequency and length, so both engines rank
alike (FTS5 counts the project column's token in a row's length; this
counts the content's tokens). ``ts_rank_cd`` was measured in its place on
the retrieval benchmark and not kept (``docs/search.md``, "On PostgreSQL").
Expert queries (``raw=True``) are PostgreSQL's ``websearch_to_tsquery``
syntax, ranked by ``ts_rank_cd``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from plugin_sdk.store.tables.memories.search import Matches
from plugin_sdk.store.visibility import readable_sql

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

K1 = 1.2
B = 0.75
CONFIG = "memsdk"
_LIVE = "status = 'active'"
_READABLE = readable_sql("")
#: The read rule in a statement of named parameters (``_MATCHES``).
_READABLE_NAMED = _READABLE.replace("?", ":project")


def bm25(tf: int, length: int, rows: int, held: int, average: float) -> float:
    """FTS5's bm25 of one term in one row (``tf`` occurrences in ``length`` tokens).

    The formula ``_MATCHES`` computes in SQL, operation for operation (so the
    same floating-point result); kept here as its statement in Python.
    """
    idf = max(math.log((rows - held + 0.5) / (held + 0.5)), 1e-6)
    norm = K1 * (1 - B + B * length / (average or 1.0))
    return idf * tf * (K1 + 1) / (tf + norm)


def _bm25_sql(tf: str, length: str, held: str) -> str:
    """:func:`bm25` as an SQL expression over ``stats`` (``n``, ``average``) of ``_MATCHES``."""
    return (
        f"greatest(ln((stats.n - {held} + 0.5) / ({held} + 0.5)), 1e-6) * {tf} * :k1p "
        f"/ ({tf} + :k1 * (:one_b + :b * {length} / stats.average))"
    )


# One statement for a query's words (``TsIndex.matches``), read top to bottom:
# - stats: the corpus counts (average length 1 when there is none, as FTS5's)
#   and the common cutoff (``common_cutoff``, the same arithmetic);
# - word: each word (k: its place), its tsquery, and its first lexeme (the one
#   bm25 counts: a word is one token, so one lexeme but in rare cases) as a
#   tsquery of that lexeme alone;
# - held: each word's count of live rows: for a word of one lexeme (nearly
#   all) its row of ``search_terms`` (migration m028, kept by triggers), else
#   its rows from the GIN index counted up to cutoff + 1;
# - rare: the words held by at most the cutoff: a common word's rows are never
#   read;
# - best: each rare word's readable rows with their bm25, only the best ``cap``
#   (a bounded sort each). A word of one lexeme reads its rows from
#   ``search_postings`` (migration m031: one row a live memory and lexeme,
#   with the lexeme's occurrences, the memory's length and who may read it),
#   an index-only scan of one key range; another word reads them from the GIN
#   index and the heap, its occurrences counted by ``ts_rank_cd`` with every
#   weight 1 and no normalisation on the first lexeme (the sum over its
#   covers, each one occurrence);
# - phrase: each pair of rare words, the rows holding the two adjacent, with the
#   bm25 of the adjacencies over the rows holding the phrase. The rows holding
#   both first lexemes are the merge of their two postings (both in id order);
#   the adjacencies are then counted as a lexeme's occurrences are:
#   ``ts_rank_cd`` on the phrase of the two first lexemes, where each cover is
#   one adjacent pair (two positions one apart) and adds exactly 1.
# ``OFFSET 0`` keeps a term frequency one computation (PostgreSQL would
# otherwise copy the subquery into each place bm25 uses it).
_MATCHES = f"""
WITH stats AS (
    SELECT n, average, greatest(:common_min, floor(n * :common_share))::bigint AS cutoff
    FROM (SELECT coalesce(max(rows), 0)::float8 AS n,
                 coalesce(nullif(max(total_len)::float8 / nullif(max(rows), 0), 0), 1.0) AS average
          FROM search_stats) counts
), word AS (
    SELECT k, w, plainto_tsquery('{CONFIG}', w) AS query, lexeme, quote_literal(lexeme)::tsquery AS one
    FROM unnest(:words::text[]) WITH ORDINALITY AS t(w, k) CROSS JOIN LATERAL (
        SELECT (SELECT lexeme FROM unnest(to_tsvector('{CONFIG}', memsdk_words(w)))
                ORDER BY positions[1] LIMIT 1) AS lexeme
    ) first
), held AS MATERIALIZED (
    SELECT word.k, CASE WHEN word.query = word.one
        THEN coalesce((SELECT rows FROM search_terms WHERE lexeme = word.lexeme), 0)
        ELSE (SELECT count(*) FROM (
                  SELECT 1 FROM memories WHERE {_LIVE} AND search @@ word.query
                  LIMIT (SELECT cutoff + 1 FROM stats)
              ) limited)
    END AS held FROM word
), counted AS (
    SELECT word.k, word.w, word.query, word.lexeme, word.one, held.held, held.held::float8 AS n
    FROM word JOIN held ON held.k = word.k
), rare AS MATERIALIZED (
    SELECT counted.* FROM counted CROSS JOIN stats
    WHERE lexeme IS NOT NULL AND held <= stats.cutoff
), best AS (
    SELECT rare.k, b.id, b.score FROM rare CROSS JOIN stats CROSS JOIN LATERAL (
        SELECT p.memory_id AS id, {_bm25_sql("p.tf", "p.len", "rare.n")} AS score
        FROM search_postings p
        WHERE rare.query = rare.one AND p.lexeme = rare.lexeme
          AND (p.project = :project OR p.shared)
        ORDER BY score DESC, id LIMIT :cap
    ) b
    UNION ALL
    SELECT rare.k, b.id, b.score FROM rare CROSS JOIN stats CROSS JOIN LATERAL (
        SELECT h.id, {_bm25_sql("f.tf", "h.len", "rare.n")} AS score
        FROM (SELECT id, search_len AS len, search FROM memories
              WHERE rare.query <> rare.one AND {_LIVE} AND search @@ rare.query
                AND {_READABLE_NAMED}) h
        CROSS JOIN LATERAL (
            SELECT ts_rank_cd('{{1,1,1,1}}', h.search, rare.one, 0)::integer AS tf OFFSET 0
        ) f
        ORDER BY score DESC, id LIMIT :cap
    ) b
), pair AS MATERIALIZED (
    SELECT p.j, ra.lexeme AS a, rb.lexeme AS b,
           phraseto_tsquery('{CONFIG}', p.a || ' ' || p.b) AS query,
           tsquery_phrase(ra.one, rb.one) AS adjacent
    FROM unnest(:first::text[], :second::text[]) WITH ORDINALITY AS p(a, b, j)
    CROSS JOIN LATERAL (SELECT lexeme, one FROM rare WHERE w = p.a ORDER BY k LIMIT 1) ra
    CROSS JOIN LATERAL (SELECT lexeme, one FROM rare WHERE w = p.b ORDER BY k LIMIT 1) rb
), phrase AS (
    SELECT j, id, len, tf, count(*) OVER (PARTITION BY j) AS held FROM (
        SELECT pair.j, m.id, m.search_len AS len,
               ts_rank_cd('{{1,1,1,1}}', m.search, pair.adjacent, 0)::integer AS tf
        FROM pair CROSS JOIN LATERAL (
            SELECT x.memory_id FROM search_postings x JOIN search_postings y
                ON y.lexeme = pair.b AND y.memory_id = x.memory_id
            WHERE x.lexeme = pair.a OFFSET 0
        ) both_words
        JOIN memories m ON m.id = both_words.memory_id
        WHERE m.search @@ pair.query OFFSET 0
    ) adjacent WHERE tf > 0
)
SELECT 's', n::bigint, cutoff, NULL::float8 FROM stats
UNION ALL SELECT 'h', k, NULL::bigint, held::float8 FROM counted
UNION ALL SELECT 'b', k, id, score FROM best
UNION ALL SELECT 'p', j, id, {_bm25_sql("tf", "len", "held::float8")} FROM phrase CROSS JOIN stats
"""


class TsIndex:
    """What search reads from the ``tsvector`` index; the calls of the FTS5 owner's ``Fts5Index``."""

    def __init__(self, store: Store) -> None:
        self.db = store.db

    def stats(self) -> tuple[int, float]:
        """``(live rows, average length)`` from ``search_stats``."""
        row = self.db.execute("SELECT rows, total_len FROM search_stats").fetchone()
        if row is None or not row[0]:
            return 0, 0.0
        return int(row[0]), float(row[1]) / int(row[0])

    def rows(self) -> int:
        return self.stats()[0]

    def matches(
        self,
        words: list[str],
        pairs: list[tuple[str, str]],
        project: str,
        cap: int,
        common: tuple[int, float],
    ) -> Matches:
        """``Fts5Index.matches`` in one statement (``_MATCHES``): counts, best rows, phrases."""
        params = {
            "words": list(words),
            "first": [a for a, _ in pairs],
            "second": [b for _, b in pairs],
            "common_min": common[0],
            "common_share": common[1],
            "cap": cap,
            "project": project,
            "k1": K1,
            "k1p": K1 + 1,
            "one_b": 1 - B,
            "b": B,
        }
        found = Matches()
        held: dict[int, int] = {}
        best: dict[int, list[tuple[int, float]]] = {}
        phrases: dict[int, list[tuple[int, float]]] = {}
        for kind, k, memory_id, value in self.db.execute(_MATCHES, params).fetchall():
            if kind == "s":
                found.total, found.cutoff = k, memory_id
            elif kind == "h":
                held[k] = int(value)
            elif kind == "b":
                best.setdefault(k, []).append((memory_id, value))
            else:
                phrases.setdefault(k, []).append((memory_id, value))
        rare = {k: words[k - 1] for k in sorted(held) if held[k] <= found.cutoff}
        found.held = {word: held[k] for k, word in rare.items()}
        found.rare = list(rare.values())
        if not found.rare:
            return Matches(total=found.total, cutoff=found.cutoff)
        for k, word in rare.items():
            rows = best.get(k, [])
            rows.sort(key=lambda r: (-r[1], r[0]))
            found.best[word] = rows
        found.phrases = [
            phrases.get(n, [])
            for n, pair in enumerate(pairs, 1)
            if pair[0] in found.held and pair[1] in found.held
        ]
        return found

    def _any(self, words: list[str]) -> str:
        return " || ".join(f"plainto_tsquery('{CONFIG}', ?)" for _ in words)

    def readable(self, words: list[str], project: str) -> set[int]:
        """Memories holding any of ``words`` that ``project`` may read (``Fts5Index.readable``)."""
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
