"""The MCP server: the memory tools and the memory block for any MCP host.

``memsdk mcp`` serves one store's project over stdio with the official ``mcp``
SDK, an optional extra (``pip install -e '.[mcp]'`` in a checkout), imported only when the
server starts. See ``docs/mcp.md``.

- **Tools**: the specs and handlers of :mod:`plugin_sdk.host.mcp_tools`, read from
  the store when the server starts; a failed call is a tool result with
  ``isError``, never a protocol error.
- **Resource** ``memsdk://inject`` and **prompt** ``memory``: the injected
  table of contents, within the server's budget.
"""

from __future__ import annotations

from importlib import metadata
from typing import TYPE_CHECKING, Any

from plugin_sdk.errors import MissingExtra
from plugin_sdk.host.mcp_tools import call_tool, memory_block, tool_specs
from plugin_sdk.stages.inject import DEFAULT_BUDGET

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from plugin_sdk.store.connection import Store

SERVER_NAME = "memsdk"
INJECT_URI = "memsdk://inject"
PROMPT_NAME = "memory"
INSTALL_HINT = (
    "memsdk mcp needs the mcp extra: pip install 'mcp>=2,<3' "
    "(in a memsdk checkout: pip install -e '.[mcp]')"
)
INSTRUCTIONS = (
    "Long-term memory for this project. At the start of a session read the resource "
    f"{INJECT_URI} (or the prompt '{PROMPT_NAME}'): a table of contents of what is "
    "remembered, each entry with its [id]. memory_expand ID shows a header's details; "
    "memory_recall answers a question in plain language with the memories that matter; "
    "memory_search finds more; memory_write files a durable fact under one category. "
    "Follow the directives it lists."
)
DESTRUCTIVE = ("memory_archive", "memory_merge", "memory_update", "memory_forget")


def require_mcp() -> None:
    """Raise :class:`MissingExtra` (one line: how to install it) without the extra."""
    try:
        import mcp.server.lowlevel
        import mcp.server.stdio  # noqa: F401
    except ImportError as error:
        raise MissingExtra(INSTALL_HINT) from error


def build_server(store: Store, *, budget: int = DEFAULT_BUDGET) -> Server[Any]:
    """An MCP low-level server over ``store``; tool schemas are read from it now."""
    require_mcp()
    import mcp.types as types
    from mcp.server.lowlevel import Server

    specs = tool_specs(store)
    tools = [
        types.Tool(
            name=spec.name,
            description=spec.description,
            input_schema=spec.input_schema,
            annotations=types.ToolAnnotations(
                read_only_hint=spec.read_only,
                destructive_hint=spec.name in DESTRUCTIVE,
                open_world_hint=False,
            ),
        )
        for spec in specs
    ]
    block_description = (
        f"The memory block for project {store.project!r}: a table of contents of what is "
        f"remembered, within {budget} tokens, each entry with its [id]."
    )

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def run_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        outcome = call_tool(store, specs, params.name, params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(text=outcome.text)],
            structured_content=outcome.data,
            is_error=outcome.is_error,
        )

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        resource = types.Resource(
            uri=INJECT_URI,
            name="memory",
            title="Memory: table of contents",
            description=block_description,
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
        text = memory_block(store, budget)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=INJECT_URI, mime_type="text/plain", text=text)]
        )

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        prompt = types.Prompt(name=PROMPT_NAME, description=block_description)
        return types.ListPromptsResult(prompts=[prompt])

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != PROMPT_NAME:
            from mcp.shared.exceptions import MCPError

            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown prompt {params.name!r}; this server has {PROMPT_NAME!r}",
            )
        text = memory_block(store, budget)
        message = types.PromptMessage(role="user", content=types.TextContent(text=text))
        return types.GetPromptResult(description=block_description, messages=[message])

    return Server(
        SERVER_NAME,
        version=metadata.version("memsdk"),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=run_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over this process's standard input and output."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(store: Store, *, budget: int = DEFAULT_BUDGET) -> None:
    """Build the server and serve it over stdio until the client disconnects."""
    import anyio

    server = build_server(store, budget=budget)
    anyio.run(serve_stdio, server)
