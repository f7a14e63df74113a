"""AsyncStore: an async host's per-turn calls, run concurrently under asyncio."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from plugin_sdk import NotFound, Store, resolve_pack
from plugin_sdk.host.aio import AsyncStore
from plugin_sdk.store import driver
from plugin_sdk.testing import ScriptedModel, fresh_plugin_manager


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "async.db"
    with Store(path, project="app") as store:
        store.packs.install(resolve_pack("ops"))
    return path


def test_a_plain_store_cannot_cross_threads(db: Path) -> None:
    # What AsyncStore exists for: asyncio.to_thread with a Store fails.
    async def main() -> None:
        with Store(db, project="app") as store:
            await asyncio.to_thread(store.memories.search, "x")

    with pytest.raises(driver.ProgrammingError):
        asyncio.run(main())


def test_concurrent_writes_searches_and_injects(db: Path) -> None:
    with Store(db, project="app") as store:
        category = store.category_names()[0]

    async def main() -> tuple[list[int], list[int], set[str], int, set[str]]:
        async with AsyncStore(db, project="app", workers=4) as memory:
            results = await asyncio.gather(
                *(memory.write(f"Deploy note number {n}.", category) for n in range(40))
            )
            hits = await asyncio.gather(*(memory.search("deploy note", limit=50) for _ in range(8)))
            blocks = await asyncio.gather(*(memory.inject(budget=2000) for _ in range(4)))
            threads = set(
                await asyncio.gather(
                    *(memory.run(lambda store: threading.current_thread().name) for _ in range(40))
                )
            )
            other = await memory.write("Elsewhere.", category, project="other")
            texts = {block.text for block in blocks}
            return [r.id for r in results], [len(h) for h in hits], threads, other.id, texts

    ids, counts, threads, other, texts = asyncio.run(main())
    assert len(texts) == 1 and "Deploy note number" in texts.pop()  # one block, whichever worker
    assert len(set(ids)) == 40
    assert counts == [40] * 8
    assert threads <= {f"memsdk-store-{n}" for n in range(4)} and len(threads) >= 1
    with Store(db, project="other") as store:
        assert store.memories.get(other).project == "other"


def test_inject_and_historian_per_turn(db: Path, tmp_path: Path) -> None:
    with Store(db, project="app") as store:
        category = store.category_names()[0]
    model = ScriptedModel(
        [f'<facts category="{category}">\n- Releases are cut on Mondays.\n</facts>']
    )

    async def main() -> tuple[str, list[int]]:
        plugins = fresh_plugin_manager(("scripted-model", model))
        async with AsyncStore(db, project="app", plugins=plugins) as memory:
            report = await memory.historian(
                [
                    {"role": "user", "content": "We cut releases on Mondays."},
                    {"role": "assistant", "content": "Noted."},
                ]
            )
            block = await memory.inject()
            return block.text, report.written

    text, written = asyncio.run(main())
    assert len(written) == 1 and "Releases are cut on Mondays." in text


def test_errors_reach_the_caller_and_a_closed_store_refuses(db: Path) -> None:
    async def main() -> AsyncStore:
        memory = AsyncStore(db, project="app", workers=1)
        with pytest.raises(NotFound):
            await memory.get(12345)
        assert (await memory.run(lambda store: store.project)) == "app"  # the worker lives on
        await memory.aclose()
        with pytest.raises(RuntimeError, match="closed"):
            await memory.get(1)
        return memory

    asyncio.run(main())
    with pytest.raises(ValueError, match="store file"):
        AsyncStore(":memory:")


def test_a_connection_the_server_ends_is_opened_again(
    store_location: object, ops_pack: object
) -> None:
    """A server restart or failover ends a worker's connection: the next calls still answer.

    The server ends the worker's backend (``pg_terminate_backend``, what a
    restart does to every connection); the call that meets it runs once more
    on a new connection, and so does every later one. SQLite's file
    connection is never lost: there the same calls simply answer.
    """
    url = store_location("reconnect.db")  # type: ignore[operator]
    with Store(url, project="app") as store:
        store.packs.install(ops_pack)  # type: ignore[arg-type]
        category = store.category_names()[0]
        store.memories.write("The ferry to the north quay leaves at noon.", category)
        engine = store.engine

    def end_my_connection(store: Store) -> None:
        if store.engine == "postgresql":
            with Store(url, project="app") as other:
                pid = store.db.execute("SELECT pg_backend_pid()").fetchone()[0]
                other.db.execute(f"SELECT pg_terminate_backend({int(pid)})").fetchone()

    async def main() -> list[object]:
        async with AsyncStore(url, project="app", workers=1) as memory:
            seen: list[object] = [len(await memory.search("ferry"))]
            await memory.run(end_my_connection)
            seen.append(await memory.run(lambda store: store.lost))  # not yet known
            seen.append(len(await memory.search("ferry")))  # met, opened again, answered
            seen.append((await memory.write("The ferry is late on Sundays.", category)).created)
            seen.append(len(await memory.search("ferry")))
            return seen

    assert asyncio.run(main()) == [1, False, 1, True, 2]
    if engine == "postgresql":
        with Store(url, project="app") as store:
            assert store.memories.count() == 2


def test_the_stdio_servers_store_is_opened_again_when_its_connection_is_ended(
    store_location: object, ops_pack: object
) -> None:
    """``memsdk mcp`` over stdio holds one store: a server restart must not end its memory."""
    from plugin_sdk.host.mcp_server import LocalRunner

    url = store_location("stdio.db")  # type: ignore[operator]
    with Store(url, project="app") as store:
        store.packs.install(ops_pack)  # type: ignore[arg-type]
        category = store.category_names()[0]
        store.memories.write("The ferry to the north quay leaves at noon.", category)
    runner = LocalRunner(Store(url, project="app"))
    try:
        first = runner.store
        assert len(runner.call(lambda store: store.memories.search("ferry"))) == 1
        if first.engine == "postgresql":
            pid = first.db.execute("SELECT pg_backend_pid()").fetchone()[0]
            with Store(url, project="app") as other:
                other.db.execute(f"SELECT pg_terminate_backend({int(pid)})").fetchone()
        assert len(runner.call(lambda store: store.memories.search("ferry"))) == 1
        written = runner.call(lambda store: store.memories.write("The ferry is late.", category))
        assert written.created
        assert (runner.store is first) == (first.engine == "sqlite")  # opened again: PostgreSQL
        assert runner.store.project == "app" and runner.store.path == first.path
    finally:
        runner.store.close()
