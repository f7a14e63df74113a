"""What ``memsdk claude-code install`` does beyond the settings files, and ``status``.

:func:`prepare_store` creates the store and installs the pack; :func:`self_check`
starts the MCP server once and runs each hook once, as Claude Code will;
:func:`status_report` reads a project's settings and the store's ``hook_runs``.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

from plugin_sdk.errors import MemsdkError, PackConflict
from plugin_sdk.plugin.manager import PluginManager

CHECK_TIMEOUT = 60
MCP_PROBE = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"memsdk-install-check","version":"1"}}}\n'
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
)


def _upgrade(store: Any, pack: Any, installed: str) -> str:
    """Upgrade the installed pack when that needs no choice (same categories); what happened."""
    try:
        store.packs.upgrade(pack)
    except MemsdkError as error:  # older, or categories added/removed: the user decides
        return f"pack {pack.name} {installed} installed, {pack.version} not applied: {error}"
    return f"pack {pack.name} upgraded from {installed} to {pack.version}"


def prepare_store(
    path: Path, project: str, pack_name: str, model: str, plugins: PluginManager
) -> list[str]:
    """Create the store when missing and install the pack; what was done, as lines."""
    from plugin_sdk.model.choose import model_plugin
    from plugin_sdk.packs.sources import resolve_pack
    from plugin_sdk.store.connection import Store

    model_plugin(model)  # a scripted file that cannot be read fails here, before any write
    existed = path.exists()
    pack = resolve_pack(pack_name, plugins)  # an unknown name is refused, the known ones named
    path.parent.mkdir(parents=True, exist_ok=True)
    with Store(path, project=project, plugins=plugins) as store:
        same = [p for p in store.packs.installed() if p.name == pack.name]
        if same and same[0].version != pack.version:
            state = _upgrade(store, pack, same[0].version)
        elif same:
            state = f"pack {pack.name} {same[0].version} already installed"
        else:
            try:
                store.packs.install(pack)
            except PackConflict as error:
                raise MemsdkError(
                    f"cannot install pack {pack.name} into {path}: {error}"
                ) from error
            state = f"pack {pack.name} {pack.version} installed"
        categories = len(store.category_names())
    return [
        f"Store: {path} ({'existing' if existed else 'created'}), project {project}",
        f"Pack: {state} ({categories} categories)",
        f"Model: {model}",
    ]


def _hook_payload(event: str, project_dir: Path) -> str:
    payload: dict[str, Any] = {
        "session_id": "memsdk-install-check",
        "cwd": str(project_dir.resolve()),
        "hook_event_name": event,
    }
    if event == "UserPromptSubmit":
        payload["prompt"] = "memsdk install check"
    return json.dumps(payload)


def self_check(
    memsdk: str, options: list[str], hook_options: list[str], project_dir: Path
) -> list[tuple[bool, str]]:
    """Start the MCP server once and run each hook once: (ok, what) per check."""
    from plugin_sdk.host.claude.claude_hooks import EVENTS, hook_command

    results: list[tuple[bool, str]] = []
    try:
        tools, why = _probe_mcp([memsdk, "mcp", *options])
        results.append(
            (bool(tools), f"MCP server starts: {f'{len(tools)} tools' if tools else why}")
        )
    except (OSError, ValueError, KeyError) as error:
        results.append((False, f"MCP server starts: {type(error).__name__}: {error}"))
    for event in EVENTS:
        try:
            done = subprocess.run(
                [*hook_command(memsdk), "claude-code", event, *options, *hook_options],
                input=_hook_payload(event, project_dir),
                capture_output=True,
                text=True,
                timeout=CHECK_TIMEOUT,
            )
            answer = json.loads(done.stdout) if done.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired, ValueError) as error:
            results.append((False, f"hook {event}: {type(error).__name__}: {error}"))
            continue
        if answer is None:
            results.append((False, f"hook {event}: exit {done.returncode}: {done.stderr.strip()}"))
            continue
        context = answer.get("hookSpecificOutput", {}).get("additionalContext", "")
        said = f"; says: {answer['systemMessage']}" if answer.get("systemMessage") else ""
        what = f"{len(context)} characters of context" if context else "answers"
        results.append((True, f"hook {event}: {what}{said}"))
    return results


def _probe_mcp(command: list[str]) -> tuple[list[str], str]:
    """Start the server, ask for its tools, read the replies, then close its input."""
    import threading

    server = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    timer = threading.Timer(CHECK_TIMEOUT, server.kill)
    timer.start()
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(MCP_PROBE)
        server.stdin.flush()
        for line in server.stdout:
            reply = json.loads(line)
            if reply.get("id") == 2:
                return [tool["name"] for tool in reply["result"]["tools"]], ""
        error = server.stderr.read().strip().splitlines() if server.stderr else []
        return [], (error or ["no reply"])[-1]
    finally:
        timer.cancel()
        if server.stdin:
            server.stdin.close()
        server.wait(timeout=CHECK_TIMEOUT)
        for stream in (server.stdout, server.stderr):
            if stream:
                stream.close()


def status_report(project_dir: Path) -> dict[str, Any]:
    """What a project's settings install, and the store's record of each hook's runs."""
    from plugin_sdk.host.claude.claude_hooks import EVENTS, _ours
    from plugin_sdk.store import driver
    from plugin_sdk.store.tables.queues import hooks

    settings = project_dir / ".claude" / "settings.json"
    document = json.loads(settings.read_text()) if settings.exists() else {}
    commands = {
        event: hook["command"]
        for event in EVENTS
        for group in document.get("hooks", {}).get(event, [])
        for hook in group.get("hooks", [])
        if _ours(hook)
    }
    lines = [f"Project folder: {project_dir.resolve()}"]
    report: dict[str, Any] = {"installed": sorted(commands), "hooks": {}, "lines": lines}
    if not commands:
        lines.append("memsdk is not installed here (memsdk claude-code install)")
        return report
    words = shlex.split(next(iter(commands.values())))
    flags = {w: words[i + 1] for i, w in enumerate(words[:-1]) if w.startswith("--")}
    report.update(db=flags.get("--db"), project=flags.get("--project"), model=flags.get("--model"))
    servers = project_dir / ".mcp.json"
    has_server = servers.exists() and "memsdk" in json.loads(servers.read_text()).get(
        "mcpServers", {}
    )
    lines += [
        f"Hooks installed: {', '.join(sorted(commands))}",
        f"MCP server entry: {'yes' if has_server else 'no'}",
        f"Store: {report['db']}",
        f"Project: {report['project']}",
        f"Model: {report['model'] or '(none named)'}",
    ]
    db = Path(report["db"] or "")
    if not db.is_file():
        lines.append("The store does not exist yet.")
        return report
    conn = driver.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = hooks.runs(conn, report["project"])
        queued = hooks.queued_count(conn, report["project"])
    except driver.OperationalError:
        rows, queued = [], 0
    finally:
        conn.close()
    for event, runs, last, error, error_at in rows:
        report["hooks"][event] = {"runs": runs, "last_run_at": last, "last_error": error}
        lines.append(
            f"{event}: {runs} runs, last {last}"
            + (f"; last error ({error_at}): {error}" if error else "; no error")
        )
    if not rows:
        lines.append("No hook has run yet.")
    report["queued"] = queued
    lines.append(f"Sessions queued for the historian: {queued}")
    return report
