"""``memsdk observe``, ``retain``, ``review`` (triage) and ``truth``: observations to Compiled Truth."""

from __future__ import annotations

import io
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

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
from plugin_sdk.retain import (
    dark_matter,
    observations,
    retention,
    routing,
    truth,
    value_conflicts,
)
from plugin_sdk.retain.handlers import describe, registered_handlers
from plugin_sdk.retain.job import BATCH_SIZE, retain
from plugin_sdk.store.limits import jsonl_stream


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@store_options
@JSON_OPTION
def observe(file: str, db: str | None, project: str | None, as_json: bool) -> None:
    """Validate the observations in FILE (JSON Lines; - for standard input) and put them in the inbox.

    Each bad line is reported by number and reason; the good ones wait in the
    observation inbox for `memsdk retain run`, all in one transaction. A line
    the store cannot take (an unknown category, say) is kept as invalid with
    its reason, and observing it again once the store can take it puts it in
    the inbox. An id already stored with the same content is a replay and
    changes nothing. Exits 1 when any line was bad.
    """
    name = "<stdin>" if file == "-" else file
    try:
        with _lines_of(file) as handle, open_store(db, project) as store:
            # Read as the lines are taken: a file of any size is held a
            # line at a time. A read error mid-file rolls back every line.
            report = observations.observe(store, jsonl_stream(handle))
    except (OSError, UnicodeDecodeError) as error:
        raise click.ClickException(f"cannot read {name}: {error}") from error
    if as_json:
        echo_json({"file": name, **report.to_dict()})
    else:
        for bad in report.bad:
            label = f" [{bad.id}]" if bad.id else ""
            kept = " (kept as invalid)" if bad.kept else ""
            click.echo(f"{name}:{bad.line}:{label} {bad.reason}{kept}")
        kept_count = sum(1 for bad in report.bad if bad.kept)
        click.echo(
            f"Queued {len(report.queued)}; replayed (unchanged) {len(report.replayed)}; "
            f"bad lines {len(report.bad)}"
            + (f" ({kept_count} kept as invalid)" if kept_count else "")
            + (". Next: memsdk retain run" if report.queued else "")
        )
    if not report.ok:
        click.get_current_context().exit(1)


@contextmanager
def _lines_of(file: str) -> Iterator[IO[str]]:
    """FILE's text (``-``: standard input), read a line at a time, as ``observe`` always read it.

    A regular file is read with universal newlines (a carriage return, alone
    or before a line feed, ends a line too), standard input as Python reads
    it (only a line feed ends a line).
    Anything that is not a regular file (standard input, a pipe) is first
    copied to its end into a temporary file, before the store is opened: a
    slow producer never holds the store's write lock.
    """
    if file != "-" and os.path.isfile(file):
        with open(file, encoding="utf-8") as handle:
            yield handle
        return
    with tempfile.TemporaryFile() as spool:
        if file == "-":
            shutil.copyfileobj(sys.stdin.buffer, spool)
            encoding, errors, newline = sys.stdin.encoding, sys.stdin.errors, "\n"
        else:
            with open(file, "rb") as source:
                shutil.copyfileobj(source, spool)
            encoding, errors, newline = "utf-8", "strict", None
        spool.seek(0)
        text = io.TextIOWrapper(spool, encoding=encoding, errors=errors, newline=newline)
        try:
            yield text
        finally:
            text.detach()  # the spool closes itself


@click.group(name="retain")
def retain_group() -> None:
    """The Retain Job: observations in the inbox become entities, facts, relations, memories."""


