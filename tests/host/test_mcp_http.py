"""``memsdk mcp --http``: one store served to a team over streamable HTTP, through the SDK's client.

The server runs as ``memsdk mcp --http 127.0.0.1:PORT`` in a subprocess with
a token file of two tokens: alice may use projects orchard and vineyard, bob
only vineyard. Clients are the mcp SDK's own streamable HTTP client.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from plugin_sdk import Store, validate_pack
from plugin_sdk.cli import cli
from plugin_sdk.errors import AccessRefused
from plugin_sdk.host.mcp_http import TokenVerifier, add_token, load_grants
from plugin_sdk.testing import pack_document

mcp = pytest.importorskip("mcp")
httpx2 = pytest.importorskip("httpx2")
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

ORCHARD = pack_document(
    "orchard", "1.0.0", {"ORCHARD_RULES": "intent", "ORCHARD_GRAFTS": "content"}
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A running server: its URL and the two tokens' secrets."""
    tmp = tmp_path_factory.mktemp("http")
    db = tmp / "team.db"
    with Store(db, project="orchard") as store:
        store.packs.install(validate_pack(ORCHARD, source="orchard"))
        store.memories.write("Never graft in frost.", "ORCHARD_RULES", importance=90)
    with Store(db, project="vineyard") as store:
        store.memories.write("Harvest the riesling last.", "ORCHARD_RULES")
    tokens = tmp / "tokens.json"
    alice = add_token(tokens, "alice", ["orchard", "vineyard"])
    bob = add_token(tokens, "bob", ["vineyard"])
    port = free_port()
    log = (tmp / "server.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from plugin_sdk.cli import main; main()",
            "mcp",
            "--db",
            str(db),
            "--tokens",
            str(tokens),
            "--http",
            f"127.0.0.1:{port}",
            "--log",
            str(tmp / "requests.log"),
        ],
        env={**os.environ, "MEMSDK_LOAD_PLUGINS": ""},
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=tmp,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((tmp / "server.log").read_text()) from None
                time.sleep(0.2)
        yield {
            "url": f"http://127.0.0.1:{port}/mcp",
            "alice": alice,
            "bob": bob,
            "log": str(tmp / "requests.log"),
        }
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


