"""``memsdk pack``: list, show, validate, install, upgrade."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from plugin_sdk.cli.common import JSON_OPTION, echo_json, open_store, plugin_manager, store_options
from plugin_sdk.errors import MemsdkError, PackError
from plugin_sdk.packs.documents import Pack
from plugin_sdk.packs.mentions import gone_in_pack
from plugin_sdk.packs.sources import available_packs, resolve_pack
from plugin_sdk.store.paths import default_db_path


@click.group()
def pack() -> None:
    """Packs: the versioned category sets a store is built from."""


@pack.command(name="list")
@store_options
@JSON_OPTION
def list_(db: str | None, project: str | None, as_json: bool) -> None:
    """Packs available by name (entry points) and packs installed in the store."""
    installed = {}
    if Path(db or default_db_path()).exists():  # listing must not create a store
        with open_store(db, project) as store:
            installed = {p.name: p for p in store.packs.installed()}
    rows: list[dict[str, Any]] = []
    for found in available_packs(plugin_manager()):
        rows.append(
            {
                "name": found.name,
                "available": found.pack.version if found.pack else None,
                "installed": installed[found.name].version if found.name in installed else None,
                "origin": found.origin,
                "error": found.error,
            }
        )
    for name, inst in installed.items():
        if name not in {row["name"] for row in rows}:
            rows.append(
                {
                    "name": name,
                    "available": None,
                    "installed": inst.version,
                    "origin": inst.source,
                    "error": None,
                }
            )
    rows.sort(key=lambda row: row["name"])
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        state = f"installed {row['installed']}" if row["installed"] else "not installed"
        offered = f"available {row['available']}" if row["available"] else "not offered"
        line = f"{row['name']:<16} {offered:<18} {state:<20} {row['origin']}"
        click.echo(line if not row["error"] else f"{row['name']:<16} BROKEN: {row['error']}")


@pack.command()
@click.argument("source")
@JSON_OPTION
def show(source: str, as_json: bool) -> None:
    """Show a pack (a name or a file) without installing it."""
    found = resolve_pack(source, plugin_manager())
    if as_json:
        echo_json(found.document)
        return
    click.echo(f"{found.name} {found.version}  ({found.source})")
    click.echo(found.description)
    for spec in sorted(found.categories.values(), key=lambda s: (s.priority, s.name)):
        flags = " promotable" if spec.promotable else ""
        click.echo(f"\n{spec.name}  [{spec.kind}, priority {spec.priority}{flags}]")
        click.echo(f"  {spec.criteria['definition']}")
        for field in ("positive_examples", "negative_examples", "exclusions"):
            click.echo(f"  {field}: {len(spec.criteria[field])}")


@pack.command()
@click.argument("sources", nargs=-1)
@click.option(
    "--against",
    type=click.Path(dir_okay=False, exists=True),
    help="A store the pack would be installed in or upgrade: warn about criteria text "
    "naming a category that no longer exists there.",
)
def validate(sources: tuple[str, ...], against: str | None) -> None:
    """Validate pack files or names; with none, every pack available by name.

    Exits 1 if any pack is invalid, naming the file and the path inside it.
    With --against STORE, criteria text naming a category the store retired
    (or that the installed version has and this one drops) is flagged with
    a "warn" line; warnings do not fail the command.
    """
    failures = 0
    targets = list(sources)
    if not targets:
        for found in available_packs(plugin_manager()):
            if found.error:
                failures += 1
                click.echo(f"FAIL {found.error}", err=True)
            else:
                click.echo(f"ok   {found.name} {found.pack.version if found.pack else ''}")
    for source in targets:
        try:
            pack_ = resolve_pack(source, plugin_manager())
        except PackError as error:
            failures += 1
            click.echo(f"FAIL {error}", err=True)
        else:
            click.echo(f"ok   {pack_.name} {pack_.version} ({source})")
            if against:
                with open_store(against, None) as store:
                    for line in gone_in_pack(pack_, store):
                        click.echo(f"warn {pack_.name}: {line}")
    if failures:
        raise click.ClickException(f"{failures} invalid pack(s)")


@pack.command()
@click.argument("source")
@store_options
@JSON_OPTION
def install(source: str, db: str | None, project: str | None, as_json: bool) -> None:
    """Install a pack (a name or a file) into the store."""
    found = resolve_pack(source, plugin_manager())
    with open_store(db, project) as store:
        report = store.packs.install(found)
    if as_json:
        echo_json(report.to_dict())
        return
    click.echo(f"Installed {found.name} {found.version}: {', '.join(report.added)}")
    if report.grid_kept:
        click.echo(f"  grid values another pack owns (kept): {', '.join(report.grid_kept)}")


@pack.command()
@click.argument("source")
@click.option(
    "maps",
    "--map",
    multiple=True,
    metavar="OLD=NEW|OLD=retire",
    help="Where the memories of a removed category go; repeatable.",
)
@click.option("--accept-new", is_flag=True, help="Accept categories the new version adds.")
@store_options
@JSON_OPTION
def upgrade(
    source: str,
    maps: tuple[str, ...],
    accept_new: bool,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Upgrade an installed pack to the version in SOURCE (a name or a file).

    Criteria text changes update the pack defaults; your overrides stay. If
    the new version adds, removes or renames categories, say where existing
    memories go with --map (and --accept-new for additions); without that,
    nothing changes.
    """
    found = resolve_pack(source, plugin_manager())
    mapping = _parse_maps(maps) if maps or accept_new else None
    with open_store(db, project) as store:
        report = store.packs.upgrade(found, mapping=mapping)
    if as_json:
        echo_json(report.to_dict())
        return
    _print_report(found, report.to_dict())


def _parse_maps(maps: tuple[str, ...]) -> dict[str, str | None]:
    mapping: dict[str, str | None] = {}
    for item in maps:
        old, sep, new = item.partition("=")
        if not sep or not old or not new:
            raise MemsdkError(f"--map {item!r}: expected OLD=NEW or OLD=retire")
        mapping[old] = None if new == "retire" else new
    return mapping


def _print_report(found: Pack, report: dict[str, object]) -> None:
    click.echo(f"Upgraded {found.name} {report['old_version']} -> {report['new_version']}")
    labels = {
        "added": "added",
        "renamed": "renamed",
        "retired": "retired",
        "changed": "defaults changed",
        "overrides_kept": "your overrides kept",
        "moved": "memories moved",
        "folded": "memories folded into duplicates",
        "archived": "memories archived",
        "grid_kept": "grid values another pack owns (kept)",
        "stale_mentions": "criteria that name a category no longer there (edit them)",
    }
    for key, label in labels.items():
        value = report[key]
        if isinstance(value, dict):
            value = ", ".join(f"{a} -> {b}" for a, b in value.items())
        elif isinstance(value, list):
            value = ", ".join(value)
        if value:
            click.echo(f"  {label}: {value}")