@retain_group.command(name="run")
@click.option("--limit", type=count(1), help="Stop after this many observations.")
@click.option(
    "--batch-size",
    type=count(1),
    default=BATCH_SIZE,
    show_default=True,
    help="Observations per transaction.",
)
@click.option(
    "--retry-failed", is_flag=True, help="Put failed observations back in the inbox first."
)
@store_options
@JSON_OPTION
def retain_run(
    limit: int | None,
    batch_size: int,
    retry_failed: bool,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Retain the observations in the inbox (a progress bar when standard error is a terminal).

    Each observation is resolved, deduplicated, routed by schema_fit (dark
    matter held for triage, fast-track past the dedup pass), checked for
    conflicts and written in one transaction with the rest of its batch; Compiled
    Truths whose impact crossed the pack's threshold are regenerated after
    each batch. Running again with an empty inbox changes nothing.
    """

    with open_store(db, project) as store, Progress("retain") as shown:
        report = retain(
            store,
            limit=limit,
            batch_size=batch_size,
            retry_failed=retry_failed,
            progress=lambda done, total: shown.update(done, total),
        )
    if as_json:
        echo_json(report.to_dict())
        return
    routes = report.routes
    click.echo(
        f"Processed {report.processed} observations: {routes['fast']} fast-track, "
        f"{routes['normal']} normal, {routes['dark']} dark matter (to review: memsdk review "
        f"list), {len(report.failed)} failed"
    )
    click.echo(
        f"Entities created {report.entities_created}; duplicates folded {report.duplicates}; "
        f"conflicts recorded {report.conflicts}; compiled truths written {len(report.truths)}; "
        f"still queued {report.remaining}"
    )
    for ident, error in report.failed:
        click.echo(f"failed {ident}: {error}")


@retain_group.command(name="prune")
@click.option("--older-than", type=count(0), help="Days; default: the store's retention.")
@click.option("--keep", type=count(1), help="Set the store's retention (days) first.")
@click.option("--dry-run", is_flag=True, help="Count what would go; change nothing.")
@store_options
@JSON_OPTION
def retain_prune(
    older_than: int | None,
    keep: int | None,
    dry_run: bool,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Prune retained observations past the retention, keeping what truths and conflicts need."""
    with open_store(db, project) as store:
        if keep is not None:
            retention.set_keep_days(store, keep)
        days = retention.keep_days(store) if older_than is None else older_than
        report = retention.prune(store, older_than=days, dry_run=dry_run)
    if as_json:
        echo_json({"days": days, **attrs.asdict(report)})
        return
    verb = "would prune" if dry_run else "pruned"
    click.echo(
        f"{verb} {report.pruned} observations older than {days} days; kept "
        f"{report.kept_for_facts} for facts, {report.kept_for_truths} for Compiled Truth"
    )


@retain_group.command(name="status")
@store_options
@JSON_OPTION
def retain_status(db: str | None, project: str | None, as_json: bool) -> None:
    """Observations per status, the retain policy (and its packs), and the handlers."""
    with open_store(db, project) as store:
        counts = observations.counts(store)
        policy = routing.policy(store).to_dict()
        handlers = [describe(h) for h in registered_handlers(store)]
    if as_json:
        echo_json({"observations": counts, "policy": policy, "handlers": handlers})
        return
    click.echo("Observations: " + ", ".join(f"{s} {n}" for s, n in counts.items()))
    for key, entry in policy.items():
        click.echo(f"  retain.{key} = {entry['value']:g}  (pack {entry['pack']})")
    for handler in handlers:
        click.echo(
            f"  handler {handler['name']}: category {handler['category'] or '(any)'}, "
            f"namespace {handler['namespace']}"
        )
    if not handlers:
        click.echo("  handlers: only the default")


@click.group(name="review")
def triage() -> None:
    """Triage: dark matter waiting for a person, and conflicting facts."""


@triage.command(name="list")
@click.option("-n", "--limit", type=count(1), default=50, show_default=True)
@store_options
@JSON_OPTION
def triage_list(limit: int, db: str | None, project: str | None, as_json: bool) -> None:
    """Observations held as dark matter (low schema_fit), oldest first."""
    with open_store(db, project) as store:
        waiting = dark_matter.pending(store, limit=limit)
    if as_json:
        echo_json([stored.to_dict() for stored in waiting])
        return
    if not waiting:
        click.echo("Nothing to review.")
    for stored in waiting:
        o = stored.observation
        click.echo(
            f"{o.id}  fit {stored.schema_fit:.2f}  {o.category}  {', '.join(o.actors)}  "
            f"topic {o.topic!r}  memory {stored.memory_id} "
            f"(half-life {stored.half_life_days:g} days)"
        )
        click.echo(f"    {o.text}")


@triage.command()
@click.argument("ids", nargs=-1, required=True)
@store_options
@JSON_OPTION
def accept(ids: tuple[str, ...], db: str | None, project: str | None, as_json: bool) -> None:
    """Accept dark-matter observations: they count as if retained on the normal path."""
    with open_store(db, project) as store:
        done = [dark_matter.accept(store, ident).to_dict() for ident in ids]
    if as_json:
        echo_json(done)
        return
    for row in done:
        click.echo(f"Accepted {row['id']} (memory {row['memory_id']} is active)")


@triage.command()
@click.argument("ids", nargs=-1, required=True)
@click.option("--reason", default="", help="Why, for the record.")
@store_options
@JSON_OPTION
def reject(
    ids: tuple[str, ...], reason: str, db: str | None, project: str | None, as_json: bool
) -> None:
    """Reject dark-matter observations: kept as a record, their memory archived."""
    with open_store(db, project) as store:
        done = [dark_matter.reject(store, ident, reason=reason).to_dict() for ident in ids]
    if as_json:
        echo_json(done)
        return
    for row in done:
        click.echo(f"Rejected {row['id']}")


@triage.command(name="conflicts")
@click.option("--all", "show_all", is_flag=True, help="Include resolved and dismissed ones.")
@click.option("--entity", help="Only conflicts about this entity.")
@store_options
@JSON_OPTION
def triage_conflicts(
    show_all: bool, entity: str | None, db: str | None, project: str | None, as_json: bool
) -> None:
    """Facts that contradict each other, and near-duplicate memories whose values differ.

    Both sides of a conflict are kept. Memory conflicts are recorded by the
    dreamer's curate task (kind "memory" in --json).
    """
    status = None if show_all else "open"
    with open_store(db, project) as store:
        found = dark_matter.conflicts(store, status=status, entity=entity)
        memory = [] if entity else value_conflicts.listing(store, status=status)
    if as_json:
        echo_json(
            [c.to_dict() for c in found] + [{"kind": "memory", **m.to_dict()} for m in memory]
        )
        return
    if not found and not memory:
        click.echo("No conflicts.")
    for m in memory:
        click.echo(
            f"memory conflict {m.id} [{m.status}] memories {m.memory_id} and "
            f"{m.other_memory_id}: {', '.join(m.values) or '(none)'} vs "
            f"{', '.join(m.other_values) or '(none)'}"
        )
    for c in found:
        click.echo(
            f"conflict {c.id} [{c.status}] {c.entity} {c.predicate}: "
            f"{c.other_value!r} ({c.other_observation_id}) vs {c.value!r} ({c.observation_id})"
        )


@click.group(name="truth")
def truth_group() -> None:
    """Compiled Truth: each entity's versioned summary."""


@truth_group.command(name="show")
@click.argument("entity")
@click.option("--history", is_flag=True, help="Every version, oldest first.")
@store_options
@JSON_OPTION
def truth_show(
    entity: str, history: bool, db: str | None, project: str | None, as_json: bool
) -> None:
    """Show ENTITY's Compiled Truth (the newest version, or the whole chain)."""
    with open_store(db, project) as store:
        versions = truth.history(store, entity)
        latest = truth.current(store, entity)
        gathered = truth.pending_impact(store, entity)
        threshold = routing.policy(store).truth_impact_threshold
        open_conflicts = len(dark_matter.conflicts(store, entity=entity))
    shown = versions if history else [latest] if latest else []
    if as_json:
        echo_json(
            {
                "entity": entity,
                "versions": [v.to_dict() for v in shown],
                "impact": gathered,
                "threshold": threshold,
                "open_conflicts": open_conflicts,
            }
        )
        return
    if not shown:
        click.echo(
            f"{entity} has no compiled truth yet (impact gathered {gathered:g} of {threshold:g})"
        )
        return
    for version in shown:
        successor = (
            f", superseded by {version.superseded_by}" if version.superseded_by else ", current"
        )
        click.echo(
            f"--- version {version.version} (id {version.id}, {version.written_by}, "
            f"{version.created_at}{successor})"
        )
        click.echo(version.markdown.rstrip())
    if open_conflicts:
        click.echo(
            f"--- {open_conflicts} open conflict(s): memsdk review conflicts --entity {entity}"
        )


@truth_group.command(name="regenerate")
@click.argument("entity")
@store_options
@JSON_OPTION
def truth_regenerate(entity: str, db: str | None, project: str | None, as_json: bool) -> None:
    """Regenerate ENTITY's Compiled Truth now (a new version, unless nothing changed)."""
    with open_store(db, project) as store:
        written = truth.regenerate(store, entity)
    if as_json:
        echo_json({"entity": entity, "written": written.to_dict() if written else None})
        return
    if written is None:
        click.echo(f"{entity}: unchanged; the current version stays")
    else:
        click.echo(f"{entity}: version {written.version} ({written.written_by})")
