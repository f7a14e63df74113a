"""``memsdk historian run``: transcript files in, memories out, chunk by chunk, only what is new."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from plugin_sdk.cli.common import JSON_OPTION, count, echo_json, open_store, store_options
from plugin_sdk.errors import HistorianReplyError, MemsdkError
from plugin_sdk.model.choose import NONE, attach
from plugin_sdk.model.llm import INSTALL_HINT, LlmModel
from plugin_sdk.stages.historian import bounded_view, run_historian
from plugin_sdk.store.connection import Store
from plugin_sdk.transcripts import (
    DEFAULT_BUDGET,
    DEFAULT_TOOL_OUTPUT_CHARS,
    FORMATS,
    MIN_BUDGET,
    Chunk,
    chunk_messages,
)
from plugin_sdk.transcripts.batch import FileImport, expand, plan
from plugin_sdk.transcripts.ledger import Ledger, parse_time

NEEDS_A_MODEL = (
    "the historian needs a model: pass --model claude-code, --model scripted:FILE or "
    "--model ID (any model the llm library knows; "
    f"{INSTALL_HINT}), set MEMSDK_MODEL, or install a plugin implementing "
    "model_complete. --dry-run shows the chunks and prompts without a model"
)


@click.group()
def historian() -> None:
    """The historian: transcripts in, memories out."""


@historian.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "transcripts",
    "--transcript",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A transcript file (repeatable; the same as naming it as an argument).",
)
@click.option(
    "format_",
    "--format",
    type=click.Choice(list(FORMATS)),
    help="Their format (default: detected from each file's content).",
)
@click.option(
    "model_id",
    "--model",
    envvar="MEMSDK_MODEL",
    show_envvar=True,
    help="claude-code (the host's `claude -p`), scripted:FILE (answers from a JSON list or a "
    "folder), or an llm model id or alias (needs the llm extra); default: the plugin that "
    "answers model_complete.",
)
@click.option(
    "--budget",
    type=count(MIN_BUDGET),
    default=DEFAULT_BUDGET,
    show_default=True,
    help="Tokens of transcript per chunk (the prompt's criteria come on top).",
)
@click.option(
    "--tool-output",
    type=count(0),
    default=DEFAULT_TOOL_OUTPUT_CHARS,
    show_default=True,
    help="Characters kept of each tool output; 0 keeps all.",
)
@click.option(
    "since_text",
    "--since",
    metavar="DATE",
    help="Leave out messages older than this (ISO 8601: 2026-05-01 or 2026-05-01T09:00Z).",
)
@click.option(
    "--all",
    "send_all",
    is_flag=True,
    help="Send every message again, not only what the import ledger has not seen.",
)
@click.option("--dry-run", is_flag=True, help="Show the chunks and prompts; call no model.")
@store_options
@JSON_OPTION
def run(
    paths: tuple[str, ...],
    transcripts: tuple[str, ...],
    format_: str | None,
    model_id: str | None,
    budget: int,
    tool_output: int,
    since_text: str | None,
    send_all: bool,
    dry_run: bool,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Import transcripts and run the historian on what is new, one chunk at a time.

    PATHS are transcript files, folders (every transcript file under them,
    Claude Code sub-agent files included) or globs, e.g.
    ~/.claude/projects/-home-dana-src-app. Each file's format is detected:
    openai (chat messages or Responses-API items in JSON), chatgpt-export
    (ChatGPT's conversations.json), claude-code (a Claude Code session
    .jsonl), llm-logs (the llm tool's logs.db). Records the importer does not
    keep are counted and reported, never dropped silently; see
    docs/transcripts.md.

    The store keeps an import ledger: a rerun sends only messages it has not
    sent (records appended since, new conversations); --all sends everything.
    A file named on its own that yields no message at all is an error (exit
    1); in a folder or glob it is reported, and the exit is 1 only when no
    file yields a message.

    Progress goes to standard error, one line per chunk. Facts filed under a
    category the store does not have are quarantined and counted. A chunk
    whose reply cannot be read is reported (its reply is kept as a
    quarantined memory) and the run goes on.

    Every piece of a reply that was not written is counted and shown
    (quarantined, or not stored at all). The command exits with status 1 when
    a chunk lost text: some of its reply was neither written nor kept.
    """
    arguments = [*paths, *transcripts]
    if not arguments:
        raise click.UsageError("name a transcript: PATHS or --transcript FILE")
    moment = _since(since_text)
    sources = expand(arguments)
    with open_store(db, project) as store:
        ledger = Ledger(store)
        files = plan(
            sources,
            None if send_all else ledger,
            format=format_,
            tool_output_chars=tool_output,
            since_moment=moment,
        )
        if dry_run:
            dry_run_report(store, files, budget, as_json)
            _check_empty(files)
            return
        todo = [f for f in files if f.messages]
        if todo and not store.category_names():
            raise MemsdkError(
                f"store {store.path} has no categories: install a pack first "
                "(memsdk init --pack NAME)"
            )
        model_name = _attach_model(store, model_id) if todo else ""
        outcome = new_outcome(model_name)
        for item in files:
            chunks = chunk_messages(item.messages, store.tokenizer, budget)
            if chunks:
                _run_chunks(store, chunks, outcome, item.source.path.name)
            if item.mark is not None and item.transcript is not None:
                ledger.record(
                    item.source.path, item.transcript.report.format, item.mark, len(item.messages)
                )
    run_report(files, outcome, as_json)
    _check_empty(files)
    if outcome["lost_chunks"]:
        where = ", ".join(f"{c['file']} chunk {c['chunk']}" for c in outcome["lost_chunks"])
        click.echo(
            f"historian: text lost in {len(outcome['lost_chunks'])} chunk(s) ({where}): "
            "the model answered outside the format; see 'not stored' above",
            err=True,
        )
        raise SystemExit(1)


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    moment = parse_time(text)
    if moment is None:
        raise click.BadParameter(f"not an ISO 8601 date: {text!r}", param_hint="--since")
    return moment


