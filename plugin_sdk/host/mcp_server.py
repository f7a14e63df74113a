"""The MCP server: the memory tools and the memory block for any MCP host.

``memsdk mcp`` serves a store with the official ``mcp`` SDK, an optional
extra (``pip install -e '.[mcp]'`` in a checkout), imported only when the
server starts. See ``docs/mcp.md``.

- **Tools**: the specs and handlers of :mod:`plugin_sdk.host.mcp_tools`, read from
  the store when the server starts (over stdio, again when they change: see
  :mod:`plugin_sdk.host.mcp_stdio`), each with a title, an output schema and
  annotations; a failed call is a tool result with ``isError``, never a
  protocol error.
- **Resource** ``memsdk://inject`` and **prompt** ``memory``: the injected
  table of contents, within the server's budget (``memory_toc`` is the same
  as a tool, for hosts that read neither).

Over stdio (:func:`run_stdio`) the server serves one store's project, named
in its instructions. Over streamable HTTP (``mcp_http.py``) it serves the
projects each bearer token is bound to, the project chosen per request. The
handlers reach the store through a *runner*: any object with ``async
run(fn, project=...)`` that calls ``fn(store)`` with a store of that project
(:class:`LocalRunner` for stdio, :class:`~plugin_sdk.host.aio.AsyncStore`
for HTTP).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from plugin_sdk.errors import MissingExtra
from plugin_sdk.host.mcp_tools import ToolSpec, call_tool, memory_block
from plugin_sdk.stages.inject import DEFAULT_BUDGET

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from plugin_sdk.store.connection import Store

T = TypeVar("T")
SERVER_NAME = "memsdk"
INJECT_URI = "memsdk://inject"
PROMPT_NAME = "memory"
INSTALL_HINT = (
    "memsdk mcp needs the mcp extra: pip install 'mcp>=2,<3' "
    "(in a memsdk checkout: pip install -e '.[mcp]')"
)
GUIDE = (
    "At the start of a session read the resource "
    f"{INJECT_URI} (or the prompt '{PROMPT_NAME}', or call memory_toc): a table of contents "
    "of what is remembered, each entry with its [id]. memory_expand ID shows a header's "
    "details; memory_recall answers a question in plain language with the memories that "
    "matter; memory_search finds more; memory_list and memory_recent browse; memory_write "
    "files a durable fact under one category. Follow the directives it lists."
)


def instructions_for(project: str) -> str:
    """The server's instructions over stdio: the project it serves, then the guide."""
    return f"Long-term memory for project {project!r}. {GUIDE}"


class Runner(Protocol):
    """How the handlers reach a store: ``fn(store)`` for a project (``None``: the default)."""

    async def run(self, fn: Callable[..., T], /, *, project: str | None = None) -> T: ...


class LocalRunner:
    """One store, called in the event loop's own thread (stdio: one client at a time).

    A lost server connection (:attr:`Store.lost`: a PostgreSQL restart or
    failover) is opened again, and the call that met it runs once more, as
    :class:`~plugin_sdk.host.aio.AsyncStore`'s workers do.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    async def run(self, fn: Callable[..., T], /, *, project: str | None = None) -> T:
        return self.call(fn)

    def call(self, fn: Callable[[Store], T]) -> T:
        if self.store.lost:
            self.store = self.store.reopened()
        try:
            return fn(self.store)
        except Exception:
            if not self.store.lost:
                raise
        self.store = self.store.reopened()
        return fn(self.store)


def require_mcp() -> None:
    """Raise :class:`MissingExtra` (one line: how to install it) without the extra."""
    try:
        import mcp.server.lowlevel
        import mcp.server.stdio  # noqa: F401
    except ImportError as error:
        raise MissingExtra(INSTALL_HINT) from error


def build_server(
    runner: Runner,
    specs: list[ToolSpec],
    *,
    instructions: str,
    budget: int = DEFAULT_BUDGET,
    project_of: Callable[[Any], str | None] = lambda ctx: None,
    current: Callable[[], list[ToolSpec]] | None = None,
) -> Server[Any]:
    """An MCP low-level server whose handlers reach the store through ``runner``.

    ``project_of(ctx)`` names the project a request is for (``None``: the
    runner's default); the HTTP server reads it from the request.
    ``current()``, when given, is the tool list now (stdio's
    :class:`~plugin_sdk.host.mcp_stdio.ToolWatch`), read at every request.
    """
    require_mcp()
    import mcp.types as types
    from mcp.server.lowlevel import Server

    def described(specs: list[ToolSpec]) -> list[types.Tool]:
        return [_tool(types, spec) for spec in specs]

    tools = described(specs)
    shown = specs

    def now() -> tuple[list[ToolSpec], list[types.Tool]]:
        nonlocal tools, shown
        if current is not None and current() is not shown:
            shown = current()
            tools = described(shown)
        return shown, tools

    def describe_block(project: str) -> str:
        return (
            f"The memory block for project {project!r}: a table of contents of what is "
            f"remembered, within {budget} tokens, each entry with its [id]."
        )

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=now()[1])

    async def run_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        in_use = now()[0]
        outcome = await runner.run(
            lambda store: call_tool(store, in_use, params.name, params.arguments),
            project=project_of(ctx),
        )
        return types.CallToolResult(
            content=[types.TextContent(text=outcome.text)],
            structured_content=outcome.data,
            is_error=outcome.is_error,
        )

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        project = await runner.run(lambda store: store.project, project=project_of(ctx))
        resource = types.Resource(
            uri=INJECT_URI,
            name="memory",
            title="Memory: table of contents",
            description=describe_block(project),
            mime_type="text/plain",
        )
        return types.ListResourcesResult(resources=[resource])

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if params.uri != INJECT_URI:
            from mcp.shared.exceptions import MCPError

            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown resource {params.uri!r}; this server has {INJECT_URI}",
            )
        text = await runner.run(lambda store: memory_block(store, budget), project=project_of(ctx))
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=INJECT_URI, mime_type="text/plain", text=text)]
        )

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        project = await runner.run(lambda store: store.project, project=project_of(ctx))
        prompt = types.Prompt(name=PROMPT_NAME, description=describe_block(project))
        return types.ListPromptsResult(prompts=[prompt])

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != PROMPT_NAME:
            from mcp.shared.exceptions import MCPError

            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown prompt {params.name!r}; this server has {PROMPT_NAME!r}",
            )
        project, text = await runner.run(
            lambda store: (store.project, memory_block(store, budget)), project=project_of(ctx)
        )
        message = types.PromptMessage(role="user", content=types.TextContent(text=text))
        return types.GetPromptResult(description=describe_block(project), messages=[message])

    return Server(
        SERVER_NAME,
        version=metadata.version("memsdk"),
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=run_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def _tool(types: Any, spec: ToolSpec) -> Any:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema,
        output_schema=spec.output_schema,
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        ),
    )


def run_stdio(store: Store, *, budget: int = DEFAULT_BUDGET) -> None:
    """Build the server for ``store``'s project and serve it over stdio until the client leaves."""
    import anyio

    from plugin_sdk.host.mcp_stdio import ToolWatch, serve_stdio

    runner = LocalRunner(store)
    watch = ToolWatch(runner)
    server = build_server(
        runner,
        watch.current(),
        instructions=instructions_for(store.project),
        budget=budget,
        current=watch.current,
    )
    anyio.run(serve_stdio, server, watch)
