"""The table of contents at scale: the map in levels, labels, every composite type, the ranking."""

from __future__ import annotations

import re
from pathlib import Path
from random import Random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_sdk import Store, validate_pack
from plugin_sdk.composites.labels import FILLERS
from plugin_sdk.composites.levels import EXPAND_BUDGET, Stats, plan, top_cost
from plugin_sdk.composites.mapping import MAP_SOURCE, map_category
from plugin_sdk.composites.titles import is_word_list, lead
from plugin_sdk.stages.dreamer import Dreamer
from plugin_sdk.stages.expand import expand
from plugin_sdk.stages.inject import inject
from plugin_sdk.store.search.query import shipped_stopwords as stopwords
from plugin_sdk.testing import fresh_plugin_manager

PACK = {
    "format": 1,
    "name": "fleet",
    "version": "1.0.0",
    "description": "A pack for table-of-contents tests.",
    "categories": {
        "FLEET_RULES": {"kind": "intent", "priority": 10, "criteria": {"definition": "Rules."}},
        "FLEET_STATE": {"kind": "content", "priority": 20, "criteria": {"definition": "State."}},
        "FLEET_NOTES": {"kind": "content", "priority": 30, "criteria": {"definition": "Notes."}},
    },
}
CATEGORIES = list(PACK["categories"])
TOPICS = {
    "postgres": ["replica", "failover", "patroni", "vacuum", "wal"],
    "kafka": ["broker", "partition", "consumer", "lag", "retention"],
    "gateway": ["route", "quota", "provider", "timeout", "fallback"],
    "kubernetes": ["node", "namespace", "rollout", "pod", "helm"],
    "billing": ["invoice", "stripe", "refund", "ledger", "currency"],
    "search": ["index", "shard", "reindex", "analyzer", "synonym"],
}
FILL = [
    "the",
    "a",
    "of",
    "to",
    "is",
    "for",
    "on",
    "with",
    "and",
    "that",
    "this",
    "it",
    "as",
    "be",
    "was",
    "at",
    "by",
]


def sentence(rng: Random) -> str:
    topic = rng.choice(sorted(TOPICS))
    words = [topic, *rng.sample(TOPICS[topic], 2)]
    words += [rng.choice(FILL) for _ in range(rng.randint(4, 30))]
    words += [f"{topic[:3]}-{rng.randint(1, 40)}"]
    rng.shuffle(words)
    return " ".join(words).capitalize() + "."


def open_store(path: str | Path) -> Store:
    store = Store(path, project="fleet", plugins=fresh_plugin_manager())
    store.packs.install(validate_pack(PACK, source="test"))
    return store


def fill(store: Store, count: int, seed: int = 3) -> None:
    rng = Random(seed)
    items = [
        {
            "content": f"{sentence(rng)} ({n})",
            "category": rng.choice(CATEGORIES),
            "importance": rng.randint(1, 100),
        }
        for n in range(count)
    ]
    store.memories.write_many(items)


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("toc") / "big.db"
    with open_store(path) as store:
        fill(store, 2500)
        Dreamer(store).run("map")
    return path


@pytest.fixture
def big(big_file: Path, tmp_path: Path):
    path = tmp_path / "big.db"
    path.write_bytes(big_file.read_bytes())
    with Store(path, project="fleet", plugins=fresh_plugin_manager()) as store:
        yield store


def walk(store: Store, shown: list[int], depth: int) -> list[set[int]]:
    """What expands of at most EXPAND_BUDGET tokens actually show, level by level."""
    reached, levels, frontier = set(shown), [set(shown)], list(shown)
    for _ in range(depth):
        found: set[int] = set()
        for memory_id in frontier:
            if store.composites.by_head(memory_id):
                result = expand(store, memory_id, budget=EXPAND_BUDGET, count_retrievals=False)
                assert result.left_out == [], memory_id  # the map keeps every expand whole
                found.update(result.shown)
        frontier = sorted(found - reached)
        reached |= found
        levels.append(set(reached))
    return levels


def map_groups(store: Store) -> list[tuple[int, str, dict]]:
    return [
        (c.head, store.memories.get(c.head).content, c.layout["map"])
        for c in store.composites.all(type="theme")
        if isinstance(c.layout, dict) and "map" in c.layout
    ]


def walk_units(store: Store, head: int) -> list:
    """Every memory under a map header (through the headers below it)."""
    found = []
    for composite in store.composites.by_head(head):
        for member in composite.members:
            if store.memories.get(member).source == MAP_SOURCE:
                found += walk_units(store, member)
            else:
                found.append(store.memories.get(member))
    return found


# The plan


