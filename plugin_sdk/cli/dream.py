"""``memsdk dream``: run the dreamer's tasks and see where they stand."""

from __future__ import annotations

import attrs
import click

from plugin_sdk.cli.common import (
    JSON_OPTION,
    Progress,
    count,
    echo_json,
    open_store,
    store_options,
)
from plugin_sdk.model.choose import attach
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
    show_envvar=True,
    help="The model of the tasks that ask one: claude-code, scripted:FILE, none, or an llm "
    "model id or alias (needs the llm extra); "
    "default: the plugin that answers model_complete, else the rule-based fallbacks.",
)
@store_options
@JSON_OPTION
def run(
    tasks: tuple[str, ...],
    max_batches: int | None,
    model_id: str | None,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Run TASKS in the order given (default: every task) with a progress display.

    The progress bar (with an ETA when the task knows its total) is drawn on
    standard error only when it is a terminal; a log gets none.

    `memsdk dream status` lists the tasks (built in: classify, consolidate,
    curate, map, retain, retrospective, sync-headers; plugins add more).

    Progress is saved with every batch: an interrupted run resumes where it
    stopped, without redoing or losing work. --json prints each task's
    report: task, batches, handled, finished_pass, error.
    """
    with open_store(db, project) as store:
        if model_id:
            adapter = attach(store.plugins, model_id)
            if isinstance(adapter, LlmModel):
                adapter.model  # noqa: B018 - resolve now: an unknown id fails before any work
        dreamer = Dreamer(store)

        with Progress() as shown:

            def progress(task: DreamerTask, done: int, total: int | None) -> None:
                shown.update(done, total, label=f"{task.name:<14}")

            reports = []
            names = list(tasks) if tasks else sorted(dreamer.tasks)
            for name in names:
                reports.extend(dreamer.run(name, max_batches=max_batches, progress=progress))
    if as_json:
        echo_json([attrs.asdict(report) for report in reports])
        return
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
