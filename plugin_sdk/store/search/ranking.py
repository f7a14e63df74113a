"""The ranking formula: lexical relevance fused with what the store knows.

For a memory *d* of the candidates (the weights are settings, see below)::

    term_w(d)  = m_w × bm25_w(d) + bm25_delta × idf_w     (BM25+'s lower bound; m_w:
                                                             name_weight for a name the
                                                             query writes, else 1)
    lexical(d) = Σ_words term_w(d) × (1 + coverage × (matched(d) − 1) / (n − 1))
                 + phrase × Σ_pairs bm25_pair(d)
    context(d) = lexical(d)
                 + room(d) × (neighbour_1 × Σ lexical(memories 1 away)
                              + neighbour_2 × Σ lexical(memories 2 away)
                              + neighbour_far × Σ lexical(memories 3 to neighbour_reach away,
                                                          of the neighbour_far_hits best))
                 + header × max lexical(its details)          (d heads a sequence/theme)
    room(d)    = 1 − neighbour_length + neighbour_length × min(1, length(d) / mean length)
    prior(d)   = 1 + importance × (importance(d) − 50) / 50
                   + strength × s/(1 + s)                     (consolidated strength s)
                   + recency × 0.5 ^ (age_days / recency_half_life_days)
                   + pinned × pinned(d)
                   + entity × min(2, entities of the query d is linked to)
                   + time × [occurred_at (else created_at) in the query's span]
                   + answer × [d holds the kind of answer the question asks for]
    score(d)   = context(d) × max(prior(d), 0.05)

The weights are **settings** a store may change: table ``search_settings``,
one row per changed name (:func:`set_setting`); a name without a row has its
default from :data:`DEFAULTS`.

*bm25_w* is FTS5's bm25 of the word alone (k1 = 1.2, b = 0.75; its sum over
the words is the query's bm25) and *idf_w* its idf there (:func:`bm25_idf`).
The ``bm25_delta`` term is BM25+'s lower bound on the term-frequency part
(Lv and Zhai, "Lower-Bounding Term Frequency Normalization", CIKM 2011): in
bm25 a long memory's match can score next to nothing against a short one's,
so a long turn holding the query's rare word loses to short ones holding
none of its other words; with the bound every match of a word counts at
least ``bm25_delta × idf_w``. *n* is the number of content words. A
memory's **neighbours** are the live memories of its episode written next to
it (ids within ``neighbour_reach``; ``episodes.py``: a conversation's turns, a
note's lines) and its neighbours in a sequence composite; a turn that
answers a question is found through the question, two or three turns on.
``room`` is a document length prior on what a memory borrows from its
neighbours (:func:`length_prior`): "Mhm" next to a match takes little of it. The account (``why``)
says which terms matched and which signals moved the score.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import InvalidMemory
from plugin_sdk.store.search import answers, episodes
from plugin_sdk.store.search.query import Query, tokens
from plugin_sdk.store.search.when import TimeRange

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


#: Every setting, with its default and what it does.
DEFAULTS: dict[str, Any] = {
    # Query reading
    "language": "en",  # stopword list: plugin_sdk/store/search/stopwords/<language>.txt
    "common_share": 0.01,  # a word in more than this share of indexed memories is common ...
    "common_min": 1000,  # ... and in more than this many: left out of candidate generation
    "candidates": 200,  # memories taken per word (and for the recent-rows fallback)
    # Lexical score
    "bm25_delta": 0.5,  # BM25+: a matched word scores at least this times its idf
    "name_weight": 1.5,  # a name the query writes (Tom, Postgres): its word's score times this
    "coverage": 2.0,  # bonus for matching more of the query's content words
    "phrase": 0.5,  # weight of a matched pair of adjacent content words
    # Context: a memory's neighbours (one episode, within neighbour_reach ids)
    "neighbour_1": 0.4,  # share of an adjacent memory's lexical score
    "neighbour_2": 0.4,  # share of the memory two away
    "neighbour_far": 0.2,  # share of a memory 3 to neighbour_reach away
    "neighbour_reach": 4,  # how far (in ids) an episode's neighbours are looked for (at least 2)
    "neighbour_far_hits": 10,  # only the best this many lexical matches lend that far
    "neighbour_length": 1.0,  # a neighbour shorter than the mean takes this share less, in
    # proportion (0: length ignored; 1: a turn half the mean length takes half the share)
    "header": 0.5,  # share of its best-matching detail's score a header gains
    # Store signals (multipliers around 1)
    "importance": 0.2,  # (importance - 50) / 50 times this
    "strength": 0.1,  # consolidated strength, squashed to 0..1, times this
    "recency": 0.05,  # 0.5 ** (age / recency_half_life_days) times this
    "recency_half_life_days": 90.0,
    "pinned": 0.2,
    "entity": 0.5,  # per entity of the query the memory is linked to (at most 2)
    "time": 1.0,  # memory in the span a query names ("last week", "in May")
    "answer": 1.0,  # memory holds the kind of answer the question asks for (answers.py)
    "rrf_k": 60,  # rank constant: a plugin's place p scores (rrf_k + 1) / (rrf_k + p)
    "plugin_weight": 0.3,  # at most this share of what a memory's lexical share leaves open
    # Recall's relevance floor: a memory is shown only when the IDF-weighted share of
    # the query's content words it holds (or the hit it is next to holds) reaches this
    "recall_floor": 0.2,
    "recall_context": 0,  # recall: this many best hits bring their episode neighbours as context
    "recall_weak": 0.25,  # the share of its IDF a weak word (stopwords/<language>-weak.txt) counts
    "recall_name": 1.0,  # a name the query writes (Tom, Postgres) and the store holds counts this
    # share of the IDF of a word no memory holds
}


def settings(store: Store) -> dict[str, Any]:
    """The store's effective search settings (defaults, overridden by stored values)."""
    values = dict(DEFAULTS)
    for name, value in store.tables.search.settings():
        if name in values:
            values[name] = json.loads(value)
    return values


