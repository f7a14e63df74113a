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
  remember it. Its text is kept and the message is marked explicit;
- shell mode (the user typed ``!cmd``) is recorded as ``<bash-input>`` in one
  user record and ``<bash-stdout>`` / ``<bash-stderr>`` in the next: the
  command becomes ``[shell] $ cmd`` and its output, cut to
  :data:`SHELL_OUTPUT_CHARS` on one line, is joined to it by
  ``claude_code.py`` (``[shell] $ cmd → output``); counted as ``shell
  command`` placeholders.

In tool results, the lines the harness appends to a sub-agent's answer
(``agentId: a1b2c3 (use SendMessage with to: 'a1b2c3' to continue this
agent)``, and the older ``(for resuming ...)`` form, with the ``<usage>``
block after it) are stripped and counted (:func:`strip_agent_lines`).

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
_USAGE = re.compile(r"^[ \t]*<usage>.*?</usage>[ \t]*(?:\n|$)", re.M | re.DOTALL)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
SHELL = "[shell]"
_AGENT_LINE = re.compile(
    r"^[ \t]*agentId: [\w-]+ \((?:use SendMessage|for resuming)[^\n]*\)[ \t]*(?:\n|$)", re.M
)
SHELL_OUTPUT_CHARS = 240
_COMMAND_TAGS = ("command-name", "command-message", "command-args")


@attrs.frozen
class Cleaned:
    """A user text with the harness's parts removed or summarised."""

    text: str
    explicit: bool = False  # it held a <user-memory-input>
    shell_output: bool = False  # it is only a shell command's output, to join to its command


def clean(text: str, report: ImportReport) -> Cleaned:
    """Remove or summarise the harness's text in ``text``; count what went."""
    command: dict[str, str] = {}
    shell: dict[str, str] = {}
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
        if tag in ("bash-input", "bash-stdout", "bash-stderr"):
            shell[tag] = body
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
    if shell:
        return _shell(shell, cleaned.strip(), explicit, report)
    return Cleaned(cleaned.strip(), explicit)


def _shell(parts: dict[str, str], rest: str, explicit: bool, report: ImportReport) -> Cleaned:
    output = shell_output(parts.get("bash-stdout", ""), parts.get("bash-stderr", ""))
    if "bash-input" in parts:
        report.placeholders["shell command"] += 1
        line = f"{SHELL} $ {' '.join(parts['bash-input'].split())}"
        if "bash-stdout" in parts or "bash-stderr" in parts:
            line += output
        return Cleaned(line + ("\n" + rest if rest else ""), explicit)
    return Cleaned(f"{SHELL}{output}" + ("\n" + rest if rest else ""), explicit, not rest)


def shell_output(stdout: str, stderr: str) -> str:
    """A shell command's output on one line, cut to :data:`SHELL_OUTPUT_CHARS`: `` → ...``."""
    out = " ".join(_ANSI.sub("", stdout).split())
    err = " ".join(_ANSI.sub("", stderr).split())
    text = " ".join(p for p in (out, f"stderr: {err}" if err else "") if p) or "(no output)"
    if len(text) > SHELL_OUTPUT_CHARS:  # its start and its end (a summary line is often last)
        head = text[: SHELL_OUTPUT_CHARS * 2 // 3].rsplit(" ", 1)[0]
        tail = text[-(SHELL_OUTPUT_CHARS // 3) :].split(" ", 1)[-1]
        text = f"{head} … [{len(text) - len(head) - len(tail)} characters cut] … {tail}"
    return f" → {text}"


def strip_agent_lines(text: str, report: ImportReport) -> str:
    """A tool result without the harness's ``agentId: ... (use SendMessage ...)`` lines."""
    stripped, count = _AGENT_LINE.subn("", text)
    if count:
        stripped, usage = _USAGE.subn("", stripped)
        count += usage
        report.skip("sub-agent harness line", count)
        return stripped.rstrip()
    return text


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