def _check_empty(files: list[FileImport]) -> None:
    """Exit 1 when a named file, or every file, yielded no message at all."""
    empty = [f for f in files if f.empty]
    for item in empty:
        click.echo(f"{item.source.path}: no messages imported", err=True)
    read = [f for f in files if f.transcript is not None]
    if any(f.source.named for f in empty) or (read and len(empty) == len(read)):
        raise SystemExit(1)


def _attach_model(store: Store, model_id: str | None) -> str:
    """Register the llm model asked for, or check that some plugin supplies one."""
    if model_id and model_id != NONE:
        adapter = attach(store.plugins, model_id)
        if isinstance(adapter, LlmModel):
            adapter.model  # noqa: B018 - resolve now: an unknown id fails before any work
        return model_id
    implementations = store.plugins.hook.model_complete.get_hookimpls()
    if not implementations:
        raise MemsdkError(NEEDS_A_MODEL)
    return implementations[-1].plugin_name  # the one pluggy calls first


def _run_chunks(store: Store, chunks: list[Chunk], outcome: dict[str, Any], name: str) -> None:
    names = set(store.category_names())
    outcome["chunks"] += len(chunks)
    for chunk in chunks:
        click.echo(
            f"{name}: chunk {chunk.number}/{len(chunks)} ({chunk.tokens} tokens, "
            f"{len(chunk.messages)} messages, {chunk.span}): ",
            nl=False,
            err=True,
        )
        try:
            report = run_historian(store, chunk.as_historian())
        except HistorianReplyError as error:
            click.echo(f"unreadable reply: {error}", err=True)
            outcome["failed_chunks"].append(
                {"file": name, "chunk": chunk.number, "error": str(error)}
            )
            continue
        except MemsdkError as error:
            click.echo("failed", err=True)
            done = chunk.number - 1
            raise MemsdkError(
                f"{error} (stopped at chunk {chunk.number} of {len(chunks)} of {name}; the "
                f"memories of the {done} chunk(s) before it are kept, and a rerun folds repeats)"
            ) from error
        unknown = sum(1 for q in report.quarantined if q["category"] and q["category"] not in names)
        outcome["written"] += report.written
        outcome["folded"] += report.folded
        outcome["quarantined"] += report.quarantined
        outcome["refused"] += report.refused
        outcome["unknown_category"] += unknown
        outcome["not_written"] += [
            {"file": name, "chunk": chunk.number, **piece} for piece in report.not_written()
        ]
        if report.lost_text:
            outcome["lost_chunks"].append({"file": name, "chunk": chunk.number})
        state = (
            "nothing new"
            if report.nothing_new
            else (
                f"{len(report.written)} new, {len(report.folded)} folded, "
                f"{len(report.quarantined)} quarantined"
                + (f", {len(report.ignored)} not stored" if report.ignored else "")
            )
        )
        click.echo(state, err=True)


