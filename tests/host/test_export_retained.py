"""What the Retain Job learned travels with a project: export, import, export again gives the same lines.

Facts, their conflicts, every Compiled Truth version, truth impacts, the
observation inbox, near-duplicate memory conflicts and outcome reports are
exported with the memories and the grid, and their references are renumbered
when an import cannot keep the ids.
"""

from __future__ import annotations

import json
from pathlib import Path
from random import Random

import pytest

from plugin_sdk import Store, resolve_pack
from plugin_sdk.errors import InvalidExport
from plugin_sdk.host import portable
from plugin_sdk.retain import value_conflicts
from plugin_sdk.retain.job import retain
from plugin_sdk.retain.observations import observe
from plugin_sdk.store.doctor import doctor

RETAINED = (
    "fact",
    "conflict",
    "compiled_truth",
    "truth_impact",
    "observation",
    "entity_observation",
    "memory_conflict",
    "memory_outcome",
)


def lines(store: Store, n: int) -> list[str]:
    rng = Random(7)
    names = [f"world:person:p{i}" for i in range(4)]
    categories = store.category_names()
    documents = []
    for i in range(n):
        actor = names[i % len(names)]
        documents.append(
            {
                "id": f"o{i}",
                "source": "test",
                "timestamp": f"2026-01-01T00:00:{i:02d}Z",
                "category": categories[i % len(categories)],
                "actors": [actor],
                "topic": f"topic {i % 3}",
                "sentiment": "neutral",
                "payload_typed": {
                    "text": f"note {i} about {actor} and the {rng.choice(['cache', 'queue'])}",
                    "facts": [{"subject": actor, "predicate": "owner", "object": f"v{i % 3}"}],
                },
            }
        )
    return [json.dumps(d) for d in documents]


@pytest.fixture
def retained(tmp_path: Path) -> Path:
    path = tmp_path / "retained.db"
    with Store(path, project="p") as store:
        store.packs.install(resolve_pack("ops"))
        assert observe(store, lines(store, 40)).ok
        retain(store)
        first, second = (m.id for m in store.memories.list(limit=2))
        value_conflicts.record(store, first, second, source="test")
        store.memories.outcome(first, True, note="it helped")
    return path


def export(path: Path, project: str = "p") -> list[str]:
    with Store(path, project=project) as store:
        return list(portable.dump_lines(portable.export_project(store)))


def kinds(exported: list[str]) -> dict[str, int]:
    counted: dict[str, int] = {}
    for line in exported:
        kind = json.loads(line)["record"]
        counted[kind] = counted.get(kind, 0) + 1
    return counted


def test_every_retained_record_round_trips_exactly(retained: Path, tmp_path: Path) -> None:
    exported = export(retained)
    counted = kinds(exported)
    missing = [kind for kind in RETAINED if not counted.get(kind)]
    assert not missing, f"the store made none of {missing}"
    fresh = tmp_path / "fresh.db"
    with Store(fresh, project="p") as store:
        loaded = portable.import_project(store, exported)
    assert {kind: loaded[kind] for kind in RETAINED} == {kind: counted[kind] for kind in RETAINED}
    assert export(fresh) == exported
    assert doctor(fresh).ok


def test_renumbered_ids_keep_every_reference_inside_the_project(
    retained: Path, tmp_path: Path
) -> None:
    exported = export(retained)
    with Store(retained, project="p") as store:  # same store, new name: every id is taken
        portable.import_project(store, exported, project="copy")
        db = store.db.conn
        for table, column, target in [
            ("facts", "entity_id", "entities"),
            ("entities", "truth_id", "compiled_truths"),
            ("conflicts", "fact_id", "facts"),
            ("conflicts", "other_fact_id", "facts"),
            ("compiled_truths", "superseded_by", "compiled_truths"),
            ("observations", "memory_id", "memories"),
            ("memory_conflicts", "other_memory_id", "memories"),
            ("memory_outcomes", "memory_id", "memories"),
        ]:
            stray = db.execute(
                f"SELECT count(*) FROM [{table}] t JOIN [{target}] o ON o.id = t.[{column}] "
                "WHERE t.project = 'copy' AND o.project != 'copy'"
            ).fetchone()[0]
            assert stray == 0, f"{table}.{column} points out of the imported project"
        truths = "SELECT count(*) FROM entities WHERE project = ? AND truth_id IS NOT NULL"
        assert db.execute(truths, ["copy"]).fetchone() == db.execute(truths, ["p"]).fetchone()
        assert db.execute(truths, ["p"]).fetchone()[0] > 0
        same = "SELECT count(*) FROM {} WHERE project = ?"
        for table in ("facts", "conflicts", "compiled_truths", "observations"):
            assert (
                db.execute(same.format(table), ["copy"]).fetchone()
                == db.execute(same.format(table), ["p"]).fetchone()
            )
    copy = export(retained, "copy")
    assert kinds(copy) == kinds(exported)


def test_a_version_1_file_still_imports(retained: Path, tmp_path: Path) -> None:
    old = [line for line in export(retained) if json.loads(line)["record"] not in RETAINED]
    header = json.loads(old[0])
    old[0] = json.dumps({**header, "version": 1}) + "\n"
    with Store(tmp_path / "old.db", project="p") as store:
        loaded = portable.import_project(store, old)
    assert loaded["memory"] > 0 and loaded["fact"] == 0


def test_a_fact_naming_an_unknown_entity_is_refused_and_writes_nothing(
    retained: Path, tmp_path: Path
) -> None:
    exported = export(retained)
    at = next(i for i, line in enumerate(exported) if json.loads(line)["record"] == "fact")
    fact = json.loads(exported[at])
    exported[at] = json.dumps({**fact, "entity_id": 999_999}) + "\n"
    with Store(tmp_path / "bad.db", project="p") as store:
        with pytest.raises(InvalidExport, match=f"line {at + 1}: the fact record"):
            portable.import_project(store, exported)
        assert store.db.execute("SELECT count(*) FROM memories").fetchone()[0] == 0


def test_a_memory_conflict_stays_smaller_id_first_when_renumbering_flips_it(
    retained: Path, tmp_path: Path
) -> None:
    exported = export(retained)
    conflict = next(json.loads(line) for line in exported if '"memory_conflict"' in line)
    with Store(tmp_path / "target.db", project="other") as store:
        store.packs.install(resolve_pack("ops"))
        with store.atomic():  # the smaller memory's id is taken, new ids start above the other's
            for taken in (conflict["memory_id"], 10_000):
                store.db.execute(
                    "INSERT INTO memories (id, project, kind, category, content, normalized_hash, "
                    "status, created_at, updated_at, last_seen_at) "
                    "VALUES (?, 'other', 'content', ?, ?, ?, 'active', '2026', '2026', '2026')",
                    [taken, store.category_names()[0], f"x{taken}", f"x{taken}"],
                )
        portable.import_project(store, exported, project="p")
        first, second, pair = store.db.execute(
            "SELECT memory_id, other_memory_id, pair FROM memory_conflicts WHERE project = 'p'"
        ).fetchone()
        assert first == conflict["other_memory_id"] < second  # the kept id is now the smaller
        (content,) = store.db.execute(
            "SELECT content FROM memories WHERE id = ?", [first]
        ).fetchone()
        stored = json.loads(conflict["pair"])
        assert json.loads(pair) == {
            "values": stored["other_values"],
            "other_values": stored["values"],
        }
        assert set(json.loads(pair)["values"]) <= value_conflicts.values(content)
