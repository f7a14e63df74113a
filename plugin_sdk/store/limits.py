"""What the store takes from outside: ids in range, documents of bounded size and shape.

Every parsed document (a pack, an observation line, a transcript record, a
tool call's arguments) is checked by :func:`check_tree` before it is used:

- nested at most :data:`MAX_DEPTH` levels (objects and arrays);
- integers within SQLite's 64-bit range (:data:`MIN_INTEGER` to :data:`MAX_INTEGER`);
- floats finite (no NaN, no infinity: a NaN stored in a ``REAL NOT NULL``
  column reads back as NULL, and infinity breaks the arithmetic on it);
- text that is valid Unicode (a lone surrogate cannot be written as UTF-8).

:func:`loads_json` parses JSON text that way, with a size limit; it refuses
the ``NaN`` and ``Infinity`` words JSON parsers accept, and integers of more
digits than Python converts. Each refusal is an
:class:`~plugin_sdk.errors.InvalidDocument` naming the path inside the
document; the area that parsed it wraps it in its own error (a
``PackError``, an ``InvalidObservation``...).

:func:`check_id` and :func:`check_count` guard the integers a caller passes
to the API: an id of 2^63 or more cannot be a row's and is refused clearly,
not by an ``OverflowError`` from SQLite.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import IO, Any

from plugin_sdk.errors import InvalidDocument, NotFound

MAX_INTEGER = 2**63 - 1  # SQLite's largest integer
MIN_INTEGER = -(2**63)
MAX_DEPTH = 64
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024  # a transcript record (tool outputs can be long)
MAX_LINE_BYTES = 1024 * 1024  # an observation line
MAX_PACK_BYTES = 4 * 1024 * 1024  # a pack document


def check_id(value: object, what: str = "memory") -> int:
    """``value`` as a row id, or :class:`NotFound` saying ids run from 1 to 2^63-1."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_INTEGER:
        raise NotFound(
            f"no {what} with id {_short(value)}: ids are whole numbers from 1 to {MAX_INTEGER}"
        )
    return value


def check_count(value: object, what: str, *, minimum: int = 0) -> int:
    """A limit or offset within ``minimum`` .. 2^63-1, else :class:`InvalidDocument`."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_INTEGER:
        raise InvalidDocument(
            f"must be a whole number from {minimum} to {MAX_INTEGER}, got {_short(value)}", what
        )
    return value


def loads_json(
    text: str | bytes, *, max_bytes: int = MAX_DOCUMENT_BYTES, numbers: bool = True
) -> Any:
    """Parse JSON text and :func:`check_tree` it; :class:`InvalidDocument` if it is refused.

    A syntax error is a :class:`json.JSONDecodeError`, as from ``json.loads``.
    ``numbers=False`` leaves numbers unchecked (NaN, huge integers), for
    documents whose numbers are never stored, such as transcripts: only
    their size, depth and text are checked then.
    """
    plain = False  # whether the text cannot hold what check_tree refuses but numbers
    if isinstance(text, bytes):
        size = len(text)
    elif text.isascii():
        size, plain = len(text), _plain(text)
    else:
        try:
            size, plain = len(text.encode("utf-8")), _plain(text)
        except UnicodeEncodeError:  # a lone surrogate: check_tree names where
            size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InvalidDocument(f"document of {size} bytes is larger than {max_bytes}")
    try:
        if plain and isinstance(text, str):
            try:
                return _loads_plain(text, numbers)
            except InvalidDocument as error:
                if error.path != _UNSURE:
                    raise
                # a number out of range: parse again, and check_tree says where
        if numbers:
            value = json.loads(text, parse_constant=_no_constant)
        else:
            value = json.loads(text, parse_int=_lenient_int)
    except RecursionError as error:
        raise InvalidDocument(f"nested too deeply (more than {MAX_DEPTH} levels)") from error
    except json.JSONDecodeError:
        raise
    except ValueError as error:  # an integer of more digits than Python converts
        raise InvalidDocument(str(error).split(";")[0]) from error
    check_tree(value, numbers=numbers)
    return value


def _plain(text: str) -> bool:
    """Whether JSON text in valid Unicode cannot parse to too deep a tree or a lone surrogate.

    Fewer than :data:`MAX_DEPTH` brackets in all allow no deeper nesting, and
    a ``\\u`` escape is the only way JSON text writes a lone surrogate. Such
    text is parsed by :func:`_loads_plain`, which checks numbers as they are
    read, and the walk of :func:`check_tree` is skipped.
    """
    return "\\u" not in text and text.count("[") + text.count("{") < MAX_DEPTH


# The path of the refusal a number out of range raises while plain text is parsed:
# never shown, only a sign to parse the text again the full way.
_UNSURE = "(a number out of range, met while parsing)"


def _loads_plain(text: str, numbers: bool) -> Any:
    return (_PLAIN if numbers else _LENIENT).decode(text)


def _int_in_range(digits: str) -> int:
    value = int(digits)
    if not MIN_INTEGER <= value <= MAX_INTEGER:
        raise InvalidDocument("out of range", _UNSURE)
    return value


def _finite_float(digits: str) -> float:
    value = float(digits)
    if not math.isfinite(value):
        raise InvalidDocument("not finite", _UNSURE)
    return value


def jsonl_lines(text: str) -> list[str]:
    """The lines of JSON Lines text: split on ``\n`` only.

    ``str.splitlines`` also splits on U+2028, U+2029, U+0085 and other
    characters that are valid inside a JSON string, and would cut a good
    record in two. A ``\r`` before the ``\n`` is JSON whitespace and stays.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no line of its own
    return lines


