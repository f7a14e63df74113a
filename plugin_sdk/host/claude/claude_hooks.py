"""Claude Code as a host: its settings written for it, and its hook events answered.

:func:`install` puts two things into a project folder, merged with what is
there: the MCP server entry ``memsdk`` in ``.mcp.json``, and four hooks in
``.claude/settings.json`` that run ``memsdk hook claude-code EVENT``.
:func:`uninstall` takes out exactly those entries (and a file or folder it
leaves empty), nothing a person wrote. Both return the files' text before and
after, so the command line can show the diff first.

:func:`answer` turns one hook event's JSON (what Claude Code writes to the
hook's standard input) into the JSON the hook prints:

- ``SessionStart``: the memory block (the injected table of contents) as
  ``hookSpecificOutput.additionalContext``;
- ``UserPromptSubmit``: the memories that answer the prompt, the same way;
- ``PreCompact`` and ``SessionEnd``: the historian on the session's
  transcript, only what the import ledger has not seen (``transcripts/
  ledger.py``), sub-agent files included. A session without a model is left
  for later: nothing is recorded, so the next run sends it.

Common fields of every event: ``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``; SessionStart adds ``source`` (startup, resume, clear,
compact), UserPromptSubmit ``prompt``, PreCompact ``trigger`` (manual, auto)
and ``custom_instructions``, SessionEnd ``reason``.
"""

from __future__ import annotations

import itertools
import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import HistorianReplyError, HookError

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store
    from plugin_sdk.transcripts.model import Message

EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd")
HOOK_COMMAND = "hook claude-code"
SERVER_NAME = "memsdk"
RECALL_BUDGET = 600
FRAME_TOKENS = 10  # the <memory-recall> lines
LINE_TOKENS = 8  # "- [id] " and ": " around a memory's text (more than they take)
# Seconds. Claude Code allows a SessionEnd hook at most 60 s (and ends it when the
# session exits); SessionEnd and PreCompact only queue work (hook_queue.py), so
# 10 s is ample, and the historian runs detached (`memsdk historian drain`).
HOOK_TIMEOUTS = {"SessionStart": 30, "UserPromptSubmit": 15, "PreCompact": 10, "SessionEnd": 10}
HOOK_SCRIPT = "memsdk-hook"
HOOK_CLIENT = "hook_client.py"


def hook_command(memsdk: str) -> list[str]:
    """How the hooks run: ``PYTHON -S .../hook_client.py`` for an installed memsdk, else ``memsdk-hook``.

    ``-S`` skips site-packages at start-up (a third of a fresh process's time
    with an editable install's finder): the client needs only the standard
    library, and loads ``site`` itself when it answers in-process.
    """
    if "/" not in memsdk:
        return [HOOK_SCRIPT]
    from plugin_sdk.host.claude import hook_client

    return [sys.executable, "-S", str(Path(hook_client.__file__).resolve())]


