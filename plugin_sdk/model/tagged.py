"""The tagged reply format the built-in prompts ask models for, and its parser.

::

    <facts category="NAME">
    - one fact per bullet
      continuation lines belong to the fact above
    </facts>

or exactly ``<no-facts/>`` when there is nothing to report.

What a partly broken reply yields (the parser never raises):

- every well-formed block gives its facts, whatever else the reply holds;
- a block with no closing tag (the reply ended, or another block opened)
  gives no facts: its whole text comes back as one ``Malformed`` piece;
- an opening tag without a usable ``category`` attribute: the block's text
  comes back as ``Malformed``;
- a stray ``</facts>`` and non-blank prose outside blocks come back as
  ``Malformed`` (reason ``outside any block``);
- a reply with no block, no ``<no-facts/>`` and some text is entirely
  ``Malformed``: the caller decides whether that is an error.

Inside a block, a line starting with ``- `` or ``* `` starts a fact; any other
non-blank line continues the fact above (or starts one if none is open).
"""

from __future__ import annotations

import re

from plugin_sdk.plugin.records import Fact, Malformed, ParsedReply

_OPEN = re.compile(r"^\s*<facts(?P<attrs>[^>]*)>\s*$", re.IGNORECASE)
_CLOSE = re.compile(r"^\s*</facts>\s*$", re.IGNORECASE)
_CATEGORY = re.compile(r"""category\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.IGNORECASE)
_NONE = re.compile(r"^\s*<no-facts\s*/>\s*$", re.IGNORECASE)
_BULLET = re.compile(r"^\s*[-*]\s+")


def parse_tagged(reply: str) -> ParsedReply:
    """Parse a reply in the tagged format; see the module docstring."""
    facts: list[Fact] = []
    malformed: list[Malformed] = []
    empty = False
    block: list[tuple[int, str]] | None = None
    category: str | None = None
    start = 0
    stray: list[tuple[int, str]] = []

    def flush_stray() -> None:
        if stray:
            text = "\n".join(line for _, line in stray).strip()
            malformed.append(Malformed(text, "text outside any <facts> block", stray[0][0]))
            stray.clear()

    for number, line in enumerate(reply.splitlines(), 1):
        opening = _OPEN.match(line)
        if block is not None:
            if _CLOSE.match(line):
                if category:
                    facts.extend(_facts(category, block))
                else:
                    malformed.append(
                        Malformed(_text(block), "<facts> tag without a category attribute", start)
                    )
                block, category = None, None
                continue
            if opening:
                malformed.append(
                    Malformed(_text(block), "block not closed before the next <facts>", start)
                )
            else:
                block.append((number, line))
                continue
        if opening:
            flush_stray()
            match = _CATEGORY.search(opening.group("attrs"))
            category = next((g for g in match.groups() if g), "").strip() if match else ""
            block, start = [], number
        elif _NONE.match(line):
            flush_stray()
            empty = True
        elif line.strip():
            stray.append((number, line))
        else:
            flush_stray()
    flush_stray()
    if block is not None:
        malformed.append(Malformed(_text(block), "block not closed before the reply ended", start))
    return ParsedReply(facts=facts, malformed=malformed, empty=empty and not facts)


def _facts(category: str, block: list[tuple[int, str]]) -> list[Fact]:
    facts: list[Fact] = []
    current: list[str] = []
    first = 0
    for number, line in block:
        if not line.strip():
            continue
        if _BULLET.match(line) or not current:
            if current:
                facts.append(Fact(category, "\n".join(current), first))
            current, first = [_BULLET.sub("", line, count=1).strip()], number
        else:
            current.append(line.strip())
    if current:
        facts.append(Fact(category, "\n".join(current), first))
    return [fact for fact in facts if fact.text]


def _text(block: list[tuple[int, str]]) -> str:
    return "\n".join(line for _, line in block).strip()
