"""Text normalization for deduplication.

Two memories are the same when their normalized texts are equal. The
normalization is deliberately conservative, so that it never merges texts a
person would call different:

1. Unicode NFKC (full-width and compatibility forms fold to their plain form);
2. case folding (``str.casefold``);
3. every run of whitespace, line breaks included, becomes one space, and the
   ends are stripped;
4. trailing sentence punctuation (``.``, ``!``, ``;``, with any spaces among
   them) is dropped.

Punctuation inside the text, digits and word order are kept.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

_WHITESPACE = re.compile(r"\s+")
_TRAILING = re.compile(r"[\s.!;]+$")


def normalize(text: str) -> str:
    """Return the dedup form of ``text`` (see the module docstring)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    collapsed = _WHITESPACE.sub(" ", folded).strip()
    return _TRAILING.sub("", collapsed)


def normalized_hash(text: str) -> str:
    """SHA-256 hex digest of :func:`normalize` of ``text``."""
    return hashlib.sha256(normalize(text).encode("utf-8")).hexdigest()