def set_setting(store: Store, name: str, value: Any) -> None:
    """Change one setting; ``value=None`` returns it to its default."""
    if name not in DEFAULTS:
        raise InvalidMemory(f"unknown search setting {name!r}; settings are {', '.join(DEFAULTS)}")
    default = DEFAULTS[name]
    if value is not None:
        if isinstance(default, str) != isinstance(value, str) or isinstance(value, bool):
            raise InvalidMemory(f"search setting {name!r} takes a {type(default).__name__}")
        if not isinstance(value, str) and value < 0:
            raise InvalidMemory(f"search setting {name!r} cannot be negative")
    with store.atomic():
        if value is None:
            store.tables.search.reset_setting(name)
        else:
            store.tables.search.set_setting(name, json.dumps(value), store.now())


@attrs.define
class Found:
    """A candidate memory and its scores (higher is better), with the reasons."""

    memory_id: int
    lexical: float = 0.0
    terms: dict[str, float] = attrs.Factory(dict)
    phrases: float = 0.0
    context: float = 0.0
    score: float = 0.0
    why: list[str] = attrs.Factory(list)
    entities: list[int] = attrs.Factory(list)
    evidence: float = 0.0  # the query's evidence for it, 0..1 (the relevance floor)


def bm25_idf(total: int, held: int) -> float:
    """bm25's idf of a word ``held`` by that many of ``total`` rows, as FTS5's:
    ``ln((N − n + ½)/(n + ½))``, at least 1e-6.

    ``n`` is taken as at most ``N``: the two are counted by separate reads, and
    a write between them (another process's) can make ``n`` the larger.
    """
    held = min(held, total)
    return max(math.log((total - held + 0.5) / (held + 0.5)), 1e-6)


