"""The host's own model: Claude Code's command line, headless, as memsdk's ``model_complete``.

Each prompt is one run of ``claude -p --output-format json`` with the prompt
on standard input (the system text first, then each message under its role).
Claude Code answers one JSON object; its ``result`` is the reply. A run that
exits non-zero, answers ``"is_error": true``, answers something that is not
that object, or outlasts ``timeout`` seconds is a :class:`ModelError` with
its text.

The child runs with no tools (``--tools ""``), no MCP server
(``--strict-mcp-config`` and none given) and one turn, and with
:data:`CHILD_ENV` set, which memsdk's own hooks check first: a session the
historian starts never re-enters the hooks that started it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from plugin_sdk.errors import ModelError
from plugin_sdk.plugin.hookspecs import hookimpl
from plugin_sdk.plugin.records import Prompt

CHILD_ENV = "MEMSDK_HOOK_CHILD"
EXECUTABLE = "claude"
ARGS = ("-p", "--output-format", "json", "--tools", "", "--strict-mcp-config", "--max-turns", "1")
TIMEOUT = 240.0


def available() -> bool:
    """Whether a ``claude`` executable is on PATH."""
    return shutil.which(EXECUTABLE) is not None


def prompt_text(prompt: Prompt) -> str:
    """The prompt as one text: the system text, then each message under its role."""
    parts = [prompt.system] if prompt.system else []
    if len(prompt.messages) == 1 and prompt.messages[0]["role"] == "user":
        parts.append(prompt.messages[0]["content"])
    else:
        parts += [f"[{m['role']}]\n{m['content']}" for m in prompt.messages]
    return "\n\n".join(parts)


class ClaudeCodeModel:
    """A plugin answering ``model_complete`` by running ``claude -p`` once per prompt."""

    def __init__(self, executable: str = EXECUTABLE, *, timeout: float = TIMEOUT) -> None:
        self.executable = executable
        self.timeout = timeout
        self.calls = 0

    def complete(self, prompt: Prompt) -> str:
        found = shutil.which(self.executable)
        if found is None:
            raise ModelError(
                f"model claude-code: no {self.executable!r} executable on PATH "
                "(install Claude Code, or choose another model with --model)"
            )
        self.calls += 1
        env = {**os.environ, CHILD_ENV: "1"}
        what = f"model claude-code ({prompt.purpose} prompt)"
        try:
            done = subprocess.run(
                [found, *ARGS],
                input=prompt_text(prompt),
                capture_output=True,
                text=True,
                env=env,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as error:
            raise ModelError(f"{what}: no answer within {self.timeout:g} s") from error
        except OSError as error:
            raise ModelError(f"{what}: cannot run {found}: {error}") from error
        try:
            answer = json.loads(done.stdout)
        except json.JSONDecodeError:
            answer = None
        if done.returncode != 0 or not isinstance(answer, dict):
            text = (done.stderr or done.stdout).strip().splitlines()
            raise ModelError(
                f"{what}: exit {done.returncode}"
                + (f": {text[-1][:300]}" if text else ", no output")
                + ("" if isinstance(answer, dict) else " (not a JSON object)")
            )
        result = answer.get("result")
        if answer.get("is_error") or not isinstance(result, str):
            raise ModelError(f"{what}: error answer: {str(result)[:300]}")
        return result

    @hookimpl(tryfirst=True)
    def model_complete(self, prompt: Prompt) -> str:
        return self.complete(prompt)
