"""The MCP memory tools as data: their specs, their handlers, and how a call runs.

Nothing here imports the ``mcp`` SDK: :mod:`plugin_sdk.host.mcp_server` serves
these tools over MCP, and tests and docs read them directly.

- :func:`tool_specs`: ``memory_write``, ``memory_search``, ``memory_recall``,
  ``memory_get``, ``memory_list``, ``memory_recent``, ``memory_toc``,
  ``memory_expand``, ``memory_update``, ``memory_archive``, ``memory_outcome``,
  ``memory_merge``, ``memory_forget``. Each has a title, an output schema (what its structured
  result holds) and the hints hosts show and act on (read-only, destructive,
  idempotent). Schemas are built from the store now: the ``category`` enum is the store's
  categories in priority order, and the write tool's description carries each
  category's definition and the packs' ``[prompts] tool`` fragments. The store stays the authority: a category added
  while the server runs is accepted, one retired is refused. Every integer
  has a minimum and a maximum (at most :data:`MAX_INTEGER`). Ids are taken
  leniently, as models send them: ``12``, ``"12"``, ``"[12]"`` or ``"#12"``.
- :func:`call_tool`: runs one call. Errors are outcomes, never exceptions:
  bad arguments, an unknown category, an id that is not in the project, any
  :class:`~plugin_sdk.errors.MemsdkError`, a value the store cannot take come
  back with ``is_error`` and a one-line message the model can act on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import jsonschema

from plugin_sdk.errors import InvalidDocument, MemsdkError, ToolError
from plugin_sdk.model.boundary import INDENT, contain
from plugin_sdk.model.prompts import tool_fragments
from plugin_sdk.redact import redact
from plugin_sdk.stages.inject import DEFAULT_BUDGET, expand, inject
from plugin_sdk.stages.recall import recall
from plugin_sdk.store import driver
from plugin_sdk.store.limits import check_tree
from plugin_sdk.store.models import Memory

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

SOURCE = "mcp"  # the source of the memories the tools write
MAX_INTEGER = 2**63 - 1  # SQLite's largest integer: a larger id or budget is refused up front
MAX_ARGUMENT_BYTES = 1024 * 1024
MEMORY_FIELDS = (
    "id",
    "category",
    "kind",
    "content",
    "status",
    "importance",
    "pinned",
    "seen_count",
    "superseded_by",
    "merged_from",
    "created_at",
    "updated_at",
)
LISTED = ("active", "archived", "superseded")  # what memory_list shows ("any": all three)
INTEGER: dict[str, Any] = {"type": "integer"}
STRING: dict[str, Any] = {"type": "string"}
#: A memory as the tools return it (search hits add their ``rank``).
RECORD: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": INTEGER,
        "category": STRING,
        "kind": STRING,
        "content": STRING,
        "status": STRING,
        "importance": INTEGER,
        "pinned": {"type": "boolean"},
        "seen_count": INTEGER,
        "superseded_by": {"type": ["integer", "null"]},
        "merged_from": {"type": "array", "items": INTEGER},
        "created_at": STRING,
        "updated_at": STRING,
    },
    "required": list(MEMORY_FIELDS),
}


@attrs.frozen
class ToolSpec:
    """One tool: what the client sees (name, title, description, schemas, hints) and what runs.

    ``destructive``: the call may change or hide what is remembered (not
    only add to it); ``idempotent``: calling it again with the same
    arguments changes nothing more.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    run: Callable[[Store, dict[str, Any]], tuple[str, dict[str, Any]]]
    title: str = attrs.field(kw_only=True)
    output_schema: dict[str, Any] = attrs.field(kw_only=True)
    read_only: bool = attrs.field(default=False, kw_only=True)
    destructive: bool = attrs.field(default=False, kw_only=True)
    idempotent: bool = attrs.field(default=False, kw_only=True)


@attrs.frozen
class Outcome:
    """A tool call's result: text for the model, the same as data, and whether it failed."""

    text: str
    data: dict[str, Any] | None
    is_error: bool = False


