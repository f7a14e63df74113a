"""Category criteria as data: read, override, reset, and the history of changes.

Each criteria field (``definition``, ``positive_examples``, ``negative_examples``,
``exclusions``) holds a pack default and an optional user override. The
override wins until it is cleared with :meth:`Criteria.reset`; pack upgrades
change defaults only. Every change, from a pack or a person, is a row in
``criteria_history`` (source, when, old value, new value).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from plugin_sdk.errors import InvalidCriteria
from plugin_sdk.store.models import CRITERIA_FIELDS, LIST_FIELDS, Category, CriteriaEvent

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store


def check_value(field: str, value: Any) -> Any:
    """Validate a criteria value for ``field``; return it in stored shape."""
    if field not in CRITERIA_FIELDS:
        raise InvalidCriteria(
            f"unknown criteria field {field!r}; fields are {', '.join(CRITERIA_FIELDS)}"
        )
    if field in LIST_FIELDS:
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise InvalidCriteria(f"{field} must be a list of non-empty strings")
        return [v.strip() for v in value]
    if not isinstance(value, str) or not value.strip():
        raise InvalidCriteria(f"{field} must be non-empty text")
    return value.strip()


class Criteria:
    """Criteria operations on one store; reached as ``store.criteria``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
        self.rows = store.tables.packs

    def show(self, category: str | None = None) -> list[Category]:
        """Active categories with effective criteria and where each field comes from."""
        if category is not None:
            return [self.store.category(category)]
        return self.store.categories()

    def set(self, category: str, field: str, value: Any, *, note: str | None = None) -> Category:
        """Override one criteria field of an active category."""
        self.store.category(category, where="criteria set")
        value = check_value(field, value)
        old = self._row(category, field)
        now = self.store.now()
        with self.store.atomic():
            self.rows.set_override(category, field, _dump(value), now)
            self.record(category, field, "override", _effective(old), value, note=note)
        return self.store.category(category)

    def reset(self, category: str, field: str | None = None) -> Category:
        """Clear the override of one field (or all fields) so the pack default applies."""
        self.store.category(category, where="criteria reset")
        fields = [field] if field is not None else list(CRITERIA_FIELDS)
        for name in fields:
            check_field(name)
        now = self.store.now()
        with self.store.atomic():
            for name in fields:
                row = self._row(category, name)
                if row["user_override"] is None:
                    continue
                self.rows.clear_override(category, name, now)
                self.record(
                    category, name, "reset", _effective(row), json.loads(row["pack_default"])
                )
        return self.store.category(category)

    def history(self, category: str | None = None, field: str | None = None) -> list[CriteriaEvent]:
        """Every recorded change, oldest first, optionally for one category and field."""
        return [
            CriteriaEvent(
                id=row["id"],
                category=row["category"],
                field=row["field"],
                source=row["source"],
                pack=row["pack"],
                pack_version=row["pack_version"],
                old_value=_load(row["old_value"]),
                new_value=_load(row["new_value"]),
                note=row["note"],
                at=row["at"],
            )
            for row in self.rows.history(category, field)
        ]

    def record(
        self,
        category: str,
        field: str,
        source: str,
        old: Any,
        new: Any,
        *,
        pack: str | None = None,
        pack_version: str | None = None,
        note: str | None = None,
    ) -> None:
        """Append one history row (call inside the transaction making the change)."""
        self.rows.add_history(
            category,
            field,
            source,
            pack,
            pack_version,
            None if old is None else _dump(old),
            None if new is None else _dump(new),
            note,
            self.store.now(),
        )

    def _row(self, category: str, field: str) -> dict[str, Any]:
        row = self.rows.criterion(category, field)
        if row is None:
            raise InvalidCriteria(f"category {category!r} has no criteria field {field!r}")
        return row


def check_field(field: str) -> None:
    if field not in CRITERIA_FIELDS:
        raise InvalidCriteria(
            f"unknown criteria field {field!r}; fields are {', '.join(CRITERIA_FIELDS)}"
        )


def _effective(row: dict[str, Any]) -> Any:
    raw = row["user_override"] if row["user_override"] is not None else row["pack_default"]
    return json.loads(raw)


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _load(raw: str | None) -> Any:
    return None if raw is None else json.loads(raw)
