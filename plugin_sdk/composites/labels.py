"""Labels that say what a group holds: its distinctive terms, in the manner of c-TF-IDF.

A group's label is the few terms that are frequent in the group and rare in
the rest of its category: each term ``t`` scores

    share(t, group) * log(1 + N / df(t))

where ``share`` is the fraction of the group's memories that contain ``t``,
``N`` the number of memories in the category and ``df(t)`` how many of them
contain ``t`` (BERTopic's class-based TF-IDF, on document frequencies).
Entity names linked to the memories (``world:person:anya`` gives ``anya``)
count as terms with :data:`ENTITY_BOOST`, terms that look like identifiers
(digits or ``-_.:/`` inside) with :data:`IDENTIFIER_BOOST`. Stopwords
(``plugin_sdk/store/search/stopwords``, the list search uses) and :data:`FILLERS` (words that say nothing
about a topic: ``instead``, ``use``, ``need``...) are never terms; neither is
a term only one memory of the group holds, unless the group has two or fewer.
Ties break alphabetically, so labels are deterministic.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping

from plugin_sdk.store.search.query import shipped_stopwords as stopwords

LABEL_TERMS = 3
ENTITY_BOOST = 1.5
IDENTIFIER_BOOST = 1.3
_CONTRACTION = re.compile(r"\w+n[\'\u2019]t\b|[\'\u2019](?:s|re|ve|ll|d|m)\b")
_MEASURE = re.compile(r"\d[\d.,:/-]*[a-z%]{0,4}$")  # 42, 1.2.3, 10kib, 15ms: figures, not topics
_TERM = re.compile(r"[^\W_][\w.:/-]*[^\W_]|[^\W\d_]{3,}")
FILLERS = frozenset(
    """instead use used uses using need needs needed make makes made take takes took run runs
    ran get gets got goes going go new old first last next time times week weeks day days
    hour hours minute minutes keep kept want wants know known see seen say says said way
    ways thing things lot lots sure okay ok yes true false note notes set sets put puts
    good better best bad worse worst big small long short high low able per via
    memory memories""".split()  # noqa: SIM905
)


def terms(text: str) -> set[str]:
    """The content terms of a text: lower case, at least three characters, no stopwords."""
    found = set()
    stop = stopwords()
    for match in _TERM.findall(_CONTRACTION.sub(" ", text.lower())):
        term = match.strip(".:/-")
        if len(term) >= 3 and term not in stop and term not in FILLERS and not _MEASURE.match(term):
            found.add(term)
    return found


def is_identifier(term: str) -> bool:
    return any(not ch.isalpha() for ch in term)


def label(
    members: Iterable[set[str]],
    df: Mapping[str, int],
    total: int,
    *,
    entities: Iterable[set[str]] = (),
    avoid: Iterable[str] = (),
) -> list[str]:
    """The :data:`LABEL_TERMS` most distinctive terms of a group (see the module docstring).

    ``members`` are the term sets of the group's memories, ``df`` the
    category's document frequencies over ``total`` memories; ``entities`` the
    entity terms of the members; ``avoid`` terms a parent already names.
    """
    sets = list(members)
    size = len(sets) or 1
    tf: Counter[str] = Counter(t for words in sets for t in words)
    boost: dict[str, float] = {}
    for names in entities:
        for name in names:
            tf[name] += 1
            boost[name] = ENTITY_BOOST
    least = 1 if size <= 2 else 2
    skip = set(avoid)
    scored = []
    for term, count in tf.items():
        if count < least or term in skip:
            continue
        weight = boost.get(term, IDENTIFIER_BOOST if is_identifier(term) else 1.0)
        score = (count / size) * math.log(1 + total / max(df.get(term, count), 1)) * weight
        scored.append((-score, term))
    chosen: list[str] = []
    for _, term in sorted(scored):
        if any(term in other or other in term for other in chosen):
            continue  # "postgres" and "postgres-16" say the same
        chosen.append(term)
        if len(chosen) == LABEL_TERMS:
            break
    return chosen


def contrast(
    groups: list[tuple[int, Counter[str]]],
    df: Mapping[str, int],
    total: int,
    *,
    boosted: Iterable[str] = (),
) -> list[list[str]]:
    """Labels for sibling groups that tell them apart (c-TF-IDF with the siblings as classes).

    ``groups`` are (size, term counts) of each sibling. A term scores
    ``share * log(1 + G / spread) * log(1 + N / df)``: its share of the group,
    how concentrated it is among the ``G`` siblings (``spread`` is the sum of
    its shares over them), and how rare it is in the category. No two
    siblings get the same label: a label that repeats an earlier sibling's
    takes the next best term instead of its last.
    """
    spread: dict[str, float] = {}
    for size, counts in groups:
        for term, count in counts.items():
            spread[term] = spread.get(term, 0.0) + count / max(size, 1)
    boost = set(boosted)
    classes = len(groups)
    taken: set[tuple[str, ...]] = set()
    labels = []
    for size, counts in groups:
        least = 1 if size <= 2 else 2
        scored = sorted(
            (
                -(count / size)
                * math.log(1 + classes / spread[term])
                * math.log(1 + total / max(df.get(term, count), 1))
                * (
                    ENTITY_BOOST
                    if term in boost
                    else IDENTIFIER_BOOST
                    if is_identifier(term)
                    else 1.0
                ),
                term,
            )
            for term, count in counts.items()
            if count >= least
        )
        ranked = [term for _, term in scored]
        chosen: list[str] = []
        for term in ranked:
            if any(term in other or other in term for other in chosen):
                continue
            chosen.append(term)
            if len(chosen) == LABEL_TERMS:
                if tuple(sorted(chosen)) not in taken:
                    break
                chosen.pop()  # the same as a sibling's: try the next term instead
        taken.add(tuple(sorted(chosen)))
        labels.append(chosen)
    return labels


def entity_term(name: str) -> str:
    """The last segment of an entity name, as a label term (``world:person:anya`` -> ``anya``)."""
    return name.rsplit(":", 1)[-1].lower()