@attrs.frozen
class FileChange:
    """One settings file: its text before and after (``None``: no such file)."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def write(self) -> None:
        if not self.changed:
            return
        if self.after is None:
            self.path.unlink()
            if self.path.parent.name == ".claude" and not any(self.path.parent.iterdir()):
                self.path.parent.rmdir()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(self.after, encoding="utf-8")


def install(
    project_dir: Path,
    memsdk: str,
    options: list[str],
    hook_options: list[str] = (),  # type: ignore[assignment]
) -> list[FileChange]:
    """The changes that add memsdk to ``project_dir`` (memsdk's own entries brought up to date).

    ``memsdk``: how to run it (a path or a name on PATH; the hooks run the
    lean client, :func:`hook_command`); ``options``: what every command gets
    after its subcommand (``--project NAME``, ``--db``); ``hook_options``:
    what only the hooks get (``--model NAME``).
    """
    settings, servers = _files(project_dir)
    document = _read(settings)
    hooks = document.setdefault("hooks", {})
    for event in EVENTS:
        line = shlex.join([*hook_command(memsdk), "claude-code", event, *options, *hook_options])
        entry = {"type": "command", "command": line, "timeout": HOOK_TIMEOUTS[event]}
        groups = hooks.setdefault(event, [])
        mine = [hook for group in groups for hook in group.get("hooks", []) if _ours(hook)]
        if mine:
            mine[0].clear()
            mine[0].update(entry)
        else:
            groups.append({"hooks": [entry]})
    config = _read(servers)
    entry = {"type": "stdio", "command": memsdk, "args": ["mcp", *options]}
    config.setdefault("mcpServers", {}).setdefault(SERVER_NAME, entry)
    return [_change(settings, document), _change(servers, config)]


def uninstall(project_dir: Path) -> list[FileChange]:
    """The changes that take memsdk's entries out of ``project_dir`` again."""
    settings, servers = _files(project_dir)
    document = _read(settings)
    hooks = document.get("hooks", {})
    for event in list(hooks):
        groups = []
        for group in hooks[event]:
            kept = [hook for hook in group.get("hooks", []) if not _ours(hook)]
            if kept or not group.get("hooks"):
                groups.append({**group, "hooks": kept})
        if groups:
            hooks[event] = groups
        else:
            del hooks[event]
    if "hooks" in document and not hooks:
        del document["hooks"]
    config = _read(servers)
    mcp_servers = config.get("mcpServers", {})
    if _is_ours(mcp_servers.get(SERVER_NAME)):
        del mcp_servers[SERVER_NAME]
        if not mcp_servers:
            del config["mcpServers"]
    return [_change(settings, document), _change(servers, config)]


def read_event(text: str) -> dict[str, Any]:
    """One hook event from its JSON text; :class:`HookError` if it is not one."""
    try:
        event = json.loads(text)
    except json.JSONDecodeError as error:
        raise HookError(f"the hook input is not JSON: {error.msg}") from error
    if not isinstance(event, dict):
        raise HookError("the hook input is not a JSON object")
    return event


def answer(
    event_name: str,
    event: dict[str, Any],
    store: Store | None,
    *,
    budget: int,
    historian: Callable[[Store, Path], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The JSON a hook prints for ``event`` (``store=None``: no store yet, nothing to add)."""
    if event_name not in EVENTS:
        raise HookError(f"unknown event {event_name!r}; memsdk answers {', '.join(EVENTS)}")
    named = event.get("hook_event_name")
    if named is not None and named != event_name:
        raise HookError(f"the input is a {named} event, not {event_name}")
    if store is None:
        return {}
    if event_name == "SessionStart":
        block = _memory_block(store, budget, event.get("session_id"))
        return _context(event_name, with_session_lines(store, block))
    if event_name == "UserPromptSubmit":
        prompt = event.get("prompt")
        if not isinstance(prompt, str):
            raise HookError("a UserPromptSubmit event needs its prompt")
        return _context(event_name, recall_text(store, prompt, RECALL_BUDGET))
    transcript = event.get("transcript_path")
    if not transcript or historian is None:
        return {"suppressOutput": True}
    result = historian(store, Path(transcript).expanduser())
    return (
        {"suppressOutput": True, "systemMessage": result["summary"]}
        if result.get("summary")
        else {"suppressOutput": True}
    )


def with_session_lines(store: Store, block: str) -> str:
    """The SessionStart block, ending with the packs' ``[prompts] session`` lines."""
    from plugin_sdk.model.prompts import session_lines

    lines = session_lines(store)
    if not lines:
        return block
    return (block.rstrip("\n") + "\n" if block else "") + "\n".join(lines)


def recall_text(store: Store, prompt: str, budget: int) -> str:
    """The memories that answer ``prompt``, as a block of at most about ``budget`` tokens.

    The prompt goes to the plain-language search as typed (its parser and
    ranking, docs/search.md), best matches first. The block's size is
    estimated from the memories' cached token counts, so a hook that runs on
    every prompt loads no tokenizer; :func:`plugin_sdk.stages.recall.recall`
    (``memsdk recall``) is the exact-budget block with headers, neighbours and
    Compiled Truth lines, at the cost of loading the tokenizer.
    """
    from plugin_sdk.model.boundary import entry

    if not prompt.strip():
        return ""
    hits = store.memories.search(prompt[:2000], limit=8)
    lines = ["<memory-recall>"]
    used = FRAME_TOKENS
    shown = []
    for hit in hits:
        memory = hit.memory
        line = entry(memory.id, f"{memory.category}: {memory.content}")
        cached = memory.token_count if memory.tokenizer == store.tokenizer.name else None
        cost = (cached if cached is not None else store.tokenizer.count(memory.content)) + (
            LINE_TOKENS + len(memory.category) // 2
        )
        if used + cost > budget:
            break
        lines.append(line)
        shown.append(memory.id)
        used += cost
    if not shown:
        return ""
    store.memories.record_retrievals(shown)
    return "\n".join([*lines, "</memory-recall>"])


def run_historian_on(store: Store, transcript: Path) -> dict[str, Any]:
    """The historian on what is new in a session's transcript (and its sub-agents' files).

    Without a model (no plugin answers ``model_complete``) nothing is sent
    and nothing is recorded in the ledger: the next run sends it. The ledger
    advances after every chunk (:func:`~plugin_sdk.transcripts.ledger.partial_mark`),
    so a drain stopped mid-file (a model error, a kill) sends only the rest
    next time. (A kill in the instant between the historian's commit and the
    ledger's sends that one chunk again; the historian's deduplication folds it.)
    """
    from plugin_sdk.stages.historian import run_historian
    from plugin_sdk.transcripts.batch import expand, plan
    from plugin_sdk.transcripts.chunker import chunk_messages, completed
    from plugin_sdk.transcripts.ledger import Ledger, partial_mark

    if not transcript.exists():
        return {"summary": "", "sent": 0}
    ledger = Ledger(store)
    files = plan(expand([str(transcript)]), ledger)
    todo = [f for f in files if f.messages]
    if not todo:
        return {"summary": "", "sent": 0}
    if not store.plugins.hook.model_complete.get_hookimpls():
        return {"summary": "memsdk: no model for the historian (set MEMSDK_MODEL)", "sent": 0}
    written = sent = unreadable = 0
    for item in todo:
        chunks = chunk_messages(item.messages, store.tokenizer)
        done: list[Message] = []
        previous = item.previous.mark if item.previous else None
        for number, (chunk, whole) in enumerate(
            zip(chunks, completed(chunks, item.messages), strict=True), 1
        ):
            try:
                report = run_historian(store, chunk.as_historian(), source="claude-code")
                written += len(report.written)
            except HistorianReplyError:  # the reply is kept quarantined; go on
                unreadable += 1
            done += whole
            if item.mark is not None and item.transcript is not None:  # the ledger per chunk
                mark = item.mark if number == len(chunks) else partial_mark(previous, done)
                ledger.record(item.source.path, item.transcript.report.format, mark, len(whole))
        sent += len(item.messages)
    summary = f"memsdk: {written} new memories from {sent} messages"
    if unreadable:
        summary += f" ({unreadable} unreadable replies kept as quarantined memories)"
    return {"summary": summary, "sent": sent}


def _memory_block(store: Store, budget: int, session: Any) -> str:
    from plugin_sdk.stages.inject import inject

    result = inject(store, budget=budget, session=session if isinstance(session, str) else None)
    return result.text


def _context(event_name: str, text: str) -> dict[str, Any]:
    if not text:
        return {}
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}


def _files(project_dir: Path) -> tuple[Path, Path]:
    return project_dir / ".claude" / "settings.json", project_dir / ".mcp.json"


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise HookError(f"{path} is not JSON ({error.msg}); fix it first") from error
    if not isinstance(document, dict):
        raise HookError(f"{path} does not hold a JSON object")
    return document


def _change(path: Path, document: dict[str, Any]) -> FileChange:
    before = path.read_text(encoding="utf-8") if path.exists() else None
    after = json.dumps(document, indent=2, ensure_ascii=False) + "\n" if document else None
    if before is not None and after is not None and json.loads(before) == document:
        after = before  # same content: leave the person's formatting alone
    return FileChange(path, before, after)


def _ours(hook: dict[str, Any]) -> bool:
    try:
        words = shlex.split(str(hook.get("command", ""))) if isinstance(hook, dict) else []
    except ValueError:  # a person's command with unbalanced quotes: not ours
        return False
    for first, second in itertools.pairwise(words):
        if second == "claude-code" and (
            first == "hook" or Path(first).name in (HOOK_SCRIPT, HOOK_CLIENT)
        ):
            return True
    return False


def _is_ours(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and "memsdk" in Path(str(entry.get("command", ""))).name
        and list(entry.get("args", []))[:1] == ["mcp"]
    )
