"""A model named on the command line (``--model NAME``), as a plugin to register.

- ``claude-code``: the host's own command line (:mod:`plugin_sdk.model.claude_headless`);
- ``scripted:FILE``: answers from a file (:mod:`plugin_sdk.model.scripted`);
- ``none``: no model (agent-written memories only; stages that need one wait);
- anything else: an ``llm`` model id or alias (:mod:`plugin_sdk.model.llm`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

NONE = "none"
MODEL_NAME = "cli-model"


def model_plugin(name: str) -> Any | None:
    """The plugin answering ``model_complete`` for ``name`` (``None`` for ``none``)."""
    from plugin_sdk.model.scripted import PREFIX

    if name == NONE:
        return None
    if name == "claude-code":
        from plugin_sdk.model.claude_headless import ClaudeCodeModel

        return ClaudeCodeModel()
    if name.startswith(PREFIX):
        from plugin_sdk.model.scripted import FileScriptedModel

        return FileScriptedModel(Path(name[len(PREFIX) :]).expanduser())
    from plugin_sdk.model.llm import LlmModel

    return LlmModel(name)


def attach(plugins: Any, name: str | None) -> Any | None:
    """Register the model ``name`` on ``plugins`` (nothing for ``None`` or ``none``)."""
    if not name:
        return None
    plugin = model_plugin(name)
    if plugin is not None:
        plugins.register(plugin, name=MODEL_NAME)
    return plugin


def default_choice() -> str:
    """What ``install`` records when no model is named: claude-code when ``claude`` is on PATH."""
    from plugin_sdk.model.claude_headless import available

    return "claude-code" if available() else NONE
