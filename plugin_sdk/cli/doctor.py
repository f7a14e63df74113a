"""``memsdk doctor``: check a store and, with ``--repair``, rebuild what can be rebuilt."""

from __future__ import annotations

import click

from plugin_sdk.cli.common import JSON_OPTION, echo_json
from plugin_sdk.store.doctor import doctor
from plugin_sdk.store.paths import default_db_path


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
