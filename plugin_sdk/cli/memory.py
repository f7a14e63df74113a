"""``memsdk memory`` (write, get, search, list, update, archive) and ``memsdk forget``."""

from __future__ import annotations

import sys
from typing import Any

import click

from plugin_sdk.cli.common import ID, JSON_OPTION, count, echo_json, open_store, store_options
from plugin_sdk.errors import MemsdkError
from plugin_sdk.store import forget as forgetting
from plugin_sdk.store.models import ACTS, CELLS, MEMORY_STATUSES, Memory


@click.group()
def memory() -> None:
    """Memories: write, read, search and change them."""


@memory.command()
@click.argument("content")
@click.argument("category_argument", metavar="[CATEGORY]", required=False)
@click.option("-c", "--category", help="One of the store's categories (or give it after CONTENT).")
@click.option("--importance", type=click.IntRange(1, 100), default=50, show_default=True)
@click.option("--source", default="cli", show_default=True, help="Where the memory came from.")
@click.option("--occurred-at", help="When it happened (ISO 8601), if not now.")
@store_options
@JSON_OPTION
def write(
    content: str,
    category_argument: str | None,
    category: str | None,
    importance: int,
    source: str,
    occurred_at: str | None,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Write CONTENT (use - to read standard input) into CATEGORY.

    The category is the second argument or -c/--category (one of them).
    """
    if category_argument and category and category_argument != category:
        raise click.UsageError(
            f"two categories: {category_argument!r} and -c {category!r} (give one)"
        )
    category = category or category_argument
    if not category:
        raise click.UsageError("give the category: memsdk memory write TEXT CATEGORY (or -c)")
    if content == "-":
        content = sys.stdin.read()
    with open_store(db, project) as store:
        result = store.memories.write(
            content, category, importance=importance, source=source, occurred_at=occurred_at
        )
    if as_json:
        echo_json(
            {
                "id": result.id,
                "created": result.created,
                "status": result.status,
                "seen_count": result.seen_count,
            }
        )
    elif result.created:
        click.echo(f"Wrote memory {result.id}")
    else:
        click.echo(
            f"Already known as memory {result.id} ({result.status}); seen {result.seen_count} times"
        )


@memory.command()
@click.argument("memory_id", type=ID)
@store_options
@JSON_OPTION
def get(memory_id: int, db: str | None, project: str | None, as_json: bool) -> None:
    """Show one memory."""
    with open_store(db, project, read=True, by_id=True) as store:
        found = store.memories.get(memory_id)
    if as_json:
        echo_json(found.to_dict())
        return
    click.echo(
        f"#{found.id} {found.category} [{found.status}, importance {found.importance}, "
        f"seen {found.seen_count}, {found.token_count} tokens]"
    )
    click.echo(found.content)


@memory.command()
@click.argument("query")
@click.option("-c", "--category", help="Only this category.")
@click.option("-n", "--limit", type=count(1), default=10, show_default=True)
@click.option("--archived", is_flag=True, help="Include archived memories.")
@click.option("--superseded", is_flag=True, help="Include superseded memories.")
@click.option("--raw", is_flag=True, help="Expert: FTS5 query syntax (OR, NEAR, prefix*).")
@store_options
@JSON_OPTION
def search(
    query: str,
    category: str | None,
    limit: int,
    archived: bool,
    superseded: bool,
    raw: bool,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Search the project's memories for QUERY in plain language, best match first.

    Ask as you would a person ("how do we fail over the postgres primary");
    see docs/search.md for how the query is read and the results ranked.
    """
    with open_store(db, project, read=True) as store:
        hits = store.memories.search(
            query,
            category=category,
            limit=limit,
            raw=raw,
            include_archived=archived,
            include_superseded=superseded,
        )
    if as_json:
        echo_json(
            [
                {**hit.memory.to_dict(), "rank": hit.rank, "score": hit.score, "why": list(hit.why)}
                for hit in hits
            ]
        )
        return
    if not hits:
        click.echo("No matches.")
    for hit in hits:
        click.echo(_line(hit.memory))


@memory.command(name="list")
@click.option("-c", "--category")
@click.option("--kind", type=click.Choice(["content", "intent"]))
@click.option(
    "--status", type=click.Choice([*MEMORY_STATUSES, "any"]), default="active", show_default=True
)
@click.option("-n", "--limit", type=count(1), default=50, show_default=True)
@click.option("--offset", type=count(0), default=0)
@click.option("--cell", type=click.Choice(CELLS), help="Only memories classify placed here.")
@click.option("--act", type=click.Choice(ACTS), help="Only interaction memories with this act.")
@store_options
@JSON_OPTION
def list_(
    category: str | None,
    kind: str | None,
    status: str,
    limit: int,
    offset: int,
    cell: str | None,
    act: str | None,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """List the project's memories, oldest first."""
    with open_store(db, project, read=True) as store:
        found = store.memories.list(
            category=category,
            kind=kind,
            limit=limit,
            offset=offset,
            status=None if status == "any" else status,
            cell=cell,
            act=act,
        )
    if as_json:
        echo_json([m.to_dict() for m in found])
        return
    for item in found:
        click.echo(_line(item))


@memory.command()
@click.argument("memory_id", type=ID)
@click.option("--content", help="New text (use - to read standard input).")
@click.option("-c", "--category", help="Move to this category.")
@click.option("--importance", type=click.IntRange(1, 100))
@click.option("--scope")
@click.option("--shareable/--not-shareable", default=None)
@click.option("--pin/--unpin", "pinned", default=None, help="Pinned memories are injected first.")
@store_options
@JSON_OPTION
def update(
    memory_id: int,
    content: str | None,
    category: str | None,
    importance: int | None,
    scope: str | None,
    shareable: bool | None,
    pinned: bool | None,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Change a memory; a text or category change is checked for duplicates."""
    if content == "-":
        content = sys.stdin.read()
    if all(v is None for v in (content, category, importance, scope, shareable, pinned)):
        raise MemsdkError(
            "nothing to update: give --content, --category, --importance, --scope, --shareable or --pin"
        )
    with open_store(db, project) as store:
        changed = store.memories.update(
            memory_id,
            content=content,
            category=category,
            importance=importance,
            scope=scope,
            shareable=shareable,
            pinned=pinned,
        )
    if as_json:
        echo_json(changed.to_dict())
    else:
        click.echo(f"Updated {_line(changed)}")


@memory.command()
@click.argument("sources", type=ID, nargs=-1, required=True)
@click.option("--into", "target", type=ID, required=True, help="The memory that remains.")
@store_options
@JSON_OPTION
def merge(
    sources: tuple[int, ...], target: int, db: str | None, project: str | None, as_json: bool
) -> None:
    """Merge SOURCES into another memory of the same category (composites follow)."""
    with open_store(db, project) as store:
        merged = store.memories.merge(list(sources), into=target)
    if as_json:
        echo_json(merged.to_dict())
    else:
        click.echo(f"Merged {', '.join(f'#{s}' for s in sources)} into {_line(merged)}")


@memory.command()
@click.argument("memory_id", type=ID)
@store_options
@JSON_OPTION
def archive(memory_id: int, db: str | None, project: str | None, as_json: bool) -> None:
    """Archive a memory (kept, no longer searched or injected by default)."""
    with open_store(db, project) as store:
        archived = store.memories.archive(memory_id)
    if as_json:
        echo_json(archived.to_dict())
        return
    click.echo(f"Archived memory {memory_id}")


@click.command(name="outcome")
@click.argument("memory_id", type=int)
@click.argument("verdict", type=click.Choice(["good", "bad"]))
@click.option("--note", help="Why, for the record.")
@store_options
@JSON_OPTION
def outcome(
    memory_id: int,
    verdict: str,
    note: str | None,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Report that memory MEMORY_ID helped (good) or misled (bad).

    Every entity the memory is linked to counts a positive or negative
    outcome, which lengthens or shortens its effective half-life (memsdk
    entity show shows the counts and the strength).
    """
    with open_store(db, project) as store:
        moved = store.memories.outcome(memory_id, verdict == "good", source="cli", note=note)
        names = [store.entities.get(entity_id).name for entity_id in moved]
        good, bad = store.memories.outcomes(memory_id)
    if as_json:
        echo_json(
            {"memory": memory_id, "outcome": verdict, "entities": names, "good": good, "bad": bad}
        )
        return
    click.echo(f"Memory {memory_id}: {verdict} recorded ({good} good, {bad} bad so far)")
    click.echo(f"  entities moved: {', '.join(names)}" if names else "  no linked entity to move")


def _line(item: Memory, width: int = 100) -> str:
    text = " ".join(item.content.split())
    if len(text) > width:
        text = text[: width - 1] + "…"
    status = "" if item.status == "active" else f" ({item.status})"
    return f"#{item.id:<6} {item.category:<18}{status} {text}"


@click.command()
@click.argument("memory_id", type=ID, required=False)
@click.option(
    "--secret",
    "pattern",
    help="Forget every memory of the project whose text this pattern (RE2 syntax) matches.",
)
@click.option("--yes", is_flag=True, help="With --secret: do not ask before forgetting.")
@click.option("--reason", default="", help="Why; kept in the tombstone (never the text).")
@click.option(
    "--undo",
    "undo_id",
    type=ID,
    help="Lift the tombstone of this forgotten memory: its text may be stored again "
    "(it is not restored).",
)
@click.option("--list", "listing", is_flag=True, help="List the project's tombstones.")
@click.option(
    "--vacuum",
    is_flag=True,
    help="Afterwards checkpoint the log, optimize the full-text index and VACUUM, "
    "so no freed page keeps the text.",
)
@store_options
@JSON_OPTION
def forget(
    memory_id: int | None,
    pattern: str | None,
    yes: bool,
    reason: str,
    undo_id: int | None,
    listing: bool,
    vacuum: bool,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Forget MEMORY_ID: delete its text from the store for good.

    The text leaves the memory, the full-text index and every copy (composite
    layouts, reference sets, observation payloads, Compiled Truth, proposals,
    undo records); a tombstone keeps when and why, and refuses the same text
    if it comes back. Use --secret PATTERN to forget every match (and redact
    what it matched from every copy: facts, observation payloads, Compiled
    Truth, proposals), --vacuum to leave nothing in freed pages; --vacuum
    alone scrubs what earlier forgets left.
    """
    asked = sum(x is not None for x in (memory_id, pattern, undo_id)) + int(listing)
    if asked > 1 or (asked == 0 and not vacuum):
        raise click.UsageError(
            "give one of MEMORY_ID, --secret PATTERN, --undo ID, --list or --vacuum alone"
        )
    with open_store(db, project) as store:
        if listing:
            _show([t.to_dict() for t in forgetting.tombstones(store)], as_json, _tombstone)
            return
        if undo_id is not None:
            lifted = forgetting.undo(store, undo_id)
            _show(
                [lifted.to_dict()],
                as_json,
                lambda t: f"Lifted the tombstone of memory {t['memory_id']}",
            )
            return
        done: list[dict[str, Any]] = []
        matched: dict[str, int] | None = None
        if memory_id is not None:
            done = [store.memories.forget(memory_id, reason=reason).to_dict()]
        elif pattern is not None:
            _matches(store, pattern, yes)
            forgot, matched = forgetting.forget_secret(store, pattern, reason=reason)
            done = [item.to_dict() for item in forgot]
        if vacuum:
            store.vacuum()
    if as_json:
        echo_json(done if matched is None else {"forgotten": done, "redacted": matched})
    else:
        for item in done:
            click.echo(_forgotten(item))
        if matched is not None:
            where = ", ".join(f"{t} ({n})" for t, n in sorted(matched.items())) or "nowhere else"
            click.echo(f"What {pattern!r} matched is redacted in: {where}")
    if vacuum and not as_json:
        click.echo("Vacuumed: the log is checkpointed and the file rewritten")


def _matches(store: Any, pattern: str, yes: bool) -> list[int]:
    ids = forgetting.matching(store, pattern)
    if not ids:
        raise MemsdkError(f"no memory of project {store.project!r} matches {pattern!r}")
    if not yes:
        listed = ", ".join(f"#{i}" for i in ids)
        click.confirm(f"Forget {len(ids)} memories ({listed})?", abort=True, err=True)
    return ids


def _show(items: list[dict[str, Any]], as_json: bool, line: Any) -> None:
    if as_json:
        echo_json(items)
        return
    for item in items:
        click.echo(line(item))


def _forgotten(item: dict[str, Any]) -> str:
    text = f"Forgot memory {item['memory_id']} ({item['category']})"
    if item["redacted"]:
        text += "; redacted in " + ", ".join(
            f"{t} ({n})" for t, n in sorted(item["redacted"].items())
        )
    if item["also_in"]:
        ids = ", ".join(f"#{i}" for i in item["also_in"])
        text += f"; the text is still inside memories {ids} (memsdk forget them too)"
    return text


def _tombstone(item: dict[str, Any]) -> str:
    lifted = f", lifted {item['undone_at']}" if item["undone_at"] else ""
    why = f": {item['reason']}" if item["reason"] else ""
    return f"#{item['memory_id']} {item['category']} forgotten {item['forgotten_at']}{lifted}{why}"