def test_plan_gives_levels_only_where_the_block_needs_them():
    small, large = Stats(plain=300, headers=0), Stats(plain=200_000, headers=4_000)
    levels = plan({"A": small, "B": large}, 3200)
    assert levels["A"] == 0 and levels["B"] >= 2
    assert top_cost(small, 0) + top_cost(large, levels["B"]) <= 3200
    assert plan({"A": small}, 3200) == {"A": 0}


# The map on a store too large for the block


def test_every_memory_within_two_expands_each_within_the_expand_budget(big):
    result = inject(big, budget=4000)
    assert result.tokens <= 4000
    active = {m.id for m in big.memories.list(limit=None)}
    levels = walk(big, result.shown, 2)
    assert levels[2] >= active
    assert result.coverage_by_depth[2] == 1.0
    assert result.coverage_by_depth[0] < result.coverage_by_depth[1] <= 1.0
    assert [len(level & active) for level in levels] == result.reached_by_depth


def test_groups_are_labelled_by_distinctive_terms_never_stopwords(big):
    groups = map_groups(big)
    assert groups
    stop = stopwords() | FILLERS
    for head, text, layout in groups:
        words = layout["terms"]
        assert words and text != ", ".join(words) and not is_word_list(text)
        leads = {lead(big.memories.get(u.id).content) for u in walk_units(big, head)}
        assert text.split(" (")[0] in leads  # the header names the group by a member's clause
        assert not set(words) & stop
        assert not set(words) & set(FILL)
    topics = {w for _, _, layout in groups for w in layout["terms"]}
    assert topics & set(TOPICS)  # groups say what they hold


def test_group_lines_say_what_an_expand_shows(big):
    result = inject(big)
    notes = re.findall(r"^- \[(\d+): ([^\]]+)\] ", result.text, re.M)
    assert notes
    layouts = {head: layout for head, _, layout in map_groups(big)}
    for head, note in notes:
        layout = layouts[int(head)]
        if layout["groups"]:
            assert note == f"{layout['groups']} groups, {layout['memories']} memories"
        else:
            assert note == f"{layout['memories']} memories"
        shown = expand(big, int(head), count_retrievals=False).shown
        assert len(shown) == layout["members"]


def test_a_small_store_gets_no_groups(tmp_path):
    with open_store(tmp_path / "small.db") as store:
        fill(store, 12)
        Dreamer(store).run("map")
        assert map_groups(store) == []
        result = inject(store)
        assert result.coverage_by_depth[0] == 1.0


def test_a_new_memory_joins_a_group_and_headers_keep_their_ids(big):
    before = {head for head, _, _ in map_groups(big)}
    new = big.memories.write(
        "Kafka broker partition lag on kaf-7 after the retention change.", "FLEET_STATE"
    ).id
    map_category(big, "fleet", "FLEET_STATE")
    after = map_groups(big)
    assert {head for head, _, _ in after} == before
    holders = [c.head for c in big.composites.by_member(new)]
    assert len(holders) == 1
    assert inject(big).coverage_by_depth[2] == 1.0


def test_a_member_archived_marks_its_group_stale_and_the_map_relabels_it(big):
    head, _, layout = next(g for g in map_groups(big) if g[2]["level"] == 1)
    [composite] = [c for c in big.composites.by_head(head) if c.type == "theme"]
    member = composite.members[0]
    big.memories.archive(member)
    assert big.composites.get(composite.id).stale_since is not None
    category = big.memories.get(head).category
    map_category(big, "fleet", category)
    current = big.composites.get(composite.id)
    assert current.stale_since is None
    assert member not in current.members
    assert current.layout["map"]["memories"] == layout["memories"] - 1


def test_header_text_is_refreshed_from_a_model_when_the_host_has_one(tmp_path):
    class Namer:
        from plugin_sdk import hookimpl

        @hookimpl
        def model_complete(self, prompt):
            if prompt.purpose == "map_label":
                terms = prompt.messages[0]["content"].splitlines()[0].split(": ", 1)[1]
                return f"All about {terms.split(', ')[0]}"
            return None

    plugins = fresh_plugin_manager()
    plugins.register(Namer(), name="namer")
    with Store(tmp_path / "named.db", project="fleet", plugins=plugins) as store:
        store.packs.install(validate_pack(PACK, source="test"))
        fill(store, 1500)
        Dreamer(store).run("map")
        texts = [text for _, text, _ in map_groups(store)]
        assert texts and all(text.startswith("All about ") for text in texts)


# Every composite type surfaces


