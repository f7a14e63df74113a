"""The ``memsdk`` command line.

Every command that touches a store takes ``--db PATH`` (default: see
``store/paths.py``) and ``--project NAME`` (default: derived from the current
directory, see ``store/project.py``; ``memsdk --verbose`` prints the one in
use). Errors caused by input print one line, ``Error: ...`` (credentials
redacted: see ``redact.py``), and exit 1 (2 for a wrong option or argument,
as click's usage errors); nothing is half-written.

Command groups load on first use (:data:`COMMANDS`), so a hook that runs
``memsdk inject`` on every turn imports only what inject needs.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from plugin_sdk.cli.common import (
    JSON_OPTION,
    echo_json,
    epilog,
    open_store,
    plugin_manager,
    store_options,
)
from plugin_sdk.errors import MemsdkError, PackConflict
from plugin_sdk.redact import redact
from plugin_sdk.store import driver

#: The built-in commands that live in their own modules: name -> "module:attribute".
COMMANDS = {
    "backup": "projects:backup",
    "claude-code": "claude_code:claude_code",
    "composite": "composite:composite",
    "copy": "projects:copy",
    "criteria": "criteria:criteria",
    "datasette-metadata": "projects:datasette_metadata",
    "dream": "dream:dream",
    "entity": "entity:entity",
    "expand": "inject:expand",
    "export": "projects:export",
    "forget": "memory:forget",
    "grid": "grid:grid_group",
    "historian": "historian:historian",
    "hook": "claude_code:hook",
    "import": "projects:import_",
    "inject": "inject:inject_command",
    "mcp": "mcp:mcp_command",
    "memory": "memory:memory",
    "observe": "retain:observe",
    "outcome": "memory:outcome",
    "pack": "pack:pack",
    "projects": "projects:projects",
    "prompt": "prompt:prompt",
    "queue": "queue:queue",
    "recall": "inject:recall_command",
    "retain": "retain:retain_group",
    "review": "retain:triage",
    "truth": "retain:truth_group",
}


class UsageProblem(click.ClickException):
    """A wrong option or argument, as one line (exit 2, as click's usage errors)."""

    exit_code = 2


class MemsdkGroup(click.Group):
    """Turns memsdk's errors, and usage errors, into one line and a non-zero exit.

    Commands named in :data:`COMMANDS` are imported when they are asked for.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = self.commands.get(cmd_name)
        if found is None and cmd_name in COMMANDS:
            module, _, attribute = COMMANDS[cmd_name].partition(":")
            found = getattr(importlib.import_module(f"plugin_sdk.cli.{module}"), attribute)
            self.commands[cmd_name] = found
        return found

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The root's epilog, then the packs on offer: which one fits, read from the packs."""
        super().format_epilog(ctx, formatter)
        if ctx.parent is None:
            _suggest_packs(formatter)

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
        except driver.Error as error:
            raise click.ClickException(redact(f"store: {error}")) from error
        except (OverflowError, UnicodeError, RecursionError, ValueError) as error:
            # input no check foresaw (a number SQLite cannot hold, text that is
            # not valid Unicode): still one line, never a traceback
            raise click.ClickException(
                redact(f"cannot use this input ({type(error).__name__}: {error})")
            ) from error


@click.group(cls=MemsdkGroup, epilog=epilog())
@click.version_option(package_name="memsdk")
@click.option(
    "-v", "--verbose", is_flag=True, help="Print the store and the project in use (to stderr)."
)
@click.pass_context
def cli(ctx: click.Context, verbose: bool) -> None:
    """memsdk: long-term memory for agent hosts.

    One SQLite store holds the memories and the category criteria that govern
    them. Start with `memsdk demo`, then `memsdk init --pack ops`.

    The project: --project, else MEMSDK_PROJECT, else the current directory's
    git repository (git:<root commit>), else the directory (path:<dir>).
    `memsdk projects` lists a store's projects.
    """
    if not isinstance(ctx.obj, dict):
        ctx.obj = {}
    ctx.obj["verbose"] = verbose


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
    show_envvar=True,
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


@cli.command()
@click.option("--all", "include_builtin", is_flag=True, help="Include memsdk's built-in plugins.")
@click.option("--hook", "hook_name", help="Only plugins implementing this hook.")
@click.option("as_json", "--json", is_flag=True, help="Print JSON (the output is JSON either way).")
def plugins(include_builtin: bool, hook_name: str | None, as_json: bool) -> None:
    """List plugins as sorted JSON: name, distribution, hooks (or the load error)."""
    from plugin_sdk.plugin.manager import describe, has_spec

    manager = plugin_manager()
    rows = describe(manager, include_builtin=include_builtin)
    if hook_name is not None:
        if not has_spec(manager, hook_name):
            names = sorted(n for n in dir(manager.hook) if has_spec(manager, n))
            raise click.ClickException(f"no hook named {hook_name!r}; hooks: {', '.join(names)}")
        rows = [row for row in rows if hook_name in row["hooks"]]
    echo_json(rows)


@cli.command()
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
    help="The pack: a built-in name or a pack file (.toml or .json).",
)
@JSON_OPTION
def demo(db: str | None, pack_name: str, as_json: bool) -> None:
    """Build a sample store from a pack and report what it holds.

    The pack's own sample when it ships one (the built-in packs do), else
    one generated from its criteria: every positive example becomes a memory
    of its category. A pack author can demo a pack file before publishing it.
    """
    import tempfile
    from pathlib import Path

    import attrs

    from plugin_sdk.host.demo import render, render_injection, run_demo
    from plugin_sdk.store.connection import Store

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
            query = report.searches[0]["query"] if report.searches else "memory"
            click.echo(f"Explore it: memsdk memory search --db {db} --project demo '{query}'")
        else:
            click.echo("Keep a store to explore: memsdk demo --db demo.db")


cli.add_command(doctor_command)


def main() -> None:
    """The console script: plugins may add commands before the command line runs."""
    from plugin_sdk.plugin.manager import call_each, make_plugin_manager

    manager = make_plugin_manager()
    for name, error in call_each(manager, "register_commands", cli=cli):
        if error:  # one plugin's bug must not take the command line down
            click.echo(f"memsdk: plugin {name!r} failed to add commands: {error}", err=True)
    cli(obj={"plugins": manager})


def _suggest_packs(formatter: click.HelpFormatter) -> None:
    """Each pack on offer with what it is for (its own description), and how to start with one."""
    from plugin_sdk.packs.sources import available_packs

    offered = [found for found in available_packs() if found.pack is not None]
    if not offered:
        return
    formatter.write_paragraph()
    formatter.write_text("\b\nPacks on offer (pick the one whose description fits your agent):")
    rows = [(found.name, found.pack.description) for found in offered if found.pack is not None]
    with formatter.indentation():
        formatter.write_dl(rows)
    formatter.write_paragraph()
    formatter.write_text(
        "\b\nStart with one: memsdk init --pack NAME\n"
        "Claude Code:     memsdk claude-code install --project-dir . --pack NAME"
    )
