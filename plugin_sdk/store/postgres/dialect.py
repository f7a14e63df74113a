"""SQLite's spelling of a statement, rewritten for PostgreSQL.

The owners write their SQL once, in what both engines accept; where SQLite's
spelling has no PostgreSQL equivalent of the same text, :func:`translate`
rewrites it, outside string literals, identifiers in double quotes and
comments:

- ``?`` placeholders become ``%s`` (and ``:name`` with a mapping, ``%(name)s``);
  a ``%`` becomes ``%%``, as psycopg's placeholders require;
- ``[name]`` identifiers become ``"name"``; ``==`` becomes ``=``;
- ``INSERT OR IGNORE INTO`` becomes ``INSERT INTO … ON CONFLICT DO NOTHING``;
- ``LIKE`` becomes ``ILIKE`` (SQLite's ``LIKE`` ignores ASCII case);
- ``temp.name`` becomes ``pg_temp.name`` (the connection's temporary tables);
- ``a IS ?`` / ``a IS NOT ?`` become ``IS [NOT] DISTINCT FROM`` (SQLite's
  ``IS`` compares any two values, NULL-safe);
- ``CAST(… AS REAL)`` / ``AS INTEGER`` become ``double precision`` / ``bigint``
  (PostgreSQL's ``real`` is 4 bytes, its ``integer`` 4 bytes);
- ``BEGIN IMMEDIATE``/``DEFERRED`` lose the mode;
- ``x IN (SELECT value FROM json_each(?))``, the owners' way to pass a list
  of ids as one JSON parameter, becomes ``x = ANY(%s)`` and the parameter an
  array (:class:`Statement` names which ones), so the list is typed like
  ``x`` and its index is used.

SQLite's functions without a PostgreSQL namesake (``json_extract``,
``julianday``, ``group_concat``, two-argument ``max``…) are not rewritten:
the schema defines them (``schema/postgres_compat.sql``). ``INSERT OR
REPLACE`` and ``PRAGMA`` have no translation and raise :class:`ValueError`
naming the statement: such a statement belongs in the owner's engine branch.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any

import attrs

_TOKEN = re.compile(
    r"""
    (?P<string>'(?:[^']|'')*')
  | (?P<ident>"(?:[^"]|"")*")
  | (?P<comment>--[^\n]*|/\*.*?\*/)
  | (?P<bracket>(?<![\w)\]])\[[^\]\s][^\]]*\])
  | (?P<named>(?<![:\w]):[A-Za-z_]\w*)
  | (?P<question>\?\d*)
  | (?P<percent>%)
  | (?P<eqeq>==)
    """,
    re.VERBOSE | re.DOTALL,
)
_OR_IGNORE = re.compile(r"\bINSERT\s+OR\s+IGNORE\s+INTO\b", re.IGNORECASE)
_UNSUPPORTED = re.compile(r"^\s*(PRAGMA\b|INSERT\s+OR\s+REPLACE\b|REPLACE\s+INTO\b)", re.IGNORECASE)
_TEMP = re.compile(r"\btemp\.(?=\w)", re.IGNORECASE)
_LIKE = re.compile(r"\bLIKE\b", re.IGNORECASE)
_IS = re.compile(
    r"\bIS\s+(NOT\s+)?(?!(?:NOT|NULL|TRUE|FALSE|DISTINCT|UNKNOWN|JSON|DOCUMENT|NORMALIZED)\b)(?=[%(\w])",
    re.IGNORECASE,
)
_CAST = re.compile(r"\bAS\s+(REAL|INTEGER)\s*\)", re.IGNORECASE)
_BEGIN = re.compile(r"^\s*BEGIN\s+(IMMEDIATE|DEFERRED|EXCLUSIVE)\b", re.IGNORECASE)
_RETURNING = re.compile(r"\bRETURNING\b", re.IGNORECASE)
_CAST_TYPES = {"REAL": "double precision", "INTEGER": "bigint"}
_JSON_LIST = re.compile(
    r"\bIN\s*\(\s*SELECT\s+value\s+FROM\s+json_each\(\s*\?\s*\)\s*\)", re.IGNORECASE
)
_ANY = "= ANY(\x00)"


@attrs.frozen
class Statement:
    """A translated statement: its text, and which ``?`` take a JSON list as an array."""

    text: str
    arrays: tuple[int, ...] = ()
    #: A ``SELECT *`` whose tables may hold the ``rowid`` column the PostgreSQL
    #: schema adds (SQLite's rowid is no column): rows leave it out.
    hides_rowid: bool = False

    def parameters(self, values: Sequence[Any]) -> list[Any]:
        """``values`` with the JSON lists at :attr:`arrays` decoded into Python lists."""
        if not self.arrays:
            return list(values)
        out = list(values)
        for index in self.arrays:
            if isinstance(out[index], str | bytes):
                out[index] = json.loads(out[index])
        return out


@functools.lru_cache(maxsize=4096)
def statement(sql: str, named: bool = False) -> Statement:
    """:func:`translate`, and the positions of the JSON-list parameters it made arrays."""
    hides = _hides_rowid(sql)
    marked = _JSON_LIST.sub(_ANY, sql)
    if marked == sql or named:
        return Statement(translate(sql, named), (), hides)
    text = translate(marked, named)
    marks = re.findall(r"%s|\x00", text)
    arrays = [index for index, mark in enumerate(marks) if mark == "\x00"]
    return Statement(text.replace("\x00", "%s"), tuple(arrays), hides)


_SELECT_LIST = re.compile(r"^\s*SELECT\s+(.*?)\bFROM\b", re.IGNORECASE | re.DOTALL)


def _hides_rowid(sql: str) -> bool:
    found = _SELECT_LIST.match(sql)
    if found is None:
        return False
    columns = found.group(1)
    return "*" in columns and "rowid" not in columns.lower()


@functools.lru_cache(maxsize=4096)
def translate(sql: str, named: bool = False) -> str:
    """``sql`` as PostgreSQL reads it (``named``: the parameters are a mapping)."""
    if _UNSUPPORTED.match(sql):
        raise ValueError(f"no PostgreSQL form of this SQLite statement: {sql.strip()[:80]!r}")
    parts: list[str] = []
    position = 0
    for match in _TOKEN.finditer(sql):
        parts.append(_rewrite(sql[position : match.start()]))
        kind = match.lastgroup
        text = match.group()
        if kind == "string":
            parts.append(text.replace("%", "%%"))
        elif kind in ("ident", "comment"):
            parts.append(text.replace("%", "%%") if kind == "ident" else " ")
        elif kind == "bracket":
            parts.append('"' + text[1:-1].replace('"', '""') + '"')
        elif kind == "named":
            parts.append(f"%({text[1:]})s" if named else text)
        elif kind == "question":
            if len(text) > 1:
                raise ValueError(f"numbered placeholders ({text}) are not supported: {sql[:80]!r}")
            parts.append("%s")
        elif kind == "percent":
            parts.append("%%")
        else:  # ==
            parts.append("=")
        position = match.end()
    parts.append(_rewrite(sql[position:]))
    out = "".join(parts)
    out = _BEGIN.sub("BEGIN", out)
    out = _IS.sub(lambda m: "IS DISTINCT FROM " if m.group(1) else "IS NOT DISTINCT FROM ", out)
    if _OR_IGNORE.search(out):
        out = _OR_IGNORE.sub("INSERT INTO", out, count=1)
        out = _on_conflict_nothing(out)
    return out


def _rewrite(text: str) -> str:
    """Keyword rewrites in a run of SQL outside literals."""
    text = _LIKE.sub("ILIKE", text)
    text = _TEMP.sub("pg_temp.", text)
    text = _CAST.sub(lambda m: f"AS {_CAST_TYPES[m.group(1).upper()]})", text)
    return text


def _on_conflict_nothing(sql: str) -> str:
    body = sql.rstrip().rstrip(";")
    returning = _RETURNING.search(body)
    if returning:
        return f"{body[: returning.start()]}ON CONFLICT DO NOTHING {body[returning.start() :]}"
    return f"{body} ON CONFLICT DO NOTHING"
