"""Finding the SQL a module holds: every string that is a statement, and what it writes.

The ownership rule (``docs/store.md``, "Tables and their owners") is checked by
reading source, not by running it: :func:`statements` walks a module's syntax
tree and yields each string constant (an f-string's literal parts joined) that
reads as SQL, with its line; :func:`writes` names the tables a statement
inserts into, updates, deletes from or replaces into. Reads are not owned: a
join may read any table, inside the store layer.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import attrs

_SQL = re.compile(
    r"^\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|WITH|CREATE|DROP|ALTER|PRAGMA|"
    r"BEGIN|SAVEPOINT|RELEASE|ROLLBACK|COMMIT|VACUUM|ANALYZE|REINDEX)\b"
    r"|\b(INSERT\s+(OR\s+\w+\s+)?INTO|DELETE\s+FROM|UPDATE\s+\w+\s+SET|SELECT\s+.+\s+FROM)\b",
    re.IGNORECASE | re.DOTALL,
)
_WRITE = re.compile(
    r"\b(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|REPLACE\s+INTO|DELETE\s+FROM|UPDATE(?:\s+OR\s+\w+)?)"
    r"\s+[\"'\[`]?(\w+)",
    re.IGNORECASE,
)
# The statements inside a trigger body write from the trigger's table's schema,
# not from the module that holds the migration.
_TRIGGER = re.compile(r"\bCREATE\s+TRIGGER\b", re.IGNORECASE)


@attrs.frozen
class Found:
    path: str
    line: int
    sql: str


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            part.value if isinstance(part, ast.Constant) else " {} " for part in node.values
        )
    return None


def statements(path: Path, root: Path) -> Iterator[Found]:
    """Each SQL string in the module at ``path`` (docstrings left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    inner = {
        id(part)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for part in node.values
    }
    for node in ast.walk(tree):
        if id(node) in docstrings or id(node) in inner:
            continue
        text = _text(node)
        if text and _SQL.search(text) and _looks_like_sql(text):
            yield Found(str(path.relative_to(root)), getattr(node, "lineno", 0), text)


def _looks_like_sql(text: str) -> bool:
    # Prose that happens to start with "Update" or "Select" is not a statement.
    words = re.findall(r"[A-Za-z_]+", text)
    keywords = {"FROM", "INTO", "SET", "WHERE", "VALUES", "TABLE", "INDEX", "TRIGGER", "VIEW"}
    upper = [w for w in words if w.isupper()]
    # A bare statement keyword counts only in SQL's upper case ("commit" is git's word).
    return bool(keywords & set(upper)) or text.lstrip().startswith(
        ("PRAGMA", "BEGIN", "SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "VACUUM", "ANALYZE")
    )


def writes(sql: str) -> set[str]:
    """The tables ``sql`` writes (outside any trigger body it creates)."""
    if _TRIGGER.search(sql):
        return set()
    return {name for name in _WRITE.findall(sql) if name.upper() != "SET"}
