"""The tagged reply format the built-in prompts ask models for, and its parser.

::

    <facts category="NAME">
    - one fact per bullet
      continuation lines belong to the fact above
    </facts>

or exactly ``<no-facts/>`` when there is nothing to report.

Models drift from it. The parser also reads the shapes they are known to
drift to, so that a fact is never lost to formatting:

- **tag-named blocks**: ``<NAME>`` … ``</NAME>`` (or ``<NAME>one fact</NAME>``
  on one line) is a block of category ``NAME``; a tag that names no category
  and wraps shapes that read whole (headed lists, labelled bullets) is
  formatting, read through;
- **labelled bullets** outside any block: ``- [NAME] a fact``;
- **headed lists**: a heading line naming a category (``## NAME``,
  ``**NAME**``, ``NAME:``) followed by bullets, up to a blank line before
  prose or the next heading (any Markdown heading, or a line naming a
  category); read only when the caller passes ``categories`` (a heading is
  otherwise indistinguishable from prose);
- **fenced lists**: a code fence whose info string names a category
  (`````NAME``) holds that category's bullets; any other fence is read
  through (its markers are formatting, its lines are parsed as usual);
- **JSON**: a reply (or a fenced block) that is JSON, in any of the shapes of
  ``model/drift.py``.

A name (a tag's, a heading's, a label's or a ``category`` attribute's) is
matched against ``categories`` case-insensitively and written in the
category's own spelling; a name that matches none is kept as written, so that
admission quarantines it with the unknown category named.

What a partly broken reply yields (the parser never raises):

- every well-formed block gives its facts, whatever else the reply holds;
- a block with no closing tag (the reply ended, or another block opened)
  gives no facts: its whole text comes back as one ``Malformed`` piece;
- an opening tag without a usable ``category`` attribute: the block's text
  comes back as ``Malformed``;
- a stray ``</facts>`` and non-blank prose outside blocks come back as
  ``Malformed`` (reason :data:`OUTSIDE`);
- a reply with no block, no ``<no-facts/>`` and some text is entirely
  ``Malformed``: the caller decides whether that is an error.

Inside a block, a line starting with ``- `` or ``* `` starts a fact; any other
non-blank line continues the fact above (or starts one if none is open).
``<facts category="NAME" under="12">`` files the block's facts under the
header memory 12 (``Fact.under``): the historian adds them to its group.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

from plugin_sdk.model.drift import Names, from_json, load_json
from plugin_sdk.plugin.records import Fact, Malformed, ParsedReply

OUTSIDE = "text outside any <facts> block"
_OPEN = re.compile(r"^\s*<facts(?P<attrs>[^>]*)>\s*$", re.IGNORECASE)
_CLOSE = re.compile(r"^\s*</facts>\s*$", re.IGNORECASE)
_CATEGORY = re.compile(r"""category\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.IGNORECASE)
_UNDER = re.compile(r"""under\s*=\s*["']?(\d+)["']?""", re.IGNORECASE)
_NONE = re.compile(r"^\s*<no-facts\s*/>\s*$", re.IGNORECASE)
_BULLET = re.compile(r"^\s*[-*]\s+")
_NAME = r"[A-Za-z][\w.-]*"
_TAG_OPEN = re.compile(rf"^\s*<(?P<name>{_NAME})(?:\s[^>/]*)?>\s*$")
_TAG_CLOSE = re.compile(rf"^\s*</(?P<name>{_NAME})\s*>\s*$")
_TAG_INLINE = re.compile(rf"^\s*<(?P<name>{_NAME})>(?P<text>.*\S.*?)</(?P=name)>\s*$")
_LABELLED = re.compile(rf"^\s*[-*]\s+\[(?P<name>{_NAME})\]\s*(?P<text>\S.*)$")
_FENCE = re.compile(r"^\s*(?P<mark>```+|~~~+)\s*(?P<info>[^`\s]*)\s*$")
_HEADING = re.compile(
    rf"^\s*(?:#{{1,6}}\s+)?(?:\*\*|__)?(?P<name>{_NAME})(?:\*\*|__)?\s*:?\s*(?:\*\*|__)?\s*$"
)

_MARKDOWN_HEADING = re.compile(r"^\s*#{1,6}\s+\S")

Lines = list[tuple[int, str]]


@attrs.define
class _Block:
    tag: str  # "facts" or the tag's own name
    category: str
    start: int
    lines: Lines = attrs.field(factory=list)
    under: int | None = None