def term_score(bm25: float, idf: float, delta: float, weight: float = 1.0) -> float:
    """One word's part of a memory's lexical score: ``weight × bm25 + delta × idf``.

    ``bm25`` is the engine's score of the word in the memory (its frequency
    and the memory's length), ``idf`` the word's (:func:`bm25_idf`): BM25+'s
    lower bound ``delta`` on the frequency part, so any match counts at least
    ``delta × idf``; ``weight`` (``name_weight`` for a name the query writes,
    else 1) scales the part that depends on the memory.
    """
    return weight * bm25 + delta * idf


def fuse(
    terms: dict[int, dict[str, float]], phrased: dict[int, float], words: int, conf: dict[str, Any]
) -> dict[int, float]:
    """The lexical score of each candidate from its words' and phrases' bm25 scores."""
    coverage = float(conf["coverage"]) / max(words - 1, 1)
    phrase = float(conf["phrase"])
    return {
        memory_id: sum(scores.values()) * (1.0 + coverage * (len(scores) - 1))
        + phrase * phrased.get(memory_id, 0.0)
        for memory_id, scores in terms.items()
    }


def combine(
    scores: dict[int, float], lists: list[list[int]], weight: float, k: float
) -> dict[int, float]:
    """Score-aware fusion of the ranked scores with plugins' lists (``docs/search.md``).

    A memory's lexical side is its score as a share of the best score, *s*
    (0..1); each list holding it at ``position`` offers
    ``v = weight × (k + 1) / (k + position)`` (at most 1), and the two combine
    as a noisy OR: ``s + v × (1 − s)``, list after list. So a list lifts a
    memory by at most ``weight`` of what its lexical share leaves open: the
    lexical leader (share 1) stays first, a memory lexical search is nearly
    sure of moves little, and what it missed or ranked low can rise.
    """
    top = max(scores.values(), default=0.0) or 1.0
    fused = {memory_id: max(value, 0.0) / top for memory_id, value in scores.items()}
    for ids in lists:
        for position, memory_id in enumerate(dict.fromkeys(ids), start=1):
            share = fused.get(memory_id, 0.0)
            offer = min(1.0, weight * (k + 1) / (k + position))
            fused[memory_id] = share + offer * (1.0 - share)
    return fused


def found(memory_id: int, lexical: float, terms: dict[str, float], phrases: float) -> Found:
    """A lexical candidate, with why it was found."""
    why = ["matched " + ", ".join(sorted(terms))] + (["phrase"] if phrases else [])
    return Found(memory_id, lexical=lexical, terms=terms, phrases=phrases, why=why)


def rank(
    store: Store,
    found: dict[int, Found],
    query: Query,
    span: TimeRange | None,
    conf: dict[str, Any],
    *,
    context: bool = True,
    exact: int | None = None,
) -> list[Found]:
    """Context and store signals on top of the lexical scores; best first, ties by id.

    ``exact``: only the first ``exact`` places need be exact (the rest are in
    order of their scores without the answer-kind prior where that cannot
    lift them into those places); ``None``: every place.
    """
    if not found:
        return []
    for hit in found.values():
        hit.context = hit.lexical
    if context:
        _neighbours(store, found, conf)
        _headers(store, found, float(conf["header"]))
    _priors(store, found, query, span, conf, exact)
    return sorted(found.values(), key=lambda hit: (-hit.score, hit.memory_id))


def _ids(values: Any) -> str:
    return json.dumps(sorted(values))


