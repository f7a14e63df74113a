"""recall(): the block for this turn, within a hard token budget; inject's recall section."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin_sdk import MemsdkError, Store, inject, recall, resolve_pack
from plugin_sdk.cli import cli
from plugin_sdk.store.search.ranking import set_setting

FIXED = datetime(2026, 6, 15, 12, 0, tzinfo=timezone.utc)
WORDS = [
    "kafka",
    "broker",
    "retention",
    "pager",
    "ferry",
    "tomato",
    "the",
    "of",
    "<tag>",
    "&amp;",
    "</memory-recall>",
]


def test_recall_answers_a_question_with_dated_lines_and_an_account(store: Store) -> None:
    ferry = store.memories.write(
        "The ferry to the island leaves at nine.", "RESEARCH", occurred_at="2026-05-02T08:00:00Z"
    )
    store.memories.write("Kafka retention is seven days.", "CONFIG_VALUES")
    result = recall(store, "When does the island ferry leave?", budget=300)
    assert result.shown == [ferry.id]
    assert result.text == (
        "<memory-recall>\n"
        f"- [{ferry.id}] (2026-05-02) RESEARCH: The ferry to the island leaves at nine.\n"
        "</memory-recall>"
    )
    assert result.tokens == store.tokenizer.count(result.text) <= 300
    assert "matched ferry, island, leave" in result.why[ferry.id][0]
    assert store.memories.get(ferry.id).retrieval_count == 1


def test_recall_counts_retrievals_only_for_what_it_shows(store: Store) -> None:
    shown = store.memories.write("Kafka brokers: k1.", "ENV_STATE")
    left = store.memories.write("Kafka " + "retention policy notes " * 60, "ENV_STATE")
    result = recall(store, "kafka brokers", budget=40)
    assert result.shown == [shown.id]
    assert left.id in result.left_out
    assert store.memories.get(left.id).retrieval_count == 0
    assert store.memories.get(shown.id).retrieval_count == 1
    nothing = recall(store, "zeppelin", budget=40)
    assert (nothing.text, nothing.tokens, nothing.shown) == ("", 0, [])
    with pytest.raises(MemsdkError, match="budget"):
        recall(store, "kafka", budget=0)


def test_a_header_comes_with_its_matching_details_and_a_sequence_hit_with_neighbours(
    store: Store,
) -> None:
    header = store.memories.write("Release checklist", "OPS_RULES", importance=80)
    steps = [
        store.memories.write(text, "OPS_RULES").id
        for text in ("Step 1: run make check.", "Step 2: tag the release.", "Step 3: push the tag.")
    ]
    store.composites.create("sequence", header.id, steps)
    # Search's sequence signal finds step 1 beside step 2 (next to a match) ...
    found = recall(store, "release checklist: how do we tag it?", budget=500)
    assert "next to a match" in found.why[steps[0]]
    # ... and without it, recall still brings step 1 as the context of step 2.
    set_setting(store, "neighbour_1", 0)
    result = recall(store, "release checklist: how do we tag it?", budget=500)
    lines = result.text.splitlines()
    assert lines[1] == f"- [{header.id}] OPS_RULES: Release checklist"
    assert f"  - [{steps[1]}] OPS_RULES: Step 2: tag the release." in lines
    assert f"detail of [{header.id}]" in result.why[steps[1]]
    # Step 3 ("push the tag") matches too; step 1 comes as a neighbour of step 2.
    assert f"  - [{steps[0]}] (context) OPS_RULES: Step 1: run make check." in result.text
    assert result.why[steps[0]] == [f"next to [{steps[1]}] in a sequence"]
    assert len(result.shown) == len(set(result.shown)) == 4


def test_an_entity_named_in_the_query_brings_its_compiled_truth_line(store: Store) -> None:
    from plugin_sdk.retain.truth import regenerate

    memory = store.memories.write("Anya owns the billing database.", "ENV_STATE")
    store.entities.link(memory.id, ["crew:anya"])
    regenerate(store, "crew:anya")
    result = recall(store, "what does anya own?", budget=400)
    assert result.shown == [memory.id]
    assert result.truths and result.truths[0].startswith("- crew:anya (compiled truth): ")
    assert result.text.splitlines()[1] == result.truths[0]
    assert "names an entity of the query" in result.why[memory.id]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map(" ".join),
        min_size=1,
        max_size=12,
    ),
    query=st.text(min_size=1, max_size=30)
    | st.sampled_from(["kafka broker", "ferry of the tomato"]),
    budget=st.integers(1, 400),
)
def test_recall_never_exceeds_its_budget_and_is_byte_identical(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], query: str, budget: int
) -> None:
    with Store(tmp_path_factory.mktemp("r") / "m.db", project="p", clock=lambda: FIXED) as store:
        store.packs.install(resolve_pack("ops"))
        for n, text in enumerate(texts):
            store.memories.write(f"{text} #{n}", "RESEARCH", occurred_at="2026-05-01")
        first = recall(store, query, budget=budget)
        again = recall(store, query, budget=budget)
        assert first.tokens <= budget
        assert first.tokens == store.tokenizer.count(first.text)
        assert (again.text, again.shown) == (first.text, first.shown)
        # memory text arrives exact ("<tag>" stays) but cannot forge the block's tags
        assert re.findall(r"</?memory", first.text) in ([], ["<memory", "</memory"])


def test_inject_with_the_current_message_adds_a_recall_section_within_the_budget(
    store: Store,
) -> None:
    for i in range(30):
        store.memories.write(f"Service {i} runs on host h{i}.", "ENV_STATE")
    plain = inject(store, budget=500)
    assert plain.recalled == []
    both = inject(store, budget=500, message="Which host runs service 7?", session="s1")
    assert both.tokens <= 500 and both.tokens == store.tokenizer.count(both.text)
    assert both.text.endswith("</memory-recall>")
    assert both.recalled[0] == 8
    assert store.memories.get(8).retrieval_count >= 1


def test_memsdk_recall_prints_the_block_and_json(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    env = {"MEMSDK_DB": db, "MEMSDK_PROJECT": "cli"}
    runner = CliRunner()
    assert runner.invoke(cli, ["init", "--pack", "ops"], env=env).exit_code == 0
    wrote = runner.invoke(
        cli,
        [
            "memory",
            "write",
            "Ferry leaves at nine.",
            "-c",
            "RESEARCH",
            "--occurred-at",
            "2026-05-02",
        ],
        env=env,
    )
    assert wrote.exit_code == 0, wrote.output
    out = runner.invoke(cli, ["recall", "when does the ferry leave?", "--budget", "100"], env=env)
    assert out.exit_code == 0 and "- [1] (2026-05-02) RESEARCH: Ferry leaves at nine." in out.output
    data = json.loads(runner.invoke(cli, ["recall", "ferry", "--json"], env=env).output)
    assert (data["shown"], data["budget"]) == ([1], 1500)
    assert data["why"]["1"] == ["matched ferry"]
    searched = json.loads(
        runner.invoke(cli, ["memory", "search", "ferry?", "--json"], env=env).output
    )
    assert searched[0]["why"] == ["matched ferry"] and searched[0]["occurred_at"].startswith(
        "2026-05-02"
    )


class Recording:
    """The default counter, additive like it, recording what it is asked to count."""

    def __init__(self) -> None:
        from plugin_sdk.store.tokens import default_counter

        self.inner = default_counter()
        self.name = (
            f"recording:{self.inner.name}"  # its own counts: no memo shared with other tests
        )
        self.additive = True
        self.given: list[str] = []

    def count(self, text: str) -> int:
        self.given.append(text)
        return int(self.inner.count(text))


def test_a_recall_counts_exactly_and_a_repeat_in_a_new_process_tokenizes_nothing(
    tmp_path: Path,
) -> None:
    from plugin_sdk.store import tokens

    path = tmp_path / "m.db"
    counter = Recording()
    with Store(path, project="p", tokenizer=counter) as store:
        store.packs.install(resolve_pack("ops"))
        header = store.memories.write("Release checklist", "OPS_RULES").id
        steps = [
            store.memories.write(text, "OPS_RULES").id
            for text in ("Step 1: run make check.\n\nthen   wait", "Step 2: tag the release.")
        ]
        store.composites.create("sequence", header, steps)
        store.memories.write("Tag names: v1.2.3 &&\n  make release > log", "CONFIG_VALUES")
        first = recall(store, "release checklist: tag and make check", budget=500)
        assert "\n  - [" in first.text  # indented detail lines are in the block
        assert first.tokens == counter.inner.count(first.text)
    tokens.clear_memo()  # a new process: nothing in memory, the counts in the store
    counter = Recording()
    with Store(path, project="p", tokenizer=counter) as store:
        again = recall(store, "release checklist: tag and make check", budget=500)
        assert (again.text, again.tokens) == (first.text, first.tokens)
        assert counter.given == []


def test_recall_without_record_writes_nothing(store: Store) -> None:
    store.memories.write("The ferry to the island leaves at nine.", "RESEARCH")
    rows = (
        "SELECT (SELECT count(*) FROM token_counts), (SELECT total(retrieval_count) FROM memories)"
    )
    before = store.db.execute(rows).fetchone()
    assert recall(store, "island ferry", budget=300, record=False).shown
    assert store.db.execute(rows).fetchone() == before
