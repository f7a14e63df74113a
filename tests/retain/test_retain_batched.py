"""The batched Retain Job ends where the one-observation-at-a-time reference path does.

A seeded stream on the built-in ``ops`` pack (dark matter, conflicts, near
duplicates, relations) runs through ``retain`` both
ways on two fresh stores; memories, entities, relations, facts, conflicts,
links, observation outcomes and truth impacts must be equal. A hypothesis
test does the same over random small streams of the ``field`` pack (repeated
texts, competing fact values, unclassified names, one observation broken in
the inbox) with random batch sizes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from random import Random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin_sdk import Store, hookimpl, resolve_pack
from plugin_sdk.grid.policy import grid
from plugin_sdk.plugin.records import RetainHandler
from plugin_sdk.retain import dark_matter, truth
from plugin_sdk.retain import dedup as dedup_module
from plugin_sdk.retain import job as job_module
from plugin_sdk.retain.end_state import end_state
from plugin_sdk.retain.handlers import default_handle
from plugin_sdk.retain.job import retain
from plugin_sdk.retain.observations import observe
from plugin_sdk.testing import StoreTemplates
from tests.retain.test_retain import FIELD, jsonl, obs, open_field_store
from tests.retain.test_retain_property import PLUGINS, observation_docs

WORDS = [
    "deploy",
    "rollback",
    "latency",
    "replica",
    "shard",
    "cache",
    "queue",
    "backlog",
    "node",
    "quota",
    "budget",
]


def stream(store: Store, n: int, seed: int) -> list[str]:
    rng = Random(seed)
    categories = store.category_names()
    relations = sorted(grid(store).relations)
    names = [
        f"{rng.choice(['world:person', 'world:project', 'concept', 'vendor'])}:e{i}"
        for i in range(40)
    ]
    documents: list[dict[str, Any]] = []
    for i in range(n):
        actors = list(dict.fromkeys(rng.choice(names[: 5 + i // 3]) for _ in range(2)))
        if documents and rng.random() < 0.1:
            earlier = rng.choice(documents)
            actors, text = earlier["actors"], earlier["payload_typed"]["text"] + " again"
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        payload: dict[str, Any] = {"text": text}
        if rng.random() < 0.4:
            payload["facts"] = [
                {"subject": actors[0], "predicate": "owner", "object": f"v{rng.randrange(3)}"}
            ]
        other = rng.choice(names)
        if rng.random() < 0.4 and other != actors[0]:
            payload["relations"] = [
                {"source": actors[0], "type": rng.choice(relations), "target": other}
            ]
        documents.append(
            {
                "id": f"o{i}",
                "source": "test",
                "timestamp": f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z",
                "category": rng.choice(categories),
                "actors": actors,
                "topic": f"topic {rng.randrange(6)}",
                "sentiment": rng.choice(["neutral", "neutral", "positive", "critical"]),
                "payload_typed": payload,
            }
        )
    return [json.dumps(d) for d in documents]


def index_differences(store: Store) -> dict[str, int]:
    """Rows the full-text index and ``toc_rank`` hold, or lack, against the memories.

    The batched job indexes the memories it creates once per batch: the index
    must end as the per-row triggers would have left it (every word of every
    active memory once, nothing else; each ranking row as its view derives it).
    """
    conn = store.db.conn
    conn.execute("DROP TABLE IF EXISTS temp.derived_fts")
    conn.execute(
        "CREATE VIRTUAL TABLE temp.derived_fts USING fts5(content, fts_scope, "
        "tokenize='porter unicode61')"
    )
    conn.execute(
        "INSERT INTO temp.derived_fts (rowid, content, fts_scope) "
        "SELECT id, content, fts_scope FROM memories WHERE status = 'active'"
    )
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.kept_words "
        "USING fts5vocab(main, memories_fts, 'instance')"
    )
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.derived_words "
        "USING fts5vocab(temp, derived_fts, 'instance')"
    )
    toc = "SELECT * FROM toc_rank_source WHERE tier IS NOT NULL"
    queries = {
        "words missing": "SELECT * FROM temp.derived_words EXCEPT SELECT * FROM temp.kept_words",
        "words extra": "SELECT * FROM temp.kept_words EXCEPT SELECT * FROM temp.derived_words",
        "toc missing": f"{toc} EXCEPT SELECT * FROM toc_rank",
        "toc extra": f"SELECT * FROM toc_rank EXCEPT {toc}",
    }
    found = {
        name: conn.execute(f"SELECT count(*) FROM ({sql})").fetchone()[0]
        for name, sql in queries.items()
    }
    (indexed,) = conn.execute("SELECT count(*) FROM memories_fts_docsize").fetchone()
    (active,) = conn.execute("SELECT count(*) FROM memories WHERE status = 'active'").fetchone()
    found["documents"] = indexed - active
    return {name: n for name, n in found.items() if n}


def run(tmp_path: Path, label: str, *, batched: bool, n: int, seed: int) -> dict[str, Any]:
    store = Store(tmp_path / f"{label}.db", project="p")
    try:
        store.packs.install(resolve_pack("ops"))
        assert observe(store, stream(store, n, seed)).ok
        report = retain(store, batch_size=25, batched=batched)
        assert report.processed == n
        assert index_differences(store) == {}
        return {"state": end_state(store), "report": report.to_dict()}
    finally:
        store.close()


@pytest.mark.parametrize(
    ("seed", "window", "bounded"), [(1, None, False), (2, None, False), (3, 2, False), (4, 3, True)]
)
def test_batched_and_reference_paths_end_in_the_same_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, window: int | None, bounded: bool
) -> None:
    if window is not None:  # a window hot actors fill many times over (the batch keeps them)
        monkeypatch.setattr(dedup_module, "DEDUP_WINDOW", window)
    if bounded:  # kept windows dropped as others are read; kept topic answers dropped
        monkeypatch.setattr(dedup_module, "WINDOWS_KEPT", 2)
        monkeypatch.setattr(job_module, "TOPICS_KEPT", 5)
    batched = run(tmp_path, "batched", batched=True, n=150, seed=seed)
    reference = run(tmp_path, "reference", batched=False, n=150, seed=seed)
    for table, rows in reference["state"].items():
        assert batched["state"][table] == rows, table
    assert reference["state"]["conflicts"], "the stream makes conflicts"
    assert any(r[3] == "dark" for r in reference["state"]["observations"])
    report, other = batched["report"], reference["report"]
    assert {k: v for k, v in report.items() if k != "truths"} == {
        k: v for k, v in other.items() if k != "truths"
    }


@pytest.fixture(scope="module")
def field_copy(
    memsdk_templates: StoreTemplates, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[], Store]:
    """``field_copy()`` -> a new store with the field pack, for each example and path."""
    directory = tmp_path_factory.mktemp("retain-both-ways")
    count = iter(range(10**9))
    return lambda: memsdk_templates.open(
        directory / f"{next(count)}.db", FIELD, project="field", plugins=PLUGINS
    )


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    stream=st.lists(observation_docs("x"), min_size=1, max_size=24),
    malformed=st.one_of(st.none(), st.integers(min_value=0, max_value=23)),
    batch_size=st.integers(min_value=1, max_value=7),
)
def test_any_small_stream_ends_the_same_both_ways(
    field_copy: Callable[[], Store],
    stream: list[dict[str, Any]],
    malformed: int | None,
    batch_size: int,
) -> None:
    documents = [{**document, "id": f"obs-{i}"} for i, document in enumerate(stream)]
    states = []
    for batched in (True, False):
        store = field_copy()
        try:
            assert observe(store, jsonl(*documents)).ok
            if malformed is not None and malformed < len(documents):
                # Stored, then broken: the job must fail it alone, with its reason.
                store.db.conn.execute(
                    "UPDATE observations SET document = '{}' WHERE id = ?", [f"obs-{malformed}"]
                )
            report = retain(store, batch_size=batch_size, batched=batched)
            assert report.processed == len(documents)
            failed = [ident for ident, _ in report.failed]
            assert failed == ([f"obs-{malformed}"] if malformed in range(len(documents)) else [])
            assert index_differences(store) == {}
            states.append((end_state(store), {**report.to_dict(), "truths": None}))
        finally:
            store.close()
    (ours, our_report), (theirs, their_report) = states
    for table, rows in theirs.items():
        assert ours[table] == rows, table
    assert our_report == their_report


CASES = [
    obs(
        "c-1",
        ["bird:heron:grey"],
        "Grey heron at the pond.",
        facts=[("bird:heron:grey", "nest", "reedbed")],
    ),
    obs(
        "c-2",
        ["Bird:Heron:Grey"],
        "Heron again, same pond.",
        facts=[("BIRD:heron:grey", "nest", "alders")],
    ),
    obs("c-3", ["odd:wader:x", "ODD:wader:X"], "Two spellings of one wader."),
    obs("c-4", ["odd:Wader:x"], "Wader on the mud, probing.", sentiment="critical"),
    obs(
        "c-5",
        ["bird:heron:grey", "site:marsh:north"],
        "Grey heron at the pond.",
        relations=[("bird:heron:grey", "seen_at", "Site:Marsh:North")],
    ),
]


def both_ways(
    field_copy: Callable[[], Store], documents: list[dict[str, Any]], **options: Any
) -> list[Any]:
    states = []
    for batched in (True, False):
        store = field_copy()
        try:
            assert observe(store, jsonl(*documents)).ok
            report = retain(store, batched=batched, **options)
            assert index_differences(store) == {}
            states.append((end_state(store), {**report.to_dict(), "truths": None}))
        finally:
            store.close()
    return states


def test_names_that_differ_in_case_resolve_as_the_store_compares_them(
    field_copy: Callable[[], Store],
) -> None:
    (ours, our_report), (theirs, their_report) = both_ways(field_copy, CASES, batch_size=5)
    assert ours == theirs and our_report == their_report
    names = [row[1] for row in theirs["entities"]]
    assert len({name.lower() for name in names}) == len(names)  # one entity per spelling
    # Two spellings of one new name in one observation: the second create is refused.
    assert [f["id"] for f in their_report["failed"]] == ["c-3", "c-5"]


def test_a_batch_that_fails_outside_an_observation_runs_again_one_at_a_time(
    field_copy: Callable[[], Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def broken(store: Store, gathered: Any) -> None:
        calls.append(gathered)
        raise RuntimeError("the disk is full")

    reference = both_ways(field_copy, CASES, batch_size=2)[1]
    monkeypatch.setattr(job_module, "flush", broken)
    batched = both_ways(field_copy, CASES, batch_size=2)[0]
    assert calls, "the batched write was tried"
    assert batched == reference


class WritesThenBreaks:
    """Writes each observation's memory; fails those whose text says so, after the write."""

    def __init__(self) -> None:
        self.written: list[tuple[int, bool]] = []

    @hookimpl
    def memory_written(self, store: Store, memory_id: int, created: bool) -> None:
        self.written.append((memory_id, created))

    @hookimpl
    def register_retain_handlers(self, register: Callable[[RetainHandler], None]) -> None:
        def handle(context: Any) -> None:
            default_handle(context)
            if "broken" in context.observation.text:
                raise RuntimeError("the handler broke after writing")

        register(RetainHandler("writes-then-breaks", "*", handle))


