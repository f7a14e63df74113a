"""``memsdk claude-code install|uninstall`` and ``memsdk hook claude-code EVENT``.

The hook command runs on every prompt of a Claude Code session, so this
module imports nothing heavy until a command runs.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from plugin_sdk.cli.common import JSON_OPTION, F, echo_json, plugin_manager, store_options

if TYPE_CHECKING:
    from plugin_sdk.host.claude.claude_hooks import FileChange

EVENT_NAMES = ("SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd")


@click.group(name="claude-code")
def claude_code() -> None:
    """Claude Code: its MCP server entry and hooks, written into a project."""


def _edit_options(folder_help: str) -> Callable[[F], F]:
    """``--project-dir``, ``--yes`` and ``--dry-run``: what install and uninstall share."""

    def decorate(command: F) -> F:
        command = click.option("--dry-run", is_flag=True, help="Only show the diff.")(command)
        command = click.option(
            "--yes", is_flag=True, help="Write without asking (the diff is still shown)."
        )(command)
        return click.option(
            "--project-dir",
            type=click.Path(file_okay=False, path_type=Path),
            default=".",
            show_default=True,
            help=folder_help,
        )(command)

    return decorate


@claude_code.command()
@_edit_options("The Claude Code project folder (its .claude/settings.json and .mcp.json).")
@store_options
@click.option(
    "pack_name",
    "--pack",
    default="dev",
    show_default=True,
    help="The pack to install in the store when it has none by that name (name or file).",
)
@click.option(
    "model_name",
    "--model",
    help="The historian's model: claude-code (default when `claude` is on PATH), "
    "scripted:FILE, none (agent-written memories only), or an llm model id.",
)
@JSON_OPTION
def install(
    project_dir: Path,
    yes: bool,
    dry_run: bool,
    db: str | None,
    project: str | None,
    pack_name: str,
    model_name: str | None,
    as_json: bool,
) -> None:
    """Set up memory for a Claude Code project: store, pack, settings, then a self-check.

    Creates the store when missing, installs the pack (--pack, default dev),
    writes the MCP server entry (.mcp.json) and four hooks
    (.claude/settings.json): SessionStart injects the memory block,
    UserPromptSubmit the memories that answer the prompt, PreCompact and
    SessionEnd queue the transcript for the historian, which runs detached
    (`memsdk historian drain`). Then it starts the MCP server once and runs
    each hook once, and prints what works. Running it again changes nothing
    that is already right.
    """
    from plugin_sdk.host.claude.claude_hooks import install as plan
    from plugin_sdk.host.claude.claude_setup import prepare_store, self_check
    from plugin_sdk.model.choose import default_choice
    from plugin_sdk.store.paths import default_db_path
    from plugin_sdk.store.project import project_for

    project = project or project_for(project_dir)
    path = Path(db).expanduser().resolve() if db else default_db_path().resolve()
    model = model_name or default_choice()
    options = ["--project", project, "--db", str(path)]
    changes = plan(project_dir, _memsdk(), options, ["--model", model])
    if dry_run:
        _apply(changes, yes, dry_run, as_json)
        return
    if as_json and not yes:
        raise click.UsageError("--json asks no question: add --yes (or --dry-run)")
    shown = False
    if not yes:  # asked before anything is made: an answer of no leaves no store behind
        shown = _show(changes)
        state = "existing" if path.exists() else "to be created"
        click.echo(f"Store: {path} ({state}), project {project}, pack {pack_name}")
        if not click.confirm("Set up the store and write these changes?", default=True):
            raise click.exceptions.Exit(1)
    lines = prepare_store(path, project, pack_name, model, plugin_manager())
    if not as_json:
        for line in lines:
            click.echo(line)
    _apply(changes, True, dry_run, as_json, shown=shown)
    if not as_json:
        failed = 0
        for ok, line in self_check(_memsdk(), options, ["--model", model], project_dir):
            failed += not ok
            click.echo(("  ok    " if ok else "  FAIL  ") + line)
        if failed:
            raise click.ClickException(f"{failed} check(s) failed; see above")


@claude_code.command()
@click.option(
    "--project-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="The Claude Code project folder.",
)
@JSON_OPTION
def status(project_dir: Path, as_json: bool) -> None:
    """What is installed in a project: store, project, model, each hook's last run and error."""
    from plugin_sdk.host.claude.claude_setup import status_report

    report = status_report(project_dir)
    if as_json:
        echo_json(report)
        return
    for line in report["lines"]:
        click.echo(line)


