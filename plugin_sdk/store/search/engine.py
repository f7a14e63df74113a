"""Search: a question as typed, to the project's best-matching live memories.

The steps (``docs/search.md`` has the reasoning and the settings):

1. **Read the query** (``query.py``): content words and adjacent pairs;
   words that only name a time go to ``when.py``.
2. **Common words.** A word held by more than ``common_share`` of the
   indexed memories and more than ``common_min`` of them is *common*: it is
   left out of candidate generation (its cost would grow with the store) and
   only scored on the candidates the other words found. When every word is
   common, the candidates are the ``candidates`` most recent memories (highest
   ids) holding any of them. So a query's cost is bounded whatever the size.
3. **Candidates**: for each other word, its ``candidates`` best memories by
   bm25, the project applied inside the MATCH (``fts_scope``).
4. **Lexical score** (``ranking.py``): the sum of the words' scores (bm25
   with BM25+'s lower bound, a name the query writes weighted up), times a
   coverage bonus, plus matched phrases.
5. **Context and store signals** (``ranking.py``): neighbours, headers,
   importance, strength, recency, pinning, entities, time.
6. **Plugins**: ids offered by ``search_candidates`` are fused with the
   ranked list by a noisy OR (``ranking.combine``): the score as a share of
   the best score, *s*, and for each list offering the memory
   ``v = plugin_weight`` × (``rrf_k`` + 1) / (``rrf_k`` + position), give
   ``s + v × (1 − s)``; ``search_rank`` may reorder the result.

Ties break by memory id, so the same store and query give the same list.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from plugin_sdk.errors import InvalidMemory
from plugin_sdk.store import driver
from plugin_sdk.store.search import query as q
from plugin_sdk.store.search.ranking import (
    Found,
    bm25_idf,
    combine,
    found,
    fuse,
    rank,
    settings,
    term_score,
)
from plugin_sdk.store.search.when import TimeRange, time_range
from plugin_sdk.store.tables.memories.search import fulltext
from plugin_sdk.store.visibility import readable_sql

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

_T = TypeVar("_T")


def stopwords(store: Store, language: str) -> frozenset[str]:
    """The shipped list for ``language`` plus every installed pack's ``search.stopwords``."""
    key = (language, *store.tables.packs.hashes())
    cache: dict[Any, frozenset[str]] = store.__dict__.setdefault("_stopwords", {})
    if key not in cache:
        words = set(q.shipped_stopwords(language))
        for _, document in store.tables.packs.documents():
            for word in json.loads(document).get("search", {}).get("stopwords", []):
                words.update(q.tokens(word))
        cache.clear()
        cache[key] = frozenset(words)
    return cache[key]


def indexed_rows(store: Store) -> int:
    """Rows in the full-text index (live memories), without a scan."""
    return fulltext(store).rows()


def find(
    store: Store,
    text: str,
    *,
    project: str,
    limit: int,
    category: str | None = None,
    raw: bool = False,
) -> list[Found]:
    """The ranked matches of ``text`` among ``project``'s readable live memories."""
    conf = settings(store)
    cap = max(int(conf["candidates"]), limit)
    parsed = q.parse(text, stopwords(store, str(conf["language"])))
    span = time_range(text, store.clock())
    if raw:
        hits = _raw(store, text, project, cap)
    else:
        words = [w for w in parsed.words if not (span and w in span.words)]
        named = q.names(text)
        hits = _lexical(
            store, words, parsed.phrases, project, cap, conf, keep=max(2 * limit, 40), named=named
        )
        if not hits and span is not None:
            hits = _in_span(store, project, span, cap)
    # Only the first ``limit`` places are returned, unless plugins' lists or a
    # category filter may bring later ones forward.
    fused = bool(store.plugins.hook.search_candidates.get_hookimpls())
    exact = None if fused or category is not None else limit
    ranked = rank(store, hits, parsed, span, conf, context=not raw, exact=exact)
    ranked = _fuse_plugins(store, text, project, cap, ranked, conf)
    if category is not None:
        ranked = _in_category(store, ranked, category)
    return ranked


