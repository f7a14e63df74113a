"""The boundary: stored text made safe to show a model, and otherwise left exact.

Every surface that returns stored text to a model (the injected block, a
delta, ``expand``, recall, the MCP tools) passes it through :func:`contain`.
The scheme keeps commands and code byte for byte (no HTML entities:
``make a && b > c`` arrives as written) and changes only what could forge the
structure of the block the text sits in:

- **Line breaks.** Every line after the first is indented by
  :data:`INDENT` (four spaces), whatever the break: ``\\n``, ``\\r\\n``,
  ``\\r``, ``\\v``, ``\\f``, the separators U+001C..U+001E, U+0085, U+2028,
  U+2029 (``str.splitlines``). Stored text therefore never starts a line of
  the block: it cannot write a heading (``# ...``), an entry (``- [7] ...``)
  or a tag at the start of a line. The caller writes the first line's prefix.
- **The block's own tags.** A tag whose name starts with ``memory``
  (``</memory>``, ``<memory-details of="1">``, ``< / MEMORY >``), also
  written with look-alikes (fullwidth ``＜／ｍｅｍｏｒｙ＞``, small and
  mathematical forms, angle quotation marks and brackets, Cyrillic and Greek
  letters that look Latin), has its brackets replaced by ``[`` and ``]``: it
  reads as what it is and cannot open or close a block. Other tags (``<div>``,
  ``<T>``) are code and stay.
- **Invisible and control characters** are removed: NUL, ESC and the other C0
  and C1 controls (tab stays), DEL, the bidi embeddings, overrides and
  isolates (U+202A..U+202E, U+2066..U+2069), zero-width space, word joiner,
  BOM, soft hyphen, invisible operators, interlinear annotation marks, and
  Unicode tag characters outside an emoji flag sequence. The zero-width joiner
  and non-joiner stay where text needs them (between two emoji, or between
  two letters or marks of a script that is not ASCII) and are removed where
  they could split a token (next to ASCII, or at an edge). LRM, RLM and ALM
  (U+200E, U+200F, U+061C) stay: right-to-left text needs them and they
  cannot reorder anything beyond themselves. Lone surrogates become U+FFFD.

Text that is printable ASCII with no ``<`` in it (most memories) is
returned as it is after three string tests; other text without anything to
change, after one regular-expression test.
"""

from __future__ import annotations

import re
import unicodedata

INDENT = "    "

_FAST = re.compile(r"[^\t\x20-\x7e]|<\s*/?\s*memory", re.IGNORECASE)

_REMOVE = dict.fromkeys(
    [
        *range(0x00, 0x09),  # C0 controls before tab
        *range(0x0E, 0x1C),  # C0 controls after the line breaks (ESC among them)
        0x1F,
        0x7F,
        *(c for c in range(0x80, 0xA0) if c != 0x85),  # C1 controls (NEL is a line break)
        0x00AD,  # soft hyphen
        0x180E,  # Mongolian vowel separator
        0x200B,  # zero-width space
        *range(0x202A, 0x202F),  # bidi embeddings and overrides
        *range(0x2060, 0x2065),  # word joiner, invisible operators
        *range(0x2066, 0x206A),  # bidi isolates
        *range(0x206A, 0x2070),  # deprecated format characters
        0xFEFF,  # zero-width no-break space (BOM)
        *range(0xFFF9, 0xFFFC),  # interlinear annotation
    ]
)
_JOINERS = "\u200c\u200d"
_TAG_RUN = re.compile("[\U000e0001\U000e0020-\U000e007f]+")  # the tag characters (Cf)
_SURROGATE = re.compile("[\ud800-\udfff]")
_BLACK_FLAG = "\U0001f3f4"

# Look-alikes, folded to the ASCII character they imitate before tags are
# looked for (after NFKC and case folding, which handle fullwidth and
# mathematical forms).
_OPEN = "<\uff1c\ufe64\u2039\u2329\u3008\u27e8\u276c\u276e\u02c2\u1438\u29fc\u226a\u300a"
_CLOSE = ">\uff1e\ufe65\u203a\u232a\u3009\u27e9\u276d\u276f\u02c3\u1433\u29fd\u226b\u300b"
_SLASH = "/\uff0f\u2044\u2215\u29f8\u27cb\u2571\u3033"
_LETTERS = {
    "\u043c": "m",  # Cyrillic em
    "\u0435": "e",  # Cyrillic ie
    "\u0451": "e",
    "\u03b5": "e",  # Greek epsilon
    "\u043e": "o",  # Cyrillic o
    "\u03bf": "o",  # Greek omicron
    "\u0433": "r",  # Cyrillic ghe
    "\u0443": "y",  # Cyrillic u
    "\u04af": "y",  # Cyrillic straight u
    "\u03b3": "y",  # Greek gamma
}
_FOLD = {
    **{ord(c): "<" for c in _OPEN},
    **{ord(c): ">" for c in _CLOSE},
    **{ord(c): "/" for c in _SLASH},
}
_TAG = re.compile(r"<\s*/?\s*memory[^<>\n]{0,200}(>)?")


