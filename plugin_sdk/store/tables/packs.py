"""The owner of packs, categories, criteria, criteria_history: every statement that touches them.

Criteria values are stored as JSON text; the methods here take and return that
text as it is stored, except :meth:`PackRows.categories`, which builds the
:class:`~plugin_sdk.store.models.Category` records (effective criteria decoded).
Writes are made inside the caller's transaction (``store.atomic()``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from plugin_sdk.store.models import CRITERIA_FIELDS, Category, Criterion

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


class PackRows:
    """Statements on packs, categories, criteria, criteria_history; reached as ``store.tables.packs``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # Project-wide (host/projects.py, host/portable.py)

    def export_rows(self) -> Iterator[dict[str, Any]]:
        """Every installed pack's row, in the order they were installed."""
        return self.db.query("SELECT * FROM packs ORDER BY installed_at, rowid")

    def all_overrides(self) -> list[tuple[str, str, str]]:
        """(category, field, user_override JSON) of every overridden criteria field, in order."""
        return self.db.execute(
            "SELECT category, field, user_override FROM criteria "
            "WHERE user_override IS NOT NULL ORDER BY category, field"
        ).fetchall()

    def import_override(self, category: str, field: str, value: str) -> None:
        """Set an imported override (JSON text) where the store has none of its own (now)."""
        self.db.execute(
            "UPDATE criteria SET user_override = ?, updated_at = ? "
            "WHERE category = ? AND field = ? AND user_override IS NULL",
            [value, self.store.now(), category, field],
        )

    # packs

    def all(self) -> list[dict[str, Any]]:
        """Every installed pack's row, by name."""
        return list(self.db.query("SELECT * FROM packs ORDER BY name"))

    def names(self) -> list[str]:
        """Installed pack names in install order (install time, then rowid)."""
        sql = "SELECT name FROM packs ORDER BY installed_at, rowid"
        return [row[0] for row in self.db.execute(sql).fetchall()]

    def hashes(self) -> list[tuple[str, str]]:
        """``(name, content_hash)`` of every installed pack, in install order."""
        sql = "SELECT name, content_hash FROM packs ORDER BY installed_at, rowid"
        return [(row[0], row[1]) for row in self.db.execute(sql).fetchall()]

    def documents(self) -> list[tuple[str, str]]:
        """``(name, document JSON)`` of every installed pack, in install order."""
        sql = "SELECT name, document FROM packs ORDER BY installed_at, rowid"
        return [(row[0], row[1]) for row in self.db.execute(sql).fetchall()]

    def insert(self, row: list[Any]) -> None:
        """Add a pack: name, version, description, content_hash, source, document, installed, updated."""
        self.db.execute("INSERT INTO packs VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)

    def update(
        self,
        name: str,
        *,
        version: str,
        description: str,
        content_hash: str,
        source: str,
        document: str,
        now: str,
    ) -> None:
        """Replace an installed pack's version, description, hash, source and document."""
        self.db.execute(
            """UPDATE packs SET version = ?, description = ?, content_hash = ?, source = ?,
               document = ?, updated_at = ? WHERE name = ?""",
            [version, description, content_hash, source, document, now, name],
        )

    # categories

    def categories(self, *, include_retired: bool = False) -> list[Category]:
        """Categories in priority order (then name), with effective criteria."""
        where = "" if include_retired else "WHERE c.status = 'active'"
        rows = list(
            self.db.query(f"SELECT c.* FROM categories c {where} ORDER BY c.priority, c.name")
        )
        crit: dict[str, dict[str, Criterion]] = {}
        for row in self.db.query("SELECT * FROM criteria"):
            default = json.loads(row["pack_default"])
            override = None if row["user_override"] is None else json.loads(row["user_override"])
            crit.setdefault(row["category"], {})[row["field"]] = Criterion(
                field=row["field"],
                value=default if override is None else override,
                source="pack" if override is None else "override",
                pack_default=default,
                user_override=override,
            )
        return [_category(row, crit.get(row["name"], {})) for row in rows]

    def category_names(self, *, include_retired: bool = False) -> list[str]:
        """Names of the active categories (or all), in priority order."""
        where = "" if include_retired else "WHERE status = 'active'"
        sql = f"SELECT name FROM categories {where} ORDER BY priority, name"
        return [row["name"] for row in self.db.query(sql)]

    def renamed_to(self, name: str) -> str | None:
        """The active category a retired category was renamed to (following renames), if any."""
        seen = {name}
        current = name
        while True:
            row = self.db.execute(
                "SELECT status, renamed_to FROM categories WHERE name = ?", [current]
            ).fetchone()
            if row is None:
                return None
            if row[0] == "active":
                return current if current != name else None
            if not row[1] or row[1] in seen:
                return None
            seen.add(row[1])
            current = row[1]

    def pack_of(self, name: str) -> str | None:
        """The pack that declared category ``name`` (active or retired); None if the store has none."""
        rows = list(self.db.query("SELECT pack FROM categories WHERE name = ?", [name]))
        return rows[0]["pack"] if rows else None

    def active_of(self, pack: str) -> list[dict[str, Any]]:
        """The rows of ``pack``'s active categories."""
        return list(
            self.db.query("SELECT * FROM categories WHERE pack = ? AND status = 'active'", [pack])
        )

    def retired(self) -> dict[str, str | None]:
        """Every category that is not active, with what it was renamed to (None: retired)."""
        rows = self.db.query("SELECT name, renamed_to FROM categories WHERE status != 'active'")
        return {row["name"]: row["renamed_to"] for row in rows}

    def active_kinds(self) -> dict[str, str]:
        """Active category name -> kind."""
        # The connection itself: sqlite-utils' ``query`` wraps a read in a savepoint.
        return dict(self.db.conn.execute(ACTIVE_KINDS).fetchall())

    def active_priorities(self) -> list[tuple[str, str, int]]:
        """Active categories as ``(name, kind, priority)``, unordered."""
        return self.db.execute(
            "SELECT name, kind, priority FROM categories WHERE status = 'active'"
        ).fetchall()

    def insert_category(
        self,
        name: str,
        pack: str,
        kind: str,
        priority: int,
        promotable: bool,
        label: str | None,
        now: str,
    ) -> None:
        """Add an active category of ``pack`` (its criteria are added with :meth:`insert_criterion`)."""
        self.db.execute(
            "INSERT INTO categories VALUES (?, ?, ?, ?, ?, ?, 'active', NULL, ?, ?)",
            [name, pack, kind, priority, int(promotable), label, now, now],
        )

    def revive(
        self, name: str, kind: str, priority: int, promotable: bool, label: str | None, now: str
    ) -> None:
        """Bring a retired category back as active, unrenamed, with no criteria left from before."""
        self.db.execute(
            """UPDATE categories SET kind = ?, priority = ?, promotable = ?, label = ?,
               status = 'active', renamed_to = NULL, updated_at = ? WHERE name = ?""",
            [kind, priority, int(promotable), label, now, name],
        )
        self.db.execute("DELETE FROM criteria WHERE category = ?", [name])

    def update_category(
        self, name: str, kind: str, priority: int, promotable: bool, label: str | None, now: str
    ) -> None:
        """Set a category's kind, priority, promotable and label."""
        self.db.execute(
            "UPDATE categories SET kind = ?, priority = ?, promotable = ?, label = ?, updated_at = ? WHERE name = ?",
            [kind, priority, int(promotable), label, now, name],
        )

    def retire(self, name: str, now: str) -> None:
        """Mark a category retired."""
        self.db.execute(
            "UPDATE categories SET status = 'retired', updated_at = ? WHERE name = ?",
            [now, name],
        )

    def retire_renamed(self, old: str, new: str, now: str) -> None:
        """Mark category ``old`` retired, renamed to ``new``."""
        self.db.execute(
            "UPDATE categories SET status = 'retired', renamed_to = ?, updated_at = ? WHERE name = ?",
            [new, now, old],
        )

    # criteria, criteria_history

    def criterion(self, category: str, field: str) -> dict[str, Any] | None:
        """One criteria row (``pack_default`` and ``user_override`` as JSON text), if there is one."""
        rows = list(
            self.db.query(
                "SELECT * FROM criteria WHERE category = ? AND field = ?", [category, field]
            )
        )
        return rows[0] if rows else None

    def overrides(self, category: str) -> list[tuple[str, str]]:
        """``(field, user_override JSON)`` for each overridden field of ``category``."""
        rows = self.db.query(
            "SELECT field, user_override FROM criteria WHERE category = ? AND user_override IS NOT NULL",
            [category],
        )
        return [(row["field"], row["user_override"]) for row in rows]

    def insert_criterion(self, category: str, field: str, default: str, now: str) -> None:
        """Add one criteria field with its pack default (JSON text) and no override."""
        self.db.execute(
            "INSERT INTO criteria VALUES (?, ?, ?, NULL, ?)", [category, field, default, now]
        )

    def set_default(self, category: str, field: str, default: str, now: str) -> None:
        """Replace a field's pack default (JSON text); any user override stays."""
        self.db.execute(
            "UPDATE criteria SET pack_default = ?, updated_at = ? WHERE category = ? AND field = ?",
            [default, now, category, field],
        )

    def set_override(self, category: str, field: str, value: str | None, now: str) -> None:
        """Set a field's user override (JSON text)."""
        self.db.execute(
            "UPDATE criteria SET user_override = ?, updated_at = ? WHERE category = ? AND field = ?",
            [value, now, category, field],
        )

    def clear_override(self, category: str, field: str, now: str) -> None:
        """Drop a field's user override, so its pack default applies."""
        self.db.execute(
            "UPDATE criteria SET user_override = NULL, updated_at = ? WHERE category = ? AND field = ?",
            [now, category, field],
        )

    def history(self, category: str | None, field: str | None) -> list[dict[str, Any]]:
        """``criteria_history`` rows, oldest first, optionally for one category and field."""
        clauses, params = [], []
        if category is not None:
            clauses.append("category = ?")
            params.append(category)
        if field is not None:
            clauses.append("field = ?")
            params.append(field)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        return list(self.db.query(f"SELECT * FROM criteria_history {where} ORDER BY id", params))

    def add_history(
        self,
        category: str,
        field: str,
        source: str,
        pack: str | None,
        pack_version: str | None,
        old_value: str | None,
        new_value: str | None,
        note: str | None,
        at: str,
    ) -> None:
        """Append one ``criteria_history`` row (values as JSON text)."""
        self.db.execute(
            """INSERT INTO criteria_history
               (category, field, source, pack, pack_version, old_value, new_value, note, at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            [category, field, source, pack, pack_version, old_value, new_value, note, at],
        )


#: Active category name and kind (``write_many`` runs it on its own connection).
ACTIVE_KINDS = "SELECT name, kind FROM categories WHERE status = 'active'"


def _category(row: dict[str, Any], criteria: dict[str, Criterion]) -> Category:
    ordered = {field: criteria[field] for field in CRITERIA_FIELDS if field in criteria}
    return Category(
        name=row["name"],
        pack=row["pack"],
        kind=row["kind"],
        priority=row["priority"],
        promotable=bool(row["promotable"]),
        label=row["label"],
        status=row["status"],
        renamed_to=row["renamed_to"],
        criteria=ordered,
    )
