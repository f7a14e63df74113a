"""``memsdk historian run``: a transcript file in, memories out, chunk by chunk."""

from __future__ import annotations

from typing import Any

import click

from plugin_sdk.cli.common import JSON_OPTION, echo_json, open_store, store_options
from plugin_sdk.errors import HistorianReplyError, MemsdkError
from plugin_sdk.model.llm import INSTALL_HINT, LlmModel
from plugin_sdk.stages.historian import bounded_view, run_historian
from plugin_sdk.store.connection import Store
from plugin_sdk.transcripts import (
    DEFAULT_BUDGET,
    DEFAULT_TOOL_OUTPUT_CHARS,
    FORMATS,
    MIN_BUDGET,
    Chunk,
    Transcript,
    chunk_messages,
    load_transcript,
)

NEEDS_A_MODEL = (
    "the historian needs a model: pass --model ID (any model the llm library knows; "
    f"{INSTALL_HINT}), set MEMSDK_MODEL, or install a plugin implementing "
    "model_complete. --dry-run shows the chunks and prompts without a model"
)


@click.group()
def historian() -> None:
    """The historian: transcripts in, memories out."""


@historian.command()
@click.option(
    "transcript_path",
    "--transcript",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="The transcript file.",
)
@click.option(
    "format_",
    "--format",
    type=click.Choice(list(FORMATS)),
    help="Its format (default: detected from the content).",
)
@click.option(
    "model_id",
    "--model",
    envvar="MEMSDK_MODEL",
    help="An llm model id or alias (needs memsdk[llm]); default: the plugin that answers "
    "model_complete.",
)
@click.option(
    "--budget",
    type=click.IntRange(MIN_BUDGET),
    default=DEFAULT_BUDGET,
    show_default=True,
    help="Tokens of transcript per chunk (the prompt's criteria come on top).",
)
@click.option(
    "--tool-output",
    type=click.IntRange(0),
    default=DEFAULT_TOOL_OUTPUT_CHARS,
    show_default=True,
    help="Characters kept of each tool output; 0 keeps all.",
)
@click.option("--dry-run", is_flag=True, help="Show the chunks and prompts; call no model.")
@store_options
@JSON_OPTION
def run(
    transcript_path: str,
    format_: str | None,
    model_id: str | None,
    budget: int,
    tool_output: int,
    dry_run: bool,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Import a transcript and run the historian on it, one chunk at a time.

    Formats: openai (a JSON list of chat messages, or {"messages": [...]}),
    claude-code (a Claude Code session .jsonl), llm-logs (the llm tool's
    logs.db). Records and parts the importer does not keep are counted and
    reported, never dropped silently; see docs/transcripts.md.

    Progress goes to standard error, one line per chunk. Facts filed under a
    category the store does not have are quarantined and counted. A chunk
    whose reply cannot be read is reported (its reply is kept as a
    quarantined memory) and the run goes on.
    """
    transcript = load_transcript(transcript_path, format_, tool_output_chars=tool_output)
    with open_store(db, project) as store:
        chunks = chunk_messages(transcript.messages, store.tokenizer, budget)
        if dry_run:
            _dry_run(store, transcript, chunks, as_json)
            return
        if not store.category_names():
            raise MemsdkError(
                f"store {store.path} has no categories: install a pack first "
                "(memsdk init --pack NAME)"
            )
        model_name = _attach_model(store, model_id)
        outcome = _run_chunks(store, chunks, model_name)
    _report(transcript, outcome, as_json)


def _attach_model(store: Store, model_id: str | None) -> str:
    """Register the llm model asked for, or check that some plugin supplies one."""
    if model_id:
        adapter = LlmModel(model_id)
        adapter.model  # noqa: B018 - resolve now: an unknown id fails before any work
        store.plugins.register(adapter, name="llm-model")
        return model_id
    implementations = store.plugins.hook.model_complete.get_hookimpls()
    if not implementations:
        raise MemsdkError(NEEDS_A_MODEL)
    return implementations[-1].plugin_name  # the one pluggy calls first


def _run_chunks(store: Store, chunks: list[Chunk], model_name: str) -> dict[str, Any]:
    names = set(store.category_names())
    outcome: dict[str, Any] = {
        "model": model_name,
        "chunks": len(chunks),
        "written": [],
        "folded": [],
        "quarantined": [],
        "unknown_category": 0,
        "failed_chunks": [],
    }
    for chunk in chunks:
        click.echo(
            f"chunk {chunk.number}/{len(chunks)} ({chunk.tokens} tokens, "
            f"{len(chunk.messages)} messages, {chunk.span}): ",
            nl=False,
            err=True,
        )
        try:
            report = run_historian(store, chunk.as_historian())
        except HistorianReplyError as error:
            click.echo(f"unreadable reply: {error}", err=True)
            outcome["failed_chunks"].append({"chunk": chunk.number, "error": str(error)})
            continue
        except MemsdkError as error:
            click.echo("failed", err=True)
            done = chunk.number - 1
            raise MemsdkError(
                f"{error} (stopped at chunk {chunk.number} of {len(chunks)}; the memories of "
                f"the {done} chunk(s) before it are kept, and a rerun folds repeats)"
            ) from error
        unknown = sum(1 for q in report.quarantined if q["category"] and q["category"] not in names)
        outcome["written"] += report.written
        outcome["folded"] += report.folded
        outcome["quarantined"] += report.quarantined
        outcome["unknown_category"] += unknown
        state = (
            "nothing new"
            if report.nothing_new
            else (
                f"{len(report.written)} new, {len(report.folded)} folded, "
                f"{len(report.quarantined)} quarantined"
            )
        )
        click.echo(state, err=True)
    return outcome


def _report(transcript: Transcript, outcome: dict[str, Any], as_json: bool) -> None:
    admitted = len(outcome["written"]) + len(outcome["folded"])
    if as_json:
        echo_json(
            {
                "import": transcript.report.to_dict(),
                "model": outcome["model"],
                "chunks": outcome["chunks"],
                "admitted": admitted,
                "written": outcome["written"],
                "folded": outcome["folded"],
                "quarantined": outcome["quarantined"],
                "unknown_category": outcome["unknown_category"],
                "failed_chunks": outcome["failed_chunks"],
            }
        )
        return
    for line in transcript.report.lines():
        click.echo(line)
    click.echo(f"historian: {outcome['chunks']} chunk(s) with model {outcome['model']}")
    click.echo(
        f"admitted: {admitted} ({len(outcome['written'])} new, "
        f"{len(outcome['folded'])} folded into existing memories)"
    )
    click.echo(
        f"quarantined: {len(outcome['quarantined'])} "
        f"({outcome['unknown_category']} with an unknown category)"
    )
    if outcome["failed_chunks"]:
        numbers = ", ".join(str(f["chunk"]) for f in outcome["failed_chunks"])
        click.echo(f"unreadable replies: {len(outcome['failed_chunks'])} (chunks {numbers})")


def _dry_run(store: Store, transcript: Transcript, chunks: list[Chunk], as_json: bool) -> None:
    if not store.category_names():
        click.echo(
            f"warning: store {store.path} has no categories; the prompts list none", err=True
        )
    shown: list[dict[str, Any]] = []
    for chunk in chunks:
        messages = chunk.as_historian()
        view = bounded_view(store, messages)
        prompt = store.plugins.hook.historian_prompt(store=store, messages=messages, view=view)
        shown.append(
            {
                "number": chunk.number,
                "tokens": chunk.tokens,
                "messages": len(chunk.messages),
                "span": chunk.span,
                "conversation": chunk.conversation,
                "system": prompt.system,
                "prompt": prompt.messages,
            }
        )
    if as_json:
        echo_json({"import": transcript.report.to_dict(), "chunks": shown})
        return
    for line in transcript.report.lines():
        click.echo(line)
    system = None
    for item in shown:
        click.echo(
            f"\n=== chunk {item['number']}/{len(shown)}: {item['tokens']} tokens, "
            f"{item['messages']} messages, {item['span']} ({item['conversation'] or 'conversation'})"
        )
        if item["system"] != system:
            system = item["system"]
            click.echo(
                "--- system prompt" + (" (the same for the chunks below)" if len(shown) > 1 else "")
            )
            click.echo(str(system).rstrip())
        for message in item["prompt"]:
            click.echo(f"--- {message['role']}")
            click.echo(message["content"].rstrip())
    click.echo(f"\n(dry run: {len(shown)} chunk(s), no model called, no memory written)")
