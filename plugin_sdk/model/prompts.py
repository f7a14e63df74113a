"""Prompts assembled from the store: the historian's, the dreamer's, the memory tool's.

Nothing here holds category text. Every prompt is built from the store's
active categories, in priority order, with their effective criteria (user
override, else pack default) and the prompt fragments of the installed packs
(``[prompts]`` in a pack). The same store gives the same bytes.

The **prompt surface** is the historian prompt, the dreamer's prompts and the
memory tool's schema together; :func:`surface_hash` fingerprints it. A host
records the hash it used per session (:func:`record_session`) and asks
:func:`is_stale` later: any criteria edit, pack install or upgrade changes the
hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from plugin_sdk.errors import NotFound
from plugin_sdk.store.models import Category

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

TOOL_NAME = "memory"
TOOL_ACTIONS = ("write", "search", "get", "update", "archive")
NO_FACTS = "<no-facts/>"
EXPLICIT_HEADER = "[user: remember this]"
EXPLICIT_NOTE = (
    f"A message headed {EXPLICIT_HEADER} is the user asking outright that it be remembered: "
    "write what it says down as a fact, in the category that fits, even if it looks minor."
)


def historian_system(store: Store) -> str:
    """The historian's system prompt."""
    categories = store.categories()
    names = ", ".join(c.name for c in categories)
    parts = [
        "You are the historian of a long-running agent session. Read the transcript "
        "chunk and write down the durable facts worth remembering in later sessions, "
        "each filed under exactly one category.",
        "",
        "# Categories, in priority order",
        *(_category_block(c) for c in categories),
        *_fragments(store, "historian"),
        "# Output format",
        "For each category that has new facts, write one block:",
        '<facts category="NAME">',
        "- one fact per bullet, self-contained and specific",
        "  (continuation lines are indented by two spaces)",
        "</facts>",
        f"Use only these category names: {names}.",
        "Do not repeat facts listed as already known. A fact that fits no category is left out.",
        f"If nothing in the chunk is worth remembering, reply exactly: {NO_FACTS}",
    ]
    return "\n".join(parts).strip() + "\n"


def transcript_text(messages: Sequence[Mapping[str, str]]) -> str:
    """A chunk's messages as the historian reads them: a ``[role]`` line, then the text.

    A message the user asked outright to have remembered (``"explicit":
    "remember"``) is headed :data:`EXPLICIT_HEADER` instead. The transcript
    chunker counts its budget on this same text.
    """
    return "\n\n".join(f"{message_header(m)}\n{m['content']}" for m in messages)


def message_header(message: Mapping[str, str]) -> str:
    """The line that heads a message in :func:`transcript_text`."""
    if message.get("explicit") == "remember" and message.get("role") == "user":
        return EXPLICIT_HEADER
    return f"[{message['role']}]"


def dreamer_curate(store: Store) -> str:
    """The dreamer's curate prompt: merge near-duplicates within one category."""
    parts = [
        "You curate an agent's long-term memory. You are shown memories of one "
        "category that look alike. Merge only memories that say the same thing; keep "
        "every specific detail (numbers, names, paths, dates) of each; never move a "
        "memory to another category.",
        "",
        "# Categories, in priority order",
        *(_category_block(c) for c in store.categories()),
        *_fragments(store, "curate"),
        "# Output format",
        "Reply with the merged text only, or exactly <keep-separate/> if they differ.",
    ]
    return "\n".join(parts).strip() + "\n"


def dreamer_retrospective(store: Store) -> str:
    """The dreamer's retrospective prompt: propose standing rules from recurring facts."""
    categories = store.categories()
    intent = [c for c in categories if c.kind == "intent"]
    names = ", ".join(c.name for c in intent) or "(none: this store has no intent category)"
    parts = [
        "You review an agent's recent memories and propose standing rules that would "
        "have helped: lessons that recur, preferences stated more than once, procedures "
        "that keep being rediscovered. A person approves every proposal before it "
        "takes effect.",
        "",
        "# Rule categories",
        *(_category_block(c) for c in intent),
        *_fragments(store, "retrospective"),
        "# Output format",
        '<facts category="NAME">',
        "- one proposed rule per bullet",
        "</facts>",
        f"Use only these category names: {names}.",
        f"If nothing deserves a rule, reply exactly: {NO_FACTS}",
    ]
    return "\n".join(parts).strip() + "\n"


