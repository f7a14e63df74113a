"""``memsdk plugins``: what is loaded, and what failed to load."""

from __future__ import annotations

import click

from plugin_sdk.cli.common import echo_json, plugin_manager
from plugin_sdk.plugin.manager import describe, has_spec


@click.command()
@click.option("--all", "include_builtin", is_flag=True, help="Include memsdk's built-in plugins.")
@click.option("--hook", "hook_name", help="Only plugins implementing this hook.")
def plugins(include_builtin: bool, hook_name: str | None) -> None:
    """List plugins as sorted JSON: name, distribution, hooks (or the load error)."""
    manager = plugin_manager()
    rows = describe(manager, include_builtin=include_builtin)
    if hook_name is not None:
        if not has_spec(manager, hook_name):
            names = sorted(n for n in dir(manager.hook) if has_spec(manager, n))
            raise click.ClickException(f"no hook named {hook_name!r}; hooks: {', '.join(names)}")
        rows = [row for row in rows if hook_name in row["hooks"]]
    echo_json(rows)