@pytest.mark.parametrize("batched", [True, False])
def test_a_failed_observation_reports_no_memory_written(tmp_path: Path, batched: bool) -> None:
    plugin = WritesThenBreaks()
    store = open_field_store(tmp_path / "f.db", ("breaks", plugin))
    try:
        documents = [
            obs("w-1", ["bird:heron:grey"], "Grey heron at the pond."),
            obs("w-2", ["bird:heron:grey"], "A broken record of a heron."),
            obs("w-3", ["bird:wader:x"], "Wader on the mud, probing."),
        ]
        assert observe(store, jsonl(*documents)).ok
        report = retain(store, batched=batched)
        assert [ident for ident, _ in report.failed] == ["w-2"]
        kept = [row[0] for row in store.db.conn.execute("SELECT id FROM memories ORDER BY id")]
        assert len(kept) == 2
        # memory_written: the two kept memories, once each, after the batch committed.
        assert plugin.written == [(memory_id, True) for memory_id in kept]
    finally:
        store.close()


@pytest.mark.parametrize("window", [3, 200])
def test_a_kept_window_follows_the_links_the_batch_adds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    monkeypatch.setattr(dedup_module, "DEDUP_WINDOW", window)
    store = open_field_store(tmp_path / "w.db")
    try:
        heron = store.entities.add("bird:heron:grey").id
        wader = store.entities.add("bird:wader:x").id
        ids = [
            store.memories.write(f"Sighting number {i} at the pond.", "SIGHTINGS").id
            for i in range(8)
        ]
        store.memories.archive(ids[6])
        store.db.conn.execute("UPDATE memories SET status = 'pending' WHERE id = ?", [ids[7]])
        dedup = dedup_module.Dedup(store)

        def link(memory_id: int, *entity_ids: int) -> None:
            store.db.conn.executemany(
                "INSERT OR IGNORE INTO memory_entities (memory_id, entity_id, role) "
                "VALUES (?, ?, 'actor')",
                [(memory_id, entity_id) for entity_id in entity_ids],
            )
            dedup.linked(memory_id, entity_ids)

        def query(entity_id: int) -> list[Any]:
            rows = store.db.conn.execute(dedup_module._WINDOW, [entity_id, window]).fetchall()
            return rows[::-1]

        link(ids[0], heron)
        link(ids[2], heron)
        assert dedup._window(heron) == query(heron)  # read once, then kept
        # Newer and older memories, an archived one, a pending one, one linked twice,
        # an entity whose window was never read (nothing kept for it).
        for memory_id in (ids[4], ids[1], ids[6], ids[7], ids[3], ids[3], ids[5]):
            link(memory_id, heron, wader)
            assert dedup._window(heron) == query(heron)
        assert dedup._window(wader) == query(wader)
        link(ids[0], wader)
        assert dedup._window(wader) == query(wader)
    finally:
        store.close()


