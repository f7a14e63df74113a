"""What ``memsdk historian run`` prints: the run's report, and the dry run's chunks and prompts."""

from __future__ import annotations

from typing import Any

import click

from plugin_sdk.cli.common import echo_json
from plugin_sdk.stages.historian import bounded_view
from plugin_sdk.store.connection import Store
from plugin_sdk.transcripts import chunk_messages
from plugin_sdk.transcripts.batch import FileImport


def new_outcome(model_name: str) -> dict[str, Any]:
    """The run's totals, filled in chunk by chunk."""
    return {
        "model": model_name,
        "chunks": 0,
        "written": [],
        "folded": [],
        "quarantined": [],
        "unknown_category": 0,
        "failed_chunks": [],
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
            "unknown_category": outcome["unknown_category"],
            "failed_chunks": outcome["failed_chunks"],
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
    if outcome["failed_chunks"]:
        numbers = ", ".join(str(f["chunk"]) for f in outcome["failed_chunks"])
        click.echo(f"unreadable replies: {len(outcome['failed_chunks'])} (chunks {numbers})")


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
