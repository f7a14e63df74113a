"""``memsdk mcp``: the memory tools and the memory block over MCP (stdio or HTTP), and its tokens."""

from __future__ import annotations

from pathlib import Path

import click

from plugin_sdk.cli.common import JSON_OPTION, count, echo_json, open_store, store_options
from plugin_sdk.stages.inject import DEFAULT_BUDGET

TOKENS_OPTION = click.option(
    "--tokens",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="MEMSDK_MCP_TOKENS",
    show_envvar=True,
    help="Token file for --http (default: mcp-tokens.json under MEMSDK_USER_PATH or the user app dir).",
)


@click.group(name="mcp", invoke_without_command=True)
@click.option(
    "--budget",
    type=count(1),
    default=DEFAULT_BUDGET,
    show_default=True,
    help="Token cap of the memory block (resource memsdk://inject, prompt 'memory', memory_toc).",
)
@click.option(
    "packs",
    "--pack",
    multiple=True,
    help="Install this pack (name or file) first if the store lacks it; repeatable.",
)
@click.option(
    "--http",
    "address",
    metavar="HOST:PORT",
    help="Serve streamable HTTP on this address (bearer tokens bound to projects) "
    "instead of standard input and output.",
)
@click.option(
    "--log",
    "log_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --http: append the request log (one line per request: time, token, project, "
    "tool, status, ms; never a memory's text) to this file instead of standard error.",
)
@TOKENS_OPTION
@store_options
@click.pass_context
def mcp_command(
    ctx: click.Context,
    budget: int,
    packs: tuple[str, ...],
    address: str | None,
    log_file: Path | None,
    tokens: Path | None,
    db: str | None,
    project: str | None,
) -> None:
    """Serve the store to MCP hosts: one project over stdio, or a team's over HTTP.

    Tools: memory_write, memory_search, memory_recall, memory_get, memory_list,
    memory_recent, memory_toc, memory_expand, memory_update, memory_archive,
    memory_outcome, memory_merge, memory_forget, each with a title, an output
    schema and annotations; their category enum is read from the store when the
    server starts. Resource memsdk://inject and prompt 'memory': the injected
    table of contents.

    Over stdio the project is --project (or the default; the server's
    instructions name it). With --http HOST:PORT every request needs
    `Authorization: Bearer TOKEN` from `memsdk mcp token add`, and names its
    project (header X-Memsdk-Project or ?project=) among the token's. Each
    request is logged in one line on standard error (or --log FILE). Serve on
    127.0.0.1 and put a TLS proxy in front for a team (docs/team-server.md).

    Needs the mcp extra: pip install -e '.[mcp]' in a memsdk checkout
    (docs/install.md). See docs/mcp.md for a host's configuration.
    """
    if ctx.invoked_subcommand is not None:
        return
    from plugin_sdk.host.mcp_server import require_mcp, run_stdio
    from plugin_sdk.host.opening import ensure_packs

    if log_file is not None and address is None:
        raise click.UsageError("--log is the HTTP server's request log: it needs --http HOST:PORT")
    require_mcp()
    with open_store(db, project) as store:
        ensure_packs(store, packs)
        if address is None:
            run_stdio(store, budget=budget)
            return
        shown = store.path  # a database URL's password shown as ***
    from plugin_sdk.host.mcp_http import serve_http, tokens_path
    from plugin_sdk.store.postgres import is_url

    # The workers open the store again: with what was given (its password too).
    path = db if db and is_url(db) else shown
    click.echo(f"memsdk mcp: serving {shown} on http://{address}/mcp", err=True)
    if log_file is None:
        serve_http(path, address, tokens=tokens or tokens_path(), budget=budget)
        return
    with log_file.open("a", encoding="utf-8") as log:
        serve_http(path, address, tokens=tokens or tokens_path(), budget=budget, log=log)


@mcp_command.group()
def token() -> None:
    """Bearer tokens for `memsdk mcp --http`, each bound to the projects it may use."""


@token.command()
@click.argument("name")
@click.option(
    "projects",
    "-p",
    "--project",
    multiple=True,
    required=True,
    help="A project it may use; repeatable.",
)
@TOKENS_OPTION
@JSON_OPTION
def add(name: str, projects: tuple[str, ...], tokens: Path | None, as_json: bool) -> None:
    """Add token NAME and print its secret (once: only its digest is kept)."""
    from plugin_sdk.host.mcp_http import add_token, tokens_path

    path = tokens or tokens_path()
    secret = add_token(path, name, list(projects))
    if as_json:
        echo_json({"name": name, "projects": list(projects), "token": secret, "file": str(path)})
        return
    click.echo(secret)
    click.echo(f"Token {name!r} for {', '.join(projects)} added to {path}", err=True)


@token.command(name="list")
@TOKENS_OPTION
@JSON_OPTION
def list_(tokens: Path | None, as_json: bool) -> None:
    """The tokens and their projects (never their secrets)."""
    from plugin_sdk.host.mcp_http import load_grants, tokens_path

    grants = load_grants(tokens or tokens_path())
    if as_json:
        echo_json([{"name": g.name, "projects": list(g.projects)} for g in grants])
        return
    for grant in grants:
        click.echo(f"{grant.name}: {', '.join(grant.projects)}")


@token.command()
@click.argument("name")
@TOKENS_OPTION
@JSON_OPTION
def revoke(name: str, tokens: Path | None, as_json: bool) -> None:
    """Remove token NAME (a running server reads the file when it starts: restart it)."""
    from plugin_sdk.host.mcp_http import revoke_token, tokens_path

    revoke_token(tokens or tokens_path(), name)
    if as_json:
        echo_json({"revoked": name})
        return
    click.echo(f"Revoked token {name!r}")