def tool_specs(store: Store) -> list[ToolSpec]:
    """The tools, with the category enum read from the store now."""
    categories = store.categories()
    if not categories:
        raise MemsdkError(
            f"store {store.path} has no categories: install a pack first "
            "(memsdk init --pack NAME, or memsdk mcp --pack NAME)"
        )
    category = {"type": "string", "enum": [c.name for c in categories]}
    memory_id = {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_INTEGER,
        "description": "A memory id, as in [id].",
    }
    importance = {"type": "integer", "minimum": 1, "maximum": 100}
    listing = "\n".join(
        f"- {c.name} ({c.kind}): {_first_sentence(c.value('definition'))}" for c in categories
    )
    return [
        ToolSpec(
            "memory_write",
            "Remember one durable fact or directive, filed under exactly one category. "
            "A repeat of a known memory is folded into it (its id is returned).\n"
            f"Categories, in priority order:\n{listing}"
            + "".join(f"\n{fragment.rstrip()}" for fragment in tool_fragments(store)),
            _object(
                {
                    "content": {
                        "type": "string",
                        "minLength": 1,
                        "description": "One self-contained, specific statement.",
                    },
                    "category": category,
                    "importance": {**importance, "default": 50},
                },
                ["content", "category"],
            ),
            _write,
            title="Remember a fact",
            output_schema=_output(
                {
                    "id": INTEGER,
                    "created": {"type": "boolean"},
                    "status": STRING,
                    "seen_count": INTEGER,
                }
            ),
            idempotent=True,
        ),
        ToolSpec(
            "memory_search",
            "Search the memories in plain language: ask as you would a person "
            '("how do we fail over the postgres primary", "what did Anya decide last week"). '
            "Any word may match; memories matching more of the question rank first.",
            _object(
                {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The question or topic, in plain language.",
                    },
                    "category": category,
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                },
                ["query"],
            ),
            _search,
            title="Search memories",
            output_schema=_output({"results": _list_of(RECORD)}),
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "memory_recall",
            "The memories that answer a question, as one block within a token budget: "
            "best matches first, headers with their matching details, the dates things "
            "happened. Ask in plain language.",
            _object(
                {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The question or the user's message, in plain language.",
                    },
                    "budget": {"type": "integer", "minimum": 1, "maximum": 100000, "default": 1500},
                },
                ["query"],
            ),
            _recall,
            title="Recall for a question",
            output_schema=_output(
                {
                    "shown": _list_of(INTEGER),
                    "why": {"type": "object", "additionalProperties": _list_of(STRING)},
                    "tokens": INTEGER,
                    "budget": INTEGER,
                    "left_out": _list_of(INTEGER),
                }
            ),
            read_only=True,
        ),
        ToolSpec(
            "memory_get",
            "One memory by id, with its category, status and history fields.",
            _object({"id": memory_id}, ["id"]),
            _get,
            title="Read one memory",
            output_schema=RECORD,
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "memory_list",
            "Browse the project's memories, oldest first (or newest first), a page at a "
            "time; filter by category, kind and status. next_offset fetches the next page.",
            _object(
                {
                    "category": category,
                    "kind": {"type": "string", "enum": ["content", "intent"]},
                    "status": {"type": "string", "enum": [*LISTED, "any"], "default": "active"},
                    "order": {"type": "string", "enum": ["oldest", "newest"], "default": "oldest"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
                    "offset": {"type": "integer", "minimum": 0, "maximum": MAX_INTEGER},
                },
                [],
            ),
            _list,
            title="List memories",
            output_schema=_output(
                {"memories": _list_of(RECORD), "next_offset": {"type": ["integer", "null"]}}
            ),
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "memory_recent",
            "What changed most recently in the project's memories (written, updated, "
            "archived or merged), newest first.",
            _object(
                {
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                    "since": {
                        "type": "string",
                        "description": "Only changes at or after this ISO 8601 time.",
                    },
                },
                [],
            ),
            _recent,
            title="Recent memory activity",
            output_schema=_output({"memories": _list_of(RECORD)}),
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "memory_toc",
            "The table of contents of what is remembered (the block a host injects at the "
            "start of a session), each entry with its [id]; memory_expand ID shows a "
            "header's details. Call it first when the host did not inject it.",
            _object({"budget": {"type": "integer", "minimum": 1, "maximum": MAX_INTEGER}}, []),
            _toc,
            title="Table of contents",
            output_schema=_output(
                {
                    "text": STRING,
                    "tokens": INTEGER,
                    "budget": INTEGER,
                    "shown": _list_of(INTEGER),
                    "candidates": INTEGER,
                    "note": STRING,
                }
            ),
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "memory_expand",
            "What a line of the table of contents stands for, one level down, in order: "
            "a header's details, a group's memories or groups, a cause's causes, the "
            "alternatives; the memory itself when it heads nothing. A line whose bracket "
            "says [ID: ...] can be expanded again.",
            _object(
                {
                    "id": memory_id,
                    "budget": {"type": "integer", "minimum": 1, "maximum": MAX_INTEGER},
                },
                ["id"],
            ),
            _expand,
            title="Expand a header",
            output_schema=_output(
                {
                    "shown": _list_of(INTEGER),
                    "left_out": _list_of(INTEGER),
                    "tokens": INTEGER,
                }
            ),
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "memory_update",
            "Change a memory's text, category, importance or pinned flag.",
            _object(
                {
                    "id": memory_id,
                    "content": {"type": "string", "minLength": 1},
                    "category": category,
                    "importance": importance,
                    "pinned": {"type": "boolean"},
                },
                ["id"],
            ),
            _update,
            title="Change a memory",
            output_schema=RECORD,
            destructive=True,
            idempotent=True,
        ),
        ToolSpec(
            "memory_archive",
            "Archive a memory that is no longer true: kept, but no longer searched or injected.",
            _object({"id": memory_id}, ["id"]),
            _archive,
            title="Archive a memory",
            output_schema=RECORD,
            destructive=True,
            idempotent=True,
        ),
        ToolSpec(
            "memory_outcome",
            "Report that a memory you used helped (good) or misled you (bad); it strengthens "
            "or weakens what the memory is about.",
            _object(
                {
                    "id": memory_id,
                    "outcome": {"type": "string", "enum": ["good", "bad"]},
                    "note": {"type": "string"},
                },
                ["id", "outcome"],
            ),
            _outcome,
            title="Report an outcome",
            output_schema=_output(
                {"id": INTEGER, "outcome": STRING, "entities": _list_of(INTEGER)}
            ),
        ),
        ToolSpec(
            "memory_merge",
            "Fold memories that say the same thing into one (same category); "
            "the sources become superseded by it.",
            _object(
                {
                    "source_ids": {"type": "array", "items": memory_id, "minItems": 1},
                    "into": memory_id,
                },
                ["source_ids", "into"],
            ),
            _merge,
            title="Merge memories",
            output_schema=RECORD,
            destructive=True,
            idempotent=True,
        ),
        ToolSpec(
            "memory_forget",
            "Forget a memory for good: its text is deleted from the store (not archived) "
            "and the same text is refused from now on. For secrets, or what the user asks "
            "to be forgotten.",
            _object(
                {
                    "id": memory_id,
                    "reason": {"type": "string", "maxLength": 500},
                },
                ["id"],
            ),
            _forget,
            title="Forget a memory",
            output_schema=_output(
                {
                    "memory_id": INTEGER,
                    "project": STRING,
                    "category": STRING,
                    "reason": STRING,
                    "forgotten_at": STRING,
                    "redacted": {"type": "object"},
                    "also_in": _list_of(INTEGER),
                }
            ),
            destructive=True,
            idempotent=True,
        ),
    ]


