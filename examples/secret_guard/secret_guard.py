"""secret_guard: keep credentials out of a memsdk store.

- ``historian_admit`` quarantines a fact that looks like a credential (an
  ``sk-...`` API key, an AWS access key id, a ``password=...`` assignment, a
  private key) and returns ``None`` for every other fact, so the built-in
  decides those by category.
- The dreamer task ``secret-sweep`` archives active memories that look like
  credentials: ones written before the guard was installed, or written
  directly rather than through the historian.
- ``memsdk secret-scan`` lists the active memories that look like credentials,
  without printing them, and exits 1 when it finds any.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import click

from plugin_sdk.plugin import Admission, DreamerTask, Fact, TaskContext, hookimpl

PATTERNS = (
    ("an API key (sk-...)", re.compile(r"\bsk-[A-Za-z0-9_-]{16,}")),
    ("an AWS access key id", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("a password", re.compile(r"\b(?:password|passwd|pwd)\s*[=:]\s*\S+", re.IGNORECASE)),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
)


def looks_like_secret(text: str) -> str | None:
    """What kind of credential ``text`` seems to hold, or ``None``."""
    for kind, pattern in PATTERNS:
        if pattern.search(text):
            return kind
    return None


@hookimpl
def historian_admit(fact: Fact) -> Admission | None:
    kind = looks_like_secret(fact.text)
    if kind is None:
        return None  # not ours to decide: the built-in admits by category
    return Admission("quarantine", f"secret_guard: looks like {kind}")


def sweep(context: TaskContext) -> int:
    """One batch of ``secret-sweep``: archive what looks like a credential."""
    batch = context.store.memories.list(
        project=context.project, after_id=context.cursor or 0, limit=context.batch_size
    )
    if not batch:
        return 0
    with context.batch():
        for memory in batch:
            if looks_like_secret(memory.content):
                context.store.memories.archive(memory.id)
        context.save(batch[-1].id, len(batch))
    return len(batch)


@hookimpl
def register_dreamer_tasks(register: Callable[[DreamerTask], None]) -> None:
    register(
        DreamerTask(
            name="secret-sweep",
            description="Archive active memories that look like credentials.",
            run=sweep,
            schedule="daily",
            batch_size=200,
        )
    )


@hookimpl
def register_commands(cli: click.Group) -> None:
    # Imported here: loading the plugin for a library host must not pull in the CLI.
    from plugin_sdk.cli.common import open_store, store_options

    @cli.command(name="secret-scan")
    @store_options
    def secret_scan(db: str | None, project: str | None) -> None:
        """List active memories that look like credentials; exit 1 if there are any."""
        with open_store(db, project) as store:
            found = [
                (memory, kind)
                for memory in store.memories.list(limit=None)
                if (kind := looks_like_secret(memory.content))
            ]
        for memory, kind in found:
            click.echo(f"memory {memory.id} ({memory.category}) looks like {kind}")
        if found:
            raise SystemExit(1)
        click.echo("no active memory looks like a credential")
