"""``memsdk projects``, ``backup``, ``export``, ``import``, ``copy``: a store's projects, kept and moved.

And ``memsdk datasette-metadata``, to browse the store in Datasette.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from plugin_sdk.cli.common import (
    JSON_OPTION,
    echo_json,
    open_store,
    plugin_manager,
    store_options,
)
from plugin_sdk.errors import NoStore
from plugin_sdk.host import portable
from plugin_sdk.host import projects as project_ops
from plugin_sdk.store.file.backup import backup as copy_whole
from plugin_sdk.store.paths import default_db_path

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

DB_OPTION = click.option(
    "--db",
    type=click.Path(dir_okay=False),
    envvar="MEMSDK_DB",
    show_envvar=True,
    help="Store file (default: memory.db under MEMSDK_USER_PATH or the user app dir).",
)


@click.group(name="projects", invoke_without_command=True)
@DB_OPTION
@JSON_OPTION
@click.pass_context
def projects(ctx: click.Context, db: str | None, as_json: bool) -> None:
    """The store's projects with their memory counts and last write (the busiest first).

    A project derived from a folder or a repository changes name when they
    move: `memsdk projects rename OLD NEW` or `memsdk projects merge OLD NEW`
    carries its memories along.
    """
    if ctx.invoked_subcommand is not None:
        return
    with _open(db) as store:
        found = project_ops.list_projects(store)
        current = store.project
    if as_json:
        echo_json([info.to_dict() for info in found])
        return
    if not found:
        click.echo("No projects: the store holds no memories.")
        return
    for info in found:
        mark = "*" if info.name == current else " "
        statuses = ", ".join(f"{n} {status}" for status, n in info.by_status.items())
        click.echo(
            f"{mark} {info.name}: {info.memories} memories ({statuses or 'none'}), "
            f"{info.entities} entities, last write {info.last_write or '-'}"
        )


@projects.command()
@click.argument("old")
@click.argument("new")
@DB_OPTION
@JSON_OPTION
def rename(old: str, new: str, db: str | None, as_json: bool) -> None:
    """Give project OLD the name NEW (NEW must not exist yet; else use merge)."""
    with _open(db) as store:
        moved = project_ops.rename_project(store, old, new)
    _report(moved, as_json, f"Renamed project {old!r} to {new!r}")


@projects.command()
@click.argument("source")
@click.argument("target")
@DB_OPTION
@JSON_OPTION
def merge(source: str, target: str, db: str | None, as_json: bool) -> None:
    """Move everything of project SOURCE into TARGET; repeats fold into TARGET's memories."""
    with _open(db) as store:
        moved = project_ops.merge_project(store, source, target)
    _report(moved, as_json, f"Merged project {source!r} into {target!r}")


@projects.command()
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do it (without it, only say what would go).")
@DB_OPTION
@JSON_OPTION
def delete(name: str, yes: bool, db: str | None, as_json: bool) -> None:
    """Delete project NAME and everything in it (export it first to keep a copy)."""
    with _open(db) as store:
        if not yes:
            info = [p for p in project_ops.list_projects(store) if p.name == name]
            if not info:
                raise click.ClickException(f"no project {name!r} in store {store.path}")
            raise click.ClickException(
                f"project {name!r} holds {info[0].memories} memories and "
                f"{info[0].entities} entities; run again with --yes to delete them"
            )
        deleted = project_ops.delete_project(store, name)
    _report(deleted, as_json, f"Deleted project {name!r}")


@click.command()
@click.argument("destination", type=click.Path(dir_okay=False))
@DB_OPTION
@JSON_OPTION
def backup(destination: str, db: str | None, as_json: bool) -> None:
    """Copy the whole store to DESTINATION with SQLite's online backup.

    Safe while other processes write: the copy is one consistent moment of
    the store. DESTINATION must not exist.
    """
    source = Path(db).expanduser() if db else default_db_path()
    info = copy_whole(source, Path(destination))
    if as_json:
        echo_json(info)
    else:
        click.echo(f"Backed up {source} to {destination} ({info['bytes']} bytes)")


@click.command(name="export")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    default="-",
    help="Write here (default: standard output).",
)
@store_options
def export(output: str, db: str | None, project: str | None) -> None:
    """Write the project as JSON Lines: memories, composites, the entity grid, what the Retain Job learned.

    Criteria overrides, facts and their conflicts, Compiled Truth versions,
    the observation inbox, memory conflicts, outcome reports, proposals with
    their history, the dreamer's state and forgotten tombstones travel too;
    the store's own settings and this machine's session logs do not (memsdk
    copy carries those). `memsdk import FILE` loads it into another store;
    exporting there again gives the same lines.
    """
    with open_store(db, project, read=True) as store:
        lines = portable.dump_lines(portable.export_project(store))
        if output == "-":
            for line in lines:
                sys.stdout.write(line)
            return
        # every memory's text is in it: only the owner may read it (as a backup)
        fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # an existing file keeps its mode otherwise
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.writelines(lines)


