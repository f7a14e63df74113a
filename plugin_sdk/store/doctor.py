"""``memsdk doctor``: check a store file, and rebuild what can be rebuilt.

:func:`doctor` opens the file itself (not as a :class:`Store`, which would
refuse a store whose schema drifted, or migrate one) and runs these checks:

- **integrity**: SQLite's ``PRAGMA integrity_check``;
- **schema**: the file against its migration records (``fence.py``): steps
  this memsdk does not know, missing records, missing tables, indexes and
  triggers, ``user_version``; pending steps are noted (opening applies them);
- **full-text index**: ``memories_fts``'s own structure (FTS5's
  ``integrity-check``) and its rows against the live memories
  (``tables.search.index_check``: it holds those, and only those);
- **references**: ``PRAGMA foreign_key_check`` over every table, and every
  table with a ``memory_id`` column without a declared key (a vector index,
  say) against ``memories``;
- **composites**: every member in its head's project;
- **merges**: every superseded memory points at an existing memory of its own
  project, never itself; ``merged_from`` lists existing memories;
- **dreamer**: cursors are JSON; a running task holds a lease, and a lease
  past its end is reported as stale;
- **read records**: what reads recorded late (a busy writer, a full disk)
  or lost, per kind (``store/writing/pending.py``): a warning for each.

Each finding is an ``error`` (the store is not as it should be; exit code 1)
or a ``warning`` (worth knowing, nothing is wrong: a stale lease is taken over
by the next run). With ``repair=True`` it rebuilds what can be rebuilt without
guessing: missing indexes and triggers (from the migrations' own SQL), the
full-text index (from the live memories, ``tables.search.rebuild_index``), ``user_version``, and stale leases
(released); a missing table or a broken reference is only reported.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import attrs

from plugin_sdk.errors import SchemaTooNew, StoreError
from plugin_sdk.store import driver, fence, postgres
from plugin_sdk.store.locking import StoreDatabase, open_database
from plugin_sdk.store.migrations import migrations
from plugin_sdk.store.tables.memories.search import check_index, index_check, rebuild_index
from plugin_sdk.store.tables.queues import sessions
from plugin_sdk.store.writing import pending

CHECKS = (
    "integrity",
    "schema",
    "fts",
    "references",
    "categories",
    "composites",
    "merges",
    "dreamer",
    "read records",
)
_SHOWN = 20  # findings of one kind shown before "and N more"


@attrs.define
class Finding:
    """One thing a check found."""

    check: str
    severity: str  # "error" or "warning"
    detail: str
    repaired: bool = False


@attrs.define
class DoctorReport:
    """What :func:`doctor` found (and repaired) in one store file."""

    path: str
    findings: list[Finding] = attrs.field(factory=list)
    checks: list[str] = attrs.field(factory=list)

    @property
    def ok(self) -> bool:
        """True when no error is left unrepaired."""
        return not any(f.severity == "error" and not f.repaired for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "checks": self.checks,
            "findings": [attrs.asdict(f) for f in self.findings],
        }

    def add(self, check: str, severity: str, detail: str, repaired: bool = False) -> None:
        self.findings.append(Finding(check, severity, detail, repaired))


def doctor(path: str | Path, *, repair: bool = False, now: datetime | None = None) -> DoctorReport:
    """Check the store at ``path`` (see the module docstring); repair when asked."""
    path = str(path)
    checks: tuple[str, ...] = CHECKS
    run = _RUN
    db: Any
    if postgres.is_url(path):
        from plugin_sdk.store.connection import redacted
        from plugin_sdk.store.postgres.database import connect

        try:
            db = connect(path)
        except driver.DatabaseError as error:
            raise StoreError(
                f"cannot open store {redacted(path)}: {redacted(str(error))}"
            ) from error
        path = redacted(path)
        checks = tuple(check for check in CHECKS if check not in _SQLITE_ONLY)
        run = {**_RUN, "schema": _schema_postgres, "references": _references_postgres}
    else:
        if path != ":memory:" and not Path(path).expanduser().is_file():
            raise StoreError(f"no store at {path}")
        try:
            db = open_database(path)
        except driver.DatabaseError as error:
            raise StoreError(f"cannot open store {path}: {error}") from error
    report = DoctorReport(path)
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    try:
        for check in checks:
            report.checks.append(check)
            try:
                run[check](db, report, repair, moment)
            except driver.DatabaseError as error:
                report.add(check, "error", f"the check could not run: {error}")
                if check in ("integrity", "schema"):
                    break  # the rest would only repeat this
    finally:
        db.close()
    return report


#: Checks of SQLite's file: PostgreSQL keeps its pages, foreign keys and (a
#: generated column) its full-text index itself.
_SQLITE_ONLY = ("integrity", "fts")


def _schema_postgres(db: Any, report: DoctorReport, repair: bool, now: datetime) -> None:
    from plugin_sdk.store.postgres import schema as pg_schema

    try:
        pg_schema.refuse_newer(db, report.path)
    except SchemaTooNew as error:
        report.add("schema", "error", str(error))
        return
    pending = pg_schema.pending(db)
    if pending and pg_schema.applied(db):
        report.add(
            "schema",
            "warning",
            f"migrations pending: {', '.join(pending)} (opening the store applies them)",
        )
    for finding in pg_schema.differences(db):
        report.add("schema", "error", f"{finding} (restore from a backup: pg_dump/pg_restore)")


def _references_postgres(db: Any, report: DoctorReport, repair: bool, now: datetime) -> None:
    """Foreign keys PostgreSQL enforces; the ``memory_id`` columns without one are checked here."""
    if not db["memories"].exists():
        return
    declared = {
        (table, column)
        for table, column in db.execute(
            "SELECT tc.table_name, kcu.column_name FROM information_schema.table_constraints tc "
            "JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name "
            "AND kcu.table_schema = tc.table_schema WHERE tc.constraint_type = 'FOREIGN KEY' "
            "AND tc.table_schema = current_schema()"
        )
    }
    for table in db.table_names():
        if "memory_id" in db.columns(table) and (table, "memory_id") not in declared:
            (count,) = db.execute(
                f'SELECT count(*) FROM "{table}" WHERE memory_id IS NOT NULL '
                "AND memory_id NOT IN (SELECT id FROM memories)"
            ).fetchone()
            if count:
                report.add("references", "error", f"{count} rows of {table} name missing memories")


def _integrity(db: StoreDatabase, report: DoctorReport, repair: bool, now: datetime) -> None:
    rows = [row[0] for row in db.execute("PRAGMA integrity_check")]
    if rows != ["ok"]:
        for row in rows[:_SHOWN]:
            report.add("integrity", "error", f"integrity_check: {row}")


def _schema(db: StoreDatabase, report: DoctorReport, repair: bool, now: datetime) -> None:
    try:
        fence.refuse_newer(db, report.path)
    except SchemaTooNew as error:
        report.add("schema", "error", str(error))
        return
    applied = fence.applied(db)
    gaps = fence.missing_records(applied)
    if gaps:
        report.add("schema", "error", f"migration record missing: {', '.join(gaps)}")
    pending = [m.name for m in migrations.pending(db)]
    if pending and not gaps:
        report.add(
            "schema",
            "warning",
            f"migrations pending: {', '.join(pending)} (opening the store applies them)",
        )
    if not pending and not gaps:
        expected = fence.expected_schema()
        for kind, name in fence.missing_objects(db):
            sql = expected[(kind, name)]
            fixable = kind in ("index", "trigger") and sql is not None
            fixed = False
            if repair and fixable and sql is not None:
                with db.atomic():
                    db.execute(sql)
                fixed = True
            hint = "" if fixable else " (restore the file from a backup)"
            report.add("schema", "error", f"{kind} missing: {name}{hint}", fixed)
        for kind, name in fence.changed_objects(db):
            sql = expected[(kind, name)]
            fixable = kind in ("index", "trigger", "view") and sql is not None
            fixed = False
            if repair and fixable and sql is not None:
                with db.atomic():  # the same object, rebuilt from the migrations' SQL
                    db.execute(f"DROP {kind.upper()} [{name}]")
                    db.execute(sql)
                fixed = True
            hint = "" if fixable else " (restore the file from a backup)"
            report.add("schema", "error", f"{kind} differs from its migration: {name}{hint}", fixed)
    version = fence.user_version(db)
    if applied and version != len(applied):
        fixed = False
        if repair and not gaps:
            with db.atomic():
                db.execute(f"PRAGMA user_version = {len(applied):d}")
            fixed = True
        severity = "warning" if version == 0 else "error"
        report.add(
            "schema",
            severity,
            f"user_version is {version} but {len(applied)} migration steps are recorded",
            fixed,
        )


def _fts(db: StoreDatabase, report: DoctorReport, repair: bool, now: datetime) -> None:
    if not db["memories_fts"].exists() or not db["memories"].exists():
        return  # reported by the schema check
    problem = ""
    try:
        with db.atomic():  # the index's own structure
            check_index(db)
        live_only = db.execute(  # the index of m013_search (before it, every row was indexed)
            "SELECT 1 FROM pragma_table_xinfo('memories') WHERE name = 'fts_scope'"
        ).fetchone()
        if live_only and db["memories_fts_docsize"].exists():
            differ = index_check(db)  # the live memories, and only they
            if differ["missing"] or differ["extra"]:
                problem = (
                    f"{len(differ['missing'])} live memories missing, "
                    f"{len(differ['extra'])} rows that are not live memories"
                )
    except driver.DatabaseError as error:
        problem = str(error)
    if not problem:
        return
    fixed = False
    if repair:
        with db.atomic():
            rebuild_index(db)
        fixed = True
    report.add(
        "fts", "error", f"the full-text index does not match the memories ({problem})", fixed
    )


def _references(db: StoreDatabase, report: DoctorReport, repair: bool, now: datetime) -> None:
    broken: dict[tuple[str, str], int] = {}
    for table, _rowid, parent, _fk in db.execute("PRAGMA foreign_key_check"):
        broken[(table, parent)] = broken.get((table, parent), 0) + 1
    for (table, parent), count in sorted(broken.items()):
        report.add("references", "error", f"{count} rows of {table} point at missing {parent} rows")
    if not db["memories"].exists():
        return
    for table in db.table_names():
        columns = {column.name for column in db.table(table).columns}
        declared = {fk.column for fk in db.table(table).foreign_keys}
        if "memory_id" in columns and "memory_id" not in declared:
            (count,) = db.execute(
                f"SELECT count(*) FROM [{table}] WHERE memory_id IS NOT NULL "
                "AND memory_id NOT IN (SELECT id FROM memories)"
            ).fetchone()
            if count:
                report.add("references", "error", f"{count} rows of {table} name missing memories")


def _categories(db: StoreDatabase, report: DoctorReport, repair: bool, now: datetime) -> None:
    """A live memory (active or pending) must be in an active category of the store."""
    if not (db["memories"].exists() and db["categories"].exists()):
        return
    rows = db.execute(
        """SELECT m.category, m.status, count(*), min(m.id), group_concat(DISTINCT m.project)
           FROM memories m LEFT JOIN categories c ON c.name = m.category
           WHERE m.status IN ('active', 'pending') AND (c.name IS NULL OR c.status != 'active')
           GROUP BY m.category, m.status ORDER BY m.category, m.status"""
    ).fetchall()
    for category, status, count, first, projects in rows[:_SHOWN]:
        known = db.execute("SELECT status FROM categories WHERE name = ?", [category]).fetchone()
        why = "unknown to the store" if known is None else f"{known[0]}, not active"
        report.add(
            "categories",
            "error",
            f"{count} {status} memories (first #{first}, project {projects}) are in category "
            f"{category!r}, {why}: quarantine or archive them, or install the pack that has it",
        )
    _more(report, "categories", len(rows))


def _composites(db: StoreDatabase, report: DoctorReport, repair: bool, now: datetime) -> None:
    if not db["composite_members"].exists():
        return
    rows = db.execute(
        """SELECT c.id, m.id, h.project, m.project FROM composites c
           JOIN memories h ON h.id = c.head_memory_id
           JOIN composite_members cm ON cm.composite_id = c.id
           JOIN memories m ON m.id = cm.member_memory_id
           WHERE m.project != h.project ORDER BY c.id, m.id"""
    ).fetchall()
    for composite, member, head_project, member_project in rows[:_SHOWN]:
        report.add(
            "composites",
            "error",
            f"composite {composite} (project {head_project}) has member {member} "
            f"of project {member_project}",
        )
    _more(report, "composites", len(rows))


def _merges(db: StoreDatabase, report: DoctorReport, repair: bool, now: datetime) -> None:
    if not db["memories"].exists():
        return
    rows = db.execute(
        """SELECT m.id, m.superseded_by, t.id, m.project, t.project FROM memories m
           LEFT JOIN memories t ON t.id = m.superseded_by
           WHERE (m.status = 'superseded' AND m.superseded_by IS NULL)
              OR (m.superseded_by IS NOT NULL
                  AND (t.id IS NULL OR t.project != m.project OR t.id = m.id))
           ORDER BY m.id"""
    ).fetchall()
    for memory, pointer, found, project, other in rows[:_SHOWN]:
        if pointer is None:
            detail = f"memory {memory} is superseded but names no successor"
        elif found is None:
            detail = f"memory {memory} is superseded by memory {pointer}, which does not exist"
        elif found == memory:
            detail = f"memory {memory} is superseded by itself"
        else:
            detail = f"memory {memory} ({project}) is superseded by memory {pointer} ({other})"
        report.add("merges", "error", detail)
    _more(report, "merges", len(rows))
    ids = {row[0] for row in db.execute("SELECT id FROM memories")}
    for memory, merged in db.execute(
        "SELECT id, merged_from FROM memories WHERE merged_from IS NOT NULL ORDER BY id"
    ):
        try:
            sources = json.loads(merged)
        except ValueError:
            report.add("merges", "error", f"memory {memory}: merged_from is not JSON")
            continue
        missing = [s for s in sources if s not in ids] if isinstance(sources, list) else sources
        if missing:
            report.add("merges", "warning", f"memory {memory}: merged_from names {missing}")


def _dreamer(db: StoreDatabase, report: DoctorReport, repair: bool, now: datetime) -> None:
    if not db["dreamer_state"].exists():
        return
    stamp = now.isoformat(timespec="microseconds")
    for task, project, cursor, status, owner, until in sessions.dreamer_leases(db):
        where = f"dreamer task {task!r} of project {project!r}"
        if cursor is not None:
            try:
                json.loads(cursor)
            except ValueError:
                report.add("dreamer", "error", f"{where}: its cursor is not JSON")
        if status == "running" and not owner:
            report.add("dreamer", "error", f"{where} is running but holds no lease")
        elif owner and until and until < stamp:
            fixed = False
            if repair:
                with db.atomic():
                    sessions.release_stale_lease(db, task, project, owner, until)
                fixed = True
            report.add(
                "dreamer",
                "warning",
                f"{where}: stale lease of {owner} (ended {until}); the next run takes it over",
                fixed,
            )


def _read_records(db: StoreDatabase, report: DoctorReport, repair: bool, now: datetime) -> None:
    if not db["read_records"].exists():
        return
    for what, deferred, dropped in pending.counts(db.conn):
        if deferred:
            report.add("read records", "warning", f"{deferred} {what} records written late")
        if dropped:
            report.add("read records", "warning", f"{dropped} {what} records dropped")


def _more(report: DoctorReport, check: str, count: int) -> None:
    if count > _SHOWN:
        report.add(check, "error", f"and {count - _SHOWN} more")


_RUN = {
    "integrity": _integrity,
    "schema": _schema,
    "fts": _fts,
    "references": _references,
    "categories": _categories,
    "composites": _composites,
    "merges": _merges,
    "dreamer": _dreamer,
    "read records": _read_records,
}