def _neighbours(store: Store, found: dict[int, Found], conf: dict[str, Any]) -> None:
    far = float(conf["neighbour_far"])
    reach = max(int(conf["neighbour_reach"]), 2) if far else 2
    weights = {1: float(conf["neighbour_1"]), 2: float(conf["neighbour_2"])}
    weights |= {distance: far for distance in range(3, reach + 1)}
    if not any(weights.values()):
        return
    reaches = dict.fromkeys(found, 2)
    if reach > 2:  # the best lexical matches lend further
        lent_far = heapq.nsmallest(
            int(conf["neighbour_far_hits"]), found, key=lambda i: (-found[i].lexical, i)
        )
        reaches |= dict.fromkeys(lent_far, reach)
    nearby = episodes.nearby(store, reaches)
    share = length_prior(nearby.lengths, float(conf["neighbour_length"]))
    room = {other: share(other) for others in nearby.pairs.values() for other, _ in others}
    near = nearby.pairs
    gains: dict[int, float] = {}
    lent: dict[int, float] = {}  # the evidence a neighbour's gain carries (the floor)
    for memory_id, others in near.items():
        hit = found[memory_id]
        for other, distance in others:
            gains[other] = gains.get(other, 0.0) + weights[distance] * hit.lexical * room[other]
            if weights[distance] and hit.lexical > 0:
                lent[other] = max(lent.get(other, 0.0), hit.evidence)
    counted = {(a, b) for a, others in near.items() for b, _ in others}
    for a, b in store.tables.composites.sequence_steps(_ids(found)):
        if (a, b) not in counted:  # not already counted as written next
            gains[b] = gains.get(b, 0.0) + weights[1] * found[a].lexical
            if weights[1] and found[a].lexical > 0:
                lent[b] = max(lent.get(b, 0.0), found[a].evidence)
    for memory_id, gain in gains.items():
        if gain > 0:
            near_hit = found.setdefault(memory_id, Found(memory_id))
            near_hit.context += gain
            near_hit.evidence = max(near_hit.evidence, lent.get(memory_id, 0.0))
            near_hit.why.append("next to a match")


def length_prior(lengths: dict[int, int], weight: float) -> Callable[[int], float]:
    """The share of a neighbour's gain a memory takes for its length: a document length prior.

    ``1 − weight + weight × min(1, length / mean length)``, the mean over
    ``lengths`` (the memories the neighbour step read: the candidates and
    those around them); a memory whose length is not known takes all of it.
    A turn of a few words ("Mhm", "Where?") next to a match rarely holds what
    the question asks; a turn as long as the rest, written after the match,
    often does. Relevance grows with a document's length (Singhal, Buckley
    and Mitra, SIGIR 1996); Kraaij, Westerveld and Hiemstra (SIGIR 2002)
    make that a prior in proportion to length. Here it weighs only what a
    memory borrows from its neighbours, not its own match (bm25 already
    normalises that by length).
    """
    mean = sum(lengths.values()) / len(lengths) if lengths else 0.0
    weight = min(max(weight, 0.0), 1.0)
    if not weight or mean <= 0:
        return lambda memory_id: 1.0

    def share(memory_id: int) -> float:
        length = lengths.get(memory_id)
        return 1.0 if length is None else 1.0 - weight + weight * min(1.0, length / mean)

    return share


def _headers(store: Store, found: dict[int, Found], weight: float) -> None:
    if not weight:
        return
    best: dict[int, float] = {}
    lent: dict[int, float] = {}
    for head, member in store.tables.composites.live_heads_of(_ids(found)):
        best[head] = max(best.get(head, 0.0), found[member].lexical)
        lent[head] = max(lent.get(head, 0.0), found[member].evidence)
    for head, value in best.items():
        hit = found.get(head)
        if hit is None:
            hit = found[head] = Found(head)
        if value > 0:
            hit.context += weight * value
            hit.evidence = max(hit.evidence, lent[head])
            hit.why.append("heads a match")


