"""The hook command Claude Code runs: ``memsdk-hook claude-code EVENT [--db D] [--project P] [--model M]``.

A lean entry point (no click): it runs before every prompt, so it imports
only what the event needs. SessionEnd and PreCompact never open the store
through sqlite-utils: they queue the session's files with plain ``sqlite3``
(:mod:`plugin_sdk.host.claude.hook_queue`), start the drain detached, and return.

Every answer is one JSON object on standard output. A payload that is not
what Claude Code sends (wrong types, a folder or an unreadable path for the
transcript) is one line on standard error and exit 1, never a traceback. A
hook that cannot do its job (no store, no pack, no model, an error) says so in
``systemMessage`` once per session, and records it in ``hook_runs`` for
``memsdk claude-code status``. A process started by the ``claude-code`` model
(environment variable :data:`CHILD_ENV`) answers ``{}`` at once.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

from plugin_sdk.errors import PayloadError

CHILD_ENV = "MEMSDK_HOOK_CHILD"  # plugin_sdk.model.claude_headless sets it in its child
EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd")
QUEUED = ("PreCompact", "SessionEnd")


def check_payload(event_name: str, text: str) -> dict[str, Any]:
    """The event's JSON object, its fields' types checked; :class:`PayloadError` if not."""
    try:
        event = json.loads(text)
    except json.JSONDecodeError as error:
        raise PayloadError(f"the hook input is not JSON: {error.msg}") from error
    if not isinstance(event, dict):
        raise PayloadError("the hook input is not a JSON object")
    named = event.get("hook_event_name")
    if named is not None and named != event_name:
        raise PayloadError(f"the input is a {named} event, not {event_name}")
    for field in ("session_id", "transcript_path", "cwd", "prompt", "hook_event_name"):
        value = event.get(field)
        if value is not None and not isinstance(value, str):
            raise PayloadError(
                f"{field} must be a string, not {type(value).__name__}: {value!r}"[:200]
            )
    if event_name == "UserPromptSubmit" and event.get("prompt") is None:
        raise PayloadError("a UserPromptSubmit event needs its prompt")
    return event


def transcript_of(event: dict[str, Any]) -> Path | None:
    """The event's transcript file, checked (a folder or an unknown user is a PayloadError)."""
    text = event.get("transcript_path")
    if not text:
        return None
    try:
        path = Path(text).expanduser()
    except RuntimeError as error:  # ~nosuchuser/...
        raise PayloadError(f"transcript_path {text!r}: {error}") from error
    if path.is_dir():
        raise PayloadError(f"transcript_path {text!r} is a folder, not a transcript file")
    if not path.is_file():
        raise PayloadError(f"transcript_path {text!r}: no such file")
    return path


def run(
    event_name: str,
    text: str,
    *,
    db: str | None,
    project: str | None,
    model: str | None,
    budget: int = 1500,
    plugins: Any = None,
) -> dict[str, Any]:
    """The hook's answer; :class:`PayloadError` for a malformed payload."""
    if os.environ.get(CHILD_ENV):
        return {}
    if event_name not in EVENTS:
        raise PayloadError(f"unknown event {event_name!r}; memsdk answers {', '.join(EVENTS)}")
    event = check_payload(event_name, text)
    transcript = transcript_of(event) if event_name in QUEUED else None
    path = _db_path(db)
    if not path.exists():
        if event_name != "SessionStart":
            return {}
        return {"systemMessage": f"memsdk: no store at {path}; run `memsdk claude-code install`"}
    if project is None:
        project = os.environ.get("MEMSDK_PROJECT") or _project(event.get("cwd"))
    session = event.get("session_id") or ""
    if event_name in QUEUED:
        return _queue(path, project, session, event_name, transcript, model)
    return _read(path, project, session, event_name, event, budget, plugins, model)


def _queue(
    path: Path,
    project: str,
    session: str,
    event_name: str,
    transcript: Path | None,
    model: str | None,
) -> dict[str, Any]:
    from plugin_sdk.host.claude.hook_queue import enqueue, first_notice, record_run, start_drain

    conn = _connect(path)
    try:
        if transcript is not None:
            enqueue(conn, project, session, event_name, transcript)
        notice = None
        if model in (None, "none"):
            notice = "memsdk: no model chosen, sessions wait in the queue (memsdk claude-code install --model NAME)"
        record_run(conn, project, event_name, notice)
        answer: dict[str, Any] = {"suppressOutput": True}
        if notice and first_notice(conn, session, project, notice):
            answer["systemMessage"] = notice
    finally:
        conn.close()
    if transcript is not None and model not in (None, "none"):
        start_drain(path, project, model)
    return answer