def jsonl_stream(handle: IO[str]) -> Iterator[str]:
    r"""The lines of a text file without their ``\n``, read as they come.

    As :func:`jsonl_lines` splits them when ``handle`` was opened with
    ``newline="\n"`` (only ``\n`` ends a line); with universal newlines,
    ``\r\n`` and ``\r`` end a line too. A file of any size is held one line
    at a time.
    """
    for line in handle:
        yield line[:-1] if line.endswith("\n") else line


def check_tree(value: Any, path: str = "", *, numbers: bool = True) -> None:
    """Refuse a too deep tree, a non-finite number, an out-of-range integer, invalid text.

    ``numbers=False`` checks depth and text only.
    """
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth >= MAX_DEPTH:
                raise InvalidDocument(f"nested too deeply (more than {MAX_DEPTH} levels)", where)
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        raise InvalidDocument(f"key {key!r} is not text", where)
                    _check_text(key, where)
                    stack.append((child, f"{where}.{key}" if where else key, depth + 1))
            else:
                for index, child in enumerate(item):
                    stack.append((child, f"{where}[{index}]", depth + 1))
        elif isinstance(item, str):
            _check_text(item, where)
        elif isinstance(item, bool) or item is None or not numbers:
            continue
        elif isinstance(item, int):
            if not MIN_INTEGER <= item <= MAX_INTEGER:
                raise InvalidDocument(
                    f"integer {_short(item)} is outside SQLite's range "
                    f"({MIN_INTEGER} to {MAX_INTEGER})",
                    where,
                )
        elif isinstance(item, float) and not math.isfinite(item):
            raise InvalidDocument(f"{item} is not a finite number", where)


def check_text(text: str, what: str) -> str:
    """``text`` if it can be stored as UTF-8 (valid Unicode), else :class:`InvalidDocument`."""
    _check_text(text, what)
    return text


def _check_text(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidDocument(
            f"text holds a lone surrogate ({text[error.start]!r} at {error.start}), "
            "which is not valid Unicode",
            where,
        ) from None


def _lenient_int(digits: str) -> int | str:
    # Python converts at most 4300 digits; a longer number stays its digits
    return int(digits) if len(digits) <= 4000 else digits


def _no_constant(name: str) -> Any:
    raise InvalidDocument(f"{name} is not a finite number (JSON has no {name})")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


# One decoder each, made once (``json.loads`` with options builds one per call).
_PLAIN = json.JSONDecoder(
    parse_constant=_no_constant, parse_int=_int_in_range, parse_float=_finite_float
)
_LENIENT = json.JSONDecoder(parse_int=_lenient_int)