def _lexical(
    store: Store,
    words: list[str],
    phrases: Iterable[tuple[str, str]],
    project: str,
    cap: int,
    conf: dict[str, Any],
    *,
    keep: int,
    named: frozenset[str] = frozenset(),
) -> dict[int, Found]:
    if not words:
        return {}
    index = fulltext(store)
    # One read of the index for the whole query (``Fts5Index.matches``): the
    # indexed rows, which words are common, and for each rare word its row
    # count and its best readable rows (the project applied inside the MATCH);
    # phrases of rare pairs.
    common = (int(conf["common_min"]), float(conf["common_share"]))
    matched = _guard(index.matches, words, list(phrases), project, cap, common)
    total, cutoff = matched.total, matched.cutoff
    rare = matched.rare
    if not rare:
        return _recent(store, words, project, cap)
    terms: dict[int, dict[str, float]] = {}
    weight = {w: idf(total, cutoff + 1) for w in words}  # common words: at least cutoff + 1 rows
    delta, names_weight = float(conf["bm25_delta"]), float(conf["name_weight"])
    for word in rare:
        weight[word] = idf(total, matched.held[word])
        # ranking.term_score, written out: this loop runs for every row of every word
        floor = term_score(0.0, bm25_idf(total, matched.held[word]), delta)
        scale = names_weight if word in named else 1.0
        for memory_id, score in matched.best[word]:
            terms.setdefault(memory_id, {})[word] = scale * score + floor
    phrased: dict[int, float] = {}
    for rows in matched.phrases:
        for memory_id, score in rows:
            if memory_id in terms:
                phrased[memory_id] = phrased.get(memory_id, 0.0) + score
    lexical = fuse(terms, phrased, len(rare), conf)
    best = sorted(lexical, key=lambda i: (-lexical[i], i))[:keep]
    weak = q.shipped_stopwords(str(conf["language"]), "weak")
    for word in weight.keys() & weak:
        weight[word] *= float(conf["recall_weak"])
    held = {w for w in words if w not in rare} | {w for ws in terms.values() for w in ws}
    for word in (
        weight.keys() & named & held
    ):  # a name the store knows: as telling as the rarest word
        weight[word] = max(weight[word], float(conf["recall_name"]) * idf(total, 0))
    mass = sum(weight.values()) or 1.0
    hits = {i: found(i, lexical[i], terms[i], phrased.get(i, 0.0)) for i in best}
    for hit in hits.values():
        hit.evidence = sum(weight[w] for w in hit.terms) / mass
    return hits


def idf(total: int, held: int) -> float:
    """A word's inverse document frequency (BM25's, kept positive): ``ln(1 + (N − n + ½)/(n + ½))``."""
    return math.log(1.0 + (total - held + 0.5) / (held + 0.5))


def _recent(store: Store, words: list[str], project: str, cap: int) -> dict[int, Found]:
    """Every word is common: the most recent memories holding any, by how many they hold."""
    index = fulltext(store)
    hits = {memory_id: Found(memory_id) for memory_id in _guard(index.recent, words, project, cap)}
    if not hits:
        return hits
    oldest = min(hits)
    for word in words:
        for memory_id in _guard(index.holding, word, project, oldest):
            if memory_id in hits:
                hits[memory_id].terms[word] = 1.0
    for hit in hits.values():
        hit.lexical = len(hit.terms) / len(words)
        hit.evidence = hit.lexical  # every word is common: they weigh about the same
        hit.why.append("matched " + ", ".join(sorted(hit.terms)) + " (common words: recent first)")
    return hits


def _guard(read: Callable[..., _T], *args: Any) -> _T:
    """A read of the index; a query the index refuses is the caller's bad query."""
    try:
        return read(*args)
    except driver.OperationalError as error:
        raise InvalidMemory(f"bad search query: {error}") from error


