"""Built-in splitter for fragmentation: numbered steps, then ``key = value`` lines, then paragraphs.

Every split is by character offsets of the original text, so the pieces
concatenate back to it exactly. Text before the first step or setting is a
piece of its own (the preamble).
"""

from __future__ import annotations

import re

from plugin_sdk.plugin import Memory, Store, hookimpl

STEP = re.compile(r"^[ \t]*\d{1,3}[.)][ \t]+\S", re.MULTILINE)
SETTING = re.compile(r"^[ \t]*[\w.\-/\[\]]+[ \t]*=[ \t]*\S", re.MULTILINE)
PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")


def split_at(text: str, starts: list[int]) -> list[str]:
    """Cut ``text`` at the given offsets (the first piece starts at 0)."""
    cuts = sorted({0, *starts})
    return [text[a:b] for a, b in zip(cuts, [*cuts[1:], len(text)], strict=True) if text[a:b]]


def split_text(text: str) -> list[str] | None:
    for pattern in (STEP, SETTING):
        starts = [match.start() for match in pattern.finditer(text)]
        if len(starts) >= 2:
            return split_at(text, starts)
    starts = [match.end() for match in PARAGRAPH.finditer(text)]
    if starts:
        return split_at(text, starts)
    return None


@hookimpl(trylast=True)
def split_memory(store: Store, memory: Memory) -> list[str] | None:
    return split_text(memory.content)