# What the command prints: the run's report, and the dry run's chunks and prompts.


def new_outcome(model_name: str) -> dict[str, Any]:
    """The run's totals, filled in chunk by chunk."""
    return {
        "model": model_name,
        "chunks": 0,
        "written": [],
        "folded": [],
        "quarantined": [],
        "refused": [],
        "unknown_category": 0,
        "failed_chunks": [],
        "not_written": [],
        "lost_chunks": [],
    }


def file_lines(item: FileImport) -> list[str]:
    """One file's import report, and what of it is sent now."""
    if item.state == "unreadable":
        return [f"{item.source.path}: left out: {item.error}"]
    if item.transcript is None:
        return [f"{item.source.path}: unchanged since the last import; nothing to send"]
    lines = item.transcript.report.lines()
    if item.previous is not None:
        lines.append(
            f"{item.state} since the last import: {len(item.messages)} new message(s) to send"
        )
    return lines


def run_report(files: list[FileImport], outcome: dict[str, Any], as_json: bool) -> None:
    admitted = len(outcome["written"]) + len(outcome["folded"])
    if as_json:
        report = {
            "files": [item.to_dict() for item in files],
            "model": outcome["model"],
            "chunks": outcome["chunks"],
            "admitted": admitted,
            "written": outcome["written"],
            "folded": outcome["folded"],
            "quarantined": outcome["quarantined"],
            "refused": outcome["refused"],
            "unknown_category": outcome["unknown_category"],
            "failed_chunks": outcome["failed_chunks"],
            "not_written": outcome["not_written"],
            "lost_chunks": outcome["lost_chunks"],
        }
        if len(files) == 1:
            report["import"] = files[0].to_dict()["import"]
        echo_json(report)
        return
    for item in files:
        for line in file_lines(item):
            click.echo(line)
    if not outcome["chunks"]:
        click.echo("historian: nothing new to send")
    else:
        click.echo(f"historian: {outcome['chunks']} chunk(s) with model {outcome['model']}")
    click.echo(
        f"admitted: {admitted} ({len(outcome['written'])} new, "
        f"{len(outcome['folded'])} folded into existing memories)"
    )
    click.echo(
        f"quarantined: {len(outcome['quarantined'])} "
        f"({outcome['unknown_category']} with an unknown category)"
    )
    lost = [piece for piece in outcome["not_written"] if not piece["kept"]]
    click.echo(f"not stored: {len(lost)} piece(s) of reply text")
    for piece in outcome["not_written"]:
        where = f"{piece['file']} chunk {piece['chunk']}, reply line {piece['line']}"
        what = f"quarantined as memory {piece['id']}" if piece["kept"] else "not stored"
        click.echo(f"  {where}: {what} ({piece['reason']}): {_excerpt(piece['text'])}")
    if outcome["refused"]:
        ids = ", ".join(sorted({str(r["forgotten"]) for r in outcome["refused"]}))
        click.echo(
            f"refused: {len(outcome['refused'])} fact(s) whose text was forgotten "
            f"(memories {ids}; memsdk forget --undo ID allows them)"
        )
    if outcome["failed_chunks"]:
        numbers = ", ".join(str(f["chunk"]) for f in outcome["failed_chunks"])
        click.echo(f"unreadable replies: {len(outcome['failed_chunks'])} (chunks {numbers})")


