"""A third-party plugin written only against ``plugin_sdk.plugin``, run through the real stages.

The plugin is ``tests/plugin/popular_first.py``: an ``injection_rank``, a
``historian_admit`` and a dreamer task, using the hook records and
``store.memories.list``/``find``. It is registered on the plugin manager of
``plugin_sdk.testing``'s fixtures (loaded in ``conftest.py``) and exercised by ``inject``, ``run_historian`` and
``Dreamer``. Its source may import nothing from memsdk but ``plugin_sdk.plugin``
and ``plugin_sdk.testing``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from plugin_sdk import Dreamer, Store, inject, run_historian, validate_pack
from plugin_sdk.plugin import Candidate, PluginManager, Ranked, hookimpl
from plugin_sdk.testing import ScriptedModel, pack_document
from tests.plugin import popular_first

PLUGIN = Path(popular_first.__file__)
GARDEN = pack_document("garden", "1.0.0", {"GARDEN_LOG": "content", "GARDEN_RULES": "intent"})
LOG = "GARDEN_LOG"
ALLOWED = {"plugin_sdk.plugin", "plugin_sdk.testing"}


@pytest.fixture
def garden(memsdk_store: Store) -> Store:
    memsdk_store.packs.install(validate_pack(GARDEN, source="test"))
    return memsdk_store


def use(pm: PluginManager) -> None:
    pm.register(popular_first, name="popular-first")  # checked against the hookspecs here


def test_the_plugin_imports_only_the_plugin_api():
    tree = ast.parse(PLUGIN.read_text("utf-8"), filename=str(PLUGIN))
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            used.add(node.module)
        elif isinstance(node, ast.Import):
            used.update(alias.name for alias in node.names)
    memsdk = {name for name in used if name.split(".")[0] == "plugin_sdk"}
    assert memsdk == {"plugin_sdk.plugin"}
    assert memsdk <= ALLOWED


def test_injection_shows_the_most_retrieved_first(garden, memsdk_plugins):
    basil = garden.memories.write("Sowed basil in tray 3.", LOG).id
    tomatoes = garden.memories.write("Watered the tomatoes at dawn.", LOG).id
    door = garden.memories.write("The greenhouse door sticks when wet.", LOG).id
    for _ in range(3):
        garden.memories.record_retrievals([basil])
    garden.memories.record_retrievals([tomatoes])
    # The built-in ranks the most recent first when nothing else differs.
    assert inject(garden, budget=4000).shown == [door, tomatoes, basil]

    use(memsdk_plugins)
    result = inject(garden, budget=4000)
    assert result.shown == [basil, tomatoes, door]
    lines = [line for line in result.text.splitlines() if line.startswith("- [")]
    assert lines[0] == f"- [{basil}] Sowed basil in tray 3."
    assert [line.split("]")[0] for line in lines] == [f"- [{i}" for i in result.shown]
    # Under a tighter budget the plugin's order decides what is dropped: the
    # least retrieved goes first.
    tight = inject(garden, budget=result.tokens - 1)
    assert tight.shown[0] == basil
    assert door in tight.left_out


def test_historian_keeps_a_full_category_for_a_person(
    garden, memsdk_plugins, scripted_model: ScriptedModel
):
    rules = "GARDEN_RULES"
    known = [garden.memories.write(f"Garden log entry {n}.", LOG).id for n in range(3)]
    reply = (
        f'<facts category="{LOG}">\n- Sowed basil in tray 3.\n</facts>\n'
        f'<facts category="{rules}">\n- Water before nine.\n</facts>'
    )
    chunk = [{"role": "user", "content": "I sowed basil in tray 3; water before nine."}]
    use(memsdk_plugins)

    scripted_model.add(reply)
    report = run_historian(garden, chunk)
    full = f"{LOG} holds {popular_first.QUOTA} active memories already; curate it first"
    assert [(q["category"], q["reason"]) for q in report.quarantined] == [(LOG, full)]
    [written] = report.written  # the other category is left to the built-in
    assert garden.memories.get(written).category == rules
    assert [m.id for m in garden.memories.list(category=LOG)] == known

    garden.memories.archive(known[0])  # archived memories do not count
    scripted_model.add(f'<facts category="{LOG}">\n- Sowed chard in tray 4.\n</facts>')
    again = run_historian(garden, [{"role": "user", "content": "Sowed chard in tray 4."}])
    assert again.quarantined == []
    assert [garden.memories.get(i).content for i in again.written] == ["Sowed chard in tray 4."]


def test_dreamer_task_pins_in_batches_by_id(garden, memsdk_plugins):
    notes = [garden.memories.write(f"Garden note number {n}.", LOG).id for n in range(5)]
    for _ in range(popular_first.PIN_AT):
        garden.memories.record_retrievals([notes[1], notes[4]])
    garden.memories.record_retrievals([notes[2]])
    use(memsdk_plugins)
    dreamer = Dreamer(garden)

    def pinned() -> list[int]:
        return [m.id for m in garden.memories.list(limit=None) if m.pinned]

    [first] = dreamer.run("pin-popular", max_batches=1)
    assert (first.handled, first.finished_pass) == (2, False)  # batch_size 2: notes 0 and 1
    assert pinned() == [notes[1]]
    [rest] = dreamer.run("pin-popular")
    assert (rest.handled, rest.finished_pass) == (3, True)
    assert pinned() == [notes[1], notes[4]]
    [status] = [s for s in dreamer.status() if s["task"] == "pin-popular"]
    assert status["total"] == 5 and status["passes"] == 1


# Ranked reads the memory id by name, whatever the order of a plugin's columns.


class OwnCandidates:
    """Replaces every candidate source by one Ranked sequence of dict rows (id not first)."""

    def __init__(self, memories: Sequence[tuple[int, int]]) -> None:
        self.rows = [{"tokens": tokens, "memory_id": memory_id} for memory_id, tokens in memories]
        self.made: list[int] = []

    def make(self, row: dict[str, Any]) -> Candidate:
        self.made.append(row["memory_id"])
        return Candidate(row["memory_id"], LOG, "content", 10, 50, None, row["tokens"])

    @hookimpl(wrapper=True)
    def injection_candidates(self) -> Iterator[None]:
        yield
        return [Ranked([], self.rows, self.make, min(row["tokens"] for row in self.rows))]


def test_ranked_reads_memory_ids_by_name(garden, memsdk_plugins):
    ids = [garden.memories.write(f"Row memory {n} " + "word " * 40, LOG).id for n in range(4)]
    costs = [garden.memories.get(i).token_count or 0 for i in ids]
    own = OwnCandidates(list(zip(ids, costs, strict=True)))
    memsdk_plugins.register(own, name="own-candidates")

    ranked = Ranked([], own.rows, own.make, min(costs))
    assert ranked.ids() == ids and own.made == []  # no candidate built to list the ids
    result = inject(garden, budget=costs[0] + 40)
    assert result.shown == [ids[0]]
    # Nothing more could fit: the injector stopped, and the ids of the rows it
    # never built come from Ranked.ids(), read by name.
    assert own.made == [ids[0]]
    assert result.left_out == dict.fromkeys(ids[1:], "over budget")