@pytest.mark.parametrize("window", [3, 200])
def test_a_window_read_before_the_batch_writes_its_links_has_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """Links the batch writes at its end count in windows read before then (not a failed one's)."""
    monkeypatch.setattr(dedup_module, "DEDUP_WINDOW", window)
    store = open_field_store(tmp_path / "u.db")
    try:
        heron = store.entities.add("bird:heron:grey").id
        wader = store.entities.add("bird:wader:x").id
        ids = [
            store.memories.write(f"Sighting number {i} at the pond.", "SIGHTINGS").id
            for i in range(8)
        ]
        store.memories.archive(ids[6])
        store.db.conn.execute("UPDATE memories SET status = 'pending' WHERE id = ?", [ids[7]])
        written = [(ids[1], heron), (ids[3], wader)]
        store.db.conn.executemany(
            "INSERT INTO memory_entities (memory_id, entity_id, role) VALUES (?, ?, 'actor')",
            written,
        )
        dedup = dedup_module.Dedup(store)
        later: list[tuple[int, int]] = []
        for memory_id, entity_ids, commits in [
            (ids[4], (heron, wader), True),
            (ids[0], (heron,), True),
            (ids[6], (heron, wader), True),  # archived: in no window
            (ids[5], (wader,), False),  # its observation failed: never written
            (ids[7], (wader,), True),
            (ids[4], (wader,), True),  # linked twice
            (ids[2], (wader, heron), True),
        ]:
            dedup.linked(memory_id, entity_ids, unwritten=True)
            if commits:
                dedup.commit()
                later += [(memory_id, entity_id) for entity_id in entity_ids]
            else:
                dedup.drop()
        windows = {entity_id: list(dedup._window(entity_id)) for entity_id in (heron, wader)}
        store.db.conn.executemany(
            "INSERT OR IGNORE INTO memory_entities (memory_id, entity_id, role) "
            "VALUES (?, ?, 'actor')",
            later,
        )
        for entity_id, kept in windows.items():
            rows = store.db.conn.execute(dedup_module._WINDOW, [entity_id, window]).fetchall()
            assert kept == rows[::-1]
        dedup.written()
        dedup.forget()
        assert dedup._window(wader) == windows[wader]  # read from the store alone now
    finally:
        store.close()


