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
import sys
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

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
        show_envvar=True,
        help="Project id (default: from the current git repository, else the directory).",
    )(fn)
    fn = click.option(
        "--db",
        type=click.Path(dir_okay=False),
        envvar="MEMSDK_DB",
        show_envvar=True,
        help="Store file, or a PostgreSQL URL postgresql://… (default: memory.db under "
        "MEMSDK_USER_PATH or the user app dir).",
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
    from plugin_sdk.store.postgres import is_url

    target: str | Path
    if db and is_url(db):
        target = db  # a PostgreSQL database: Store connects (and creates the schema once)
    else:
        target = Path(db).expanduser() if db else default_db_path()
        if read and not target.exists():
            raise NoStore(f"no store at {target} (a command that only reads creates none)")
    store = Store(target, project=project, plugins=plugin_manager())
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


# -- the environment variables memsdk reads, named in one place -----------------
#
# The root command's --help epilog is built from ENVIRONMENT, and a test checks
# that every MEMSDK_* name in the sources is listed here (and so in docs/cli.md,
# generated from the help). Options that read one show it as [env var: ...].

#: name -> what it sets, one line each.
ENVIRONMENT = {
    "MEMSDK_DB": "the store file or PostgreSQL URL (--db)",
    "MEMSDK_PG_DEBUG": "1: a PostgreSQL error names the statement it came from",
    "MEMSDK_PROJECT": "the project (--project)",
    "MEMSDK_USER_PATH": "the folder of the default store (memory.db) and token file",
    "MEMSDK_SYNCHRONOUS": "normal (default), full or extra: how durable each commit is",
    "MEMSDK_MODEL": "the llm model id of the historian and dreamer (--model)",
    "MEMSDK_LOAD_PLUGINS": "comma-separated allowlist of third-party plugins ('' loads none)",
    "MEMSDK_BLOCK_PLUGINS": "comma-separated plugins never to load, built-in or not",
    "MEMSDK_TRACE": "1 writes every hook call and its result to standard error",
    "MEMSDK_ACTOR": "who decides on the approval queue (queue ... --by)",
    "MEMSDK_REPO": "the git repository of queue PRs (queue --repo)",
    "MEMSDK_INSTRUCTIONS_FILE": "the instructions file queue PRs edit (--instructions-file)",
    "MEMSDK_MCP_TOKENS": "the bearer-token file of memsdk mcp --http (--tokens)",
    "MEMSDK_HOOK_SERVER": "0 makes the Claude Code hooks answer in-process, never via memsdk hook server",
    "MEMSDK_HOOK_TIMEOUT": "seconds a hook waits for the hook server's answer (1.5) before answering itself",
    "MEMSDK_HOOK_CHILD": "set in the claude-code model's child: memsdk's hooks there answer {} at once",
}

COMPLETION = "_MEMSDK_COMPLETE"


def epilog() -> str:
    """The root ``--help`` epilog: the variables, and how to turn on completion."""
    width = max(len(name) for name in ENVIRONMENT)
    lines = ["\b", "Environment variables:"]
    lines += [f"  {name:<{width}}  {text}" for name, text in ENVIRONMENT.items()]
    lines += [
        "",
        "\b",
        "Shell completion (bash; zsh and fish likewise, with zsh_source or fish_source):",
        f'  eval "$({COMPLETION}=bash_source memsdk)"   # in ~/.bashrc',
    ]
    return "\n".join(lines)


# -- progress on standard error, for a person watching, never for a log ----------
#
# Progress draws click's progress bar (position, percent and an ETA when the
# total is known) only when standard error is a terminal. Piped or redirected
# into a log it writes nothing at all: no frames, no carriage returns, not even
# the label. Jobs report absolute counts (done of total); a new label or a
# changed total starts a new bar.


class Progress:
    """A progress bar on ``stream`` (default: standard error) when it is a terminal."""

    def __init__(self, label: str = "", stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.shown = bool(getattr(self.stream, "isatty", lambda: False)())
        self.label = label
        self.total: int | None = None
        self.bar: Any = None

    def update(self, done: int, total: int | None, label: str | None = None) -> None:
        """Show ``done`` of ``total`` (None: not known) under ``label``."""
        if not self.shown:
            return
        label = self.label if label is None else label
        if self.bar is None or total != self.total or label != self.label:
            self.close()
            self.label, self.total = label, total
            self.bar = click.progressbar(
                iter(()) if total is None else None,
                length=total,
                label=label,
                file=self.stream,
                show_eta=True,
                show_pos=True,
            )
            self.bar.__enter__()
        if done > self.bar.pos:
            self.bar.update(done - self.bar.pos)

    def close(self) -> None:
        """End the current bar (its line stays on the terminal)."""
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