def tool_schema(store: Store) -> dict[str, Any]:
    """The memory tool's name, description and JSON Schema (category enum from the DB)."""
    categories = store.categories()
    lines = [
        "Read and write the agent's long-term memory for this project.",
        "Actions: write (content, category), search (query), get (id), "
        "update (id and new fields), archive (id).",
        "Categories:",
        *(f"- {c.name} ({c.kind}): {_first_sentence(c.value('definition'))}" for c in categories),
        *_fragments(store, "tool"),
    ]
    return {
        "name": TOOL_NAME,
        "description": "\n".join(lines),
        "input_schema": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": list(TOOL_ACTIONS)},
                "category": {"type": "string", "enum": [c.name for c in categories]},
                "content": {"type": "string", "minLength": 1},
                "query": {"type": "string", "minLength": 1},
                "id": {"type": "integer", "minimum": 1},
                "importance": {"type": "integer", "minimum": 1, "maximum": 100},
            },
            "required": ["action"],
            "additionalProperties": False,
        },
    }


def surface(store: Store) -> dict[str, Any]:
    """Everything the stages put in front of a model that comes from the store."""
    return {
        "historian": historian_system(store),
        "curate": dreamer_curate(store),
        "retrospective": dreamer_retrospective(store),
        "tool": tool_schema(store),
    }


def surface_hash(store: Store) -> str:
    """SHA-256 of the prompt surface (canonical JSON)."""
    canonical = json.dumps(
        surface(store), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def record_session(store: Store, session_id: str, *, project: str | None = None) -> str:
    """Record the current surface hash for a session; return it."""
    digest = surface_hash(store)
    with store.atomic():
        write_session(store, session_id, project or store.project, digest)
    return digest


def write_session(store: Store, session_id: str, project: str, digest: str) -> None:
    """The statement of :func:`record_session`, for a caller's own transaction."""
    store.tables.sessions.record_surface(session_id, project, digest)


def is_stale(store: Store, session_id: str) -> bool:
    """Whether the surface changed since :func:`record_session` for this session."""
    recorded = store.tables.sessions.surface(session_id)
    if recorded is None:
        raise NotFound(f"no session {session_id!r} recorded in store {store.path}")
    return recorded != surface_hash(store)


def _category_block(category: Category) -> str:
    label = f" ({category.label})" if category.label else ""
    lines = [f"## {category.name}{label}: {category.kind}", category.value("definition").strip()]
    for field, title in (
        ("positive_examples", "Belongs here:"),
        ("negative_examples", "Does not belong here:"),
        ("exclusions", "Never store here:"),
    ):
        values = category.value(field)
        if values:
            lines.append(title)
            lines.extend(f"- {value}" for value in values)
    return "\n".join(lines) + "\n"


def tool_fragments(store: Store) -> list[str]:
    """The installed packs' ``[prompts] tool`` fragments, for every memory-tool description."""
    return _fragments(store, "tool")


def session_lines(store: Store) -> list[str]:
    """The installed packs' ``[prompts] session`` lines: the end of a session-start block."""
    lines: list[str] = []
    for pack in store.packs.installed():
        text = pack.document.get("prompts", {}).get("session")
        lines += [line.strip() for line in (text or "").splitlines() if line.strip()]
    return list(dict.fromkeys(lines))


def _fragments(store: Store, stage: str) -> list[str]:
    """Each installed pack's fragments for a stage (``dreamer`` applies to both dreamer prompts)."""
    keys = ("dreamer", stage) if stage in ("curate", "retrospective") else (stage,)
    pieces = []
    for pack in store.packs.installed():
        fragments = pack.document.get("prompts", {})
        for key in keys:
            text = fragments.get(key)
            if text:
                pieces.append(f"# Notes from pack {pack.name}\n{text.strip()}\n")
    return pieces


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    end = flat.find(". ")
    return flat if end == -1 else flat[: end + 1]
