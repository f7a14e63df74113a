"""Reading facts out of the JSON shapes a historian's model drifts to.

A model asked for tagged blocks sometimes answers in JSON instead. These
shapes are read (``CATEGORY`` stands for a category name, ``T`` for a fact):

- ``{"facts": [{"category": CATEGORY, "text": T}, ...]}`` (``fact``,
  ``content`` or ``memory`` in place of ``text``), or the bare list;
- ``{"CATEGORY": [T, ...]}`` and ``{"facts": {"CATEGORY": [T, ...]}}``;
- ``{"category": CATEGORY, "facts": [T, ...]}``;
- a value that is not text under a known category (``{"CATEGORY":
  {"max_connections": 400}}``) becomes ``key: value``.

Text that has no category to go under comes back as ``Malformed`` (it is
quarantined, never dropped). ``[]``, ``{}`` and ``{"facts": []}`` mean nothing
to report.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from plugin_sdk.plugin.records import Fact, Malformed

TEXT_KEYS = ("text", "fact", "content", "memory")
NO_CATEGORY = "JSON text with no category"


class Names:
    """Category names as the store spells them, matched case-insensitively."""

    def __init__(self, categories: Iterable[str] | None) -> None:
        self.by_fold = {name.casefold(): name for name in categories or ()}

    def known(self, name: str) -> bool:
        return name.casefold() in self.by_fold

    def canon(self, name: str) -> str:
        """The store's spelling of ``name``, or ``name`` as written if it is none."""
        return self.by_fold.get(name.strip().casefold(), name.strip())


def load_json(text: str) -> object | None:
    """The JSON value ``text`` holds, or None if it is not JSON of an object or list."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, (dict, list)) else None


def from_json(data: object, line: int, names: Names) -> tuple[list[Fact], list[Malformed], bool]:
    """Facts, unplaceable pieces, and whether ``data`` said there is nothing to report."""
    facts: list[Fact] = []
    malformed: list[Malformed] = []

    def walk(node: object, category: str | None, key: str | None = None) -> None:
        if isinstance(node, str):
            text = node.strip()
            if not text:
                return
            if key is not None and category is not None and not names.known(key):
                text = f"{key}: {text}"
            if category:
                facts.append(Fact(category, text, line))
            else:
                malformed.append(Malformed(text, NO_CATEGORY, line))
        elif isinstance(node, list):
            for item in node:
                walk(item, category)
        elif isinstance(node, dict):
            own = node.get("category")
            if isinstance(own, str) and own.strip():
                category = names.canon(own)
            for name, value in node.items():
                if name == "category" and isinstance(value, str):
                    continue
                if name in TEXT_KEYS or name == "facts":
                    walk(value, category)
                elif category is None or names.known(name):
                    walk(value, names.canon(name))
                else:
                    walk(value, category, key=name)
        elif node is not None:
            walk(json.dumps(node), category, key)

    walk(data, None)
    empty = not facts and not malformed and _says_nothing(data)
    return facts, malformed, empty


def _says_nothing(data: object) -> bool:
    if isinstance(data, list):
        return all(_says_nothing(item) for item in data)
    if isinstance(data, dict):
        return all(_says_nothing(value) for value in data.values())
    return data is None or data == ""
