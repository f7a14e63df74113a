"""Regular expressions from outside (packs, the command line), matched in linear time.

Packs carry regular expressions (the grid's cues and acts) that the store
runs against every memory it classifies, inside write transactions; a
pattern with catastrophic backtracking (``(a+)+$``) would hold the write lock
for minutes under Python's ``re``. Such patterns are compiled with RE2
(``google-re2``), whose matching takes time linear in the text whatever the
pattern, so no time limit is needed and none is ever hit.

RE2 has no lookaround (``(?=``, ``(?<=``), backreferences (``\\1``) or atomic
groups; a pattern using them is refused when the pack is validated, with a
``ValueError`` naming the construct (``re2.error`` is not an ``re.error``,
so both are caught here). Case-insensitive matching is asked for with RE2's
options, not ``re.IGNORECASE``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

MAX_PATTERN_CHARS = 2000


@lru_cache(maxsize=512)
def compile_pattern(pattern: str, *, ignore_case: bool = False) -> Any:
    """A compiled RE2 pattern; :class:`ValueError` with RE2's reason if it cannot be one."""
    if not isinstance(pattern, str):
        raise ValueError(f"a pattern is text, not {type(pattern).__name__}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"pattern of {len(pattern)} characters; at most {MAX_PATTERN_CHARS}")
    options = re2.Options()
    options.log_errors = False  # the error is raised, not also printed by RE2
    options.case_sensitive = not ignore_case
    try:
        return re2.compile(pattern, options)
    except (re2.error, TypeError, ValueError) as error:
        first = error.args[0] if error.args else ""
        reason = first.decode("utf-8", "replace") if isinstance(first, bytes) else str(error)
        raise ValueError(
            f"not a regular expression RE2 accepts: {pattern!r} ({reason}); lookarounds, "
            "backreferences and atomic groups are not supported"
        ) from error
