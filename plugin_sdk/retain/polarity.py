"""The polarity a text carries: the words that flip its meaning when swapped.

"The cache is enabled" and "The cache is disabled" read alike (one word of
ten differs) but say opposite things; so do "Deploys may run on Fridays" and
"Deploys may not run on Fridays". :func:`marks` names the polarity words of a
text, counted, so that two texts with a different polarity never compare
equal as values (``value_conflicts.values`` adds them): a swap of one word
for its opposite (``enabled``/``disabled``, ``true``/``false``, ``on``/``off``,
``allow``/``deny``, ``yes``/``no``, ``with``/``without``,
``always``/``never``, ...) or a negation added or taken away (``may`` / ``may
not``, ``must`` / ``must not``, ``can`` / ``cannot``, ``is`` / ``isn't``,
``do`` / ``don't``). Every negation (``not``, ``cannot``, any ``n't``) counts
as ``not``. A word counted twice is ``"not ×2"``, so a text with one more
negation than another differs from it even when both have some.

:func:`flips` is the looser test for a rewrite of one text (a model's merged
text): it may drop a positive word ("with a height of" becomes ","), but not
add or drop a negation (``not``, ``never``, ``no``, ``without``) nor bring in
the opposite of a word the text has.

Like values, this reads conservatively: a polarity missed is a merge that
flips a meaning; one read too many only keeps two memories apart.
"""

from __future__ import annotations

import re
from collections import Counter

#: Words that have an opposite in this list (each is its own mark).
OPPOSITES = (
    ("enabled", "disabled"),
    ("enable", "disable"),
    ("enables", "disables"),
    ("enabling", "disabling"),
    ("true", "false"),
    ("on", "off"),
    ("allow", "deny"),
    ("allowed", "denied"),
    ("allows", "denies"),
    ("yes", "no"),
    ("with", "without"),
    ("always", "never"),
    ("include", "exclude"),
    ("included", "excluded"),
    ("accept", "reject"),
    ("accepted", "rejected"),
    ("required", "optional"),
    ("permitted", "forbidden"),
    ("active", "inactive"),
    ("valid", "invalid"),
    ("safe", "unsafe"),
    ("supported", "unsupported"),
    ("public", "private"),
    ("up", "down"),
    ("start", "stop"),
    ("success", "failure"),
    ("pass", "fail"),
    ("passed", "failed"),
)
WORDS = frozenset(word for pair in OPPOSITES for word in pair)
#: Negations: each counts as ``not``.
NEGATIONS = frozenset({"not", "cannot", "nor", "neither", "none", "nothing", "nobody"})
NOT = "not"
_OPPOSITE = {a: b for pair in OPPOSITES for a, b in (pair, pair[::-1])}
_NEGATIVE = frozenset({NOT, "never", "no", "without"})
_WORD = re.compile(r"[\w]+(?:['\u2019]\w+)*", re.UNICODE)


def marks(text: str) -> frozenset[str]:
    """The polarity marks of ``text``: each polarity word with its count (see the docstring)."""
    counts = _counts(text)
    return frozenset(word if n == 1 else f"{word} \u00d7{n}" for word, n in counts.items())


def flips(text: str, rewrite: str) -> bool:
    """Whether ``rewrite`` says the opposite of ``text`` somewhere (see the docstring)."""
    before, after = _counts(text), _counts(rewrite)
    if any(before[word] != after[word] for word in _NEGATIVE):
        return True
    return any(_OPPOSITE[word] in before and word not in before for word in after)


def _counts(text: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for token in _WORD.findall(text.casefold()):
        token = token.replace("\u2019", "'")
        if token in WORDS:
            counts[token] += 1
        elif token in NEGATIONS or token.endswith("n't"):
            counts[NOT] += 1
    return counts
