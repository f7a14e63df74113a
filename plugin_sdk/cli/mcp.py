"""``memsdk mcp``: the memory tools and the memory block over MCP (stdio)."""

from __future__ import annotations

import click

from plugin_sdk.cli.common import count, open_store, store_options
from plugin_sdk.stages.inject import DEFAULT_BUDGET


@click.command(name="mcp")
@click.option(
    "--budget",
    type=count(1),
    default=DEFAULT_BUDGET,
    show_default=True,
    help="Token cap of the memory block (resource memsdk://inject, prompt 'memory').",
)
@click.option(
    "packs",
    "--pack",
    multiple=True,
    help="Install this pack (name or file) first if the store lacks it; repeatable.",
)
@store_options
def mcp_command(budget: int, packs: tuple[str, ...], db: str | None, project: str | None) -> None:
    """Serve the store's project to an MCP host over standard input and output.

    Tools: memory_write, memory_search, memory_recall, memory_get, memory_expand,
    memory_update, memory_archive, memory_outcome, memory_merge; their category enum is read
    from the store when the server starts. Resource memsdk://inject and prompt
    'memory': the injected table of contents. Needs the mcp extra:
    pip install -e '.[mcp]' in a memsdk checkout (docs/install.md). See docs/mcp.md for a
    host's configuration.
    """
    from plugin_sdk.host.mcp_server import require_mcp, run_stdio
    from plugin_sdk.host.opening import ensure_packs

    require_mcp()
    with open_store(db, project) as store:
        ensure_packs(store, packs)
        run_stdio(store, budget=budget)
