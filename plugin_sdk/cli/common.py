"""Options and helpers shared by the command-line modules."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

from plugin_sdk.plugin.manager import PluginManager, make_plugin_manager
from plugin_sdk.store.connection import Store
from plugin_sdk.store.limits import MAX_INTEGER
from plugin_sdk.store.paths import default_db_path

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
    ctx = click.get_current_context()
    root = ctx.find_root()
    if not isinstance(root.obj, dict):
        root.obj = {}
    if "plugins" not in root.obj:
        root.obj["plugins"] = make_plugin_manager()
    manager: PluginManager = root.obj["plugins"]
    return manager


def open_store(db: str | None, project: str | None) -> Store:
    return Store(db or default_db_path(), project=project, plugins=plugin_manager())


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True))
