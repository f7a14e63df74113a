"""Options and helpers shared by the command-line modules.

The project a command uses is ``--project``, else ``MEMSDK_PROJECT``, else
the one derived from the current directory (``store/project.py``); ``memsdk
--verbose`` prints the store and the project in use. A command that only
reads opens the store with ``read=True``: a ``--db`` path with no file is an
error (nothing is created), and a project that holds nothing is an error that
names the projects the store does hold (this is a local user, who may see
them all).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from plugin_sdk.errors import EmptyProject, NoStore
from plugin_sdk.store.limits import MAX_INTEGER
from plugin_sdk.store.paths import default_db_path

if TYPE_CHECKING:
    from plugin_sdk.plugin.manager import PluginManager
    from plugin_sdk.store.connection import Store

F = TypeVar("F", bound=Callable[..., Any])

JSON_OPTION = click.option("as_json", "--json", is_flag=True, help="Print JSON.")

#: A row id: SQLite's integers end at 2^63-1, so a larger one is a usage error.
ID = click.IntRange(1, MAX_INTEGER)


def count(minimum: int = 1) -> click.IntRange:
    """A limit, budget or offset of at least ``minimum`` and at most 2^63-1."""
    return click.IntRange(minimum, MAX_INTEGER)


def store_options(fn: F) -> F:
    """Add ``--db`` and ``--project`` to a command."""
    fn = click.option(
        "--project",
        envvar="MEMSDK_PROJECT",
        help="Project id (default: from the current git repository, else the directory).",
    )(fn)
    fn = click.option(
        "--db",
        type=click.Path(dir_okay=False),
        envvar="MEMSDK_DB",
        help="Store file (default: memory.db under MEMSDK_USER_PATH or the user app dir).",
    )(fn)
    return fn


def plugin_manager() -> PluginManager:
    """The command line's plugin manager: built once per invocation."""
    from plugin_sdk.plugin.manager import make_plugin_manager

    ctx = click.get_current_context()
    root = ctx.find_root()
    if not isinstance(root.obj, dict):
        root.obj = {}
    if "plugins" not in root.obj:
        root.obj["plugins"] = make_plugin_manager()
    manager: PluginManager = root.obj["plugins"]
    return manager


def open_store(
    db: str | None, project: str | None, *, read: bool = False, by_id: bool = False
) -> Store:
    """The store at ``db`` (default: the user's) for ``project``.

    ``read=True`` for a command that only reads: no file is created, and a
    project that holds nothing raises :class:`EmptyProject` (unless
    ``by_id``: a read of one row by its id, which says itself when it is
    not there).
    """
    from plugin_sdk.store.connection import Store

    path = Path(db).expanduser() if db else default_db_path()
    if read and not path.exists():
        raise NoStore(f"no store at {path} (a command that only reads creates none)")
    store = Store(path, project=project, plugins=plugin_manager())
    if verbose():
        click.echo(f"memsdk: store {store.path}, project {store.project!r}", err=True)
    if read and not by_id:
        try:
            require_project(store)
        except BaseException:
            store.close()
            raise
    return store


def require_project(store: Store) -> None:
    """Raise :class:`EmptyProject`, naming the store's projects, if the project holds nothing."""
    from plugin_sdk.host.projects import has_project, list_projects

    if has_project(store, store.project):
        return
    others = [f"{p.name} ({p.memories} memories)" for p in list_projects(store)]
    where = f"; projects here: {', '.join(others)} (pass --project NAME)" if others else ""
    raise EmptyProject(f"project {store.project!r} holds nothing in store {store.path}{where}")


def verbose() -> bool:
    """Whether ``memsdk --verbose`` was given."""
    ctx = click.get_current_context(silent=True)
    root = ctx.find_root() if ctx else None
    return bool(root and isinstance(root.obj, dict) and root.obj.get("verbose"))


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True))
