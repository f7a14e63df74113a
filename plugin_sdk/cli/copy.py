"""``memsdk copy SOURCE DEST``: a whole store, or one project, moved into another store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from plugin_sdk.cli.common import JSON_OPTION, echo_json, plugin_manager
from plugin_sdk.errors import NoStore

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
    from plugin_sdk.store.copying import copy_store

    if not source.startswith(URL_SCHEMES) and not Path(source).expanduser().exists():
        raise NoStore(f"no store at {source} (copy reads an existing store; it creates none)")
    manager = plugin_manager()
    target_path = _path(dest)
    new = isinstance(target_path, Path) and not target_path.exists()
    try:
        with Store(_path(source), project=project, plugins=manager) as origin:
            with Store(target_path, project=project, plugins=manager) as target:
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


def _path(name: str) -> str | Path:
    return name if name.startswith(URL_SCHEMES) else Path(name).expanduser()


def _printer() -> Callable[[str, int], None]:
    def show(table: str, rows: int) -> None:
        click.echo(f"{table}: {rows}")

    return show
