"""``--model scripted:FILE``: answers read from a file, so every stage runs offline.

FILE is a JSON list of strings (the answers, in order), or a folder whose
files (sorted by name) are the answers, one per file. Each process starts at
the first answer; running out is a :class:`ModelError` naming the file and the
prompt's purpose, so a run never goes on with an answer nobody planned. The
test suite's :class:`plugin_sdk.testing.ScriptedModel` is the same idea in
memory.
"""

from __future__ import annotations

import json
from pathlib import Path

from plugin_sdk.errors import ModelError
from plugin_sdk.plugin.hookspecs import hookimpl
from plugin_sdk.plugin.records import Prompt

PREFIX = "scripted:"


def read_answers(source: Path) -> list[str]:
    """The answers in ``source`` (a JSON list of strings, or a folder of answer files)."""
    if source.is_dir():
        return [p.read_text(encoding="utf-8") for p in sorted(source.iterdir()) if p.is_file()]
    try:
        answers = json.loads(source.read_text(encoding="utf-8"))
    except OSError as error:
        raise ModelError(f"model scripted:{source}: cannot read it ({error.strerror})") from error
    except json.JSONDecodeError as error:
        raise ModelError(f"model scripted:{source}: not JSON ({error.msg})") from error
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise ModelError(f"model scripted:{source}: not a JSON list of strings (the answers)")
    return answers


class FileScriptedModel:
    """A plugin answering ``model_complete`` from :func:`read_answers`, in order."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.answers = read_answers(source)
        self.calls = 0

    @hookimpl(tryfirst=True)
    def model_complete(self, prompt: Prompt) -> str:
        if self.calls >= len(self.answers):
            raise ModelError(
                f"model scripted:{self.source}: no answer left for the {prompt.purpose} "
                f"prompt ({len(self.answers)} answers, all used)"
            )
        self.calls += 1
        return self.answers[self.calls - 1]
