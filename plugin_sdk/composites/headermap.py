"""The header map as a person reads it: themes, then headers by category, then details.

- A **header** is a memory that heads a ``sequence`` composite (its details).
- A **theme header** is a memory that heads a ``theme`` composite whose
  members are headers, standalone memories or (in the levels the ``map``
  task builds for a large store, ``levels.py``) other themes.
- Headers are grouped under their category, in the store's priority order.

This view is derived from the composites on every read, so it is current
after every write, merge and archive without a maintenance step. Each theme
lists its members one level deep; a member that is itself a theme appears
as a theme of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

TITLE_CHARS = 72


def header_map(store: Store) -> dict[str, Any]:
    """The map as data: themes and, per category, headers with their details."""
    composites = store.composites.all()
    sequences = [c for c in composites if c.type == "sequence"]
    themes = [c for c in composites if c.type == "theme"]
    heads = {c.head: store.memories.get(c.head) for c in composites}  # each read once
    categories: list[dict[str, Any]] = []
    for category in store.categories():
        headers: list[dict[str, Any]] = []
        for composite in sequences:
            head = composite.head
            memory = heads[head]
            if memory.category != category.name or memory.status != "active":
                continue
            headers.append(
                {
                    "id": head,
                    "title": _title(memory.content),
                    "details": composite.members,
                    "stale": composite.stale_since is not None,
                    "composite": composite.id,
                }
            )
        categories.append(
            {
                "category": category.name,
                "kind": category.kind,
                "headers": sorted(headers, key=lambda h: (h["id"], h["composite"])),
            }
        )
    return {
        "themes": [
            {
                "id": t.head,
                "title": _title(heads[t.head].content),
                "members": t.members,
                "composite": t.id,
            }
            for t in themes
        ],
        "categories": categories,
    }


def render(store: Store, form: str = "text") -> str:
    """The map as ``text``, ``mermaid`` or ``dot``."""
    data = header_map(store)
    if form == "text":
        return _text(data)
    if form == "mermaid":
        return _mermaid(data)
    if form == "dot":
        return _dot(data)
    raise ValueError(f"unknown map format {form!r}; use text, mermaid or dot")


def _text(data: dict[str, Any]) -> str:
    lines = []
    for theme in data["themes"]:
        lines.append(f"theme #{theme['id']} {theme['title']}")
        lines.extend(f"  -> #{member}" for member in theme["members"])
    for group in data["categories"]:
        if not group["headers"]:
            continue
        lines.append(f"{group['category']} ({group['kind']})")
        for header in group["headers"]:
            stale = "  [stale]" if header["stale"] else ""
            lines.append(f"  #{header['id']} {header['title']}{stale}")
            lines.append(f"    details: {', '.join(f'#{d}' for d in header['details'])}")
    return "\n".join(lines) if lines else "(no headers yet: memsdk composite fragment ID)"


def _mermaid(data: dict[str, Any]) -> str:
    lines = ["flowchart LR"]
    for theme in data["themes"]:
        lines.append(f'  m{theme["id"]}["theme: {_quote(theme["title"])}"]')
        lines.extend(f"  m{theme['id']} --> m{member}" for member in theme["members"])
    for group in data["categories"]:
        if not group["headers"]:
            continue
        name = group["category"]
        lines.append(f'  subgraph {name}["{name}"]')
        for header in group["headers"]:
            lines.append(f'    m{header["id"]}["{_quote(header["title"])}"]')
        lines.append("  end")
        for header in group["headers"]:
            lines.append(
                f'  m{header["id"]} --> d{header["id"]}["{len(header["details"])} details"]'
            )
    return "\n".join(lines)


def _dot(data: dict[str, Any]) -> str:
    lines = ["digraph memsdk {", "  rankdir=LR;", "  node [shape=box];"]
    for theme in data["themes"]:
        lines.append(f'  m{theme["id"]} [label="theme: {_quote(theme["title"])}"];')
        lines.extend(f"  m{theme['id']} -> m{member};" for member in theme["members"])
    for group in data["categories"]:
        if not group["headers"]:
            continue
        lines.append(f'  subgraph "cluster_{group["category"]}" {{ label="{group["category"]}";')
        for header in group["headers"]:
            lines.append(f'    m{header["id"]} [label="{_quote(header["title"])}"];')
        lines.append("  }")
        for header in group["headers"]:
            lines.append(
                f'  m{header["id"]} -> d{header["id"]} [label="{len(header["details"])} details"];'
            )
    lines.append("}")
    return "\n".join(lines)


def _title(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= TITLE_CHARS else flat[: TITLE_CHARS - 1] + "…"


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', "'")