def test_cause_and_alternatives_heads_say_so_and_expand_in_order(tmp_path):
    with open_store(tmp_path / "kinds.db") as store:
        write = store.memories.write
        outage = write("Checkout was down for 40 minutes on 2 March.", "FLEET_STATE").id
        causes = [
            write(text, "FLEET_NOTES").id
            for text in ("A bad config push.", "No canary stage.", "Alert routed to nobody.")
        ]
        choice = write("Pick a queue for the order events.", "FLEET_RULES").id
        options = [write(t, "FLEET_NOTES").id for t in ("Use Kafka.", "Use SQS.")]
        sop = write("SOP: restart the ledger.", "FLEET_RULES").id
        steps = [write(t, "FLEET_NOTES").id for t in ("1. Drain it.", "2. Restart it.")]
        group = write("Ledger notes.", "FLEET_STATE").id
        store.composites.create("cause", outage, causes)
        store.composites.create("alternatives", choice, options)
        store.composites.create("sequence", sop, steps)
        store.composites.create("theme", group, [causes[0], options[0]])
        text = inject(store).text
        lines = text.splitlines()
        assert any(line.startswith(f"- [{outage}: 3 causes] Checkout") for line in lines)
        assert any(line.startswith(f"- [{choice}: 2 alternatives] Pick") for line in lines)
        assert any(line.startswith(f"- [{sop}: 2 details] SOP") for line in lines)
        assert any(line.startswith(f"- [{group}: 2 memories] Ledger") for line in lines)
        assert expand(store, outage).shown == causes
        assert expand(store, choice).shown == options
        assert expand(store, sop).shown == steps
        assert expand(store, group).shown == [causes[0], options[0]]
        # a memory heading two kinds shows both, sequence first, under headings
        store.composites.create("cause", sop, [outage])
        both = expand(store, sop)
        assert both.shown == [*steps, outage]
        assert "## 2 details" in both.text and "## 1 causes" in both.text
        result = inject(store, budget=60)
        reached = result.reached_by_depth
        assert reached[1] > reached[0]  # members one expand away count in coverage


# Budget use and the hard cap


@pytest.mark.parametrize("budget", [1000, 1500, 2000, 3000, 4000])
def test_budget_use_at_least_97_percent_when_candidates_exceed_it(big, budget):
    result = inject(big, budget=budget)
    assert result.tokens == big.tokenizer.count(result.text) <= budget
    assert result.tokens >= 0.97 * budget


@settings(max_examples=25, deadline=None)
@given(st.integers(1000, 6000))
def test_budget_use_over_budgets(budget):
    result = inject(_SHARED["store"], budget=budget)
    assert result.tokens == _SHARED["store"].tokenizer.count(result.text) <= budget
    assert result.tokens >= 0.97 * budget
    assert inject(_SHARED["store"], budget=budget).text == result.text


_SHARED: dict[str, Store] = {}


@pytest.fixture(autouse=True, scope="module")
def _shared(big_file: Path):
    with Store(big_file, project="fleet", plugins=fresh_plugin_manager()) as store:
        _SHARED["store"] = store
        yield
    _SHARED.clear()


# The ranking the store keeps


operations = st.lists(
    st.tuples(
        st.sampled_from(["write", "archive", "pin", "sequence", "theme", "cause", "merge", "drop"]),
        st.integers(0, 30),
        st.integers(0, 30),
    ),
    max_size=25,
)


@settings(max_examples=40, deadline=None)
@given(operations)
def test_the_ranking_always_equals_what_it_is_derived_from(ops):
    with open_store(":memory:") as store:
        fill(store, 12, seed=len(ops))
        for op, a, b in ops:
            ids = [m.id for m in store.memories.list(limit=None)]
            if not ids:
                break
            x, y = ids[a % len(ids)], ids[b % len(ids)]
            try:
                if op == "write":
                    store.memories.write(f"note {a} {b}", CATEGORIES[a % 3])
                elif op == "archive":
                    store.memories.archive(x)
                elif op == "pin":
                    store.memories.update(x, pinned=not store.memories.get(x).pinned)
                elif op in ("sequence", "theme", "cause") and x != y:
                    store.composites.create(op, x, [y])
                elif op == "merge" and x != y:
                    store.memories.merge([y], x)
                elif op == "drop":
                    for composite in store.composites.by_member(x):
                        store.composites.remove(composite.id, x)
            except Exception as error:  # refused operations leave the store as it was
                assert type(error).__name__ in ("MergeRefused", "CompositeError", "MemsdkError")
        kept = store.db.execute("SELECT * FROM toc_rank ORDER BY memory_id").fetchall()
        derived = store.db.execute(
            "SELECT * FROM toc_rank_source WHERE tier IS NOT NULL ORDER BY memory_id"
        ).fetchall()
        assert kept == derived


def test_headers_source_is_the_map(big):
    sources = {big.memories.get(head).source for head, _, _ in map_groups(big)}
    assert sources == {MAP_SOURCE}


