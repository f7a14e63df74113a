"""Criteria text that names a category which no longer exists.

Criteria refer to other categories ("not a SOME_VALUES entry; see
OTHER_RULES"). When an upgrade renames or retires a category, such text goes
stale without anyone noticing. Two checks flag it:

- :func:`stale_in_store`, after a pack upgrade: the effective criteria (pack
  default or override) of every active category, against the store's retired
  categories, each named with what it was renamed to;
- :func:`gone_in_pack`, for ``memsdk pack validate FILE --against STORE``
  (before an upgrade): a pack's own criteria text against the categories that
  no longer exist once it is installed there: the store's retired ones, and
  those of the installed version of the pack that this version drops.

A word counts as a category name when it is written like one (capitals,
digits and at least one ``_``) and is one of the names checked against, so an
environment variable such as ``DATABASE_URL`` is never flagged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugin_sdk.packs.documents import Pack
    from plugin_sdk.store.connection import Store

_NAME = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_])")


def names_in(text: str) -> list[str]:
    """Words of ``text`` written like category names, in order, once each."""
    return list(dict.fromkeys(_NAME.findall(text)))


def stale_in_store(store: Store) -> list[str]:
    """Criteria fields of active categories that name a retired category (one line each)."""
    retired = store.tables.packs.retired()
    if not retired:
        return []
    found = []
    for category in store.categories():
        for field, criterion in category.criteria.items():
            for name in _mentions(criterion.value, retired):
                new = store.renamed_to(name)
                what = f"renamed to {new}" if new else "retired"
                found.append(f"{category.name}.{field} names {name} ({what})")
    return found


def gone_in_pack(pack: Pack, store: Store) -> list[str]:
    """Criteria fields of ``pack`` that name a category gone from ``store`` once it is installed."""
    gone = store.tables.packs.retired()
    for row in store.tables.packs.active_of(pack.name):
        if row["name"] not in pack.categories:
            gone[row["name"]] = None
    found = []
    for spec in pack.categories.values():
        for field, value in spec.criteria.items():
            for name in _mentions(value, gone):
                if name in pack.categories:
                    continue  # back in this version
                new = store.renamed_to(name)
                what = f"renamed to {new}" if new else "dropped by this version or retired"
                found.append(f"{spec.name}.{field} names {name} ({what})")
    return found


def _mentions(value: Any, only: Mapping[str, Any] | None) -> Iterable[str]:
    texts = value if isinstance(value, list) else [value]
    for text in texts:
        if isinstance(text, str):
            for name in names_in(text):
                if only is None or name in only:
                    yield name