@claude_code.command()
@_edit_options("The Claude Code project folder.")
@JSON_OPTION
def uninstall(project_dir: Path, yes: bool, dry_run: bool, as_json: bool) -> None:
    """Take out exactly the entries install added; nothing else is touched."""
    from plugin_sdk.host.claude.claude_hooks import uninstall as plan

    _apply(plan(project_dir), yes, dry_run, as_json)


@click.group(name="hook")
def hook() -> None:
    """Answer a host's hook events (Claude Code runs these; see `memsdk claude-code install`)."""


@hook.command(name="claude-code")
@click.argument("event", type=click.Choice(EVENT_NAMES))
@click.option(
    "--budget",
    type=click.IntRange(1),
    default=1500,
    show_default=True,
    help="Token cap of the SessionStart memory block.",
)
@click.option(
    "model_id",
    "--model",
    envvar="MEMSDK_MODEL",
    show_envvar=True,
    help="The historian's model for the drain the hooks start (claude-code, scripted:FILE, "
    "none, or an llm model id).",
)
@store_options
def hook_claude_code(
    event: str, budget: int, model_id: str | None, db: str | None, project: str | None
) -> None:
    """Read one Claude Code hook event (JSON) on stdin; print the hook's JSON answer.

    The same as the lean `memsdk-hook claude-code EVENT` that install writes.
    SessionEnd and PreCompact queue the transcript and start `memsdk
    historian drain` detached. The project is --project, else the one
    derived from the event's cwd.
    """
    import json

    from plugin_sdk.host.claude.hook_entry import PayloadError, run

    try:
        result = run(
            event,
            sys.stdin.read(),
            db=db,
            project=project,
            model=model_id,
            budget=budget,
            plugins=plugin_manager(),
        )
    except PayloadError as error:
        raise click.ClickException(str(error)) from error
    click.echo(json.dumps(result, ensure_ascii=False))


def _memsdk() -> str:
    """How settings should run memsdk: this installation's script when there is one."""
    script = Path(sys.executable).with_name("memsdk")
    return str(script) if script.exists() else "memsdk"


def _show(changes: list[FileChange]) -> bool:
    """Print each pending change as a diff; whether there was one."""
    pending = [change for change in changes if change.changed]
    for change in pending:
        click.echo(_diff(change), nl=False)
    return bool(pending)


def _apply(
    changes: list[FileChange],
    yes: bool,
    dry_run: bool,
    as_json: bool = False,
    shown: bool = False,
) -> None:
    """Show each change as a diff (unless ``shown`` already), ask (unless --yes), write.

    --json asks nothing (so it needs --yes or --dry-run) and prints
    {"changes": [{"path", "diff"}], "written": bool}.
    """
    if as_json and not (yes or dry_run):
        raise click.UsageError("--json asks no question: add --yes (or --dry-run)")
    pending = [change for change in changes if change.changed]
    diffs = [_diff(change) for change in pending]
    if as_json:
        if not dry_run:
            for change in pending:
                change.write()
        echo_json(
            {
                "changes": [
                    {"path": str(change.path), "diff": diff}
                    for change, diff in zip(pending, diffs, strict=True)
                ],
                "written": bool(pending) and not dry_run,
            }
        )
        return
    if not pending:
        click.echo("Nothing to change.")
        return
    if not shown:
        for diff in diffs:
            click.echo(diff, nl=False)
    if dry_run:
        return
    if not yes and not click.confirm("Write these changes?", default=True):
        raise click.exceptions.Exit(1)
    for change in pending:
        change.write()
    click.echo(f"Wrote {', '.join(str(change.path) for change in pending)}")


def _diff(change: FileChange) -> str:
    return "".join(
        difflib.unified_diff(
            (change.before or "").splitlines(keepends=True),
            (change.after or "").splitlines(keepends=True),
            fromfile=str(change.path) if change.before is not None else "/dev/null",
            tofile=str(change.path) if change.after is not None else "/dev/null",
        )
    )


@hook.command(name="server")
@click.option(
    "--db",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The store whose read hooks this server answers.",
)
@click.option(
    "--idle-minutes",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Stop after this long without a request.",
)
@JSON_OPTION
def hook_server(db: Path, idle_minutes: float, as_json: bool) -> None:
    """Answer the SessionStart and UserPromptSubmit hooks of one store from a running process.

    `memsdk-hook` starts it detached when none answers; it stops when idle, when the
    store file is removed or replaced, or on SIGTERM. One per store (a lock);
    its socket (mode 0600) is `<db>.hook.sock`. See docs/hooks.md.
    """
    from plugin_sdk.host.claude.hook_server import serve

    click.echo(
        f"memsdk hook server {db}: stopped: {serve(db.expanduser(), idle_minutes)}", err=True
    )