@click.command(name="import")
@click.argument("source", type=click.File("r", encoding="utf-8"))
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    envvar="MEMSDK_DB",
    show_envvar=True,
    help="Store file (default: memory.db under MEMSDK_USER_PATH or the user app dir).",
)
@click.option("--project", help="Import as this project (default: the exported project's name).")
@JSON_OPTION
def import_(source: TextIO, db: str | None, project: str | None, as_json: bool) -> None:
    """Load an export (SOURCE, or - for standard input) as a new project of the store."""
    with open_store(db, project) as store:
        loaded = portable.import_project(store, source, project=project)
    if as_json:
        echo_json(loaded)
        return
    click.echo(", ".join(f"{n} {kind}" for kind, n in loaded.items() if n) or "Nothing to load")


#: How a store that is not a file is named (a libpq URL).
URL_SCHEMES = ("postgresql:", "postgres:")


@click.command(name="copy")
@click.argument("source")
@click.argument("dest")
@click.option("--project", help="Copy only this project (with the packs and settings it uses).")
@JSON_OPTION
def copy(source: str, dest: str, project: str | None, as_json: bool) -> None:
    """Copy the store SOURCE into DEST, every table row for row, every id kept.

    SOURCE and DEST are store files or PostgreSQL URLs (postgresql://...).
    DEST is created when it does not exist; it must hold no project (with
    --project: not that one), and a copy never merges. One transaction: a
    failure leaves DEST as it was. Memories, composites, criteria and their
    overrides with history, the entity grid, facts, truths, conflicts,
    outcomes, the observation inbox, proposals with their events, the
    dreamer's state and the tombstones of forgotten memories (never their
    text) travel; the search index, the vector mirror and the injector's
    ranking are rebuilt in DEST. Prints the rows copied per table. Both
    stores are migrated to this memsdk's schema first.
    """
    from plugin_sdk.store.connection import Store
    from plugin_sdk.store.file.copying import copy_store

    if not source.startswith(URL_SCHEMES) and not Path(source).expanduser().exists():
        raise NoStore(f"no store at {source} (copy reads an existing store; it creates none)")
    manager = plugin_manager()
    target_path = _store_path(dest)
    new = isinstance(target_path, Path) and not target_path.exists()
    try:
        with (
            Store(_store_path(source), project=project, plugins=manager) as origin,
            Store(target_path, project=project, plugins=manager) as target,
        ):
            progress = None if as_json else _printer()
            report = copy_store(origin, target, project=project, progress=progress)
    except BaseException:
        if new and isinstance(target_path, Path):  # a file this copy made goes with it
            for suffix in ("", "-wal", "-shm"):
                Path(f"{target_path}{suffix}").unlink(missing_ok=True)
        raise
    if as_json:
        echo_json(report.to_dict())
        return
    for table, why in report.skipped.items():
        click.echo(f"skipped {table}: {why}")
    for table, kept in report.kept.items():
        click.echo(f"kept {kept} of {table}'s rows that {dest} had already")
    what = f"project {project!r}" if project else "the store"
    click.echo(f"Copied {what} from {source} to {dest}: {report.total} rows")


def _store_path(name: str) -> str | Path:
    return name if name.startswith(URL_SCHEMES) else Path(name).expanduser()


def _printer() -> Callable[[str, int], None]:
    def show(table: str, rows: int) -> None:
        click.echo(f"{table}: {rows}")

    return show


@click.command(name="datasette-metadata")
@DB_OPTION
@click.option("as_json", "--json", is_flag=True, help="Print JSON (the output is JSON either way).")
def datasette_metadata(db: str | None, as_json: bool) -> None:
    """Print Datasette metadata for the store: labels, facets, the search box.

    memsdk datasette-metadata --db memory.db > metadata.json, then
    datasette memory.db --metadata metadata.json. Start at memories_view.
    """
    from plugin_sdk.host.browse import datasette_metadata as metadata

    echo_json(metadata(Path(db) if db else default_db_path()))


def _open(db: str | None) -> Store:
    """The store for a command about all its projects (none is created)."""
    from plugin_sdk.store.connection import Store

    path = Path(db).expanduser() if db else default_db_path()
    if not path.exists():
        raise NoStore(f"no store at {path} (a command that only reads creates none)")
    return Store(path, plugins=plugin_manager())


def _report(counts: dict[str, int], as_json: bool, done: str) -> None:
    if as_json:
        echo_json(counts)
        return
    detail = ", ".join(f"{table} {n}" for table, n in counts.items())
    click.echo(f"{done}: {detail or 'nothing to move'}")
