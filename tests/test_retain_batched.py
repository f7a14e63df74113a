"""The batched Retain Job ends where the one-observation-at-a-time reference path does.

A seeded stream on the built-in ``ops`` pack (dark matter, conflicts, near
duplicates, relations) runs through ``retain`` both
ways on two fresh stores; memories, entities, relations, facts, conflicts,
links, observation outcomes and truth impacts must be equal.
"""

from __future__ import annotations

import json
from pathlib import Path
from random import Random
from typing import Any

import pytest

from plugin_sdk import Store, resolve_pack
from plugin_sdk.grid.policy import grid
from plugin_sdk.retain.end_state import end_state
from plugin_sdk.retain.job import retain
from plugin_sdk.retain.observations import observe

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


def run(tmp_path: Path, label: str, *, batched: bool, n: int, seed: int) -> dict[str, Any]:
    store = Store(tmp_path / f"{label}.db", project="p")
    try:
        store.packs.install(resolve_pack("ops"))
        assert observe(store, stream(store, n, seed)).ok
        report = retain(store, batch_size=25, batched=batched)
        assert report.processed == n
        return {"state": end_state(store), "report": report.to_dict()}
    finally:
        store.close()


@pytest.mark.parametrize("seed", [1, 2])
def test_batched_and_reference_paths_end_in_the_same_state(tmp_path: Path, seed: int) -> None:
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
