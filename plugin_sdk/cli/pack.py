"""``memsdk pack``: list, show, validate, install, upgrade."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from plugin_sdk.cli.common import JSON_OPTION, echo_json, open_store, plugin_manager, store_options
from plugin_sdk.errors import MemsdkError, PackError
from plugin_sdk.packs.documents import Pack, validate_pack
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
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    envvar="MEMSDK_DB",
    show_envvar=True,
    help="The store whose installed packs NAME may name (default: memory.db under "
    "MEMSDK_USER_PATH or the user app dir).",
)
@click.option(
    "--installed",
    is_flag=True,
    help="Show the version installed in the store, even when a pack of that name is offered.",
)
@JSON_OPTION
def show(source: str, db: str | None, installed: bool, as_json: bool) -> None:
    """Show a pack (a file, a name offered, or a name installed in the store).

    A pack installed from a file is found by its name in the store when no
    pack of that name is offered (or with --installed). Nothing is
    installed, and no store is created.
    """
    if installed:
        found = _installed(source, db)
        if found is None:
            raise MemsdkError(f"no pack named {source!r} is installed in the store")
    else:
        try:
            found = resolve_pack(source, plugin_manager())
        except PackError:
            found = _installed(source, db)
            if found is None:
                raise
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
@JSON_OPTION
def validate(sources: tuple[str, ...], against: str | None, as_json: bool) -> None:
    """Validate pack files or names; with none, every pack available by name.

    Exits 1 if any pack is invalid, naming the file and the path inside it.
    With --against STORE, criteria text naming a category the store retired
    (or that the installed version has and this one drops) is flagged with
    a "warn" line; warnings do not fail the command. --json prints one
    object per pack: source, name, version, ok, error, warnings.
    """
    results: list[dict[str, Any]] = []
    if not sources:
        for found in available_packs(plugin_manager()):
            version = found.pack.version if found.pack else None
            results.append(_checked(found.name, found.name, version, found.error))
    for source in sources:
        try:
            pack_ = resolve_pack(source, plugin_manager())
        except PackError as error:
            results.append(_checked(source, None, None, str(error)))
            continue
        result = _checked(source, pack_.name, pack_.version, None)
        if against:
            with open_store(against, None) as store:
                result["warnings"] = list(gone_in_pack(pack_, store))
        results.append(result)
    failures = sum(1 for result in results if not result["ok"])
    if as_json:
        echo_json(results)
    else:
        for result in results:
            if not result["ok"]:
                click.echo(f"FAIL {result['error']}", err=True)
                continue
            where = f" ({result['source']})" if sources else ""
            click.echo(f"ok   {result['name']} {result['version'] or ''}{where}".rstrip())
            for line in result["warnings"]:
                click.echo(f"warn {result['name']}: {line}")
    if failures:
        if as_json:
            raise click.exceptions.Exit(1)
        raise click.ClickException(f"{failures} invalid pack(s)")


def _checked(
    source: str, name: str | None, version: str | None, error: str | None
) -> dict[str, Any]:
    return {
        "source": source,
        "name": name,
        "version": version,
        "ok": error is None,
        "error": error,
        "warnings": [],
    }


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


def _installed(name: str, db: str | None) -> Pack | None:
    """The pack ``name`` as installed in the store at ``db``, if there is one."""
    path = Path(db).expanduser() if db else default_db_path()
    if not path.exists():  # showing must not create a store
        if db:
            raise MemsdkError(f"no store at {path}")
        return None
    with open_store(str(path), None) as store:
        same = [p for p in store.packs.installed() if p.name == name]
    if not same:
        return None
    return validate_pack(same[0].document, source=f"installed in {path} from {same[0].source}")


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