def test_a_smaller_block_gets_more_levels_and_still_reaches_everything(tmp_path, monkeypatch):
    import plugin_sdk.composites.mapping as mapping

    monkeypatch.setattr(mapping, "BLOCK_BUDGET", 700)
    with open_store(tmp_path / "deep.db") as store:
        fill(store, 2500)
        Dreamer(store).run("map")
        levels = {layout["level"] for _, _, layout in map_groups(store)}
        assert max(levels) >= 2
        result = inject(store, budget=700)
        active = {m.id for m in store.memories.list(limit=None)}
        assert walk(store, result.shown, 2)[2] >= active


def test_mapping_an_unchanged_store_again_changes_nothing(big):
    before = sorted(c.id for c in big.composites.all(type="theme"))
    heads = {head for head, _, _ in map_groups(big)}
    long = big.memories.write("Kafka broker notes. " + "partition lag detail " * 300, "FLEET_STATE")
    for category in CATEGORIES:
        map_category(big, "fleet", category)
    after_long = sorted(c.id for c in big.composites.all(type="theme"))
    for category in CATEGORIES:
        map_category(big, "fleet", category)
    assert sorted(c.id for c in big.composites.all(type="theme")) == after_long
    assert heads  # (a memory with no room in any group made the category regroup once)
    assert before
    # a memory too long for the block is still one expand away (in a group of its own)
    assert len([c for c in big.composites.by_member(long.id) if c.type == "theme"]) == 1
    assert inject(big).coverage_by_depth[2] == 1.0


def test_the_account_is_read_while_the_store_is_open(tmp_path):
    from plugin_sdk import MemsdkError

    with open_store(tmp_path / "acct.db") as store:
        fill(store, 30)
        settled = inject(store, budget=300).settle()
        lazy = inject(store, budget=300)
    assert settled.coverage_by_depth[0] == settled.reached_by_depth[0] / settled.active
    with pytest.raises(MemsdkError, match="before the store is closed"):
        lazy.coverage  # noqa: B018


@pytest.mark.parametrize("paged", [False, True])
def test_a_category_tier_streams_every_row_once_in_rank_order(new_store, paged):
    """``RankReader`` on a category's tier: read by pages (PostgreSQL's way, tried on
    both engines) or stepped (SQLite's), every ranked row comes once, in the order
    of ``toc_rank_order``, also when the stream is left part way and read again."""
    from plugin_sdk.store.tables.composites import toc

    store = new_store(validate_pack(PACK, source="test"), project="fleet")
    fill(store, 400, seed=11)  # about 130 a category: unmapped, tier 2; pages of 16, 64, 256
    rows = store.db.execute(
        f"SELECT r.memory_id FROM toc_rank r WHERE r.project = ? AND r.tier = 2 "
        f"AND r.category = ? ORDER BY {toc.ORDER}",
        ["fleet", "FLEET_STATE"],
    ).fetchall()
    expected = [row[0] for row in rows]
    assert len(expected) > toc.FETCH * 5  # three pages
    reader = toc.TocRows(store).reader()
    reader.paged = paged
    streamed = [row[0] for row in reader.category_tier("fleet", 2, "FLEET_STATE")]
    assert streamed == expected
    partial = reader.category_tier("fleet", 2, "FLEET_STATE")
    assert [next(partial)[0] for _ in range(toc.FETCH + 1)] == expected[: toc.FETCH + 1]
    assert reader.any_in_tier("fleet", 2) and not reader.any_in_tier("fleet", 3)


def test_a_paged_stream_skips_no_unchanged_row_when_another_writer_commits(new_store):
    """Each page of a paged stream is its own snapshot. A writer that removes a row
    already read (an ``OFFSET`` would then skip the next one) and moves a later row
    to the end, between two pages, moves that row at most; every other row still
    comes once, in rank order."""
    from plugin_sdk.store.tables.composites import toc

    store = new_store(validate_pack(PACK, source="test"), project="fleet")
    fill(store, 400, seed=11)
    order = (
        "SELECT r.memory_id FROM toc_rank r WHERE r.project = 'fleet' AND r.tier = 2 "
        f"AND r.category = 'FLEET_STATE' ORDER BY {toc.ORDER}"
    )
    expected = [row[0] for row in store.db.execute(order).fetchall()]
    reader = toc.TocRows(store).reader()
    reader.paged = True
    stream = reader.category_tier("fleet", 2, "FLEET_STATE")
    first = [next(stream)[0] for _ in range(toc.FETCH)]  # the whole first page
    read, moved = first[2], expected[toc.FETCH + 10]
    with store.atomic():
        store.db.execute("DELETE FROM toc_rank WHERE memory_id = ?", [read])
        store.db.execute("UPDATE toc_rank SET importance = -1 WHERE memory_id = ?", [moved])
    rest = [row[0] for row in stream]
    streamed = first + rest
    assert len(streamed) == len(set(streamed))
    assert [i for i in streamed if i != moved] == [i for i in expected if i != moved]