def _read(
    path: Path,
    project: str,
    session: str,
    event_name: str,
    event: dict[str, Any],
    budget: int,
    plugins: Any,
    model: str | None,
) -> dict[str, Any]:
    from plugin_sdk.errors import MemsdkError
    from plugin_sdk.host.claude.claude_hooks import answer as hook_answer
    from plugin_sdk.host.claude.hook_queue import first_notice, pending, record_run, start_drain
    from plugin_sdk.store.connection import Store

    with Store(path, project=project, plugins=plugins) as store:
        conn = store.db.conn
        notice = None
        try:
            if not store.category_names():
                notice = f"memsdk: the store {path} has no categories; install a pack (memsdk pack install dev)"
                result: dict[str, Any] = {}
            else:
                result = hook_answer(event_name, event, store, budget=budget)
        except MemsdkError as error:
            notice, result = f"memsdk {event_name} hook: {error}", {}
        record_run(conn, project, event_name, notice)
        if notice and first_notice(conn, session, project, notice):
            result = {**result, "systemMessage": notice}
        later = (
            event_name == "SessionStart" and model not in (None, "none") and pending(conn, project)
        )
    if later:
        start_drain(path, project, model)
    return result


def _db_path(db: str | None) -> Path:
    if db or os.environ.get("MEMSDK_DB"):
        return Path(db or os.environ["MEMSDK_DB"]).expanduser()
    from plugin_sdk.store.paths import default_db_path

    return default_db_path()


def _project(cwd: str | None) -> str:
    from plugin_sdk.store.project import project_for

    return project_for(cwd or None)


def _connect(path: Path) -> sqlite3.Connection:
    """A plain connection to the store; a store without the queue is migrated first."""
    from plugin_sdk.store.tables.queues.hooks import has_queue

    conn = sqlite3.connect(path, timeout=5)
    if not has_queue(conn):
        conn.close()
        from plugin_sdk.store.connection import Store

        Store(path, project="").close()
        conn = sqlite3.connect(path, timeout=5)
    return conn


def main(
    argv: list[str] | None = None,
    *,
    stdin: str | None = None,
    serve: bool = False,
    plugins: Any = None,
) -> None:
    """The hook in-process (what ``memsdk-hook`` runs when no hook server answers).

    ``stdin``: the event's text when the caller has read it already;
    ``serve``: start the store's hook server afterwards for the next read hook
    (:mod:`plugin_sdk.host.claude.hook_server`), when the store exists and none runs;
    ``plugins``: the plugin manager (default: the store makes one).
    """
    parser = argparse.ArgumentParser(prog="memsdk-hook", description=__doc__.split("\n\n")[0])
    parser.add_argument("host", choices=["claude-code"])
    parser.add_argument("event", choices=EVENTS)
    parser.add_argument("--db")
    parser.add_argument("--project")
    parser.add_argument("--model", default=os.environ.get("MEMSDK_MODEL"))
    parser.add_argument("--budget", type=int, default=1500)
    args = parser.parse_args(argv)
    try:
        result = run(
            args.event,
            sys.stdin.read() if stdin is None else stdin,
            db=args.db,
            project=args.project,
            model=args.model,
            budget=args.budget,
            plugins=plugins,
        )
    except PayloadError as error:
        print(f"memsdk hook claude-code {args.event}: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    except Exception as error:  # one line, never a traceback, on a host's hook path
        print(
            f"memsdk hook claude-code {args.event}: {type(error).__name__}: {error}",
            file=sys.stderr,
        )
        raise SystemExit(1) from None
    print(json.dumps(result, ensure_ascii=False))
    if serve and args.event not in QUEUED and not os.environ.get(CHILD_ENV):
        sys.stdout.flush()
        path = _db_path(args.db)
        if path.exists():
            from plugin_sdk.host.claude.hook_server import start_server

            start_server(path)


if __name__ == "__main__":
    main()