def call_tool(
    store: Store, specs: list[ToolSpec], name: str, arguments: dict[str, Any] | None
) -> Outcome:
    """Run one tool; every error the caller can cause becomes an error outcome."""
    by_name = {spec.name: spec for spec in specs}
    try:
        spec = by_name.get(name)
        if spec is None:
            raise ToolError(f"unknown tool {name!r}; tools are: {', '.join(by_name)}")
        args = _coerce_ids(spec, dict(arguments or {}))
        _check_arguments(spec, args)
        _check_limits(args)
        text, data = spec.run(store, args)
    except MemsdkError as error:
        return Outcome(redact(f"{name}: {error}"), None, is_error=True)
    except driver.Error as error:
        return Outcome(redact(f"{name}: store: {error}"), None, is_error=True)
    except (OverflowError, ValueError, TypeError) as error:
        # What the schema let through and the handler still could not use
        # (a number too large for SQLite, say) is the caller's to fix.
        return Outcome(
            redact(f"{name}: cannot use these arguments ({type(error).__name__}: {error})"),
            None,
            is_error=True,
        )
    return Outcome(text, data)


def memory_block(store: Store, budget: int) -> str:
    """The injected table of contents (or a line saying there is nothing to show)."""
    result = inject(store, budget=budget)
    return result.text or f"({result.note})"


