"""Any model the ``llm`` library knows, as memsdk's model (``model_complete``) or embedder (``model_embed``).

::

    from plugin_sdk import Store
    from plugin_sdk.model.llm import LlmModel
    from plugin_sdk.plugin.manager import make_plugin_manager

    plugins = make_plugin_manager(plugins=[("llm-model", LlmModel("gpt-4o-mini"))])
    store = Store("memory.db", plugins=plugins)  # the historian and the dreamer now use it

``llm`` is an optional extra (``pip install -e '.[llm]'`` in a checkout), imported only
when a model is first needed. Models, keys and aliases are ``llm``'s own:
``llm models`` lists them, ``llm keys set`` stores keys, ``LLM_USER_PATH``
moves its configuration, and ``llm`` plugins add models.

The adapter answers before other ``model_complete`` implementations
(``tryfirst``): a host that registers it chose this model explicitly.
The usual memsdk prompt (a system text and one user message) is sent as
llm's ``system`` and ``prompt``. Several messages go as llm messages where
the installed ``llm`` supports them, the system text once as the leading
``llm.system()`` message (with ``messages=`` llm takes the list as the whole
conversation); else as one transcript-style prompt under ``system``.

:class:`LlmEmbedder` answers ``model_embed`` with any embedding model llm
knows (``llm embed-models`` lists them; llm plugins add more)::

    plugins = make_plugin_manager(plugins=[("llm-embedder", LlmEmbedder("3-small"))])

Its answers name the model (``llm:<model id>``), so the store keeps vectors
per model and re-embeds when the host switches to another one.
"""

from __future__ import annotations

from typing import Any

from plugin_sdk.errors import LlmModelError, LlmNotInstalled, MemsdkError
from plugin_sdk.plugin.hookspecs import hookimpl
from plugin_sdk.plugin.records import Embeddings, Prompt

INSTALL_HINT = "pip install 'llm>=0.19' (in a memsdk checkout: pip install -e '.[llm]')"


def import_llm() -> Any:
    """The ``llm`` module, or :class:`LlmNotInstalled` saying how to install it."""
    try:
        import llm
    except ImportError as error:
        raise LlmNotInstalled(
            f"model adapters need the llm library, which is not installed: {INSTALL_HINT}"
        ) from error
    return llm


class LlmModel:
    """A plugin answering ``model_complete`` with the ``llm`` model ``model_id``.

    :param model_id: an ``llm`` model id or alias.
    :param options: model options (``temperature`` ...), passed to ``llm``.
    :param key: an API key, or the name of one stored with ``llm keys set``;
        default: ``llm``'s own lookup (stored key, then environment variable).
    """

    def __init__(
        self, model_id: str, *, options: dict[str, Any] | None = None, key: str | None = None
    ) -> None:
        self.model_id = model_id
        self.options = dict(options or {})
        self.key = key
        self.calls = 0
        self._model: Any = None

    @property
    def model(self) -> Any:
        """The ``llm`` model object (resolved on first use)."""
        if self._model is None:
            self._model = _resolve("get_model", self.model_id, "model", "llm models")
        return self._model

    def complete(self, prompt: Prompt) -> str:
        """Send a memsdk prompt to the model; return the reply text."""
        model = self.model
        kwargs: dict[str, Any] = {"stream": False}
        if self.key is not None:
            kwargs["key"] = self.key
        messages = prompt.messages
        text: str | None
        llm = import_llm()
        # llm.system() / user() / assistant() build messages in llm versions that take them.
        makers = {
            role: getattr(llm, role)
            for role in ("system", "user", "assistant")
            if hasattr(llm, role)
        }
        if len(messages) == 1 and messages[0]["role"] == "user":
            text, kwargs["system"] = messages[0]["content"], prompt.system or None
        elif len(makers) == 3 and all(m["role"] in makers for m in messages):
            # With messages=, llm takes the list as the whole conversation; the
            # system prompt goes once, as its leading message (as llm's own
            # conversations store it), not also as system=, which an adapter
            # reading both prompt.system and prompt.messages would send twice.
            lead = [llm.system(prompt.system)] if prompt.system else []
            kwargs["messages"] = lead + [makers[m["role"]](m["content"]) for m in messages]
            text = None
        else:
            text = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)
            kwargs["system"] = prompt.system or None
        self.calls += 1
        try:
            response = model.prompt(text, **kwargs, **self.options)
            return str(response.text())
        except MemsdkError:
            raise
        except Exception as error:  # a provider's error, as one line for the command line
            raise LlmModelError(
                f"llm model {self.model_id!r} failed on a {prompt.purpose} prompt: "
                f"{type(error).__name__}: {error}"
            ) from error

    @hookimpl(tryfirst=True)
    def model_complete(self, prompt: Prompt) -> str:
        return self.complete(prompt)


class LlmEmbedder:
    """A plugin answering ``model_embed`` with the ``llm`` embedding model ``model_id``.

    :param model_id: an ``llm`` embedding model id or alias.
    :param key: an API key, or the name of one stored with ``llm keys set``.
    """

    def __init__(self, model_id: str, *, key: str | None = None) -> None:
        self.model_id = model_id
        self.key = key
        self.calls = 0
        self._model: Any = None

    @property
    def model(self) -> Any:
        """The ``llm`` embedding model object (resolved on first use)."""
        if self._model is None:
            self._model = _resolve(
                "get_embedding_model", self.model_id, "embedding model", "llm embed-models"
            )
        return self._model

    def embed(self, texts: list[str]) -> Embeddings:
        """Embed ``texts`` in the model's own batch size; the answer names the model."""
        model = self.model
        kwargs = {} if self.key is None else {"key": self.key}
        self.calls += 1
        try:
            vectors = [list(vector) for vector in model.embed_multi(texts, **kwargs)]
        except MemsdkError:
            raise
        except Exception as error:  # a provider's error, as one line for the command line
            raise LlmModelError(
                f"llm embedding model {self.model_id!r} failed: {type(error).__name__}: {error}"
            ) from error
        return Embeddings(model=f"llm:{model.model_id}", vectors=vectors)

    @hookimpl(tryfirst=True)
    def model_embed(self, texts: list[str]) -> Embeddings:
        return self.embed(texts)


def _resolve(getter: str, model_id: str, what: str, listing: str) -> Any:
    """``llm.<getter>(model_id)``; an unknown id is an :class:`LlmModelError` naming ``listing``."""
    llm = import_llm()
    try:
        return getattr(llm, getter)(model_id)
    except llm.UnknownModelError as error:
        raise LlmModelError(
            f"llm has no {what} {model_id!r} ({error.args[0] if error.args else error}); "
            f"`{listing}` lists the installed ones, llm plugins add more"
        ) from error