@attrs.define
class _Reader:
    names: Names
    facts: list[Fact] = attrs.field(factory=list)
    malformed: list[Malformed] = attrs.field(factory=list)
    empty: bool = False

    def read(self, lines: Lines) -> None:
        block: _Block | None = None
        stray: Lines = []
        wrappers: list[str] = []  # tag names of blocks that only wrapped other blocks
        index = 0

        def flush_stray() -> None:
            if stray:
                self.malformed.append(Malformed(_text(stray), OUTSIDE, stray[0][0]))
                stray.clear()

        while index < len(lines):
            number, line = lines[index]
            index += 1
            opening = _opening(line)
            if block is not None:
                if _closes(block, line):
                    self._close(block)
                    block = None
                    continue
                if opening is None:
                    block.lines.append((number, line))
                    continue
                if block.tag != "facts" and not _text(block.lines):
                    wrappers.append(block.tag.casefold())
                else:
                    reason = f"block not closed before the next <{opening[0]}>"
                    self.malformed.append(Malformed(_text(block.lines), reason, block.start))
                block = None
            if opening is not None:
                flush_stray()
                tag, category, under = opening
                name = category if tag == "facts" else tag
                block = _Block(tag, self.names.canon(name) if name else "", number, under=under)
                continue
            inline = _TAG_INLINE.match(line)
            labelled = _LABELLED.match(line)
            closing = _TAG_CLOSE.match(line)
            fence = _FENCE.match(line)
            heading = _HEADING.match(line)
            if _NONE.match(line):
                flush_stray()
                self.empty = True
            elif inline and not _OPEN.match(line):
                flush_stray()
                self._add(self.names.canon(inline["name"]), [(number, inline["text"])])
            elif labelled:
                flush_stray()
                self._add(self.names.canon(labelled["name"]), [(number, labelled["text"])])
            elif closing and closing["name"].casefold() in wrappers:
                wrappers.remove(closing["name"].casefold())
            elif fence:
                flush_stray()
                index = self._fence(lines, index, number, fence["mark"], fence["info"])
            elif heading and self.names.known(heading["name"]) and _bullet_follows(lines, index):
                flush_stray()
                index = self._headed(lines, index, self.names.canon(heading["name"]))
            elif line.strip():
                stray.append((number, line))
            else:
                flush_stray()
        flush_stray()
        if block is not None:
            self.malformed.append(
                Malformed(
                    _text(block.lines), "block not closed before the reply ended", block.start
                )
            )

    def _close(self, block: _Block) -> None:
        if block.tag != "facts" and not self.names.known(block.tag):
            inner = _Reader(self.names)
            inner.read(block.lines)
            if inner.facts and not inner.malformed:  # a wrapper around headed lists and the like
                self.facts += inner.facts
                self.empty = self.empty or inner.empty
                return
        if block.category:
            self._add(block.category, block.lines, block.under)
        else:
            self.malformed.append(
                Malformed(
                    _text(block.lines), "<facts> tag without a category attribute", block.start
                )
            )

    def _add(self, category: str, lines: Lines, under: int | None = None) -> None:
        self.facts.extend(attrs.evolve(f, under=under) for f in _facts(category, lines))

    def _fence(self, lines: Lines, index: int, start: int, mark: str, info: str) -> int:
        """Read a fenced block from ``index``; the index after its closing fence."""
        inner: Lines = []
        while index < len(lines):
            number, line = lines[index]
            index += 1
            if line.strip().startswith(mark[0] * len(mark)) and not line.strip().strip(mark[0]):
                break
            inner.append((number, line))
        data = load_json(_text(inner)) if info.lower() in ("", "json") else None
        if data is not None:
            self._json(data, start)
        elif info and self.names.known(info):
            self._add(self.names.canon(info), inner)
        elif info.lower() == "json":
            self.malformed.append(Malformed(_text(inner), "fenced JSON that does not parse", start))
        else:
            self.read(inner)  # a fence around the format: its markers are formatting
        return index

    def _headed(self, lines: Lines, index: int, category: str) -> int:
        """Bullets under a category heading, up to prose after a blank line or the next heading."""
        taken: Lines = []
        blank = False
        while index < len(lines):
            number, line = lines[index]
            if not line.strip():
                blank = True
            elif _BULLET.match(line) or (not blank and taken) or line[:1].isspace():
                if _opening(line) or _FENCE.match(line) or _LABELLED.match(line):
                    break
                if self._heading(line) or _NONE.match(line) or _TAG_INLINE.match(line):
                    break
                if _TAG_CLOSE.match(line) or _CLOSE.match(line):
                    break
                taken.append((number, line))
                blank = False
            else:
                break
            index += 1
        self._add(category, taken)
        return index

    def _heading(self, line: str) -> bool:
        """Whether ``line`` is a heading: a Markdown one, or one naming a category."""
        heading = _HEADING.match(line)
        return bool(
            _MARKDOWN_HEADING.match(line) or (heading and self.names.known(heading["name"]))
        )

    def _json(self, data: object, line: int) -> None:
        facts, malformed, empty = from_json(data, line, self.names)
        self.facts += facts
        self.malformed += malformed
        self.empty = self.empty or empty


def parse_tagged(reply: str, categories: Iterable[str] | None = None) -> ParsedReply:
    """Parse a reply in the tagged format or a known drift of it; see the module docstring.

    ``categories``, when given, lets the parser read headed lists and fenced
    lists and spell every category the store's way.
    """
    reader = _Reader(Names(categories))
    data = load_json(reply) if reply.strip()[:1] in ("{", "[") else None
    if data is not None:
        reader._json(data, 1)
    else:
        reader.read(list(enumerate(reply.splitlines(), 1)))
    empty = reader.empty and not reader.facts
    return ParsedReply(facts=reader.facts, malformed=reader.malformed, empty=empty)


def _opening(line: str) -> tuple[str, str, int | None] | None:
    """``("facts", category, under)`` or ``(tag name, "", None)`` for a line that opens a block."""
    facts = _OPEN.match(line)
    if facts:
        match = _CATEGORY.search(facts.group("attrs"))
        under = _UNDER.search(facts.group("attrs"))
        category = next((g for g in match.groups() if g), "").strip() if match else ""
        return "facts", category, int(under.group(1)) if under else None
    tag = _TAG_OPEN.match(line)
    if tag and tag["name"].casefold() != "no-facts":
        return tag["name"], "", None
    return None


def _closes(block: _Block, line: str) -> bool:
    if block.tag == "facts":
        return _CLOSE.match(line) is not None
    closing = _TAG_CLOSE.match(line)
    return closing is not None and closing["name"].casefold() == block.tag.casefold()


def _bullet_follows(lines: Lines, index: int) -> bool:
    for _, line in lines[index:]:
        if line.strip():
            return _BULLET.match(line) is not None
    return False


def _facts(category: str, block: Lines) -> list[Fact]:
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


def _text(block: Lines) -> str:
    return "\n".join(line for _, line in block).strip()