def _check_limits(args: dict[str, Any]) -> None:
    """Arguments of bounded size and depth, finite numbers, valid text (``store/limits.py``)."""
    try:
        check_tree(args)
    except InvalidDocument as error:
        where = f"argument {error.path}: " if error.path else ""
        raise ToolError(f"{where}{error.reason}") from error
    size = len(json.dumps(args))
    if size > MAX_ARGUMENT_BYTES:
        raise ToolError(f"arguments of {size} bytes; at most {MAX_ARGUMENT_BYTES}")


def coerce_id(value: Any) -> Any:
    """An id as models send it (``"12"``, ``"[12]"``, ``"#12"``, ``12.0``) as an int.

    Anything else is returned unchanged, for the schema check to name.
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip().strip("[]#").strip()
        if text.isdecimal() and text.isascii():
            return int(text)
    return value


def _coerce_ids(spec: ToolSpec, args: dict[str, Any]) -> dict[str, Any]:
    properties = spec.input_schema["properties"]
    for key, value in list(args.items()):
        schema = properties.get(key, {})
        if schema.get("type") == "integer":
            args[key] = coerce_id(value)
        elif schema.get("type") == "array" and schema.get("items", {}).get("type") == "integer":
            if isinstance(value, (str, int)):  # one id where a list is asked for
                value = [value]
            if isinstance(value, list):
                args[key] = [coerce_id(item) for item in value]
    return args


def _check_arguments(spec: ToolSpec, args: dict[str, Any]) -> None:
    # The category enum is advice to the model; the store decides (and names
    # its categories when it refuses), so it is left out of this check.
    schema = {
        **spec.input_schema,
        "properties": {
            key: {k: v for k, v in value.items() if not (key == "category" and k == "enum")}
            for key, value in spec.input_schema["properties"].items()
        },
    }
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(args)
    )
    if error is not None:
        where = ".".join(str(part) for part in error.absolute_path)
        raise ToolError(f"argument {where}: {error.message}" if where else error.message)


def _output(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


def _list_of(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _record(memory: Memory) -> dict[str, Any]:
    data = memory.to_dict()
    return {field: data[field] for field in MEMORY_FIELDS}


def _line(memory: Memory) -> str:
    return f"[{memory.id}] {memory.category}: {contain(memory.content)}"


def _write(store: Store, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    result = store.memories.write(
        args["content"], args["category"], importance=args.get("importance", 50), source=SOURCE
    )
    data = attrs.asdict(result)
    if result.created:
        return f"Wrote memory {result.id} ({args['category']}).", data
    return (
        f"Already known as memory {result.id} ({result.status}); seen {result.seen_count} times.",
        data,
    )


def _search(store: Store, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    hits = store.memories.search(
        args["query"], category=args.get("category"), limit=args.get("limit", 10)
    )
    data = {"results": [{**_record(hit.memory), "rank": hit.rank} for hit in hits]}
    if not hits:
        return f"No memory matches {args['query']!r}.", data
    return "\n".join(_line(hit.memory) for hit in hits), data


def _list(store: Store, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    limit, offset = args.get("limit", 20), args.get("offset", 0)
    status = args.get("status", "active")
    found = store.memories.list(
        category=args.get("category"),
        kind=args.get("kind"),
        status=list(LISTED) if status == "any" else status,
        order="-id" if args.get("order") == "newest" else "id",
        limit=limit + 1,
        offset=offset,
    )
    more = len(found) > limit
    found = found[:limit]
    data = {
        "memories": [_record(m) for m in found],
        "next_offset": offset + limit if more else None,
    }
    if not found:
        return "No memories on this page." if offset else "No memories match.", data
    text = "\n".join(_line(m) for m in found)
    if more:
        text += f"\n(more: offset {offset + limit})"
    return text, data


def _recent(store: Store, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    since = args.get("since") or None
    rows = store.tables.memories.recent(store.project, LISTED, since, args.get("limit", 10))
    found = [Memory.from_row(row) for row in rows]
    data = {"memories": [_record(m) for m in found]}
    if not found:
        return "Nothing changed" + (f" since {args['since']}." if since else "."), data
    return "\n".join(f"{m.updated_at} {m.status} {_line(m)}" for m in found), data


def _toc(store: Store, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    result = inject(store, budget=args.get("budget", DEFAULT_BUDGET))
    data = {
        "text": result.text,
        "tokens": result.tokens,
        "budget": result.budget,
        "shown": result.shown,
        "candidates": result.candidates,
        "note": result.note,
    }
    return result.text or f"({result.note})", data


def _recall(store: Store, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    result = recall(store, args["query"], budget=args.get("budget", 1500))
    data = {
        "shown": result.shown,
        "why": {str(k): v for k, v in result.why.items()},
        "tokens": result.tokens,
        "budget": result.budget,
        "left_out": result.left_out,
    }
    return result.text or f"No memory matches {args['query']!r}.", data


def _get(store: Store, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    memory = store.memories.get(args["id"])  # the wall: see store/visibility.py
    header = f"[{memory.id}] {memory.category} ({memory.status}, importance {memory.importance})"
    if memory.superseded_by:
        header += f", superseded by [{memory.superseded_by}]"
    # Every line of the stored text indented, the first too: a stored line
    # shaped like a header ("- [900] CATEGORY: ...") can never start a line.
    return f"{header}\n{INDENT}{contain(memory.content)}", _record(memory)


def _expand(store: Store, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    result = expand(store, args["id"], budget=args.get("budget"))
    data = {"shown": result.shown, "left_out": result.left_out, "tokens": result.tokens}
    text = result.text or "(nothing fits the budget)"
    if result.left_out:
        text += f"\n({len(result.left_out)} details left out by the budget)"
    return text, data


def _update(store: Store, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    changes = {k: v for k, v in args.items() if k != "id"}
    if not changes:
        raise ToolError("give at least one of content, category, importance, pinned")
    memory = store.memories.update(args["id"], **changes)
    return f"Updated memory {memory.id}.\n{_line(memory)}", _record(memory)


def _archive(store: Store, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    memory = store.memories.archive(args["id"])
    return f"Archived memory {memory.id}.", _record(memory)


def _merge(store: Store, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    memory = store.memories.merge(args["source_ids"], args["into"])
    sources = ", ".join(f"[{i}]" for i in dict.fromkeys(args["source_ids"]))
    return f"Merged {sources} into memory {memory.id}.\n{_line(memory)}", _record(memory)


def _outcome(store: Store, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    store.memories.get(args["id"])  # the project wall: another project's private id is NotFound
    good = args["outcome"] == "good"
    moved = store.memories.outcome(args["id"], good, source=SOURCE, note=args.get("note"))
    data = {"id": args["id"], "outcome": args["outcome"], "entities": moved}
    return f"Recorded a {args['outcome']} outcome for memory {args['id']}.", data


def _forget(store: Store, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    done = store.memories.forget(args["id"], reason=args.get("reason", ""))
    return f"Forgot memory {done.memory_id}; its text is gone.", done.to_dict()


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    end = flat.find(". ")
    return flat if end == -1 else flat[: end + 1]
