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
- in an upsert's ``DO UPDATE SET … [WHERE …]``, a bare column name is
  qualified with the target table (PostgreSQL reads it as ambiguous between
  the row and ``excluded``; SQLite as the row);
- ``LIMIT ?`` becomes ``LIMIT memsdk_limit(?)`` (a negative limit is none, as
  in SQLite); ``? IS NULL`` casts the parameter to text, so PostgreSQL can
  type a NULL that has no other use;
- ``9e999`` (SQLite's +inf) becomes ``'Infinity'``;
- ``temp.name`` becomes ``pg_temp.name`` (the connection's temporary tables);
- ``a IS ?`` / ``a IS NOT ?`` become ``IS [NOT] DISTINCT FROM`` (SQLite's
  ``IS`` compares any two values, NULL-safe);
- ``CAST(… AS REAL)`` / ``AS INTEGER`` become ``double precision`` / ``bigint``
  (PostgreSQL's ``real`` is 4 bytes, its ``integer`` 4 bytes), and so do the
  column types ``REAL`` / ``INTEGER`` of a ``CREATE [TEMP] TABLE`` (the
  owners' scratch tables: a 4-byte ``real`` rounds 1.15 to 1.1499999762);
- ``BEGIN IMMEDIATE``/``DEFERRED`` lose the mode;
- a unary ``+`` before a column (``WHERE +m.project = ?``: SQLite's way to
  keep an index out of a plan) is dropped (PostgreSQL has no ``+`` for text);
- a subquery in ``FROM`` without an alias gets one (``AS memsdk_sub1``):
  PostgreSQL before 16 refuses it;
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
_UNSUPPORTED = re.compile(
    r"^\s*(PRAGMA\b|INSERT\s+OR\s+REPLACE\b|REPLACE\s+INTO\b|UPDATE\s+OR\b)", re.IGNORECASE
)
_LIMIT = re.compile(r"\bLIMIT\s+%s", re.IGNORECASE)
_NULL_TEST = re.compile(r"(?<![\w)])%s\s+IS\s+(NOT\s+)?NULL\b", re.IGNORECASE)
_INFINITY = re.compile(r"(?<![\w.])9e999\b", re.IGNORECASE)
_TEMP = re.compile(r"\btemp\.(?=\w)", re.IGNORECASE)
_LIKE = re.compile(r"\bLIKE\b", re.IGNORECASE)
_IS = re.compile(
    r"\bIS\s+(NOT\s+)?(?!(?:NOT|NULL|TRUE|FALSE|DISTINCT|UNKNOWN|JSON|DOCUMENT|NORMALIZED)\b)(?=[%(\w])",
    re.IGNORECASE,
)
_CAST = re.compile(r"\bAS\s+(REAL|INTEGER)\s*\)", re.IGNORECASE)
_CREATE_TABLE = re.compile(r"^\s*CREATE\s+(?:TEMP\s+|TEMPORARY\s+)?TABLE\b", re.IGNORECASE)
_COLUMN_TYPE = re.compile(r"\b(REAL|INTEGER)\b", re.IGNORECASE)
_BEGIN = re.compile(r"^\s*BEGIN\s+(IMMEDIATE|DEFERRED|EXCLUSIVE)\b", re.IGNORECASE)
_RETURNING = re.compile(r"\bRETURNING\b", re.IGNORECASE)
_CAST_TYPES = {"REAL": "double precision", "INTEGER": "bigint"}
_JSON_LIST = re.compile(
    r"\bIN\s*\(\s*SELECT\s+value\s+FROM\s+json_each\(\s*\?\s*\)\s*\)", re.IGNORECASE
)
_ANY = "= ANY(\x00)"
#: A JSON list of integers, whose text is an array literal once its brackets are braces.
_INTEGERS = re.compile(r"\[\s*(?:-?\d+\s*(?:,\s*-?\d+\s*)*)?\]", re.ASCII)


class ArrayText(str):
    """An array literal (``{1,2,3}``), sent untyped so the server reads it as the array
    its place needs (``postgres/database.py`` registers its dumper)."""


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
            value = out[index]
            if isinstance(value, str) and _INTEGERS.fullmatch(value):
                # A list of integers (nearly always: ids) as an array literal, which
                # the server reads as the column's array type: no list to dump here.
                out[index] = ArrayText("{" + value[1:-1] + "}")
            elif isinstance(value, str | bytes):
                out[index] = json.loads(value)
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
    if _CREATE_TABLE.match(out):
        out = _COLUMN_TYPE.sub(lambda m: _CAST_TYPES[m.group(1).upper()], out)
    out = _alias_subqueries(out)
    out = _qualify_upsert(out)
    out = _LIMIT.sub("LIMIT memsdk_limit(%s)", out)
    out = _NULL_TEST.sub(r"CAST(%s AS text) IS \1NULL", out)
    out = _BEGIN.sub("BEGIN", out)
    out = _IS.sub(lambda m: "IS DISTINCT FROM " if m.group(1) else "IS NOT DISTINCT FROM ", out)
    if _OR_IGNORE.search(out):
        out = _OR_IGNORE.sub("INSERT INTO", out, count=1)
        out = _on_conflict_nothing(out)
    return out


_UNARY_PLUS = re.compile(r"((?:\b(?:WHERE|AND|OR|ON|NOT)\s+)|\(\s*)\+(?=[A-Za-z_])", re.IGNORECASE)
_FROM_SUBQUERY = re.compile(r"\bFROM\s*\(\s*SELECT\b", re.IGNORECASE)
_ALIAS_NEEDED = re.compile(
    r"\s*(?:$|[),;]|(?:WHERE|ORDER|GROUP|LIMIT|UNION|EXCEPT|INTERSECT|JOIN|LEFT|INNER|CROSS"
    r"|NATURAL|HAVING|WINDOW|RETURNING|OFFSET)\b)",
    re.IGNORECASE,
)


def _alias_subqueries(sql: str, count: list[int] | None = None) -> str:
    """Give each ``FROM (SELECT …)`` without an alias one (``memsdk_sub<n>``), nested ones too."""
    count = [0] if count is None else count
    out, position = [], 0
    for match in _FROM_SUBQUERY.finditer(sql):
        if match.start() < position:
            continue  # inside the subquery just done (it was done whole)
        opening = sql.index("(", match.start())
        close = _closing(sql, opening)
        if close is None:
            return sql  # unbalanced: left to the server's own error
        out.append(sql[position : opening + 1])
        out.append(_alias_subqueries(sql[opening + 1 : close], count))
        out.append(")")
        position = close + 1
        if _ALIAS_NEEDED.match(sql, position):
            count[0] += 1
            out.append(f" AS memsdk_sub{count[0]}")
    out.append(sql[position:])
    return "".join(out)


def _closing(sql: str, opening: int) -> int | None:
    """The index of the parenthesis closing the one at ``opening`` (quoted text skipped)."""
    depth, i = 0, opening
    while i < len(sql):
        char = sql[i]
        if char in "'\"":
            end = sql.find(char, i + 1)
            while end != -1 and sql.startswith(char, end + 1):  # a doubled quote
                end = sql.find(char, end + 2)
            if end == -1:
                return None
            i = end
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _rewrite(text: str) -> str:
    """Keyword rewrites in a run of SQL outside literals."""
    text = _UNARY_PLUS.sub(r"\1", text)
    text = _LIKE.sub("ILIKE", text)
    text = _TEMP.sub("pg_temp.", text)
    text = _INFINITY.sub("CAST('Infinity' AS double precision)", text)
    text = _CAST.sub(lambda m: f"AS {_CAST_TYPES[m.group(1).upper()]})", text)
    return text


_UPSERT_TARGET = re.compile(r"\bINSERT\s+INTO\s+(\"?\w+\"?)(?:\s+AS\s+(\w+))?", re.IGNORECASE)
_DO_UPDATE = re.compile(r"\bDO\s+UPDATE\s+SET\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"\bRETURNING\b", re.IGNORECASE)
_BARE = re.compile(r"(?<![\w.%\"\x01])([A-Za-z_]\w*)\b(?!\s*[.(])")
_KEYWORDS = frozenset(
    [
        "and",
        "or",
        "not",
        "is",
        "null",
        "in",
        "case",
        "when",
        "then",
        "else",
        "end",
        "excluded",
        "true",
        "false",
        "like",
        "ilike",
        "between",
        "distinct",
        "from",
        "as",
        "cast",
        "double",
        "precision",
        "bigint",
        "text",
        "real",
        "integer",
        "where",
        "coalesce",
        "exists",
        "select",
        "any",
        "all",
    ]
)


def _qualify_upsert(sql: str) -> str:
    update = _DO_UPDATE.search(sql)
    target = _UPSERT_TARGET.search(sql)
    if update is None or target is None:
        return sql
    table = target.group(2) or target.group(1)
    end = _CLAUSE_END.search(sql, update.end())
    stop = end.start() if end else len(sql)
    clause = sql[update.end() : stop]
    literals: list[str] = []

    def hide(match: re.Match[str]) -> str:
        literals.append(match.group())
        return f"\x01{len(literals) - 1}\x01"

    hidden = re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|%\(\w+\)s", hide, clause)
    qualified = _qualify(hidden, table)
    restored = re.sub("\x01(\\d+)\x01", lambda m: literals[int(m.group(1))], qualified)
    return sql[: update.end()] + restored + sql[stop:]


def _qualify(text: str, table: str) -> str:
    """Bare names right of each ``=`` (and after WHERE) qualified; assignment targets left alone."""
    out = []
    depth = 0
    expecting_target = True
    position = 0
    for match in re.finditer(r"[(),=]|\bWHERE\b|<>|!=|<=|>=", text, re.IGNORECASE):
        segment = text[position : match.start()]
        token = match.group()
        # The token after the segment goes in too: a name right before "(" is a function.
        out.append(segment if expecting_target else _bare(segment + token, table)[: -len(token)])
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
        elif token == "," and depth == 0:
            expecting_target = True
        elif (token == "=" and depth == 0) or token.upper() == "WHERE":
            expecting_target = False
        out.append(token)
        position = match.end()
    tail = text[position:]
    out.append(tail if expecting_target else _bare(tail, table))
    return "".join(out)


def _bare(text: str, table: str) -> str:
    return _BARE.sub(
        lambda m: m.group(1) if m.group(1).lower() in _KEYWORDS else f"{table}.{m.group(1)}", text
    )


def _on_conflict_nothing(sql: str) -> str:
    body = sql.rstrip().rstrip(";")
    returning = _RETURNING.search(body)
    if returning:
        return f"{body[: returning.start()]}ON CONFLICT DO NOTHING {body[returning.start() :]}"
    return f"{body} ON CONFLICT DO NOTHING"