@asynccontextmanager
async def client(
    url: str, token: str, project: str | None = None, statuses: list[int] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session; ``statuses`` collects the HTTP answers' codes."""
    headers = {"Authorization": f"Bearer {token}"}
    if project:
        headers["X-Memsdk-Project"] = project

    async def note(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    async with (
        httpx2.AsyncClient(headers=headers, timeout=30, event_hooks={"response": [note]}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def run(coro_fn, *args):  # type: ignore[no-untyped-def]
    return anyio.run(coro_fn, *args)


def test_two_clients_two_projects_each_sees_its_own(server: dict[str, str]) -> None:
    async def scenario() -> tuple[list[str], list[str], dict, dict]:
        async with (
            client(server["url"], server["alice"], "orchard") as a,
            client(server["url"], server["bob"]) as b,  # bound to one project: no header needed
        ):
            tools = await a.list_tools()
            written = await b.call_tool(
                "memory_write", {"content": "Net the vines in August.", "category": "ORCHARD_RULES"}
            )
            found_a = await a.call_tool("memory_search", {"query": "vines"})
            found_b = await b.call_tool("memory_search", {"query": "vines"})
            listed = await a.call_tool("memory_list", {})
            return (
                [t.name for t in tools.tools],
                [r["content"] for r in listed.structured_content["memories"]],
                {"a": found_a.structured_content, "b": found_b.structured_content},
                written.structured_content,
            )

    names, orchard, found, written = run(scenario)
    assert {"memory_list", "memory_recent", "memory_toc"} <= set(names)
    assert orchard == ["Never graft in frost."]
    assert found["a"]["results"] == []  # bob's write went to vineyard only
    assert [r["id"] for r in found["b"]["results"]] == [written["id"]]


def test_alice_switches_projects_per_request(server: dict[str, str]) -> None:
    async def scenario() -> list[str]:
        async with client(server["url"], server["alice"], "vineyard") as session:
            listed = await session.call_tool("memory_list", {})
            return [r["content"] for r in listed.structured_content["memories"]]

    assert "Harvest the riesling last." in run(scenario)


def refused_with(url: str, token: str, project: str) -> list[int]:
    """Try to open a session; the HTTP codes the server answered (the SDK raises)."""
    statuses: list[int] = []

    async def scenario() -> None:
        async with client(url, token, project, statuses):
            pass

    with pytest.raises(Exception) as refused:  # an ExceptionGroup from the SDK's task group
        run(scenario)
    assert any(isinstance(error, mcp.MCPError) for error in leaves(refused.value))
    return statuses


def leaves(error: BaseException) -> list[BaseException]:
    inner = getattr(error, "exceptions", None)
    return [leaf for e in inner for leaf in leaves(e)] if inner else [error]


def test_a_bad_token_is_refused(server: dict[str, str]) -> None:
    assert refused_with(server["url"], "not-a-token", "orchard") == [401]


def test_a_token_is_refused_a_project_it_is_not_bound_to(server: dict[str, str]) -> None:
    assert refused_with(server["url"], server["bob"], "orchard") == [403]


def test_refusals_over_plain_http_name_no_other_project(server: dict[str, str]) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream"}
    with httpx2.Client(timeout=10) as http:
        missing = http.post(server["url"], json=body, headers=headers)
        bad = http.post(
            server["url"], json=body, headers={**headers, "Authorization": "Bearer nope"}
        )
        other = http.post(
            server["url"],
            json=body,
            headers={
                **headers,
                "Authorization": f"Bearer {server['bob']}",
                "X-Memsdk-Project": "orchard",
            },
        )
    assert (missing.status_code, bad.status_code, other.status_code) == (401, 401, 403)
    assert "vineyard" not in other.text  # bob's own project is not named either


def test_token_file_is_private_and_holds_only_digests(tmp_path: Path) -> None:
    tokens = tmp_path / "t.json"
    secret = add_token(tokens, "carol", ["orchard"])
    assert tokens.stat().st_mode & 0o777 == 0o600
    assert secret not in tokens.read_text()
    grants = load_grants(tokens)
    verifier = TokenVerifier(grants)
    assert verifier.grant_for(secret) == grants[0]
    assert verifier.grant_for(secret + "x") is None
    tokens.chmod(0o644)
    with pytest.raises(AccessRefused, match="chmod 600"):
        load_grants(tokens)


def test_token_commands(tmp_path: Path) -> None:
    tokens = str(tmp_path / "t.json")
    runner = CliRunner()
    added = runner.invoke(cli, ["mcp", "token", "add", "dave", "-p", "orchard", "--tokens", tokens])
    assert added.exit_code == 0, added.output
    listed = runner.invoke(cli, ["mcp", "token", "list", "--tokens", tokens, "--json"])
    assert '"dave"' in listed.output and "sha256" not in listed.output
    revoked = runner.invoke(cli, ["mcp", "token", "revoke", "dave", "--tokens", tokens])
    assert revoked.exit_code == 0
    again = runner.invoke(cli, ["mcp", "token", "revoke", "dave", "--tokens", tokens])
    assert again.exit_code == 1 and "no token named 'dave'" in again.output


# The request log


def test_each_request_is_logged_in_one_line_without_a_memorys_text(server: dict[str, str]) -> None:
    async def go() -> None:
        async with client(server["url"], server["alice"], "orchard") as session:
            result = await session.call_tool("memory_recall", {"query": "graft frost"})
            assert "Never graft in frost." in str(result.content)

    run(go)
    refused = httpx2.post(server["url"], headers={"Authorization": "Bearer nope"}, json={})
    assert refused.status_code == 401
    text = Path(server["log"]).read_text("utf-8")
    line = re.compile(
        r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z token=(\S+) project=(\S+) tool=(\S+) "
        r"status=(\d{3}) ms=\d+\.\d$"
    )
    fields = [line.match(row) for row in text.splitlines()]
    assert fields and all(fields), text
    rows = [m.groups() for m in fields if m]
    assert ("alice", "orchard", "memory_recall", "200") in rows
    assert ("alice", "orchard", "initialize", "200") in rows
    assert ("-", "-", "-", "401") in rows
    assert "frost" not in text and "graft" not in text  # neither the memory nor the query


def test_request_log_reads_only_the_method_and_tool_name() -> None:
    from plugin_sdk.host.request_log import tool_of

    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call"}
    secret = {**call, "params": {"name": "memory_write", "arguments": {"content": "pw hunter2"}}}
    assert tool_of(json.dumps(secret).encode()) == "memory_write"
    assert (
        tool_of(json.dumps([{"method": "tools/list"}, secret]).encode())
        == "tools/list,memory_write"
    )
    assert tool_of(b"") == "-" and tool_of(b"{not json") == "-"


def test_log_needs_http(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["mcp", "--db", str(tmp_path / "x.db"), "--log", str(tmp_path / "r.log")]
    )
    assert result.exit_code == 2 and "--log" in result.output and "--http" in result.output
