"""``memsdk inject`` and ``memsdk expand``: what a host puts in front of its model."""

from __future__ import annotations

import click

from plugin_sdk.cli.common import ID, JSON_OPTION, count, echo_json, open_store, store_options
from plugin_sdk.stages import inject as injector
from plugin_sdk.stages import recall as recaller


@click.command(name="inject")
@click.option(
    "--budget",
    type=count(1),
    default=injector.DEFAULT_BUDGET,
    show_default=True,
    help="Hard cap on the block's tokens.",
)
@click.option(
    "--session", help="Record what this session is shown (enables --delta, counts retrievals)."
)
@click.option(
    "--delta", "as_delta", is_flag=True, help="Only what changed since the session's last block."
)
@store_options
@JSON_OPTION
def inject_command(
    budget: int,
    session: str | None,
    as_delta: bool,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Print the memory block (a table of contents) and its token account."""
    with open_store(db, project, read=True) as store:
        if as_delta:
            if not session:
                raise click.ClickException("--delta needs --session")
            change = injector.delta(store, session)
            if as_json:
                echo_json(change.to_dict())
            else:
                click.echo(change.text or "(nothing changed)")
            return
        result = injector.inject(store, budget=budget, session=session)
        data = result.to_dict()  # the account is read from the store
    if as_json:
        echo_json({**data, "left_out": {str(k): v for k, v in result.left_out.items()}})
        return
    click.echo(result.text or f"({result.note})")
    click.echo(account(result), err=True)


def account(result: injector.Injection) -> str:
    return (
        f"{result.tokens}/{result.budget} tokens; {len(result.shown)} of {result.candidates} "
        f"candidates shown, {len(result.left_out)} left out; {result.reachable} of "
        f"{result.active} active memories reachable (coverage {result.coverage:.0%}); "
        "after 0/1/2 expands: " + " / ".join(f"{share:.0%}" for share in result.coverage_by_depth)
    )


@click.command()
@click.argument("memory_id", type=ID)
@click.option("--budget", type=count(1), help="Cap on the details' tokens.")
@store_options
@JSON_OPTION
def expand(
    memory_id: int, budget: int | None, db: str | None, project: str | None, as_json: bool
) -> None:
    """Print a header's details in order (or the memory itself)."""
    with open_store(db, project, read=True, by_id=True) as store:
        result = injector.expand(store, memory_id, budget=budget)
    if as_json:
        echo_json(
            {
                "text": result.text,
                "tokens": result.tokens,
                "shown": result.shown,
                "left_out": result.left_out,
            }
        )
        return
    click.echo(result.text or "(nothing fits the budget)")
    if result.left_out:
        click.echo(f"{len(result.left_out)} details left out by the budget", err=True)


@click.command(name="recall")
@click.argument("query")
@click.option(
    "--budget",
    type=click.IntRange(1),
    default=recaller.DEFAULT_BUDGET,
    show_default=True,
    help="Hard cap on the block's tokens.",
)
@store_options
@JSON_OPTION
def recall_command(
    query: str, budget: int, db: str | None, project: str | None, as_json: bool
) -> None:
    """Print the memories that answer QUERY (plain language) within a token budget.

    The block for this turn: best matches first, headers with their matching
    details, sequence neighbours, entities' compiled truths (docs/search.md).
    The account (ids, why, tokens) goes to standard error, or into --json.
    """
    with open_store(db, project) as store:
        result = recaller.recall(store, query, budget=budget)
    if as_json:
        echo_json({**result.to_dict(), "why": {str(k): v for k, v in result.why.items()}})
        return
    click.echo(result.text or "(no memory matches)")
    click.echo(
        f"{result.tokens}/{result.budget} tokens; {len(result.shown)} memories shown, "
        f"{len(result.left_out)} left out by the budget",
        err=True,
    )