def test_a_run_puts_the_connection_settings_back(tmp_path: Path) -> None:
    store = open_field_store(tmp_path / "s.db")
    try:
        conn = store.db.conn
        conn.execute("PRAGMA cache_size = -1000")
        conn.execute("PRAGMA wal_autocheckpoint = 500")
        seen: list[tuple[int, int]] = []

        def progress(done: int, total: int) -> None:
            seen.append(
                (
                    conn.execute("PRAGMA cache_size").fetchone()[0],
                    conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0],
                )
            )

        assert observe(store, jsonl(obs("s-1", ["bird:heron:grey"], "Grey heron."))).ok
        retain(store, progress=progress)
        assert seen == [(-job_module.RUN_CACHE_KIB, job_module.RUN_CHECKPOINT_PAGES)]
        assert conn.execute("PRAGMA cache_size").fetchone()[0] == -1000
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 500
    finally:
        store.close()


def test_a_failed_batch_with_repeated_texts_runs_again_as_the_reference_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch's kept dedup windows name memories its rollback took back: the rerun drops them."""
    reference = run(tmp_path, "reference", batched=False, n=150, seed=4)

    def broken(store: Store, gathered: Any) -> None:
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(job_module, "flush", broken)
    fallback = run(tmp_path, "fallback", batched=True, n=150, seed=4)
    assert fallback["state"] == reference["state"]
    assert any(row[4] > 1 for row in reference["state"]["memories"]), "repeats were folded"


