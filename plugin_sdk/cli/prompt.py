"""``memsdk prompt``: the prompts the stages build from the store."""

from __future__ import annotations

import json

import click

from plugin_sdk.cli.common import JSON_OPTION, echo_json, open_store, store_options
from plugin_sdk.model import prompts

SURFACES = ("historian", "dreamer", "tool")


@click.group()
def prompt() -> None:
    """Prompts assembled from the store's criteria (never from constants)."""


@prompt.command()
@click.argument("which", type=click.Choice(SURFACES))
@store_options
@JSON_OPTION
def show(which: str, db: str | None, project: str | None, as_json: bool) -> None:
    """Print the historian prompt, the dreamer's prompts, or the memory tool's schema."""
    with open_store(db, project) as store:
        if which == "historian":
            text = prompts.historian_system(store)
        elif which == "dreamer":
            text = (
                "# curate\n\n"
                + prompts.dreamer_curate(store)
                + "\n# retrospective\n\n"
                + prompts.dreamer_retrospective(store)
            )
        else:
            text = json.dumps(prompts.tool_schema(store), indent=2, ensure_ascii=False)
        digest = prompts.surface_hash(store)
    if as_json:
        echo_json({"surface": which, "text": text, "surface_hash": digest})
    else:
        click.echo(text.rstrip())


@prompt.command(name="hash")
@click.option("--session", help="Record the hash for this session id (or check it with --check).")
@click.option("--check", is_flag=True, help="Exit 1 if the session's recorded prompt is stale.")
@store_options
@JSON_OPTION
def hash_(
    session: str | None, check: bool, db: str | None, project: str | None, as_json: bool
) -> None:
    """Print the prompt-surface hash; record it for a session, or check staleness."""
    with open_store(db, project) as store:
        if check:
            if not session:
                raise click.ClickException("--check needs --session")
            stale = prompts.is_stale(store, session)
            if as_json:
                echo_json({"session": session, "stale": stale})
            else:
                click.echo("stale" if stale else "current")
            if stale:
                raise SystemExit(1)
            return
        digest = prompts.record_session(store, session) if session else prompts.surface_hash(store)
    if as_json:
        echo_json({"surface_hash": digest, "session": session})
        return
    click.echo(digest)