def _raw(store: Store, text: str, project: str, cap: int) -> dict[int, Found]:
    """Expert syntax of the engine's index, passed through (within the project); its score alone."""
    expression = q.clean(text)
    if not expression.replace('"', "").strip():
        return {}
    rows = _guard(fulltext(store).raw, expression, project, cap)
    return {
        memory_id: Found(memory_id, lexical=max(score, 1e-9), evidence=1.0)
        for memory_id, score in rows
    }


def _in_span(store: Store, project: str, span: TimeRange, cap: int) -> dict[int, Found]:
    """A query that names only a time: the memories of that span, latest first."""
    sql = """SELECT id FROM memories WHERE project = ? AND status = 'active'
             AND occurred_at >= ? AND occurred_at < ? ORDER BY occurred_at DESC, id DESC LIMIT ?"""
    params = [project, span.start or "", span.end or "\uffff", cap]
    rows = store.db.execute(sql, params)
    return {row[0]: Found(row[0], lexical=1.0, evidence=1.0) for row in rows}


def _fuse_plugins(
    store: Store, text: str, project: str, cap: int, ranked: list[Found], conf: dict[str, Any]
) -> list[Found]:
    hook = store.plugins.hook.search_candidates
    if not hook.get_hookimpls():
        return ranked
    lists = [ids for ids in hook(store=store, query=text, project=project, limit=cap) if ids]
    if not lists:
        return ranked
    k = float(conf["rrf_k"])
    by_id = {hit.memory_id: hit for hit in ranked}
    offered = sorted({int(i) for ids in lists for i in ids} - by_id.keys())
    gate = max((hit.evidence for hit in ranked), default=0.0)  # the query's best lexical evidence
    for memory_id in _readable(store, offered, project):
        by_id[memory_id] = Found(
            memory_id, evidence=gate, why=["offered by a search_candidates plugin"]
        )
    scores = {hit.memory_id: hit.score for hit in ranked}
    offered_lists = [[int(i) for i in ids if int(i) in by_id] for ids in lists]
    fused = combine(scores, offered_lists, float(conf["plugin_weight"]), k)
    for memory_id, value in fused.items():
        by_id[memory_id].score = value
    return sorted((by_id[i] for i in fused), key=lambda hit: (-hit.score, hit.memory_id))


def _readable(store: Store, ids: list[int], project: str) -> list[int]:
    if not ids:
        return []
    sql = f"""SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(?))
              AND status = 'active' AND {readable_sql("")}"""
    return [row[0] for row in store.db.execute(sql, [json.dumps(ids), project])]


def _in_category(store: Store, ranked: list[Found], category: str) -> list[Found]:
    sql = "SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(?)) AND category = ?"
    keep = {
        row[0]
        for row in store.db.execute(sql, [json.dumps([h.memory_id for h in ranked]), category])
    }
    return [hit for hit in ranked if hit.memory_id in keep]


def not_live(
    store: Store, text: str, project: str, category: str | None, statuses: list[str], limit: int
) -> list[dict[str, Any]]:
    """Rows of ``statuses`` (archived, superseded: not indexed) holding a query word.

    A scan of the project's rows of those statuses (``LIKE``), most words held
    first, then by id; asked for explicitly (``include_archived``...), never by default.
    """
    words = [w for w in q.tokens(text) if len(w) > 2][:8]
    if not words or limit < 1:
        return []
    likes = " OR ".join("content LIKE ?" for _ in words)
    sql = f"""SELECT * FROM memories WHERE project = ?
              AND status IN ({", ".join("?" * len(statuses))})
              {"AND category = ?" if category else ""} AND ({likes}) ORDER BY id"""
    params: list[Any] = [project, *statuses, *([category] if category else [])]
    params += [f"%{w}%" for w in words]
    rows = list(store.db.query(sql, params))
    held = {row["id"]: sum(1 for w in words if w in row["content"].lower()) for row in rows}
    rows.sort(key=lambda row: (-held[row["id"]], row["id"]))
    return rows[:limit]
