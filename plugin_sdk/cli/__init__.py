"""The ``memsdk`` command line.

Every command that touches a store takes ``--db PATH`` (default: see
``store/paths.py``) and ``--project NAME`` (default: derived from the current
directory, see ``store/project.py``). Errors caused by input print one line,
``Error: ...`` (credentials redacted: see ``redact.py``), and exit 1 (2 for a wrong option or argument, as click's usage
errors); nothing is half-written.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import click

from plugin_sdk.cli.common import JSON_OPTION, echo_json, open_store, store_options
from plugin_sdk.errors import MemsdkError, PackConflict
from plugin_sdk.plugin.manager import call_each, make_plugin_manager
from plugin_sdk.redact import redact


class UsageProblem(click.ClickException):
    """A wrong option or argument, as one line (exit 2, as click's usage errors)."""

    exit_code = 2


class MemsdkGroup(click.Group):
    """Turns memsdk's errors, and usage errors, into one line and a non-zero exit."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as error:
            path = error.ctx.command_path if error.ctx else ctx.command_path
            raise UsageProblem(f"{error.format_message()} (see: {path} --help)") from error
        except MemsdkError as error:
            raise click.ClickException(redact(error)) from error
        except sqlite3.Error as error:
            raise click.ClickException(redact(f"store: {error}")) from error
        except (OverflowError, UnicodeError, RecursionError, ValueError) as error:
            # input no check foresaw (a number SQLite cannot hold, text that is
            # not valid Unicode): still one line, never a traceback
            raise click.ClickException(
                redact(f"cannot use this input ({type(error).__name__}: {error})")
            ) from error


@click.group(cls=MemsdkGroup)
@click.version_option(package_name="memsdk")
def cli() -> None:
    """memsdk: long-term memory for agent hosts.

    One SQLite store holds the memories and the category criteria that govern
    them. Start with `memsdk demo`, then `memsdk init --pack ops`.
    """


@cli.command()
@store_options
@click.option(
    "packs", "--pack", multiple=True, help="Install this pack (name or file); repeatable."
)
@JSON_OPTION
def init(db: str | None, project: str | None, packs: tuple[str, ...], as_json: bool) -> None:
    """Create the store (if needed) and optionally install packs."""
    from plugin_sdk.packs.sources import resolve_pack

    with open_store(db, project) as store:
        installed = []
        for name in packs:
            pack = resolve_pack(name, store.plugins)
            try:
                installed.append(store.packs.install(pack).to_dict())
            except PackConflict:
                # Init is idempotent: the same pack already there (perhaps put
                # there by another init running at once) is no error.
                same = [p for p in store.packs.installed() if p.name == pack.name]
                if not same or same[0].content_hash != pack.content_hash:
                    raise
                installed.append(
                    {
                        "pack": pack.name,
                        "old_version": same[0].version,
                        "new_version": pack.version,
                        "added": [],
                        "already_installed": True,
                    }
                )
        info = {
            "db": store.path,
            "project": store.project,
            "migrations": store.schema_version,
            "installed": installed,
        }
        if as_json:
            echo_json(info)
            return
        click.echo(f"Store: {store.path}")
        click.echo(f"Project: {store.project}")
        for done in installed:
            if done.get("already_installed"):
                click.echo(f"Pack {done['pack']} {done['new_version']} is already installed")
                continue
            click.echo(
                f"Installed pack {done['pack']} {done['new_version']}: {', '.join(done['added'])}"
            )


@click.command(name="doctor")
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    envvar="MEMSDK_DB",
    help="Store file (default: memory.db under MEMSDK_USER_PATH or the user app dir).",
)
@click.option(
    "--repair",
    is_flag=True,
    help="Rebuild what can be rebuilt: indexes, triggers, the full-text index, stale leases.",
)
@JSON_OPTION
def doctor_command(db: str | None, repair: bool, as_json: bool) -> None:
    """Check the store: integrity, schema, indexes, references, composites, merges, leases.

    Exits 0 when no error is left (warnings do not count), else 1.
    """
    from plugin_sdk.store.doctor import doctor
    from plugin_sdk.store.paths import default_db_path

    report = doctor(db or default_db_path(), repair=repair)
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(f"Store: {report.path}")
        click.echo(f"Checked: {', '.join(report.checks)}")
        for finding in report.findings:
            done = " [repaired]" if finding.repaired else ""
            click.echo(f"{finding.severity}: {finding.check}: {finding.detail}{done}")
        click.echo("ok" if report.ok else "problems found")
    if not report.ok:
        raise click.exceptions.Exit(1)


def _register() -> None:
    from plugin_sdk.cli import (
        composite,
        criteria,
        demo,
        dream,
        inject,
        mcp,
        memory,
        pack,
        plugins,
        prompt,
    )

    cli.add_command(pack.pack)
    cli.add_command(doctor_command)
    cli.add_command(criteria.criteria)
    cli.add_command(memory.memory)
    cli.add_command(memory.outcome)
    cli.add_command(demo.demo)
    cli.add_command(plugins.plugins)
    cli.add_command(prompt.prompt)
    cli.add_command(dream.dream)
    cli.add_command(composite.composite)
    cli.add_command(inject.inject_command)
    cli.add_command(inject.expand)
    cli.add_command(inject.recall_command)
    from plugin_sdk.cli import entity, grid

    cli.add_command(entity.entity)
    cli.add_command(grid.grid_group)
    cli.add_command(mcp.mcp_command)
    from plugin_sdk.cli import queue

    cli.add_command(queue.queue)
    from plugin_sdk.cli import historian

    cli.add_command(historian.historian)
    from plugin_sdk.cli import retain

    cli.add_command(retain.observe)
    cli.add_command(retain.retain_group)
    cli.add_command(retain.triage)
    cli.add_command(retain.truth_group)
    cli.add_command(memory.forget)


_register()


def main() -> None:
    """The console script: plugins may add commands before the command line runs."""
    manager = make_plugin_manager()
    for name, error in call_each(manager, "register_commands", cli=cli):
        if error:  # one plugin's bug must not take the command line down
            click.echo(f"memsdk: plugin {name!r} failed to add commands: {error}", err=True)
    cli(obj={"plugins": manager})
