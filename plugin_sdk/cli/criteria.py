"""``memsdk criteria``: show, set, reset, history."""

from __future__ import annotations

import json
import textwrap

import click

from plugin_sdk.cli.common import JSON_OPTION, echo_json, open_store, store_options
from plugin_sdk.errors import MemsdkError
from plugin_sdk.store.models import CRITERIA_FIELDS, LIST_FIELDS


@click.group()
def criteria() -> None:
    """Category criteria: pack defaults, your overrides, and their history."""


@criteria.command()
@click.argument("category", required=False)
@store_options
@JSON_OPTION
def show(category: str | None, db: str | None, project: str | None, as_json: bool) -> None:
    """Effective criteria of every category (or one), and where each comes from."""
    with open_store(db, project) as store:
        categories = store.criteria.show(category)
    if as_json:
        echo_json([c.to_dict() for c in categories])
        return
    if not categories:
        click.echo("No categories: install a pack (memsdk pack install ops).")
    for cat in categories:
        click.echo(f"{cat.name}  [{cat.kind}, priority {cat.priority}, pack {cat.pack}]")
        for field, criterion in cat.criteria.items():
            origin = "override" if criterion.source == "override" else "pack default"
            click.echo(f"  {field} ({origin}):")
            values = criterion.value if field in LIST_FIELDS else [criterion.value]
            for value in values:
                prefix = "  - " if field in LIST_FIELDS else "    "
                click.echo(
                    textwrap.fill(
                        value, 96, initial_indent="  " + prefix, subsequent_indent="      "
                    )
                )
        click.echo()


@criteria.command(name="set")
@click.argument("category")
@click.argument("field", type=click.Choice(CRITERIA_FIELDS))
@click.argument("values", nargs=-1, required=True)
@click.option("--note", help="Why; kept in the history.")
@store_options
@JSON_OPTION
def set_(
    category: str,
    field: str,
    values: tuple[str, ...],
    note: str | None,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Override one criteria field of CATEGORY.

    definition takes one VALUE; a list field takes one VALUE per item, or a
    single JSON array.
    """
    if field in LIST_FIELDS:
        value: object = list(values)
        if len(values) == 1 and values[0].lstrip().startswith("["):
            try:
                value = json.loads(values[0])
            except json.JSONDecodeError as error:
                raise MemsdkError(f"{field}: not a JSON array: {error}") from error
    else:
        if len(values) != 1:
            raise MemsdkError(f"{field} takes one value (quote it), got {len(values)}")
        value = values[0]
    with open_store(db, project) as store:
        changed = store.criteria.set(category, field, value, note=note)
    if as_json:
        echo_json(changed.to_dict())
        return
    click.echo(
        f"{category}.{field}: override set (memsdk criteria reset {category} {field} undoes it)"
    )


@criteria.command()
@click.argument("category")
@click.argument("field", required=False, type=click.Choice(CRITERIA_FIELDS))
@store_options
@JSON_OPTION
def reset(
    category: str, field: str | None, db: str | None, project: str | None, as_json: bool
) -> None:
    """Clear your override of FIELD (or every field) so the pack default applies."""
    with open_store(db, project) as store:
        restored = store.criteria.reset(category, field)
    if as_json:
        echo_json(restored.to_dict())
        return
    click.echo(f"{category}.{field or '*'}: pack default restored")


@criteria.command()
@click.argument("category", required=False)
@click.option(
    "--field",
    type=click.Choice(
        [*CRITERIA_FIELDS, "kind", "priority", "promotable", "label", "status", "name"]
    ),
)
@store_options
@JSON_OPTION
def history(
    category: str | None, field: str | None, db: str | None, project: str | None, as_json: bool
) -> None:
    """Every change to criteria: source, when, old value, new value."""
    with open_store(db, project) as store:
        events = store.criteria.history(category, field)
    if as_json:
        echo_json([e.to_dict() for e in events])
        return
    for event in events:
        by = f" {event.pack}@{event.pack_version}" if event.pack else ""
        note = f"  ({event.note})" if event.note else ""
        click.echo(f"{event.at}  {event.source:<8}{by}  {event.category}.{event.field}{note}")
        if event.old_value is not None:
            click.echo(f"    old: {_short(event.old_value)}")
        click.echo(f"    new: {_short(event.new_value)}")


def _short(value: object, width: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"
