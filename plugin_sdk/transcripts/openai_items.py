"""OpenAI Responses-API items in a message list: tool calls, their outputs, reasoning.

The Responses API keeps a conversation as a list of items. Items with a
``role`` (``type: "message"``) are messages and read as such; the others:

- ``function_call`` and ``custom_tool_call`` (``name``, ``arguments`` or
  ``input``, ``call_id``) become an assistant message with one summary line;
  ``mcp_call`` likewise, with its ``output`` as a ``tool`` message;
- ``function_call_output`` and ``custom_tool_call_output`` (``call_id``,
  ``output``) become ``tool`` messages named after the call they answer,
  long output shortened with a marker;
- ``reasoning`` items (the model's scratch work) are skipped and counted;
- other item types (``web_search_call``, ``file_search_call``,
  ``computer_call``, ...) are counted by type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plugin_sdk.transcripts.text import tool_call, tool_name, tool_output, tool_result

if TYPE_CHECKING:
    from plugin_sdk.transcripts.model import Message
    from plugin_sdk.transcripts.openai_messages import _Reader

CALLS = ("function_call", "custom_tool_call", "mcp_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")


def read_item(reader: _Reader, raw: dict[str, Any], where: str) -> list[Message]:
    """The messages one Responses item gives; see the module docstring."""
    kind = raw.get("type")
    if kind in CALLS:
        name = tool_name(raw.get("name"))
        if kind == "mcp_call" and isinstance(raw.get("server_label"), str) and name:
            name = f"{raw['server_label']}.{name}"
        call_id = raw.get("call_id") if isinstance(raw.get("call_id"), str) else raw.get("id")
        if isinstance(call_id, str) and name:
            reader.tool_names[call_id] = name
        arguments = raw.get("arguments") if "arguments" in raw else raw.get("input")
        messages = reader.make("assistant", tool_call(name, arguments), where)
        if kind == "mcp_call" and raw.get("output") is not None:
            messages += _output(reader, name, raw.get("output"), where, bool(raw.get("error")))
        return messages
    if kind in OUTPUTS:
        name = reader.tool_names.get(str(raw.get("call_id")))
        return _output(reader, name, raw.get("output"), where, False)
    if kind == "reasoning":
        reader.report.skip("reasoning item")
        return []
    reader.report.skip(f"item type {kind!r}")
    return []


def _output(
    reader: _Reader, name: str | None, output: Any, where: str, error: bool
) -> list[Message]:
    text = output if isinstance(output, str) else reader.content(output, where)
    shortened = tool_output(reader.report, text, reader.limit)
    return reader.make("tool", tool_result(name, shortened, error=error), where, tool=name)