def contain(text: str) -> str:
    """Stored text as it may be shown to a model inside a block (see the module docstring).

    The result's first line goes after the caller's own prefix (``- [7] ``);
    every following line starts with :data:`INDENT`.
    """
    if text.isascii() and text.isprintable() and "<" not in text:
        return text  # printable ASCII and no tag: the common case, decided in C
    if not _FAST.search(text):
        return text
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    text = text.translate(_REMOVE)
    if max(text, default=" ") >= "\U000e0000":
        text = _TAG_RUN.sub(_keep_flag_tags, text)
    if _JOINERS[0] in text or _JOINERS[1] in text:
        text = _joiners(text)
    lines = [_neutralize(line) for line in text.splitlines()]
    return ("\n" + INDENT).join(lines)


def _keep_flag_tags(match: re.Match[str]) -> str:
    # Tag characters belong after a black flag (subdivision flags); anywhere
    # else they are invisible text a model would still read.
    start = match.start()
    return match.group() if start and match.string[start - 1] == _BLACK_FLAG else ""


def _joiners(text: str) -> str:
    out = []
    last = len(text) - 1
    for index, char in enumerate(text):
        if char in _JOINERS:
            before = text[index - 1] if index else ""
            after = text[index + 1] if index < last else ""
            if not (_joinable(before) and _joinable(after)):
                continue
        out.append(char)
    return "".join(out)


def _joinable(char: str) -> bool:
    """A character a joiner may legitimately sit next to: an emoji, or a non-ASCII letter or mark."""
    if not char or char < "\x80":
        return False
    if _is_emoji(char):
        return True
    return unicodedata.category(char)[0] in "LM"


def _is_emoji(char: str) -> bool:
    code = ord(char)
    return (
        0x1F000 <= code <= 0x1FAFF
        or 0x2600 <= code <= 0x27BF
        or 0x2B00 <= code <= 0x2BFF
        or code in (0xFE0F, 0x20E3, 0x2640, 0x2642, 0x2695, 0x2708, 0x2764)
    )


def _neutralize(line: str) -> str:
    """Replace the brackets of every block tag (or look-alike of one) in a line."""
    if line.isascii():
        if "<" not in line:
            return line
        folded, positions = line.lower(), None
    else:
        folded, positions = _fold(line)
    found = list(_TAG.finditer(folded))
    if not found:
        return line
    chars = list(line)
    for match in found:
        spans = [(match.start(), "[")]
        if match.group(1) is not None:
            spans.append((match.start(1), "]"))
        for index, mark in spans:
            if positions is None:
                chars[index] = mark
            else:
                start, end = positions[index]
                chars[start] = mark
                for extra in range(start + 1, end):
                    chars[extra] = ""
    return "".join(chars)


def _fold(line: str) -> tuple[str, list[tuple[int, int]]]:
    """The line folded for matching, and for each folded character its span in the line."""
    folded: list[str] = []
    positions: list[tuple[int, int]] = []
    index = 0
    while index < len(line):
        char = line[index]
        end = index + 1
        if char.isascii():
            piece = char.lower()
        else:
            piece = unicodedata.normalize("NFKC", char).casefold()
            piece = "".join(_LETTERS.get(c, c) for c in piece).translate(_FOLD)
        for c in piece:
            folded.append(c)
            positions.append((index, end))
        index = end
    return "".join(folded), positions


def entry(memory_id: int, text: str, note: str = "") -> str:
    """One item line of a block: ``- [ID] text``, or ``- [ID: note] text`` for a header.

    What expanding the memory shows (``note``) sits inside the id bracket,
    which the memory's own text, written after it, can never reach.
    """
    return f"- [{memory_id}{': ' + note if note else ''}] {contain(text)}"
