"""The schema as one text: ``schema.sql``, checked against what the migrations build.

The migrations are the history; ``schema.sql`` in this package is the
current schema a reader opens: every table, index, trigger and view of a
freshly migrated store, one statement each, a table followed by its indexes
and triggers, the views last. Above each table a comment names its **owner**
(the one module of the store layer that holds its statements) and says what
it is for; ``docs/store.md``'s table list is generated from those comments.

The test suite compares the file with a freshly migrated store statement by
statement (:func:`normalise` first), so the text cannot drift from the
migrations. After adding a migration, regenerate it (comments are kept by
object name)::

    python -m plugin_sdk.store.schema write   # schema.sql
    python -m plugin_sdk.store.schema docs    # the table list in docs/store.md
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import attrs
from sqlite_utils import Database

from plugin_sdk.store import driver

SCHEMA_FILE = Path(__file__).with_name("schema.sql")

# Objects SQLite makes on its own (statistics, AUTOINCREMENT counters, the
# shadow tables of an FTS5 table, implicit indexes), which no statement names.
_INTERNAL = re.compile(r"^sqlite_|^.+_fts_(data|idx|docsize|config|content)$")
_OWNER = re.compile(r"^--\s*owner:\s*(\S+)\s*$")


@attrs.frozen
class Statement:
    """One object of the schema: its kind, name, table, SQL and the comment above it."""

    type: str
    name: str
    table: str
    sql: str
    comment: tuple[str, ...] = ()

    @property
    def owner(self) -> str | None:
        """The owner module's path, from an ``-- owner: path`` comment line."""
        for line in self.comment:
            found = _OWNER.match(line)
            if found:
                return found.group(1)
        return None

    @property
    def purpose(self) -> str:
        """The comment's other lines, joined: what the object is for."""
        return " ".join(
            line.lstrip("-").strip() for line in self.comment if not _OWNER.match(line)
        ).strip()


def normalise(sql: str) -> str:
    """``sql`` without comments, with whitespace collapsed: two texts of one statement compare equal.

    Quoted text (strings and quoted names) is kept as it is.
    """
    parts: list[tuple[bool, str]] = []  # (quoted, text)
    plain: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"[`":
            parts.append((False, "".join(plain)))
            plain = []
            close = "]" if ch == "[" else ch
            j = sql.find(close, i + 1)
            j = n - 1 if j == -1 else j
            parts.append((True, sql[i : j + 1]))
            i = j + 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j == -1 else j
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j == -1 else j + 2
        else:
            plain.append(ch)
            i += 1
    parts.append((False, "".join(plain)))
    text = "".join(
        part if quoted else re.sub(r"\s*([(),;])\s*", r"\1", re.sub(r"\s+", " ", part))
        for quoted, part in parts
    )
    return text.strip().rstrip(";").strip()


def live(db: Database) -> list[Statement]:
    """The schema of ``db``: its objects in the order :func:`render` writes them."""
    rows = db.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
    ).fetchall()
    found = [Statement(kind, name, table, sql) for kind, name, table, sql in rows]
    return _ordered(s for s in found if not _INTERNAL.match(s.name))


def fresh() -> list[Statement]:
    """The schema of a store the known migrations build from nothing."""
    from plugin_sdk.store.migrations import migrations

    db = Database(memory=True, execute_plugins=False)
    try:
        for migration in migrations.pending(db):
            migration.fn(db)
        migrations.ensure_migrations_table(db)
        return live(db)
    finally:
        db.close()


def _ordered(statements: Iterable[Statement]) -> list[Statement]:
    items = list(statements)
    tables = [s for s in items if s.type == "table"]
    rest = [s for s in items if s.type in ("index", "trigger")]
    views = [s for s in items if s.type == "view"]
    ordered: list[Statement] = []
    for table in tables:
        ordered.append(table)
        ordered.extend(s for s in rest if s.table == table.name and s.type == "index")
        ordered.extend(s for s in rest if s.table == table.name and s.type == "trigger")
    placed = {s.name for s in ordered}
    ordered.extend(s for s in rest if s.name not in placed)  # triggers on views
    ordered.extend(views)
    return ordered


