"""``memsdk hook server --db D``: one process per store that answers the read hooks.

A fresh ``memsdk-hook`` process spends most of its time importing
sqlite-utils, pluggy and the stages before it reads a row. The hook server
has them imported already: the lean client (:mod:`plugin_sdk.host.claude.hook_client`)
sends it a hook's arguments, input, working directory and ``MEMSDK_*``
environment, and it runs the in-process entry point
(:func:`plugin_sdk.host.claude.hook_entry.main`) on exactly those, so its answer is
the in-process answer, byte for byte. It opens the store anew for every
request (no cache of memories or categories: what other processes wrote is
seen by the next hook); it keeps the plugin manager, and one idle connection
so that a request's close does not checkpoint the WAL each time.

One server per store: an exclusive ``flock`` on ``<socket>.lock`` (which then
holds the server's pid). The socket is made with mode 0600 and taken away
when the server ends. It ends, cleanly, when no request came for
``--idle-minutes``, when the store file is removed or replaced (another inode),
on SIGTERM, or when a client's code differs from its own (an upgrade: the
client then answers in-process and starts a new server). It answers one
request at a time (hooks of one store are seldom concurrent; a second client
waits in the listen queue).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from plugin_sdk.host.claude import hook_client
from plugin_sdk.store import driver

IDLE_MINUTES = 10.0
POLL = 0.5  # seconds between checks of the store file while idle
MAX_REQUEST = 8 * 1024 * 1024


def _identity(db: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(db)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def serve(db: Path, idle_minutes: float = IDLE_MINUTES) -> str:
    """Answer hook requests for ``db`` until a reason to stop; the reason."""
    import fcntl

    real = os.path.realpath(db)
    path = hook_client.socket_path(real)
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=0o700, exist_ok=True)
    identity = _identity(Path(real))
    if identity is None:
        return f"no store at {real}"
    with open(path + ".lock", "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return "another hook server serves this store"
        lock.truncate(0)
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a killed server's socket: we hold the lock, so it is stale
        # Bound and listening under a second name, then renamed: a client that sees
        # the path can connect (bind makes the file before listen would accept).
        # The name is as long as the path (a socket path's length is capped) and
        # needs no pid: the lock is ours.
        staging = path.removesuffix(".sock") + ".next"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staging)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mask = os.umask(0o177)
        try:
            listener.bind(staging)
        finally:
            os.umask(mask)
        os.chmod(staging, 0o600)
        signal.signal(signal.SIGTERM, _stop)
        # An idle connection kept open (no transaction: it holds no snapshot), so a
        # request's close is not the store's last one: no WAL checkpoint per request.
        keeper = driver.connect(real)  # the store's driver: two SQLite libraries would share locks
        mine = None
        try:
            listener.listen(16)
            _warm()
            os.replace(staging, path)
            mine = _identity(Path(path))
            listener.settimeout(POLL)
            return _loop(listener, real, identity, idle_minutes * 60)
        finally:
            keeper.close()
            listener.close()
            if mine is not None and _identity(Path(path)) == mine:
                os.unlink(path)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staging)
            lock.truncate(0)


def _warm() -> None:
    """Import what the read hooks use, so the first request is as quick as the next."""
    import plugin_sdk.host.claude.claude_hooks
    import plugin_sdk.host.claude.hook_entry
    import plugin_sdk.stages.inject
    import plugin_sdk.store.connection  # noqa: F401


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def _loop(listener: socket.socket, real: str, identity: tuple[int, int], idle: float) -> str:
    version = os.stat(hook_client.__file__).st_mtime
    last = time.monotonic()
    while True:
        if _identity(Path(real)) != identity:
            return "the store was removed or replaced"
        if time.monotonic() - last > idle:
            return "idle"
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        with conn:
            stop = _answer(conn, real, identity, version)
        last = time.monotonic()
        if stop:
            return stop


def _answer(conn: socket.socket, real: str, identity: tuple[int, int], version: float) -> str:
    """Answer one request (a declined one gets ``{}``); a reason to stop, or ``""``."""
    conn.settimeout(5)
    try:
        request = json.loads(_read(conn))
    except (OSError, ValueError):
        return ""
    stop = ""
    if request.get("client") != version:
        stop = "a client with other code"
    elif _identity(Path(real)) != identity:
        stop = "the store was removed or replaced"
    late = time.time() > request.get("deadline", 0)  # the client answered in-process already
    if stop or late or request.get("db") != real or request.get("protocol") != hook_client.PROTOCOL:
        _send(conn, {})
        return stop
    try:
        reply = run_request(request)
    except OSError:  # the client's folder is gone: it answers in-process
        reply = {}
    _send(conn, reply)
    return ""


def _read(conn: socket.socket) -> bytes:
    parts, size = [], 0
    while chunk := conn.recv(65536):
        parts.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST:
            raise ValueError("request too large")
    return b"".join(parts)


def _send(conn: socket.socket, reply: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the client gave up waiting: it answered in-process
        conn.sendall(json.dumps(reply, ensure_ascii=False).encode())


_MANAGERS: dict[frozenset[tuple[str, str]], Any] = {}


def _plugins(env: dict[str, str]) -> Any:
    """The plugin manager a store would make under ``env`` (made once per ``MEMSDK_*`` set).

    Making one reads every installed distribution's metadata: two thirds of a
    request's time. The ``MEMSDK_*`` variables choose what it loads, so one is
    kept per set of them and of the import path's folders' mtimes (installing a
    distribution changes its folder's); with tracing on (its writer is the first request's
    standard error) none is kept.
    """
    from plugin_sdk.plugin.manager import TRACE_ENV, make_plugin_manager

    if env.get(TRACE_ENV, "") not in ("", "0"):
        return None
    folders = [f for f in sys.path if f.endswith(("site-packages", "dist-packages"))]
    key = frozenset([*env.items(), *((folder, str(_mtime(folder))) for folder in folders)])
    if key not in _MANAGERS:
        _MANAGERS[key] = make_plugin_manager()
    return _MANAGERS[key]


def _mtime(folder: str) -> float:
    try:
        return os.stat(folder or ".").st_mtime
    except OSError:
        return 0.0


def run_request(request: dict[str, Any]) -> dict[str, Any]:
    """Run the in-process hook as the client would have: its folder, ``MEMSDK_*`` and input."""
    from plugin_sdk.host.claude.hook_entry import main

    os.chdir(request["cwd"])
    for key in [k for k in os.environ if k.startswith("MEMSDK_")]:
        del os.environ[key]
    os.environ.update(request["env"])
    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(request["argv"]), stdin=request["stdin"], plugins=_plugins(request["env"]))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
            if isinstance(exit_.code, str):
                print(exit_.code, file=sys.stderr)
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def server_command(db: Path, idle_minutes: float | None = None) -> list[str]:
    command = [sys.executable, "-m", "plugin_sdk.host.claude.hook_server", "--db", str(db)]
    return command + (["--idle-minutes", str(idle_minutes)] if idle_minutes is not None else [])


def start_server(db: Path) -> None:
    """Start the store's hook server detached (it exits at once if one runs)."""
    log = db.with_name(db.name + ".hook-server.log")
    with open(log, "ab") as out:
        subprocess.Popen(
            server_command(db),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
            cwd=db.parent,
        )


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="memsdk hook server", description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--idle-minutes", type=float, default=IDLE_MINUTES)
    args = parser.parse_args(argv)
    reason = serve(Path(args.db).expanduser(), args.idle_minutes)
    print(f"memsdk hook server {args.db}: stopped: {reason}", file=sys.stderr)


if __name__ == "__main__":
    main()
