"""``memsdk dream``: run the dreamer's tasks and see where they stand."""

from __future__ import annotations

import click

from plugin_sdk.cli.common import JSON_OPTION, count, echo_json, open_store, store_options
from plugin_sdk.model.llm import LlmModel
from plugin_sdk.plugin.records import DreamerTask
from plugin_sdk.stages.dreamer import Dreamer


@click.group()
def dream() -> None:
    """The dreamer: bounded, resumable background maintenance."""


@dream.command()
@click.argument("tasks", nargs=-1)
@click.option("--max-batches", type=count(1), help="Stop after this many batches (resumable).")
@click.option(
    "model_id",
    "--model",
    envvar="MEMSDK_MODEL",
    help="An llm model id or alias for the tasks that ask a model (needs the llm extra); "
    "default: the plugin that answers model_complete, else the rule-based fallbacks.",
)
@store_options
def run(
    tasks: tuple[str, ...],
    max_batches: int | None,
    model_id: str | None,
    db: str | None,
    project: str | None,
) -> None:
    """Run TASKS in the order given (default: every task) with a progress display.

    `memsdk dream status` lists the tasks (built in: classify, consolidate,
    curate, map, retain, retrospective, sync-headers; plugins add more).

    Progress is saved with every batch: an interrupted run resumes where it
    stopped, without redoing or losing work.
    """
    with open_store(db, project) as store:
        if model_id:
            adapter = LlmModel(model_id)
            adapter.model  # noqa: B018 - resolve now: an unknown id fails before any work
            store.plugins.register(adapter, name="llm-model")
        dreamer = Dreamer(store)

        def progress(task: DreamerTask, done: int, total: int | None) -> None:
            if total:
                width = 30
                filled = min(width, round(width * done / total)) if total else 0
                bar = "#" * filled + "-" * (width - filled)
                click.echo(f"\r{task.name:<14} [{bar}] {done}/{total}", nl=False, err=True)
            else:
                click.echo(f"\r{task.name:<14} {done} done", nl=False, err=True)

        reports = []
        names = list(tasks) if tasks else sorted(dreamer.tasks)
        for name in names:
            reports.extend(dreamer.run(name, max_batches=max_batches, progress=progress))
            click.echo("", err=True)
    for report in reports:
        state = "pass complete" if report.finished_pass else "paused (run again to resume)"
        click.echo(f"{report.task}: {report.handled} items in {report.batches} batches, {state}")


@dream.command()
@store_options
@JSON_OPTION
def status(db: str | None, project: str | None, as_json: bool) -> None:
    """Each task's schedule, progress, passes, lease and last error."""
    with open_store(db, project) as store:
        rows = Dreamer(store).status()
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        total = f"/{row['total']}" if row["total"] is not None else ""
        click.echo(
            f"{row['task']:<14} {row['status']:<10} {row['schedule']:<7} "
            f"done {row['done']}{total}, passes {row['passes']}"
            + (f", last error: {row['last_error']}" if row["last_error"] else "")
        )
