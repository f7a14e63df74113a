"""``memsdk demo``: the front door."""

from __future__ import annotations

import tempfile
from pathlib import Path

import attrs
import click

from plugin_sdk.cli.common import JSON_OPTION, echo_json
from plugin_sdk.host.demo import render, render_injection, run_demo
from plugin_sdk.store.connection import Store


@click.command()
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    help="Keep the demo store in this file (default: a temporary store, removed after).",
)
@click.option(
    "--pack",
    "pack_name",
    default="ops",
    show_default=True,
    help="Built-in pack whose sample to load.",
)
@JSON_OPTION
def demo(db: str | None, pack_name: str, as_json: bool) -> None:
    """Build a sample store from a built-in pack and report what it holds."""
    with tempfile.TemporaryDirectory(prefix="memsdk-demo-") as tmp:
        path = db or str(Path(tmp) / "demo.db")
        with Store(path, project="demo") as store:
            report = run_demo(store, pack_name)
        if as_json:
            echo_json({**attrs.asdict(report), "db": path if db else None})
            return
        click.echo(f"memsdk demo: store {path if db else '(temporary)'}, project 'demo'")
        click.echo("")
        render(report, click.echo)
        click.echo("")
        render_injection(report, click.echo)
        click.echo("")
        if db:
            click.echo(f"Explore it: memsdk memory search --db {db} --project demo 'failover'")
        else:
            click.echo("Keep a store to explore: memsdk demo --db demo.db")