def _priors(
    store: Store,
    found: dict[int, Found],
    query: Query,
    span: TimeRange | None,
    conf: dict[str, Any],
    exact: int | None,
) -> None:
    now = store.clock().astimezone(timezone.utc)
    words = set(query.tokens)
    entities: dict[int, list[int]] = {}
    for memory_id, entity_id, name in store.tables.entities.links.names(_ids(found)):
        slug = tokens(name.rsplit(":", 1)[-1])
        if slug and set(slug) <= words:
            entities.setdefault(memory_id, []).append(entity_id)
    half_life = float(conf["recency_half_life_days"])
    language = str(conf["language"])
    kind = answers.asked(query.text, language) if float(conf["answer"]) else None
    priors: dict[int, float] = {}
    texts: dict[int, str] = {}
    in_sql = store.engine == "sqlite"  # SQLite's julianday is native; PostgreSQL's is not
    for row in store.db.execute(
        f"""SELECT m.id, m.importance, m.pinned, coalesce(m.occurred_at, m.created_at) AS at,
                  {_AGE if in_sql else "NULL"}, c.strength, {"m.content" if kind else "NULL"}
           FROM memories m LEFT JOIN memory_cells c ON c.memory_id = m.id
           WHERE m.id IN (SELECT value FROM json_each(?))""",
        [now.isoformat(), _ids(found)] if in_sql else [_ids(found)],
    ):
        memory_id, importance, pinned, when, age, strength, content = row
        if not in_sql:
            age = _age_days(when, now)
        hit = found[memory_id]
        prior = 1.0 + float(conf["importance"]) * (importance - 50) / 50
        if strength is not None and strength > 0:
            prior += float(conf["strength"]) * (
                1.0 if math.isinf(strength) else strength / (1 + strength)
            )
        if half_life > 0 and age is not None:
            prior += float(conf["recency"]) * 0.5 ** (age / half_life)
        if pinned:
            prior += float(conf["pinned"])
        hit.entities = sorted(set(entities.get(memory_id, [])))
        if hit.entities:
            prior += float(conf["entity"]) * min(2, len(hit.entities))
            hit.why.append("names an entity of the query")
        if span is not None and span.contains(when):
            prior += float(conf["time"])
            hit.why.append(f"from {span.phrase}")
        priors[memory_id] = prior
        texts[memory_id] = content or ""
    if kind is not None:
        gain = float(conf["answer"])
        for memory_id in _could_rise(found, priors, gain, exact):
            if answers.holds(kind, texts[memory_id], query.text, language):
                priors[memory_id] += gain
                found[memory_id].why.append(f"holds a {kind}, as the question asks")
    for memory_id, prior in priors.items():
        hit = found[memory_id]
        hit.score = hit.context * max(prior, 0.05)


#: A memory's age in days, in SQL: SQLite's native julianday (bench/bench_priors.py).
_AGE = "max(0.0, julianday(?) - julianday(coalesce(m.occurred_at, m.created_at)))"


def _age_days(when: str | None, now: datetime) -> float | None:
    """Days from ``when`` (a stored ISO time; no zone reads as UTC, as SQLite's julianday) to ``now``.

    Never negative; ``None`` for text that is no time (no recency prior then).
    PostgreSQL's ages are computed here: its ``julianday`` is a SQL function of
    the compat schema, 2.4x the time of this read (``bench/bench_priors.py``);
    SQLite's stay in SQL, where julianday is native and a little quicker.
    """
    if not when:
        return None
    try:
        moment = datetime.fromisoformat(when)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return max(0.0, (now - moment).total_seconds() / 86400.0)


def _could_rise(
    found: dict[int, Found], priors: dict[int, float], gain: float, exact: int | None
) -> list[int]:
    """The memories whose answer-kind check can change the first ``exact`` places.

    Each memory's score lies between ``context × prior`` (no answer) and
    ``context × (prior + gain)``. A memory whose upper bound is below the
    ``exact``-th best lower bound cannot reach those places whatever it holds,
    so its text is not scanned (``None``: scan every memory).
    """
    ids = list(priors)
    if exact is None or len(ids) <= exact:
        return ids
    lower = sorted((found[i].context * max(p, 0.05) for i, p in priors.items()), reverse=True)
    bar = lower[exact - 1]
    return [i for i in ids if found[i].context * max(priors[i] + gain, 0.05) >= bar]
