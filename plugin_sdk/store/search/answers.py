"""Answer kinds: what kind of answer a question asks for, and whether a memory holds one.

Open-domain question answering classifies a question by the type of its
expected answer (a number, a time, a person or place) and prefers passages
that hold a candidate of that type (Moldovan et al., "The Structure and
Performance of an Open-Domain Question Answering System", ACL 2000; Li and
Roth, "Learning Question Classifiers", COLING 2002). Search does the same
with a data file per language (``stopwords/<language>-answers.txt``):

- ``<kind>: <opening>`` lines: a question whose first question word opens
  with those tokens ("how many", "when", "which city") asks for that kind;
  the longest opening wins;
- ``<kind> = <words>`` lines: tokens that make a memory hold an answer of
  the kind; a digit counts for ``number`` and ``time``, and for ``name`` a
  name the question does not write (:func:`~plugin_sdk.store.search.query.names`).

A memory holding one gains the ``answer`` prior (``ranking.py``). A question
with no opening of the list (most prompts) is ranked as before.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from importlib import resources

from plugin_sdk.store.search.query import names, tokens

KINDS = ("number", "time", "name")
_DIGITS = frozenset("0123456789")
_LINE = re.compile(r"\s*(\w+)\s*([:=])(.*)")


@cache
def shipped(language: str) -> tuple[dict[tuple[str, ...], str], dict[str, frozenset[str]]]:
    """The openings (tokens -> kind) and answer words (kind -> tokens) for ``language``."""
    openings: dict[tuple[str, ...], str] = {}
    words: dict[str, set[str]] = {kind: set() for kind in KINDS}
    if not language.isalpha() or not language.islower():
        return openings, {}
    path = resources.files("plugin_sdk").joinpath(f"store/search/stopwords/{language}-answers.txt")
    try:
        text = path.read_text("utf-8")
    except (FileNotFoundError, OSError):
        return openings, {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        match = _LINE.fullmatch(line)
        if match is None or match[1] not in KINDS:
            raise ValueError(f"{path}, line {number}: expected '<kind>: ...' or '<kind> = ...'")
        kind, sign, rest = match.groups()
        if sign == ":":
            openings[tuple(tokens(rest))] = kind
        else:
            words[kind].update(tokens(rest))
    return openings, {kind: frozenset(found) for kind, found in words.items()}


def asked(question: str, language: str) -> str | None:
    """The kind of answer ``question`` asks for, or ``None``."""
    openings, _ = shipped(language)
    if not openings:
        return None
    longest = max(len(opening) for opening in openings)
    said = tokens(question)
    for start in range(len(said)):
        for size in range(min(longest, len(said) - start), 0, -1):
            kind = openings.get(tuple(said[start : start + size]))
            if kind is not None:
                return kind
    return None


@lru_cache(maxsize=64)
def _words(question: str) -> frozenset[str]:
    """The question's tokens, read once for the many memories a search checks."""
    return frozenset(tokens(question))


def holds(kind: str, text: str, question: str, language: str) -> bool:
    """Whether ``text`` holds an answer of ``kind`` to ``question``."""
    _, words = shipped(language)
    if kind == "name":
        return bool(names(text) - _words(question))
    if not _DIGITS.isdisjoint(text):  # an ASCII digit is always inside a token
        return True
    return not words.get(kind, frozenset()).isdisjoint(tokens(text))
