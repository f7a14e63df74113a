"""Turning non-text parts into short text: placeholders, tool-call summaries, tool output.

Every importer uses these, so the same kind of part reads the same whatever
the format: an image is ``[image]``, a tool call is
``[tool call Bash: command="git status"]``, a tool's output is kept up to a
limit and ends with an explicit marker when cut. Each placeholder and each
shortened output is counted in the import report.
"""

from __future__ import annotations

import json
from typing import Any

from plugin_sdk.transcripts.model import ImportReport

DEFAULT_TOOL_OUTPUT_CHARS = 2000
ARGUMENT_CHARS = 80
SUMMARY_CHARS = 240


def placeholder(report: ImportReport, kind: str, label: Any = None) -> str:
    """``[kind]`` or ``[kind: label]``, counted in the report; a label that is not text is left out."""
    report.placeholders[kind] += 1
    label = " ".join(label.split()) if isinstance(label, str) else ""
    return f"[{kind}: {label}]" if label else f"[{kind}]"


def media_placeholder(report: ImportReport, mime: Any, label: Any = None) -> str:
    """A placeholder named after a MIME type's family: image, audio, video, else file."""
    family = mime.split("/", 1)[0].lower() if isinstance(mime, str) else ""
    kind = family if family in ("image", "audio", "video") else "file"
    return placeholder(report, kind, label)


def tool_call(name: Any, arguments: Any) -> str:
    """A one-line summary of a tool call: its name and shortened arguments."""
    summary = summarize_arguments(arguments)
    label = tool_name(name) or "unnamed tool"
    return f"[tool call {label}: {summary}]" if summary else f"[tool call {label}]"


def summarize_arguments(arguments: Any) -> str:
    """``key=value, ...`` with each value on one line and cut to a few dozen characters."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return _cut(" ".join(arguments.split()), SUMMARY_CHARS)
    if isinstance(arguments, dict):
        pieces = [f"{key}={_value(value)}" for key, value in arguments.items()]
        return _cut(", ".join(pieces), SUMMARY_CHARS)
    if arguments is None:
        return ""
    return _cut(_value(arguments), SUMMARY_CHARS)


def tool_output(report: ImportReport, text: str, limit: int) -> str:
    """A tool's output, cut to ``limit`` characters (0: no limit) with an explicit marker."""
    if limit <= 0 or len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    kept = text[: cut if cut > limit // 2 else limit]
    report.shortened += 1
    return f"{kept}\n[... {len(text) - len(kept):,} more characters of tool output not imported]"


def tool_result(name: Any, output: str, *, error: bool = False) -> str:
    """The text of a ``tool`` message: a header line and the output."""
    label = tool_name(name) or "unknown tool"
    header = f"[tool result {label}{', error' if error else ''}]"
    return f"{header}\n{output}" if output.strip() else header


def tool_name(value: Any) -> str | None:
    """A tool's name as a record gives it: a non-blank string on one line, else ``None``."""
    if not isinstance(value, str):
        return None
    return " ".join(value.split()) or None


def text_of(value: Any) -> str | None:
    """A text field's value: the string, ``""`` for null or missing, ``None`` for anything else."""
    if value is None:
        return ""
    return value if isinstance(value, str) else None


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    if isinstance(value, str):
        return json.dumps(_cut(text, ARGUMENT_CHARS), ensure_ascii=False)
    return _cut(text, ARGUMENT_CHARS)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