def parse(text: str) -> list[Statement]:
    """The statements of a schema text, each with the comment lines right above it."""
    found: list[Statement] = []
    comment: list[str] = []
    buffer: list[str] = []
    for line in text.splitlines():
        if not buffer and (line.startswith("--") or not line.strip()):
            comment = [*comment, line] if line.startswith("--") else []
            continue
        buffer.append(line)
        sql = "\n".join(buffer)
        if driver.complete_statement(sql):
            found.append(_statement(sql.strip(), tuple(comment)))
            buffer, comment = [], []
    if buffer:
        raise ValueError(f"{SCHEMA_FILE.name}: unfinished statement: {buffer[0][:60]!r}")
    return found


def _statement(sql: str, comment: tuple[str, ...]) -> Statement:
    match = re.match(
        r"CREATE\s+(?:UNIQUE\s+|VIRTUAL\s+)?(TABLE|INDEX|TRIGGER|VIEW)\s+"
        r"(?:IF\s+NOT\s+EXISTS\s+)?[\"'\[]?(\w+)[\"'\]]?"
        r"(?:.*?\bON\s+[\"'\[]?(\w+))?",
        sql,
        re.IGNORECASE | re.DOTALL,
    )
    if match is None:
        raise ValueError(f"{SCHEMA_FILE.name}: not a CREATE statement: {sql[:60]!r}")
    kind, name, on = match.group(1).lower(), match.group(2), match.group(3)
    table = on if kind in ("index", "trigger") and on else name
    return Statement(kind, name, table, sql.rstrip(";"), comment)


def written() -> list[Statement]:
    """The statements of ``schema.sql`` as shipped."""
    return parse(SCHEMA_FILE.read_text(encoding="utf-8"))


def render(statements: list[Statement], comments: dict[str, tuple[str, ...]]) -> str:
    """The schema text: a header, then each statement with its kept comment."""
    lines = [
        "-- memsdk's store schema: what a freshly migrated store holds.",
        "-- Generated by `python -m plugin_sdk.store.schema write` and checked by the",
        "-- test suite against the migrations; edit only the comments by hand.",
        "",
    ]
    for statement in statements:
        lines.extend(comments.get(statement.name, ()))
        lines.append(_tidy(statement.sql) + ";")
        lines.append("")
    return "\n".join(lines)


def _tidy(sql: str) -> str:
    """``sql`` re-indented: the first line as it is, the rest four spaces in, a closing line at 0."""
    first, *rest = sql.strip().splitlines()
    closing = ("END", ")")
    rest = [
        line.strip() if line.strip().startswith(closing) else line for line in rest if line.strip()
    ]
    cut = len(rest[0]) - len(rest[0].lstrip()) if rest else 0  # the first body line's indent
    body = [line[min(cut, len(line) - len(line.lstrip())) :] for line in rest]
    return "\n".join(
        [first] + [line if line.startswith(closing) or not line else "    " + line for line in body]
    )


def tables_markdown(statements: list[Statement]) -> str:
    """The Markdown table of every table: its owner and what it is for."""
    rows = ["| table | owner | what it holds |", "|---|---|---|"]
    for s in statements:
        if s.type == "table":
            rows.append(f"| `{s.name}` | `{s.owner or '?'}` | {s.purpose or '?'} |")
    return "\n".join(rows)


DOCS = Path("docs/store.md")
_BEGIN, _END = "<!-- tables:begin -->", "<!-- tables:end -->"


def docs_text(current: str, statements: list[Statement]) -> str:
    """``current`` (docs/store.md) with its generated table list replaced."""
    block = f"{_BEGIN}\n{tables_markdown(statements)}\n{_END}"
    if _BEGIN in current:
        head, _, rest = current.partition(_BEGIN)
        _, _, tail = rest.partition(_END)
        return head + block + tail
    return current.rstrip("\n") + "\n\n## Tables\n\n" + block + "\n"


def main(argv: Iterator[str]) -> int:
    """``python -m plugin_sdk.store.schema write|docs``."""
    command = next(argv, "")
    if command == "write":
        kept = {s.name: s.comment for s in written()} if SCHEMA_FILE.exists() else {}
        SCHEMA_FILE.write_text(render(fresh(), kept), encoding="utf-8")
        print(f"wrote {SCHEMA_FILE}")
        return 0
    if command == "docs":
        DOCS.write_text(docs_text(DOCS.read_text(encoding="utf-8"), written()), encoding="utf-8")
        print(f"wrote {DOCS}")
        return 0
    print("usage: python -m plugin_sdk.store.schema write|docs", file=sys.stderr)
    return 2
