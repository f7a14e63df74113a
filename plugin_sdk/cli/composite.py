"""``memsdk composite``: typed star groups, fragmentation, the header map."""

from __future__ import annotations

import click

from plugin_sdk.cli.common import ID, JSON_OPTION, count, echo_json, open_store, store_options
from plugin_sdk.composites import headermap, refsets
from plugin_sdk.composites.composite import TYPES, Composite
from plugin_sdk.composites.fragment import fragment as fragment_memory
from plugin_sdk.composites.fragment import reconstruct as reconstruct_text


@click.group()
def composite() -> None:
    """Composites: a head memory and ordered members (sequence, theme, cause, alternatives)."""


def _show(item: Composite, as_json: bool) -> None:
    if as_json:
        echo_json(item.to_dict())
        return
    flags = (
        [item.type] + (["cyclic"] if item.cyclic else []) + (["stale"] if item.stale_since else [])
    )
    click.echo(f"composite {item.id} [{', '.join(flags)}] head #{item.head}, cursor {item.cursor}")
    for position, member in enumerate(item.members):
        mark = "> " if position == item.cursor else "  "
        click.echo(f"{mark}{position}: #{member}")


@composite.command()
@click.argument("type_", metavar="TYPE", type=click.Choice(TYPES))
@click.argument("head", type=ID)
@click.argument("members", type=ID, nargs=-1)
@click.option("--cyclic", is_flag=True, help="The cursor wraps around (a rotation).")
@store_options
@JSON_OPTION
def create(
    type_: str,
    head: int,
    members: tuple[int, ...],
    cyclic: bool,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Create a composite headed by HEAD with MEMBERS in order."""
    with open_store(db, project) as store:
        _show(store.composites.create(type_, head, list(members), cyclic=cyclic), as_json)


@composite.command()
@click.argument("composite_id", type=ID)
@click.argument("member", type=ID)
@click.option("--position", type=count(0), help="Insert here (default: the end).")
@store_options
@JSON_OPTION
def add(
    composite_id: int,
    member: int,
    position: int | None,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Add MEMBER to a composite."""
    with open_store(db, project) as store:
        _show(store.composites.add(composite_id, member, position), as_json)


@composite.command()
@click.argument("composite_id", type=ID)
@click.argument("member", type=ID)
@store_options
@JSON_OPTION
def remove(
    composite_id: int, member: int, db: str | None, project: str | None, as_json: bool
) -> None:
    """Remove MEMBER from a composite."""
    with open_store(db, project) as store:
        _show(store.composites.remove(composite_id, member), as_json)


@composite.command()
@click.argument("composite_id", type=ID)
@click.argument("members", type=ID, nargs=-1, required=True)
@store_options
@JSON_OPTION
def reorder(
    composite_id: int, members: tuple[int, ...], db: str | None, project: str | None, as_json: bool
) -> None:
    """Put the members in the given order (each current member once)."""
    with open_store(db, project) as store:
        _show(store.composites.reorder(composite_id, list(members)), as_json)


@composite.command(name="list")
@click.option("--head", type=ID, help="Composites this memory heads.")
@click.option("--member", type=ID, help="Composites this memory belongs to.")
@click.option("--type", "type_", type=click.Choice(TYPES))
@store_options
@JSON_OPTION
def list_(
    head: int | None,
    member: int | None,
    type_: str | None,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """List composites: all of the project's, by head, or by member."""
    with open_store(db, project) as store:
        if head is not None:
            items = store.composites.by_head(head)
        elif member is not None:
            items = store.composites.by_member(member)
        else:
            items = store.composites.all(type=type_)
        if type_ is not None:
            items = [c for c in items if c.type == type_]
    if as_json:
        echo_json([c.to_dict() for c in items])
        return
    for item in items:
        click.echo(
            f"{item.id:<5} {item.type:<12} head #{item.head:<6} {len(item.members)} members"
            + (" (stale)" if item.stale_since else "")
        )


@composite.command()
@click.argument("composite_id", type=ID)
@store_options
@JSON_OPTION
def show(composite_id: int, db: str | None, project: str | None, as_json: bool) -> None:
    """Show a composite: head, members in order, cursor, and its events."""
    with open_store(db, project) as store:
        item = store.composites.get(composite_id)
        events = store.composites.events(composite_id)
        texts = {m: store.memories.get(m).content for m in [item.head, *item.members]}
    if as_json:
        echo_json({**item.to_dict(), "events": events})
        return
    _show(item, False)
    click.echo(f"head: {_short(texts[item.head])}")
    for member in item.members:
        click.echo(f"  #{member}: {_short(texts[member])}")
    for event in events:
        click.echo(f"event {event['at']} {event['event']}: {event['detail']}")


@composite.command()
@click.argument("composite_id", type=ID)
@store_options
@JSON_OPTION
def delete(composite_id: int, db: str | None, project: str | None, as_json: bool) -> None:
    """Delete a composite (its memories stay)."""
    with open_store(db, project) as store:
        store.composites.delete(composite_id)
    if as_json:
        echo_json({"deleted": composite_id})
        return
    click.echo(f"Deleted composite {composite_id}")


@composite.command()
@click.argument("action", type=click.Choice(["peek", "advance", "reset"]))
@click.argument("composite_id", type=ID)
@store_options
@JSON_OPTION
def cursor(
    action: str, composite_id: int, db: str | None, project: str | None, as_json: bool
) -> None:
    """Read (peek), move (advance; wraps on a cyclic composite) or reset the cursor.

    --json: the composite, the cursor position and the member there (null
    past the end).
    """
    with open_store(db, project) as store:
        member = getattr(store.composites, action)(composite_id)
        position = store.composites.get(composite_id).cursor
    if as_json:
        echo_json({"composite": composite_id, "cursor": position, "member": member})
        return
    click.echo(f"cursor {position}: " + (f"#{member}" if member is not None else "(past the end)"))


@composite.command()
@click.argument("memory_id", type=ID)
@store_options
@JSON_OPTION
def fragment(memory_id: int, db: str | None, project: str | None, as_json: bool) -> None:
    """Split a long memory into a header and details chained by a sequence."""
    with open_store(db, project) as store:
        done = fragment_memory(store, memory_id)
        header = store.memories.get(done.header).content
    if as_json:
        echo_json(
            {
                "original": done.original,
                "header": done.header,
                "details": done.details,
                "composite": done.composite,
                "summary_by": done.summary_by,
            }
        )
        return
    click.echo(f"#{done.original} -> header #{done.header}: {header}")
    click.echo(
        f"  {len(done.details)} details in composite {done.composite}: "
        + ", ".join(f"#{d}" for d in done.details)
    )


@composite.command()
@click.argument("header_id", type=ID)
@store_options
@JSON_OPTION
def reconstruct(header_id: int, db: str | None, project: str | None, as_json: bool) -> None:
    """Print the text a header and its details stand for."""
    with open_store(db, project) as store:
        text = reconstruct_text(store, header_id)
    if as_json:
        echo_json({"header": header_id, "text": text})
        return
    click.echo(text, nl=False)


@composite.command(name="map")
@click.option(
    "--format",
    "form",
    type=click.Choice(["text", "mermaid", "dot"]),
    default="text",
    show_default=True,
)
@store_options
@JSON_OPTION
def map_(form: str, db: str | None, project: str | None, as_json: bool) -> None:
    """Draw the header map: theme headers -> category headers -> details.

    --json prints the map as data (themes; per category, headers and their
    details) in place of a drawing.
    """
    with open_store(db, project) as store:
        if as_json:
            echo_json(headermap.header_map(store))
            return
        click.echo(headermap.render(store, form))


@composite.command()
@store_options
@JSON_OPTION
def stale(db: str | None, project: str | None, as_json: bool) -> None:
    """Headers whose details changed (the sync-headers dreamer task refreshes them)."""
    with open_store(db, project) as store:
        items = store.composites.stale()
    if as_json:
        echo_json([c.to_dict() for c in items])
        return
    if not items:
        click.echo("No stale headers.")
    for item in items:
        click.echo(f"composite {item.id}: header #{item.head} stale since {item.stale_since}")


@composite.command()
@click.argument("composite_id", type=ID)
@click.option("--note", help="What the set is for.")
@store_options
@JSON_OPTION
def freeze(
    composite_id: int, note: str | None, db: str | None, project: str | None, as_json: bool
) -> None:
    """Snapshot a composite into a frozen reference set; prints its id."""
    with open_store(db, project) as store:
        set_id = refsets.freeze(store, composite_id, note=note)
    if as_json:
        echo_json({"composite": composite_id, "refset": set_id, "note": note})
        return
    click.echo(set_id)


@composite.command()
@click.argument("set_id", type=ID)
@store_options
@JSON_OPTION
def refset(set_id: int, db: str | None, project: str | None, as_json: bool) -> None:
    """Read a frozen reference set exactly as it was frozen."""
    with open_store(db, project) as store:
        frozen = refsets.read(store, set_id)
    if as_json:
        echo_json(frozen.to_dict())
        return
    click.echo(
        f"reference set {frozen.id} of composite {frozen.composite_id} ({frozen.type}), "
        f"frozen {frozen.created_at}"
    )
    for item in frozen.items:
        click.echo(f"  #{item['memory_id']}: {_short(item['content'])}")


def _short(text: str, width: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
