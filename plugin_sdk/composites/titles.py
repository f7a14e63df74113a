"""A group's title: a phrase a person would write, taken from its most central member.

The map names each group by the leading clause of the member that best
stands for it (:func:`title`), not by a list of its frequent words. A
member's leading clause (:func:`lead`) is its first line's first sentence,
without parentheticals; before a colon when what precedes it names
something (``Alert DiskUsageHigh: warning at 80%`` gives ``Alert
DiskUsageHigh``), after it when it is only a tag or a date (``2026-08-19
SEV2: kafka-2 filled its data disk`` gives ``kafka-2 filled its data
disk``); cut at ``;``, a dash or a comma after three words; at most
:data:`MAX_WORDS` words and :data:`MAX_CHARS` characters, cut at a word and
ending in ``…`` when cut. Every word of a title is a word of a member.

The central member is the one whose terms weigh most in the group: each of
its terms scores ``share(t, group) * log(1 + N / df(t))`` (the label
terms' weight, ``labels.py``), summed and divided by the square root of its
term count, so a long memory does not win by length. A title already
taken (a sibling's, a child's) passes to the next member. The host's
model, when there is one, still writes the header text (``mapping.py``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

MAX_WORDS = 9
MAX_CHARS = 64
CUT = "…"
_PAREN = re.compile(r"\s*\([^()]*\)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`'\"])")
_BREAK = re.compile(r"\s*;\s*|\s+[—–-]\s+")
_BULLET = re.compile(r"^(?:[#>*+-]+\s+|\d+[.)]\s+)+")
_NAMING = re.compile(r"[^\W\d_][\w.-]{2,}")  # a word of letters, as a colon's prefix must hold
_DANGLING = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "that",
        "this",
        "than",
        "then",
        "so",
        "if",
        "when",
        "which",
        "who",
        "via",
        "per",
        "into",
        "onto",
    ]
)


def is_word_list(text: str) -> bool:
    """Whether a text is a bare comma list of single words (``never, prod, staging``)."""
    pieces = [p for p in (p.strip() for p in text.split(",")) if p]
    return len(pieces) >= 2 and all(len(p.split()) == 1 for p in pieces)


def lead(text: str) -> str:
    """The leading clause of a memory's text (see the module docstring); empty only for blank text."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    raw = " ".join(_BULLET.sub("", line).split()) or " ".join(line.split())
    clause = " ".join(_PAREN.sub("", raw).split()) or raw
    clause = _SENTENCE.split(clause, 1)[0]
    before, colon, after = clause.partition(": ")
    if colon and after.strip():
        clause = before if len(_NAMING.findall(before)) >= 2 else after
    clause = _BREAK.split(clause, 1)[0] or clause
    head = clause.split(", ", 1)[0]
    if len(head.split()) >= 3 or is_word_list(clause):
        clause = head
    found = _bound(clause.strip(" .,;:") or raw)
    if is_word_list(found):  # a text that is itself a list: its first item
        found = found.split(",")[0].strip() or " ".join(found.replace(",", " ").split())
    return found


def _bound(clause: str) -> str:
    words = clause.split()
    kept: list[str] = []
    for word in words:
        if len(kept) == MAX_WORDS or len(" ".join([*kept, word])) > MAX_CHARS - 1:
            break
        kept.append(word)
    if not kept:  # one word longer than the bound
        return words[0][: MAX_CHARS - 1] + CUT if words else ""
    if len(kept) == len(words):
        return " ".join(kept)
    while len(kept) > 1 and kept[-1].lower().strip(",;:") in _DANGLING:
        kept.pop()
    text = " ".join(kept).rstrip(" ,;:.")
    if text.count("`") % 2:
        text = text.replace("`", "")
    return text + CUT


def title(
    members: Sequence[tuple[set[str], str]],
    df: Mapping[str, int],
    total: int,
    *,
    taken: Collection[str] = (),
) -> str:
    """The title of a group whose members are (terms, text): the lead of its central member.

    ``df`` and ``total`` are the category's document frequencies and size;
    a lead in ``taken`` or shorter than two words passes to the next member
    (the best lead is kept when none is left).
    """
    size = len(members) or 1
    counts: Counter[str] = Counter(t for words, _ in members for t in words)

    def weight(words: set[str]) -> float:
        score = sum(
            (counts[t] / size) * math.log(1 + total / max(df.get(t, counts[t]), 1))
            for t in sorted(words)
        )
        return score / math.sqrt(len(words)) if words else 0.0

    ranked = sorted(range(len(members)), key=lambda n: (-weight(members[n][0]), n))
    leads: list[str] = []  # computed as far as needed: most groups stop at their first member
    for n in ranked:
        text = lead(members[n][1])
        if not text:
            continue
        if text not in taken and len(text.split()) >= 2:
            return text
        leads.append(text)
    return next((text for text in leads if text not in taken), leads[0] if leads else "")
