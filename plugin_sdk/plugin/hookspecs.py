"""The hook specifications: the reference for plugin authors.

A plugin is a module or object with functions marked ``@hookimpl`` whose names
and parameters match the specs below (a hookimpl may take any subset of a
spec's parameters, and never gives them defaults). Register it through the
``plugin_sdk`` entry-point group (see ``docs/writing-a-plugin.md``).

Call semantics, chosen per hook:

- **firstresult** hooks *decide*: pluggy calls implementations newest first
  (``tryfirst``/``trylast`` adjust) and stops at the first non-``None``
  result. The built-in implementation is the fallback; a plugin overrides it by
  returning a value, or defers by returning ``None``.
- **plain** hooks *collect* or *notify*: every implementation runs and the
  results come back as a list.
- Any hook can be wrapped with ``@hookimpl(wrapper=True)`` for around-advice
  (timing, redaction, logging); no spec needs to say so.

Every category a hook sees comes from the store (``store.categories()``);
nothing here names one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click

    from plugin_sdk.grid.entities import Entity
    from plugin_sdk.plugin.records import (
        Admission,
        Candidate,
        CellDecision,
        Classification,
        DreamerTask,
        Embeddings,
        Fact,
        Observation,
        ParsedReply,
        Prompt,
        RetainHandler,
    )
    from plugin_sdk.proposals.filing import ProposalDraft
    from plugin_sdk.store.connection import Store
    from plugin_sdk.store.models import Memory, SearchHit
    from plugin_sdk.store.tokens import TokenCounter

PROJECT_NAME = "plugin_sdk"
hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


# Registries: called once when something needs the registry.


@hookspec
def register_packs(register: Callable[[Any], None]) -> None:
    """Offer packs by calling ``register(obj)`` for each.

    ``obj`` is what a ``plugin_sdk.packs.documents`` entry point may name: a path to a
    pack file, a mapping (the document), or a callable returning either. A
    pack name offered twice (here or by an entry point) is an error naming
    both origins.

    :param register: call once per pack.
    """


@hookspec
def register_dreamer_tasks(register: Callable[[DreamerTask], None]) -> None:
    """Add dreamer tasks by calling ``register(task)`` with a ``DreamerTask``.

    Task names are unique: registering a name twice fails at startup with an
    error naming the name.

    :param register: call once per task.
    """


@hookspec
def register_commands(cli: click.Group) -> None:
    """Add commands or groups to the ``memsdk`` command line.

    :param cli: the top-level click group; use ``@cli.command()`` on it.
    """


# The model: the host's. Tests register a scripted model (plugin_sdk.testing).


@hookspec(firstresult=True)
def model_complete(prompt: Prompt) -> str | None:
    """Complete a prompt with the host's model; return the reply text.

    Stops at the first non-``None`` result. With no implementation returning
    text, stages that need a model use their model-free fallback (classify,
    compiled summaries) or report that no model is configured (historian).

    :param prompt: the system prompt, the messages and the purpose.
    """


@hookspec(firstresult=True)
def model_embed(texts: list[str], purpose: str) -> list[list[float]] | Embeddings | None:
    """Embed texts with the host's embedding model (optional).

    Stops at the first non-``None`` result; must return one vector per text,
    all of one length. Return an ``Embeddings`` record to name the model: the
    store keeps vectors per model, searches only the current model's, and the
    ``embed`` dreamer task re-embeds when the name changes. A plain list of
    vectors still works (its model is then known by its length only).

    :param texts: the texts, in order.
    :param purpose: ``"document"`` (texts to store) or ``"query"`` (a search);
        models trained with different prefixes for the two can use it, others
        ignore it (an implementation may leave the parameter out).
    """


@hookspec(firstresult=True)
def token_counter() -> TokenCounter | None:
    """Supply the token counter stores use (an object with ``name`` and ``count(text)``).

    Stops at the first non-``None`` result; the default is tiktoken's
    ``cl100k_base`` from the offline copy.
    """


# Historian: transcript chunk -> prompt -> model -> parsed facts -> admitted.


@hookspec(firstresult=True)
def historian_prompt(
    store: Store, messages: list[dict[str, str]], view: list[Memory]
) -> Prompt | None:
    """Build the historian's prompt for one transcript chunk.

    Stops at the first non-``None`` result. The built-in assembles the system
    prompt from the store's criteria (``prompts.historian_system``).

    :param store: the store; its categories and criteria are the vocabulary.
    :param messages: the chunk, as chat messages; a user message carrying
        ``"explicit": "remember"`` is one in which the user asked outright
        that it be remembered (``transcript_text`` heads it so).
    :param view: a bounded view of existing memories (search hits for the
        chunk), so the model can avoid repeating what is known.
    """


@hookspec(firstresult=True)
def historian_parse(store: Store, reply: str) -> ParsedReply | None:
    """Parse the model's reply into facts per category.

    Stops at the first non-``None`` result. The built-in reads the tagged
    format the built-in prompt asks for (``<facts category="NAME">`` blocks,
    one ``- fact`` per line); see ``docs/hooks.md`` for what a partly broken
    reply yields.

    :param store: the store.
    :param reply: the model's raw reply.
    """


@hookspec(firstresult=True)
def historian_admit(store: Store, fact: Fact) -> Admission | None:
    """Decide how one parsed fact enters the store.

    Stops at the first non-``None`` result. Return ``Admission("write")`` to
    write it (deduplicated) or ``Admission("quarantine", reason)`` to keep it
    aside; there is no way to drop a fact silently. The built-in writes facts
    in active categories and quarantines the rest.

    :param store: the store.
    :param fact: the fact, with the category tag the model gave it.
    """


# Classify: importance, scope, shareable. Never the category.


@hookspec(firstresult=True)
def classify_memory(store: Store, memory: Memory) -> Classification | None:
    """Decide importance (1..100), scope and shareable for a memory.

    Stops at the first non-``None`` result. The built-ins: a model-backed
    classifier (when ``model_complete`` answers) and a rule-based one from
    pack data. A classifier never changes a category; the criteria are
    context it may read.

    :param store: the store.
    :param memory: the memory to classify.
    """


@hookspec(firstresult=True)
def classify_cell(
    store: Store, text: str, category: str | None, interaction: bool
) -> CellDecision | None:
    """Place a memory or an entity on the grid (memory type × referent).

    Stops at the first non-``None`` result. The built-ins: a model-backed
    classifier (when ``model_complete`` answers) and a rule-based one that
    counts the pack's cues (``grid.cues``) and the category's usual cell
    (``grid.category_cells``); see ``plugin_sdk/grid/cells.py``. For an
    interaction memory (one linked to an actor), the decision also names its
    illocutionary act.
    A cell classifier never changes a category.

    :param store: the store (its grid: ``grid(store)``, from ``plugin_sdk.plugin``).
    :param text: the memory's text, or an entity's name with ``:`` as spaces.
    :param category: the memory's category; ``None`` for an entity.
    :param interaction: whether to decide an illocutionary act too.
    """


# Fragmentation: long memories become a header and details.


@hookspec(firstresult=True)
def split_memory(store: Store, memory: Memory) -> list[str] | None:
    """Split a long memory's text into pieces for fragmentation.

    Stops at the first non-``None`` result. The pieces, concatenated, must
    equal ``memory.content`` exactly (so header and details reconstruct it);
    return ``None`` (or fewer than two pieces) when the text has no natural
    parts. The built-in splits numbered steps, then ``key = value`` lines,
    then paragraphs.

    :param store: the store.
    :param memory: the memory to split.
    """


# Injection: candidates -> ranking -> rendering (the injector uses them).


@hookspec
def injection_candidates(store: Store, project: str) -> Sequence[Candidate]:  # type: ignore[empty-body]
    """Offer memories the injector may show for ``project``.

    Every implementation runs; the offers are concatenated and deduplicated
    by memory id (the first offer wins); a single offer is passed on as it
    is. Any sequence will do: the built-in returns a ``Ranked`` sequence that
    builds candidates only when the injector reaches them. A candidate may
    leave ``content`` as ``None``: the injector loads the text of the ones it
    shows, so offering a large store stays cheap.

    :param store: the store.
    :param project: the project being injected.
    """


@hookspec(firstresult=True)
def injection_rank(store: Store, candidates: Sequence[Candidate]) -> Sequence[Candidate] | None:
    """Order candidates by value, best first; the injector packs greedily in this order.

    Stops at the first non-``None`` result. The order must be deterministic
    (a total order), so the same store gives byte-identical output.

    :param store: the store.
    :param candidates: every candidate offered.
    """


@hookspec(firstresult=True)
def injection_render(store: Store, chosen: list[Candidate]) -> str | None:
    """Render the chosen candidates as the text put in front of the model.

    Stops at the first non-``None`` result. The injector counts the rendered
    text's tokens and drops candidates until it fits the budget, so a renderer
    must be monotone: fewer candidates never give more tokens.

    :param store: the store; categories give section order and labels.
    :param chosen: the candidates to show, in rank order.
    """


# The Retain Job: observations become graph state (docs/retain.md).


@hookspec
def register_retain_handlers(register: Callable[[RetainHandler], None]) -> None:
    """Add Retain Job handlers by calling ``register(handler)`` with a ``RetainHandler``.

    A handler is indexed by (category or ``None`` for any, namespace pattern);
    for each observation the job runs the most specific handler matching its
    category and its target entity (the first actor), else the default one
    (``plugin_sdk/retain/handlers.py``). Two handlers with the same name, or the
    same category and pattern, are an error naming both when the job starts.

    :param register: call once per handler.
    """


@hookspec(firstresult=True)
def schema_fit(
    store: Store, observation: Observation, entities: Mapping[str, Entity | None]
) -> float | None:
    """Measure how well an observation fits patterns already in the graph, from 0 to 1.

    Stops at the first non-``None`` result, which must be a number in 0..1
    (anything else fails the observation). Called before the observation
    writes anything; the result picks its route (below the pack's
    ``retain.dark_matter_below``: dark matter; above ``fast_track_above``:
    fast-track). The built-in is ``schema_fit.measure``, a weighted mean of how
    known the actors are, whether the taxonomy has their namespaces, how
    familiar the topic is and how much of the payload's structure exists.

    :param store: the store.
    :param observation: the observation, not yet written.
    :param entities: every entity name it uses, resolved: the entity, or
        ``None`` when the store does not have it yet.
    """


# Search: what ``store.memories.search`` and ``recall`` find (docs/search.md).


@hookspec
def search_candidates(store: Store, query: str, project: str, limit: int) -> list[int] | None:
    """Offer memory ids for a query, best first (vectors, a graph walk, another index).

    Every implementation runs. Each non-empty list is fused with the lexical
    ranking: a memory's ranked score as a share of the best one, *s*, and
    for each list that holds it ``v = w × (k + 1) / (k + position)``
    (position from 1; ``w`` and ``k`` the store's ``plugin_weight`` and
    ``rrf_k`` settings, 0.3 and 60 by default) give ``s + v × (1 − s)``, a
    noisy OR: the lexical leader stays first (see docs/search.md). Ids that are not live
    memories readable from ``project`` are dropped. Return ``None`` (or an
    empty list) to offer nothing.

    :param store: the store.
    :param query: the query as the caller typed it.
    :param project: the project searched.
    :param limit: how many ids are useful at most.
    """


@hookspec(firstresult=True)
def search_rank(store: Store, query: str, hits: list[SearchHit]) -> list[SearchHit] | None:
    """Reorder (or filter) a search's results before they are returned.

    Stops at the first non-``None`` result. Without an implementation the
    order is the built-in ranking (``docs/search.md``). ``recall`` packs
    memories in the order this returns.

    :param store: the store.
    :param query: the query as the caller typed it.
    :param hits: the results, best first, each with its ``score`` and ``why``.
    """


# Store events: notifications after the change has been committed.


@hookspec
def memory_written(store: Store, memory_id: int, created: bool) -> None:
    """A memory was written (``created``) or a repeat was folded into it.

    Fires after the transaction commits, once per item of a batch. An
    exception propagates to the caller; the write stays.
    """


@hookspec
def memories_written(store: Store, written: list[tuple[int, bool]]) -> None:
    """Memories were written: ``(memory_id, created)`` for each item of one write call, in order.

    The batch form of :func:`memory_written`, for a listener that does one
    thing per batch (one query, one embedder call): once per ``write``
    (a batch of one) or ``write_many`` call, after the outermost transaction
    commits, before the ``memory_written`` calls of the same items (a
    transaction holding two calls fires it twice). A memory folded twice in
    one batch is listed twice. An exception propagates to the caller, and
    the items' ``memory_written`` calls do not happen; the writes stay.
    """


@hookspec
def memories_merged(store: Store, source_ids: list[int], target_id: int) -> None:
    """Memories were merged into ``target_id`` (the sources are now superseded)."""


@hookspec
def memory_archived(store: Store, memory_id: int) -> None:
    """A memory was archived."""


# Actuation: detectors turn recurring patterns into proposals for a person.


@hookspec
def detect_patterns(store: Store, project: str) -> list[ProposalDraft]:  # type: ignore[empty-body]
    """Find recurring patterns in ``project`` and suggest changes as proposal drafts.

    Every implementation runs; the drafts are filed in the approval queue
    (``detect.run_detectors``, ``memsdk queue detect``), where nothing is
    applied until a person approves. A detector only reads: it never writes
    to the store or to files. An identical pending proposal is filed once,
    and a change a person already rejected is not filed again.

    :param store: the store.
    :param project: the project to look at.
    """
