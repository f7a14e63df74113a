"""The ``memsdk-hook`` console script: ask the store's hook server, else answer in-process.

SessionStart and UserPromptSubmit run before a session and before every
prompt, so this module imports only the standard library (``_socket``, the
core of ``socket`` without its enums and selectors; json, os, sys, time). It sends the hook's arguments, standard input, working directory and
``MEMSDK_*`` environment to the store's hook server
(:mod:`plugin_sdk.host.claude.hook_server`), which runs the in-process entry point
(:func:`plugin_sdk.host.claude.hook_entry.main`) on them and sends back its standard
output, standard error and exit code, written here unchanged. When no server
answers (none running, a stale socket, no reply within
``MEMSDK_HOOK_TIMEOUT`` seconds, a server that declines), the in-process entry
point answers and starts a server for the next hook. ``MEMSDK_HOOK_SERVER=0``
turns the server off (always in-process). The other events, and a child of
the ``claude-code`` model, always run in-process.
"""

from __future__ import annotations

import _socket
import json
import os
import sys
import time

SERVED = ("SessionStart", "UserPromptSubmit")
SWITCH_ENV = "MEMSDK_HOOK_SERVER"
TIMEOUT_ENV = "MEMSDK_HOOK_TIMEOUT"
TIMEOUT = 1.5  # seconds for the whole answer; the in-process path takes about 1 s
MAX_SUN_PATH = 100  # bytes; a Unix socket's path must fit in sun_path (108 on Linux)
PROTOCOL = 1


def enabled() -> bool:
    return os.environ.get(SWITCH_ENV, "1") not in ("0", "", "off", "no")


def socket_path(db: str) -> str:
    """The store's hook-server socket: ``<db>.hook.sock`` beside it, if that path is short enough.

    A longer one goes in ``$XDG_RUNTIME_DIR`` (else ``/tmp``) under
    ``memsdk-<uid>/`` (a 0700 folder of this user), named by a checksum of the
    store's path; the server checks the store's path in every request.
    """
    real = os.path.realpath(db)
    beside = real + ".hook.sock"
    if len(os.fsencode(beside)) <= MAX_SUN_PATH:
        return beside
    import zlib

    folder = os.path.join(os.environ.get("XDG_RUNTIME_DIR") or "/tmp", f"memsdk-{os.getuid()}")
    return os.path.join(folder, f"{zlib.crc32(os.fsencode(real)):08x}.hook.sock")


def store_of(argv: list[str]) -> str | None:
    """The store the hook names (``--db``, ``MEMSDK_DB``, ``MEMSDK_USER_PATH``, the Linux default)."""
    for i, word in enumerate(argv):
        if word == "--db" and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith("--db="):
            return word[len("--db=") :]
    if os.environ.get("MEMSDK_DB"):
        return os.environ["MEMSDK_DB"]
    if os.environ.get("MEMSDK_USER_PATH"):
        return os.path.join(os.path.expanduser(os.environ["MEMSDK_USER_PATH"]), "memory.db")
    if not sys.platform.startswith("linux"):
        return None  # the platform's folder is click's to say: answer in-process
    config = os.environ.get("XDG_CONFIG_HOME", os.path.expanduser("~/.config"))
    return os.path.join(config, "memsdk", "memory.db")


def ask(db: str, argv: list[str], text: str, timeout: float | None = None) -> dict | None:
    """The server's answer ``{"code", "stdout", "stderr"}``, or ``None`` when none answers."""
    path = socket_path(db)
    try:
        if os.stat(path).st_uid != os.getuid():  # another user's socket is never asked
            return None
    except OSError:
        return None
    request = {
        "protocol": PROTOCOL,
        "db": os.path.realpath(db),
        "argv": argv,
        "stdin": text,
        "cwd": os.getcwd(),
        "env": {k: v for k, v in os.environ.items() if k.startswith("MEMSDK_")},
        "client": _version(),
    }
    if timeout is None:
        timeout = float(os.environ.get(TIMEOUT_ENV) or TIMEOUT)
    request["deadline"] = time.time() + timeout  # a server that is later runs nothing
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(timeout)
        conn.connect(path)
        conn.sendall(json.dumps(request).encode())
        conn.shutdown(_socket.SHUT_WR)
        parts = []
        while chunk := conn.recv(65536):
            parts.append(chunk)
        answer = json.loads(b"".join(parts))
    except (OSError, ValueError):
        return None
    finally:
        conn.close()
    if not isinstance(answer, dict) or "code" not in answer:
        return None  # declined (another store, a replaced store, other code)
    return answer


def _version() -> float:
    """This code's version as the server compares it: the mtime of this file."""
    return os.stat(__file__).st_mtime


def main() -> None:
    """The ``memsdk-hook`` console script."""
    argv = sys.argv[1:]
    text = None
    if (
        enabled()
        and len(argv) >= 2
        and argv[0] == "claude-code"
        and argv[1] in SERVED
        and not os.environ.get("MEMSDK_HOOK_CHILD")
    ):
        db = store_of(argv)
        text = sys.stdin.read()
        answer = ask(db, argv, text) if db else None
        if answer is not None:
            sys.stdout.write(answer["stdout"])
            sys.stderr.write(answer["stderr"])
            sys.stdout.flush()
            raise SystemExit(answer["code"])
    if sys.flags.no_site:  # run as `python -S hook_client.py`: the fallback needs site-packages
        import site

        if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
            del sys.path[0]  # the script's folder: its modules are not top-level ones
        site.main()
    from plugin_sdk.host.claude.hook_entry import main as in_process

    in_process(argv, stdin=text, serve=enabled())


if __name__ == "__main__":
    main()
