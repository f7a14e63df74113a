"""Two ``memsdk mcp --http`` servers on one PostgreSQL schema serve one memory.

Each server is its own process with its own connection, as two hosts behind a
load balancer would run them; both share one token file. A write through one
must be found through the other at once (search and get), and a round of
concurrent writes spread over both must end with every write stored once and
found through each server. Needs ``MEMSDK_TEST_POSTGRES`` (a libpq URL).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from plugin_sdk import Store, validate_pack
from plugin_sdk.host.mcp_http import add_token
from plugin_sdk.testing import drop_postgres_schemas, pack_document, postgres_schema

POSTGRES_URL = os.environ.get("MEMSDK_TEST_POSTGRES", "")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not POSTGRES_URL,
        reason="MEMSDK_TEST_POSTGRES is unset: two servers on one PostgreSQL database need one",
    ),
]
mcp = pytest.importorskip("mcp")
httpx2 = pytest.importorskip("httpx2")
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

PROJECT = "orchard"
CATEGORY = "ORCHARD_NOTES"
PACK = pack_document("orchard", "1.0.0", {CATEGORY: "content"})
#: Concurrent writes in the round, and the client sessions per server that make them.
WRITES = 40
SESSIONS = 4


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(db: str, tokens: Path, folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    log = (folder / f"server-{port}.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from plugin_sdk.cli import main; main()",
            "mcp",
            "--db",
            db,
            "--tokens",
            str(tokens),
            "--http",
            f"127.0.0.1:{port}",
        ],
        env={**os.environ, "MEMSDK_LOAD_PLUGINS": ""},
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=folder,
    )
    log.close()
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                text = (folder / f"server-{port}.log").read_text("utf-8", "replace")
                raise RuntimeError(f"server on port {port} did not start:\n{text}") from None
            time.sleep(0.2)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Two running servers on one new schema: their URLs, the token, the store URL."""
    folder = tmp_path_factory.mktemp("pg-servers")
    db, schema = postgres_schema(POSTGRES_URL)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        with Store(db, project=PROJECT) as store:
            store.packs.install(validate_pack(PACK, source="orchard"))
        tokens = folder / "tokens.json"
        token = add_token(tokens, "team", [PROJECT])
        urls = []
        for _ in range(2):
            process, url = start_server(db, tokens, folder)
            processes.append(process)
            urls.append(url)
        yield {"urls": urls, "token": token, "db": db}
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)
        drop_postgres_schemas(POSTGRES_URL, [schema])


@asynccontextmanager
async def client(url: str, token: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}", "X-Memsdk-Project": PROJECT}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = await session.call_tool(tool, arguments)
    text = " ".join(getattr(block, "text", "") for block in reply.content)
    assert not reply.is_error, f"{tool} {arguments} failed: {text}"
    assert reply.structured_content is not None, f"{tool} answered no structured content: {text}"
    return reply.structured_content


def found_ids(answer: dict[str, Any]) -> list[int]:
    return [hit["id"] for hit in answer["results"]]


def test_a_write_through_one_server_is_found_through_the_other_at_once(
    servers: dict[str, Any],
) -> None:
    first, second = servers["urls"]

    async def scenario() -> dict[str, Any]:
        async with client(first, servers["token"]) as a, client(second, servers["token"]) as b:
            # Each server has answered once, so whatever it caches is warm before the write.
            await call(a, "memory_search", {"query": "quince"})
            await call(b, "memory_search", {"query": "quince"})
            one = await call(
                a, "memory_write", {"content": "Prune the quince in March.", "category": CATEGORY}
            )
            on_b = await call(b, "memory_search", {"query": "quince"})
            got_b = await call(b, "memory_get", {"id": one["id"]})
            two = await call(
                b,
                "memory_write",
                {"content": "Graft the medlar on hawthorn.", "category": CATEGORY},
            )
            on_a = await call(a, "memory_search", {"query": "medlar"})
            got_a = await call(a, "memory_get", {"id": two["id"]})
            return {
                "one": one,
                "two": two,
                "on_b": on_b,
                "got_b": got_b,
                "on_a": on_a,
                "got_a": got_a,
            }

    seen = anyio.run(scenario)
    assert seen["one"]["created"] and seen["two"]["created"]
    assert found_ids(seen["on_b"]) == [seen["one"]["id"]]
    assert seen["got_b"]["content"] == "Prune the quince in March."
    assert found_ids(seen["on_a"]) == [seen["two"]["id"]]
    assert seen["got_a"]["content"] == "Graft the medlar on hawthorn."


