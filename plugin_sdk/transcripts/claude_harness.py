"""Text Claude Code itself writes into user and assistant records, told apart from the user's.

Claude Code puts its own text in the transcript beside what the user typed:

- a slash command is recorded as ``<command-name>/review</command-name>``
  with ``<command-message>`` and ``<command-args>``: it becomes one summary
  line, ``[command /review: args]``;
- the output of a local command (``<local-command-stdout>``,
  ``<local-command-stderr>``), reminders the harness adds for the model
  (``<system-reminder>``) and notices of a background task finishing
  (``<task-notification>``) are removed and counted;
- "[Request interrupted by user]" (and "... for tool use") is removed and
  counted;
- ``<user-memory-input>`` holds what the user typed after ``#``: a request to
  remember it. Its text is kept and the message is marked explicit.

Assistant records Claude Code makes up itself when a request fails (the
"API Error: ..." messages, ``isApiErrorMessage`` or model ``<synthetic>``) are
not the model's words and are skipped whole (see ``claude_code.py``).
"""

from __future__ import annotations

import re

import attrs

from plugin_sdk.transcripts.model import ImportReport

_REMOVED = {
    "local-command-stdout": "local command output",
    "local-command-stderr": "local command output",
    "system-reminder": "system reminder",
    "task-notification": "background task notice",
}
_BLOCK = re.compile(r"<(?P<tag>[a-z-]+)>(?P<body>.*?)</(?P=tag)>\s*", re.DOTALL)
_INTERRUPTED = re.compile(r"\[Request interrupted by user[^\]]*\]")
_COMMAND_TAGS = ("command-name", "command-message", "command-args")


@attrs.frozen
class Cleaned:
    """A user text with the harness's parts removed or summarised."""

    text: str
    explicit: bool = False  # it held a <user-memory-input>


def clean(text: str, report: ImportReport) -> Cleaned:
    """Remove or summarise the harness's text in ``text``; count what went."""
    command: dict[str, str] = {}
    explicit = False

    def replace(match: re.Match[str]) -> str:
        nonlocal explicit
        tag, body = match["tag"], match["body"].strip()
        if tag in _REMOVED:
            report.skip(_REMOVED[tag])
            return ""
        if tag in _COMMAND_TAGS:
            command[tag] = body
            return ""
        if tag == "user-memory-input":
            explicit = True
            return body + "\n"
        return match.group(0)

    cleaned = _BLOCK.sub(replace, text)
    cleaned, interruptions = _INTERRUPTED.subn("", cleaned)
    if interruptions:
        report.skip("interruption notice", interruptions)
    if command:
        cleaned = _command_line(command) + ("\n" + cleaned if cleaned.strip() else "")
        report.placeholders["command"] += 1
    return Cleaned(cleaned.strip(), explicit)


def is_synthetic(record: dict[str, object], message: dict[str, object]) -> bool:
    """An assistant record Claude Code wrote itself (an API error), not the model."""
    return bool(record.get("isApiErrorMessage")) or message.get("model") == "<synthetic>"


def _command_line(command: dict[str, str]) -> str:
    name = command.get("command-name") or command.get("command-message") or "command"
    name = " ".join(name.split())
    if not name.startswith("/"):
        name = "/" + name
    args = " ".join(command.get("command-args", "").split())
    return f"[command {name}: {args}]" if args else f"[command {name}]"