def _excerpt(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def dry_run_report(store: Store, files: list[FileImport], budget: int, as_json: bool) -> None:
    """Each file's report, then each chunk and the exact prompt; no model, no ledger write."""
    if not store.category_names():
        click.echo(
            f"warning: store {store.path} has no categories; the prompts list none", err=True
        )
    shown: list[dict[str, Any]] = []
    for file in files:
        for chunk in chunk_messages(file.messages, store.tokenizer, budget):
            messages = chunk.as_historian()
            view = bounded_view(store, messages)
            prompt = store.plugins.hook.historian_prompt(store=store, messages=messages, view=view)
            shown.append(
                {
                    "file": str(file.source.path),
                    "tokens": chunk.tokens,
                    "messages": len(chunk.messages),
                    "span": chunk.span,
                    "conversation": chunk.conversation,
                    "system": prompt.system,
                    "prompt": prompt.messages,
                }
            )
    for number, entry in enumerate(shown, 1):
        entry["number"] = number
    if as_json:
        report: dict[str, Any] = {"files": [f.to_dict() for f in files], "chunks": shown}
        if len(files) == 1:
            report["import"] = files[0].to_dict()["import"]
        echo_json(report)
        return
    for item in files:
        for line in file_lines(item):
            click.echo(line)
    system = None
    for entry in shown:
        click.echo(
            f"\n=== chunk {entry['number']}/{len(shown)}: {entry['tokens']} tokens, "
            f"{entry['messages']} messages, {entry['span']} "
            f"({entry['conversation'] or 'conversation'})"
        )
        if entry["system"] != system:
            system = entry["system"]
            click.echo(
                "--- system prompt" + (" (the same for the chunks below)" if len(shown) > 1 else "")
            )
            click.echo(str(system).rstrip())
        for message in entry["prompt"]:
            click.echo(f"--- {message['role']}")
            click.echo(message["content"].rstrip())
    click.echo(f"\n(dry run: {len(shown)} chunk(s), no model called, no memory written)")


@historian.command()
@click.option(
    "model_id",
    "--model",
    envvar="MEMSDK_MODEL",
    show_envvar=True,
    help="claude-code, scripted:FILE, none, or an llm model id (what `claude-code install` chose).",
)
@store_options
@JSON_OPTION
def drain(model_id: str | None, db: str | None, project: str | None, as_json: bool) -> None:
    """Run the historian on the sessions hooks queued (SessionEnd, PreCompact), oldest first.

    One drain at a time per store (a second one exits at once); a crash, a
    kill or a model error leaves the rest queued, and the import ledger sends
    only what was not sent before. The hooks start it detached.
    """
    from pathlib import Path

    from plugin_sdk.host.claude.hook_drain import drain as run_drain
    from plugin_sdk.host.claude.hook_drain import drain_lock

    with open_store(db, project) as store, drain_lock(Path(store.path)) as held:
        if not held:
            click.echo("another drain is running on this store; nothing to do", err=True)
            return
        if model_id and model_id != NONE:
            attach(store.plugins, model_id)
        report = run_drain(store)
    if as_json:
        echo_json(report)
        if report["error"]:
            raise SystemExit(1)
        return
    for line in report["summaries"]:
        click.echo(line)
    click.echo(f"drained {report['done']} of {report['queued']} queued sessions")
    if report["error"]:
        raise MemsdkError(report["error"])
