"""The HTTP server's request log: one line per request, never a memory's text.

Each request to ``/mcp`` gives one line, written when its answer is done::

    2026-12-02T06:30:01.204Z token=alice project=orchard tool=memory_recall status=200 ms=12.4

``token`` is the token's name (``-`` when the request had none that
verified), ``project`` the project the gate chose (``-`` when refused
before), ``tool`` the name a ``tools/call`` asked for, else the JSON-RPC
method (``initialize``, ``tools/list``), else ``-`` (a GET stream, a
DELETE). Only the method and the tool's name are read from the body:
arguments and results (queries, memories) are never written. The lines go
to standard error, or to a file (``memsdk mcp --http ... --log FILE``),
flushed each time.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timezone
from typing import Any, TextIO

PEEK = 65536  # bytes of a request body read for its method and tool name
_SAFE = re.compile(r"[^\w./:@-]")


class RequestLog:
    """ASGI: time each HTTP request and write its line to ``stream``."""

    def __init__(self, app: Any, stream: TextIO) -> None:
        self.app = app
        self.stream = stream

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        body = bytearray()
        status = [0]

        async def peek() -> Any:
            message = await receive()
            if message.get("type") == "http.request" and len(body) < PEEK:
                body.extend(message.get("body", b"")[: PEEK - len(body)])
            return message

        async def note(message: Any) -> None:
            if message.get("type") == "http.response.start":
                status[0] = int(message.get("status", 0))
            await send(message)

        try:
            await self.app(scope, peek, note)
        finally:
            ms = (time.perf_counter() - start) * 1000
            self.write(scope, bytes(body), status[0] or 500, ms)

    def write(self, scope: Any, body: bytes, status: int, ms: float) -> None:
        user = scope.get("user")
        token = getattr(getattr(user, "access_token", None), "client_id", None) or "-"
        project = (scope.get("state") or {}).get("memsdk_project") or "-"
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        line = (
            f"{stamp} token={_clean(token)} project={_clean(project)} tool={_clean(tool_of(body))}"
            f" status={status} ms={ms:.1f}\n"
        )
        self.stream.write(line)
        self.stream.flush()


def tool_of(body: bytes) -> str:
    """What a request asked for: a ``tools/call``'s tool name, else its method, else ``-``."""
    try:
        document = json.loads(body) if body else None
    except ValueError:
        return "-"
    calls = document if isinstance(document, list) else [document]
    names = []
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("method"), str):
            continue
        params = call.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        method = call["method"]
        names.append(name if method == "tools/call" and isinstance(name, str) else method)
    return ",".join(names) or "-"


def _clean(value: str) -> str:
    """A field without spaces or control characters (one request, one line)."""
    return _SAFE.sub("_", value)[:80] or "-"
