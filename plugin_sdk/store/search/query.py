"""Plain-language queries: text as people and models type it, made into safe FTS5 terms.

:func:`parse` reads a query the way the full-text index reads memories: a
token is a run of letters and digits (FTS5's ``unicode61`` tokenizer; ``_``,
punctuation, quotes and apostrophes separate tokens, so ``don't`` is ``don`` +
``t``), compared in lower case. A **content word** is a token that is not a
stopword. Stopwords are data: a shipped list per language
(``stopwords/<language>.txt``) plus the words an installed pack lists in its
``search.stopwords`` field.

Nothing a user types reaches FTS5 as syntax: every term is a quoted phrase
built from letters and digits only, so ``OR``, ``NEAR(``, ``*``, ``^``,
``content:``, unbalanced quotes and lone surrogates are just text (or
nothing). Expert FTS5 syntax stays available through ``raw=True`` on search,
where a malformed expression is reported as
:class:`~plugin_sdk.errors.InvalidMemory`.

A query of stopwords only ("The Who", "don't") looks for those words after
all, so every query with a token can find something.

A query also carries **phrases**: pairs of content words that stand next to
each other in the text ("postgres primary" in "fail over the postgres
primary"); a memory holding the pair as a phrase ranks higher.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

import attrs

WORD = re.compile(r"[^\W_]+")
_SURROGATES = re.compile("[\ud800-\udfff]")
MAX_WORDS = 32  # content words beyond these add cost, not precision


def clean(text: str) -> str:
    """``text`` without lone surrogates and NUL characters (SQLite cannot bind them)."""
    return _SURROGATES.sub(" ", text).replace("\x00", " ")


def tokens(text: str) -> list[str]:
    """The tokens of ``text`` as the full-text index sees them, in lower case."""
    return [token.lower() for token in WORD.findall(clean(text))]


@cache
def shipped_stopwords(language: str = "en", kind: str = "") -> frozenset[str]:
    """The stopword list shipped for ``language`` (empty when there is none).

    ``kind="weak"``: its *weak words* instead (``<language>-weak.txt``), the
    most common content words of the language, weak evidence of a topic
    (recall's relevance floor, ``docs/search.md``).
    """
    if not re.fullmatch(r"[a-z]{2,8}", language):
        return frozenset()
    name = f"{language}-{kind}" if kind else language
    path = resources.files("plugin_sdk").joinpath(f"store/search/stopwords/{name}.txt")
    try:
        text = path.read_text("utf-8")
    except (FileNotFoundError, OSError):
        return frozenset()
    words: set[str] = set()
    for line in text.splitlines():
        if not line.startswith("#"):
            words.update(tokens(line))
    return frozenset(words)


_NAME_OR_STOP = re.compile(r"[^\W_]+|[.?!:;\n]")


def names(text: str) -> frozenset[str]:
    """The words ``text`` writes as names: an initial capital, two letters or more, not
    the first word of a sentence (lower case, as :func:`tokens`). A text that capitalises
    more than half of those words (a title, shouting) names nothing."""
    found: set[str] = set()
    seen = capital = 0
    start = True
    for match in _NAME_OR_STOP.finditer(clean(text)):
        word = match.group()
        if not word[0].isalnum():
            start = True
            continue
        if len(word) > 1 and not start:
            seen += 1
            if word[0].isupper():
                capital += 1
                found.add(word.lower())
        start = False
    return frozenset(found) if 2 * capital <= seen else frozenset()


@attrs.frozen
class Query:
    """A parsed query: its tokens, its content words and its phrases."""

    text: str
    tokens: tuple[str, ...]
    words: tuple[str, ...]  # content words, first occurrence order, deduplicated
    phrases: tuple[tuple[str, str], ...]

    @property
    def empty(self) -> bool:
        return not self.words


def parse(text: str, stopwords: frozenset[str] | set[str] = frozenset()) -> Query:
    """Parse ``text``; see the module docstring. Never raises on any string."""
    all_tokens = tuple(tokens(text))
    words: dict[str, None] = {}
    phrases: dict[tuple[str, str], None] = {}
    previous: str | None = None
    for token in all_tokens:
        if token in stopwords:
            previous = None
            continue
        if len(words) < MAX_WORDS:
            words.setdefault(token)
        if previous is not None and previous != token:
            phrases.setdefault((previous, token))
        previous = token
    if not words:  # only stopwords ("The Who", "don't"): look for them after all
        words = dict.fromkeys(all_tokens[:MAX_WORDS])
    return Query(text, all_tokens, tuple(words), tuple(list(phrases)[:MAX_WORDS]))


def term(word: str) -> str:
    """One word as a quoted FTS5 string (safe whatever the word holds)."""
    return '"' + word.replace('"', '""') + '"'


def any_of(words: list[str] | tuple[str, ...]) -> str:
    """An FTS5 expression matching the memory text holding any of ``words``."""
    return "content : (" + " OR ".join(term(w) for w in words) + ")"


def phrase(pair: tuple[str, str]) -> str:
    """An FTS5 expression matching the two words as a phrase in the memory text."""
    return "content : " + term(f"{pair[0]} {pair[1]}")