def test_concurrent_writes_across_both_servers_are_each_stored_once_and_found_through_each(
    servers: dict[str, Any],
) -> None:
    urls = servers["urls"]
    texts = [f"Row {i} of the pear walk is tagged pearrow{i:03d}." for i in range(WRITES)]
    written: dict[int, dict[str, Any]] = {}

    async def writer(url: str, lane: int) -> None:
        async with client(url, servers["token"]) as session:
            for i in range(lane, WRITES, 2 * SESSIONS):
                written[i] = await call(
                    session, "memory_write", {"content": texts[i], "category": CATEGORY}
                )

    async def write_round() -> None:
        async with anyio.create_task_group() as group:
            for lane in range(2 * SESSIONS):  # lanes alternate between the two servers
                group.start_soon(writer, urls[lane % 2], lane)

    async def read_back(url: str) -> dict[int, tuple[list[int], str]]:
        answers = {}
        async with client(url, servers["token"]) as session:
            for i, result in sorted(written.items()):
                hits = await call(session, "memory_search", {"query": f"pearrow{i:03d}"})
                got = await call(session, "memory_get", {"id": result["id"]})
                answers[i] = (found_ids(hits), got["content"])
        return answers

    anyio.run(write_round)
    assert sorted(written) == list(range(WRITES))
    assert all(result["created"] for result in written.values()), "a distinct text was folded"
    ids = [result["id"] for result in written.values()]
    assert len(set(ids)) == WRITES, "two writes were given one id"
    for url in urls:
        answers = anyio.run(read_back, url)
        for i, (hits, content) in answers.items():
            assert hits == [written[i]["id"]], f"{url}: pearrow{i:03d} found as {hits}"
            assert content == texts[i]
    with Store(servers["db"], project=PROJECT) as store:
        rows = store.db.execute(
            "SELECT content, seen_count FROM memories WHERE content LIKE ?",
            ["Row % of the pear walk%"],
        ).fetchall()
    assert sorted(content for content, _ in rows) == sorted(texts)  # nothing lost or doubled
    assert {seen for _, seen in rows} == {1}


def test_the_http_servers_workers_open_the_database_with_its_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The URL's password reaches the workers; only what is printed shows ``***``.

    Before, the workers were given the printed form (``user:***@``) and every
    request failed password authentication on a server that asks for one.
    The test database trusts local connections, so any password opens it.
    """
    from click.testing import CliRunner

    from plugin_sdk.cli import cli
    from plugin_sdk.host import mcp_http

    db, schema = postgres_schema(POSTGRES_URL)
    secret = "orchard-s3cret"
    with_password = db.replace("postgresql://memsdk@", f"postgresql://memsdk:{secret}@", 1)
    assert secret in with_password, "the test URL names no user memsdk"
    served: list[str] = []
    monkeypatch.setattr(mcp_http, "serve_http", lambda path, *a, **k: served.append(str(path)))
    tokens = tmp_path / "tokens.json"
    add_token(tokens, "team", [PROJECT])
    try:
        with Store(with_password, project=PROJECT) as store:
            store.packs.install(validate_pack(PACK, source="orchard"))
        args = ["mcp", "--db", with_password, "--tokens", str(tokens), "--http", "127.0.0.1:1"]
        result = CliRunner().invoke(cli, args, env={"MEMSDK_LOAD_PLUGINS": ""})
        assert result.exit_code == 0, result.output
        assert served == [with_password]
        assert secret not in result.output and "***" in result.output
    finally:
        drop_postgres_schemas(POSTGRES_URL, [schema])
