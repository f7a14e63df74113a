"""A drain stopped mid-file sends only the rest next time: the ledger advances per chunk."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from plugin_sdk import Store
from plugin_sdk.errors import ModelError
from plugin_sdk.host.claude.hook_drain import drain
from plugin_sdk.host.claude.hook_queue import enqueue
from plugin_sdk.packs.documents import validate_pack
from plugin_sdk.plugin.records import Prompt
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager, pack_document
from plugin_sdk.transcripts import load_transcript
from plugin_sdk.transcripts.chunker import chunk_messages, completed
from plugin_sdk.transcripts.ledger import Ledger, partial_mark

PACK = pack_document("harbour", "1.0.0", {"BERTH_RULES": "intent", "QUAY_STATE": "content"})
SESSION = "5d0f3a52-7c1e-4b9a-a3f6-0e8d2b4c6a17"
MESSAGES = 9


def transcript(folder: Path) -> Path:
    """A Claude Code session of nine long user messages (three or more chunks), each marked."""
    lines = []
    for n in range(1, MESSAGES + 1):
        text = f"marker-{n:02d}. " + " ".join(
            f"Berth {n} tide note {i} is kept for the quay crew." for i in range(110)
        )
        record = {
            "type": "user",
            "uuid": f"u{n:02d}",
            "parentUuid": f"u{n - 1:02d}" if n > 1 else None,
            "sessionId": SESSION,
            "timestamp": f"2026-05-02T10:{n:02d}:00.000Z",
            "message": {"role": "user", "content": text},
        }
        lines.append(json.dumps(record))
    path = folder / f"{SESSION}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def markers(prompts: list[Prompt]) -> list[str]:
    return [
        m for prompt in prompts for m in re.findall(r"marker-\d\d", json.dumps(prompt.messages))
    ]


def down(prompt: Prompt) -> str:
    raise ModelError("the model is down")


def run_drain(db: Path, model: ScriptedModel) -> dict[str, object]:
    with Store(db, project="harbour", plugins=fresh_plugin_manager(("m", model))) as store:
        return drain(store)


def test_a_drain_stopped_on_the_second_chunk_sends_each_chunk_once(tmp_path: Path) -> None:
    db = tmp_path / "harbour.db"
    with Store(db, project="harbour", plugins=fresh_plugin_manager()) as store:
        store.packs.install(validate_pack(PACK, source="harbour"))
        chunks = chunk_messages(load_transcript(transcript(tmp_path)).messages, store.tokenizer)
    assert len(chunks) >= 3
    conn = sqlite3.connect(db)
    enqueue(conn, "harbour", SESSION, "SessionEnd", tmp_path / f"{SESSION}.jsonl")
    conn.close()

    first = ScriptedModel(["<no-facts/>", down])
    report = run_drain(db, first)
    assert report["error"] == "the model is down" and report["done"] == 0
    sent_first = markers(first.prompts[:1])  # the second prompt failed: not sent
    assert sent_first

    second = ScriptedModel([lambda p: "<no-facts/>"] * 20)
    report = run_drain(db, second)
    assert report["error"] is None and report["done"] == 1
    sent_second = markers(second.prompts)
    assert not set(sent_first) & set(sent_second)  # nothing sent before is sent again
    assert sorted(sent_first + sent_second) == [f"marker-{n:02d}" for n in range(1, MESSAGES + 1)]
    with Store(db, project="harbour") as store:
        (entry,) = Ledger(store).entries()
    assert entry.messages == MESSAGES
    assert entry.mark.content_hash != "partial"  # the whole file: later runs send nothing


@pytest.mark.parametrize("parts", [1, 3])
def test_completed_counts_a_split_message_with_its_last_part(tmp_path: Path, parts: int) -> None:
    messages = load_transcript(transcript(tmp_path)).messages
    with Store(tmp_path / "x.db", project="harbour", plugins=fresh_plugin_manager()) as store:
        budget = 3000 if parts == 1 else 400  # 400 tokens: every message in several parts
        chunks = chunk_messages(messages, store.tokenizer, budget)
    done = completed(chunks, messages)
    assert [m for whole in done for m in whole] == list(messages)
    if parts > 1:
        assert any(not whole for whole in done)  # a chunk of a first part completes nothing
    mark = partial_mark(None, done[0])
    assert mark.content_hash == "partial"
