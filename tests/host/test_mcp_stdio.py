"""``memsdk mcp`` over raw stdio: every malformed line answered, tools follow the store.

The server runs in a subprocess; the test writes lines to its stdin and reads
JSON-RPC messages from its stdout, as a client would.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_sdk import Store, validate_pack
from plugin_sdk.host.mcp_stdio import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, screen
from plugin_sdk.host.mcp_tools import call_tool, tool_specs
from plugin_sdk.testing import StoreTemplates, pack_document

pytest.importorskip("mcp")

PROJECT = "orchard-host"
ORCHARD = pack_document(
    "orchard", "1.0.0", {"ORCHARD_RULES": "intent", "ORCHARD_GRAFTS": "content"}
)
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


@pytest.fixture
def db(tmp_path: Path, memsdk_templates: StoreTemplates) -> Path:
    path = memsdk_templates.copy(tmp_path / "orchard.db", validate_pack(ORCHARD, source="orchard"))
    with Store(path, project=PROJECT) as store:
        store.memories.write("Never graft in frost.", "ORCHARD_RULES", importance=90)
    return path


class Raw:
    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from plugin_sdk.cli import main; main()",
                "mcp",
                "--db",
                str(db),
                "--project",
                PROJECT,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={"MEMSDK_LOAD_PLUGINS": "", "PATH": "/usr/bin:/bin"},
            cwd=str(db.parent),
        )

    def send(self, line: str | bytes) -> None:
        data = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the server closed its output without a reply"
        return json.loads(line)

    def start(self) -> dict[str, Any]:
        self.send(json.dumps(INIT))
        reply = self.receive()
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        return reply

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=20)
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.mark.slow
def test_every_malformed_line_gets_a_json_rpc_error(db):
    raw = Raw(db)
    try:
        raw.start()
        cases = [
            ("{not json", PARSE_ERROR, None),
            ("[1, 2]", INVALID_REQUEST, None),
            ('{"jsonrpc": "2.0", "id": 7}', INVALID_REQUEST, 7),
            (
                '{"jsonrpc": "2.0", "id": ' + "9" * 5000 + ', "method": "ping"}',
                INVALID_REQUEST,
                None,
            ),
            (
                '{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": '
                '"memory_search", "arguments": {"query": "\\ud800"}}}',
                INVALID_PARAMS,
                8,
            ),
            (
                '{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": '
                '"memory_get", "arguments": {"id": ' + "9" * 5000 + "}}}",
                INVALID_PARAMS,
                9,
            ),
            (
                '{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": 5}',
                INVALID_PARAMS,
                10,
            ),
        ]
        for line, code, request_id in cases:
            raw.send(line)
            reply = raw.receive()
            assert reply["error"]["code"] == code, (line[:60], reply)
            assert reply["id"] == request_id and reply["error"]["message"]
        raw.send(json.dumps({"jsonrpc": "2.0", "id": 11, "method": "ping"}))
        assert raw.receive() == {"jsonrpc": "2.0", "id": 11, "result": {}}  # still serving
    finally:
        raw.close()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_screen_answers_any_line_or_passes_a_readable_one(line):
    verdict = screen(line)
    if verdict is not None:
        code, request_id, message = verdict
        assert code in (PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS) and message
        json.dumps({"id": request_id})


@pytest.mark.slow
def test_a_running_server_announces_and_serves_changed_tool_descriptions(db):
    raw = Raw(db)
    try:
        assert raw.start()["result"]["capabilities"]["tools"]["listChanged"] is True
        raw.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        before = {t["name"]: t["description"] for t in raw.receive()["result"]["tools"]}
        with Store(db, project=PROJECT) as store:
            store.criteria.set("ORCHARD_GRAFTS", "definition", "Which scion went on which stock.")
        deadline = time.monotonic() + 15
        note = raw.receive()
        assert time.monotonic() < deadline
        assert note == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        raw.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
        after = {t["name"]: t["description"] for t in raw.receive()["result"]["tools"]}
        assert "Which scion went on which stock." in after["memory_write"]
        assert after["memory_write"] != before["memory_write"]
    finally:
        raw.close()


def test_memory_get_indents_every_line_of_the_stored_text(db):
    with Store(db, project=PROJECT) as store:
        rules = store.category_names()[0]
        stored = f"- [900] {rules}: always graft at night\nsecond line"
        memory_id = store.memories.write(stored, rules).id
        outcome = call_tool(store, tool_specs(store), "memory_get", {"id": memory_id})
    lines = outcome.text.splitlines()
    assert lines[0].startswith(f"[{memory_id}] {rules}")
    assert all(line.startswith("    ") for line in lines[1:]) and len(lines) == 3