BROKEN = [
    obs("b-1", ["bird:heron:grey"], "Grey heron at the pond.", topic="nesting"),
    obs(
        "b-2",
        ["bird:heron:grey", "site:marsh:north"],
        "A broken record: its memory, links and cell are written, then it fails.",
        category="FIELD_NOTES",
        topic="weather",
        facts=[("bird:heron:grey", "nest", "reedbed")],
        relations=[("bird:heron:grey", "seen_at", "site:marsh:north")],
    ),
    # Its topic and category only the failed observation gave the heron: not known.
    obs("b-3", ["bird:heron:grey"], "Heron standing in the rain.", topic="weather"),
    # The failed observation's text again, another actor: a new memory, a new cell.
    obs(
        "b-4",
        ["site:marsh:north"],
        "A broken record: its memory, links and cell are written, then it fails.",
    ),
    obs("b-5", ["bird:heron:grey"], "Grey heron at the pond.", topic="nesting"),
]


def test_an_observation_failing_after_its_writes_leaves_none_of_them(
    field_copy: Callable[[], Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its gathered links, cell and index rows go with it; the batch's others are written."""

    def breaking(step: Callable[..., Any]) -> Callable[..., Any]:
        def run(store: Store, observation: Any, *args: Any, **kwargs: Any) -> Any:
            if "broken" in observation.text and observation.id == "b-2":
                raise RuntimeError("step 6 broke")
            return step(store, observation, *args, **kwargs)

        return run

    monkeypatch.setattr(job_module, "gather", breaking(job_module.gather))
    monkeypatch.setattr(job_module, "reinforce", breaking(job_module.reinforce))
    (ours, our_report), (theirs, their_report) = both_ways(field_copy, BROKEN, batch_size=10)
    assert ours == theirs and our_report == their_report
    assert [f["id"] for f in their_report["failed"]] == ["b-2"]
    fits = {row[0]: row[2] for row in theirs["observations"]}
    # The same known heron: a familiar topic (b-5) scores more than the one only the failed
    # observation named (b-3).
    assert fits["b-3"] < fits["b-5"]


class CountingFit:
    """A schema_fit that reads what the job writes (for one topic)."""

    @hookimpl
    def schema_fit(self, store: Store, observation: Any, entities: Any) -> float | None:
        if observation.topic != "weather":
            return None  # the built-in measure
        (seen,) = store.db.conn.execute(
            "SELECT count(*) FROM entity_observations WHERE topic = 'weather'"
        ).fetchone()
        return min(1.0, 0.4 + 0.2 * seen)


class CountingHandler:
    """A handler for some names that reads what the job writes."""

    @hookimpl
    def register_retain_handlers(self, register: Callable[[RetainHandler], None]) -> None:
        def handle(context: Any) -> None:
            default_handle(context)
            conn = context.store.db.conn
            counts = [
                conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("entity_observations", "memory_cells", "memories_fts_docsize")
            ]
            context.write_memory(
                f"Seen with links, cells, indexed: {counts}.", category="FIELD_NOTES"
            )

        register(RetainHandler("counts", "site:*", handle))


@pytest.mark.parametrize("fit", [False, True])
def test_plugin_code_in_a_batch_reads_the_tables_as_the_reference_path_has_them(
    tmp_path: Path, fit: bool
) -> None:
    documents = [
        obs("p-1", ["bird:heron:grey"], "Grey heron at the pond."),
        obs("p-2", ["bird:heron:grey"], "Heron in the rain.", topic="weather"),
        obs("p-3", ["site:marsh:north"], "The north marsh, flooded."),
        obs("p-4", ["bird:raptor:kestrel"], "Kestrel hovering.", topic="weather"),
        obs("p-5", ["bird:heron:grey", "site:marsh:north"], "Heron at the marsh again."),
        obs("p-6", ["bird:heron:grey"], "Grey heron at the pond."),
        obs("p-7", ["site:marsh:north", "bird:heron:grey"], "The marsh drained, heron gone."),
    ]
    states = []
    for batched in (True, False):
        plugins = [("handler", CountingHandler())] + ([("fit", CountingFit())] if fit else [])
        store = open_field_store(tmp_path / f"{batched}.db", *plugins)
        try:
            assert observe(store, jsonl(*documents)).ok
            report = retain(store, batched=batched)
            assert report.failed == []
            assert index_differences(store) == {}
            states.append((end_state(store), report.to_dict()))
        finally:
            store.close()
    (ours, our_report), (theirs, their_report) = states
    assert ours == theirs
    assert {**our_report, "truths": None} == {**their_report, "truths": None}
    notes = [row[1] for row in theirs["memories"] if row[1].startswith("Seen with")]
    assert len(notes) == 2 and notes[0] != notes[1]


class Recorder:
    """Records both memory-written hooks."""

    def __init__(self) -> None:
        self.each: list[tuple[int, bool]] = []
        self.batches: list[list[tuple[int, bool]]] = []

    @hookimpl
    def memory_written(self, store: Store, memory_id: int, created: bool) -> None:
        self.each.append((memory_id, created))

    @hookimpl
    def memories_written(self, store: Store, written: list[tuple[int, bool]]) -> None:
        self.batches.append(list(written))


def test_the_memories_of_kept_observations_are_reported_once_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def breaking(step: Callable[..., Any]) -> Callable[..., Any]:
        def run(store: Store, observation: Any, *args: Any, **kwargs: Any) -> Any:
            if observation.id == "b-2":
                raise RuntimeError("step 6 broke")
            return step(store, observation, *args, **kwargs)

        return run

    monkeypatch.setattr(job_module, "gather", breaking(job_module.gather))
    monkeypatch.setattr(job_module, "reinforce", breaking(job_module.reinforce))
    reported = {}
    for batched in (True, False):
        recorder = Recorder()
        store = open_field_store(tmp_path / f"{batched}.db", ("recorder", recorder))
        try:
            assert observe(store, jsonl(*BROKEN)).ok
            report = retain(store, batched=batched, batch_size=3)
            assert [ident for ident, _ in report.failed] == ["b-2"]
            kept = {row[0] for row in store.db.conn.execute("SELECT id FROM memories")}
            assert {memory_id for memory_id, _ in recorder.each} == kept
            assert [item for batch in recorder.batches for item in batch] == recorder.each
            reported[batched] = (recorder.each, len(recorder.batches))
        finally:
            store.close()
    assert reported[True][0] == reported[False][0]
    assert reported[True][1] == 2  # once per batch: b-1 and b-3 (b-2 failed); b-4 and b-5
    assert reported[False][1] == 4  # once per observation (b-2 failed)


def test_a_memory_another_writer_adds_between_batches_is_compared_with(tmp_path: Path) -> None:
    """The dedup windows kept from batch to batch are read again after another commit."""
    path = tmp_path / "two.db"
    store = open_field_store(path)
    other = Store(path, project="field")
    try:
        documents = [
            obs("t-1", ["bird:heron:grey"], "Grey heron at the pond, early."),
            # A new topic and category each: the normal route, so the dedup pass runs (and
            # keeps the heron's window).
            obs("t-2", ["bird:heron:grey"], "Heron nest.", category="FIELD_NOTES", topic="nesting"),
            obs(
                "t-3",
                ["bird:heron:grey"],
                "Grey heron standing at the pond in the rain, still.",
                category="SITE_RULES",
                topic="weather",
            ),
        ]
        assert observe(store, jsonl(*documents)).ok
        added: list[int] = []

        def progress(done: int, total: int) -> None:
            if done == 2:  # between the two batches, through another connection
                memory_id = other.memories.write(
                    "Grey heron standing at the pond in the rain, very still.", "SIGHTINGS"
                ).id
                other.entities.link(memory_id, ["bird:heron:grey"], role="actor")
                added.append(memory_id)

        report = retain(store, batch_size=2, progress=progress)
        assert report.duplicates == 1
        (memory_id, duplicate, route) = store.db.conn.execute(
            "SELECT memory_id, duplicate, route FROM observations WHERE id = 't-3'"
        ).fetchone()
        assert route != "fast" and duplicate == 1 and memory_id == added[0]
    finally:
        other.close()
        store.close()


def test_a_forgotten_text_is_refused_both_ways(tmp_path: Path) -> None:
    """The batched job looks texts up only when the project has forgotten some: here it has."""
    documents = [
        obs("f-1", ["bird:heron:grey"], "Heron at the pond."),
        obs("f-2", ["bird:heron:grey"], "Heron at the forgotten pond."),  # refused
        obs("f-3", ["bird:raptor:kestrel"], "Kestrel over the marsh."),
        obs("f-4", ["site:marsh:north"], "heron at the  FORGOTTEN pond."),  # the same, normalized
    ]
    states = []
    for batched in (True, False):
        store = open_field_store(tmp_path / f"{batched}.db")
        try:
            store.memories.forget(
                store.memories.write("Heron at the forgotten pond.", "SIGHTINGS").id
            )
            assert observe(store, jsonl(*documents)).ok
            report = retain(store, batched=batched)
            assert [ident for ident, _ in report.failed] == ["f-2", "f-4"]
            assert all("ForgottenText" in error for _, error in report.failed)
            assert index_differences(store) == {}
            states.append((end_state(store), {**report.to_dict(), "truths": None}))
        finally:
            store.close()
    assert states[0] == states[1]


def test_digests_from_known_texts_are_the_digests(tmp_path: Path) -> None:
    """The batched job hands the truth digests the texts it retained: the same markdown."""
    store = Store(tmp_path / "digests.db", project="p")
    try:
        store.packs.install(resolve_pack("ops"))
        assert observe(store, stream(store, 150, seed=5)).ok
        retain(store, batch_size=25)
        entities = store.entities.list()
        texts = {
            ident: json.loads(document)["payload_typed"]["text"]
            for ident, document in store.db.conn.execute("SELECT id, document FROM observations")
        }
        expected = {entity.id: truth.digest(store, entity) for entity in entities}
        assert any("## Latest observations" in text for text in expected.values())
        for known in (texts, dict(list(texts.items())[::2]), {}):
            assert truth.digests(store, entities, known) == expected
    finally:
        store.close()


def _between_batches(
    tmp_path: Path, documents: list[dict[str, Any]], change: Callable[[Store], None]
) -> list[tuple[Any, ...]]:
    """Both ways, one observation per batch, ``change`` run by the progress callback after the first.

    The actor is known before the run, so the first batch reads (and keeps)
    its dedup window and topic answers.
    """
    outcomes = []
    for batched in (True, False):
        store = open_field_store(tmp_path / f"between-{batched}.db")
        try:
            store.entities.add(documents[0]["actors"][0])
            assert observe(store, jsonl(*documents)).ok

            def progress(done: int, total: int, store: Store = store) -> None:
                if done == 1:
                    change(store)

            report = retain(store, batch_size=1, batched=batched, progress=progress)
            assert not report.failed
            assert index_differences(store) == {}
            outcomes.append(
                (
                    end_state(store),
                    store.db.conn.execute(
                        """SELECT id, route, schema_fit, memory_id, duplicate FROM observations
                           ORDER BY id"""
                    ).fetchall(),
                )
            )
        finally:
            store.close()
    return outcomes


NEAR = [
    obs("n-1", ["bird:heron:grey"], "Grey heron standing at the north pond today."),
    obs(
        "n-2",
        ["bird:heron:grey"],
        "Grey heron standing at the north pond today again.",
        topic="other topic",
        facts=[("bird:heron:grey", "mood", "calm")],
    ),
]


def _first_memory(store: Store) -> int:
    return int(store.db.conn.execute("SELECT min(id) FROM memories").fetchone()[0])


@pytest.mark.parametrize(
    "change",
    [
        lambda store: store.memories.archive(_first_memory(store)),
        lambda store: store.memories.forget(_first_memory(store), reason="test"),
    ],
    ids=["archive", "forget"],
)
def test_a_write_on_the_same_connection_between_batches_drops_the_kept_windows(
    tmp_path: Path, change: Callable[[Store], None]
) -> None:
    """PRAGMA data_version does not move for the connection's own commits: total_changes does."""
    batched, reference = _between_batches(tmp_path, NEAR, change)
    assert batched == reference
    (duplicate,) = [row[4] for row in batched[1] if row[0] == "n-2"]
    assert duplicate == 0  # not folded into the memory that was archived or forgotten


def test_dark_matter_accepted_between_batches_is_seen_by_the_next_batch(tmp_path: Path) -> None:
    documents = [
        obs("d-1", ["mystery:thing"], "Odd thing seen at the pond."),
        obs("d-2", ["mystery:thing"], "Odd thing seen again near the reeds, larger."),
    ]
    batched, reference = _between_batches(
        tmp_path, documents, lambda store: dark_matter.accept(store, "d-1")
    )
    assert batched == reference
    assert [row[1] for row in batched[1]] == ["dark", "normal"]  # d-2 fits once d-1 is accepted


def test_a_text_forgotten_by_another_connection_stays_out_of_later_truths(tmp_path: Path) -> None:
    secret = "Heron nest code is SECRET-4711 near the alders."
    documents = [
        obs(
            "s-1",
            ["bird:heron:grey"],
            secret,
            facts=[("bird:heron:grey", "nest", "alders"), ("bird:heron:grey", "colour", "grey")],
        ),
        obs(
            "s-2",
            ["bird:heron:grey"],
            "Heron fishing at dusk by the weir.",
            topic="dusk",
            facts=[("bird:heron:grey", "feeds", "weir"), ("bird:heron:grey", "mood", "calm")],
        ),
    ]
    for batched in (True, False):
        path = tmp_path / f"secret-{batched}.db"
        store = open_field_store(path)
        try:
            assert observe(store, jsonl(*documents)).ok

            def progress(done: int, total: int, path: Path = path) -> None:
                if done == 1:
                    other = Store(path, project="field")
                    try:
                        (memory_id,) = other.db.conn.execute(
                            "SELECT id FROM memories WHERE content = ?", [secret]
                        ).fetchone()
                        other.memories.forget(memory_id, reason="a secret")
                    finally:
                        other.close()

            report = retain(store, batch_size=1, batched=batched, progress=progress)
            assert len(report.truths) == 2  # a version after each batch
            leaked = store.db.conn.execute(
                "SELECT count(*) FROM compiled_truths WHERE markdown LIKE '%SECRET-4711%'"
            ).fetchone()[0]
            assert leaked == 0
        finally:
            store.close()
