"""``memsdk mcp`` over stdio: every line answered, and tools that follow the store.

Two things the SDK's stdio transport does not do, done between it and the
server:

- **Every malformed request gets an answer** (:func:`screen`). A line that is
  not JSON is a parse error (-32700, id null); JSON that is not a JSON-RPC
  request is an invalid request (-32600, its id when it has a usable one); a
  request whose parameters cannot be read (a lone surrogate in a string, a
  number of thousands of digits) is invalid params (-32602, its id). The
  SDK's own reader drops such lines with no reply.
- **Tools that follow the store** (:class:`ToolWatch`). The tool
  descriptions come from the store (categories, criteria); a watcher reads
  them again every ``interval`` seconds and, when they changed (``memsdk
  criteria set``, a pack installed), serves the new ones and sends
  ``notifications/tools/list_changed``, declared in the server's
  capabilities.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio

from plugin_sdk.errors import MemsdkError
from plugin_sdk.host.mcp_tools import ToolSpec, tool_specs
from plugin_sdk.store import driver

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from plugin_sdk.host.mcp_server import LocalRunner

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
WATCH_INTERVAL = 1.0
_MAX_ID = 2**63 - 1


def screen(line: str | bytes) -> tuple[int, Any, str] | None:
    """``None`` for a line the SDK can read, else ``(code, id, message)`` of its error reply."""
    import mcp_types as types

    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValueError as error:
        sdk_error = error
    try:
        document = json.loads(line, parse_int=_integer)
    except (ValueError, RecursionError) as error:
        return PARSE_ERROR, None, f"parse error: not JSON ({type(error).__name__}: {error})"[:300]
    if not isinstance(document, dict):
        return INVALID_REQUEST, None, "invalid request: a JSON-RPC message is an object"
    raw_id = document.get("id")
    usable = (
        isinstance(raw_id, int) and not isinstance(raw_id, bool) and abs(raw_id) <= _MAX_ID
    ) or (type(raw_id) is str and raw_id.isprintable() and len(raw_id) <= 200)
    request_id = raw_id if usable else None
    if "id" in document and not usable:
        return INVALID_REQUEST, None, "invalid request: id must be a string or a 64-bit integer"
    if document.get("jsonrpc") != "2.0" or not isinstance(document.get("method"), str):
        return INVALID_REQUEST, request_id, "invalid request: needs jsonrpc '2.0' and a method"
    reason = _first_reason(sdk_error)
    return INVALID_PARAMS, request_id, f"invalid params: {reason}"


class _Digits(str):
    """A number too long to be an int here (it is refused, never converted)."""


def _integer(digits: str) -> int | _Digits:
    return int(digits) if len(digits) <= 40 else _Digits(digits)


def _first_reason(error: ValueError) -> str:
    errors = getattr(error, "errors", None)
    if callable(errors):
        for item in errors():
            if item.get("type") == "json_invalid":
                return "a string with a lone surrogate or a number too large to read"
            where = ".".join(str(part) for part in item.get("loc", ())[1:])
            return f"{where}: {item.get('msg')}" if where else str(item.get("msg"))
    return str(error)[:200]


class ToolWatch:
    """The tools as the store describes them now; :meth:`refresh` says whether they changed."""

    def __init__(self, runner: LocalRunner) -> None:
        self.runner = runner
        self.specs = runner.call(tool_specs)
        self._seen = _fingerprint(self.specs)

    def current(self) -> list[ToolSpec]:
        return self.specs

    def refresh(self) -> bool:
        specs = self.runner.call(tool_specs)
        seen = _fingerprint(specs)
        if seen == self._seen:
            return False
        self.specs, self._seen = specs, seen
        return True


def _fingerprint(specs: list[ToolSpec]) -> str:
    return json.dumps([(s.name, s.description, s.input_schema) for s in specs], sort_keys=True)


class _Screened:
    """The lines of ``source`` the SDK can read; each other line answered on ``reply``."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.reply: Any = None
        self.ready = anyio.Event()

    async def __aiter__(self) -> Any:
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        async for line in self.source:
            if not line.strip():
                continue
            verdict = screen(line)
            if verdict is None:
                yield line
                continue
            code, request_id, message = verdict
            await self.ready.wait()
            error = types.ErrorData(code=code, message=message)
            await self.reply.send(
                SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
            )


async def serve_stdio(
    server: Server[Any], watch: ToolWatch | None = None, interval: float = WATCH_INTERVAL
) -> None:
    """Serve one client over stdin/stdout, answering bad lines and announcing tool changes."""
    import io
    import sys

    import mcp_types as types
    from mcp.server.lowlevel import NotificationOptions
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    options = server.create_initialization_options(
        notification_options=NotificationOptions(tools_changed=watch is not None)
    )
    text = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    lines = _Screened(anyio.wrap_file(text))
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        lines.reply = write_stream
        lines.ready.set()

        async def announce() -> None:
            assert watch is not None
            while True:
                await anyio.sleep(interval)
                try:
                    changed = watch.refresh()
                except (MemsdkError, driver.Error):  # a busy store: try again next time
                    continue
                if changed:
                    note = types.JSONRPCNotification(
                        jsonrpc="2.0", method="notifications/tools/list_changed"
                    )
                    await write_stream.send(SessionMessage(note))

        async with anyio.create_task_group() as tasks:
            if watch is not None:
                tasks.start_soon(announce)
            await server.run(read_stream, write_stream, options)
            tasks.cancel_scope.cancel()
