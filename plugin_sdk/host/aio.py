"""An async host's store: :class:`AsyncStore`, awaitable calls on worker threads.

A :class:`~plugin_sdk.store.connection.Store` holds one SQLite connection,
and SQLite connections belong to the thread that opened them: handing a
store to ``asyncio.to_thread`` fails with ``ProgrammingError``. An
``AsyncStore`` keeps a few worker threads instead, each with its own
connection (one :class:`Store` per thread and project, opened on first use),
and runs each call on whichever worker is free, so the event loop never
waits on SQLite::

    async with AsyncStore("memory.db", project="my-app") as memory:
        block = await memory.inject(budget=1500)
        hits = await memory.search("deploy friday")
        await memory.write("Deploys happen on Tuesdays only.", "TEAM_RULES")
        report = await memory.run(run_historian, messages)  # any function of a Store

Calls run concurrently: reads in parallel (the store is in WAL mode), writes
one at a time under the store's write lock, exactly as with several
processes. Errors are raised to the awaiting caller. ``project=`` on any call
reads or writes another project through the same workers (the MCP HTTP
server serves a team's projects this way).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from plugin_sdk.plugin.manager import PluginManager
    from plugin_sdk.stages.historian import HistorianReport
    from plugin_sdk.stages.inject import Injection
    from plugin_sdk.store.connection import Store
    from plugin_sdk.store.models import Memory, SearchHit, WriteResult
    from plugin_sdk.store.tokens import TokenCounter

T = TypeVar("T")
DEFAULT_WORKERS = 4
_STOP = object()


class AsyncStore:
    """Awaitable store calls for an async host; see the module docstring.

    :param path: the store file (``":memory:"`` is refused: each worker would
        get a store of its own).
    :param project: the default project (derived from the current directory
        when omitted, once, now).
    :param workers: worker threads, each with its own connection.
    :param plugins: the plugin manager every worker's store uses (built once
        here when omitted).
    :param tokenizer: as for :class:`Store`.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        project: str | None = None,
        workers: int = DEFAULT_WORKERS,
        plugins: PluginManager | None = None,
        tokenizer: TokenCounter | None = None,
    ) -> None:
        from plugin_sdk.plugin.manager import make_plugin_manager
        from plugin_sdk.store.project import project_for

        if str(path) == ":memory:":
            raise ValueError("AsyncStore needs a store file: each worker opens its own connection")
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.path = str(path)
        self.project = project if project is not None else project_for()
        self.plugins = plugins if plugins is not None else make_plugin_manager()
        self.tokenizer = tokenizer
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"memsdk-store-{n}", daemon=True)
            for n in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    async def run(
        self, fn: Callable[..., T], /, *args: Any, project: str | None = None, **kwargs: Any
    ) -> T:
        """``fn(store, *args, **kwargs)`` on a worker, with that worker's store for ``project``."""
        if self._closed:
            raise RuntimeError("this AsyncStore is closed")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._jobs.put((fn, args, kwargs, project or self.project, future))
        return await asyncio.wrap_future(future)

    async def inject(
        self, *, budget: int | None = None, session: str | None = None, project: str | None = None
    ) -> Injection:
        """The memory block (:func:`~plugin_sdk.stages.inject.inject`)."""
        from plugin_sdk.stages.inject import DEFAULT_BUDGET, inject

        def settled(store: Store, **options: Any) -> Injection:
            # The account is read on the worker's thread, where its connection lives.
            return inject(store, **options).settle()

        return await self.run(
            settled, budget=budget or DEFAULT_BUDGET, session=session, project=project
        )

    async def search(
        self, query: str, *, project: str | None = None, **options: Any
    ) -> list[SearchHit]:
        """Full-text search (``store.memories.search``; same options)."""
        return await self.run(_search, query, options, project=project)

    async def write(
        self, content: str, category: str, *, project: str | None = None, **options: Any
    ) -> WriteResult:
        """Write one memory (``store.memories.write``; same options)."""
        return await self.run(_write, content, category, options, project=project)

    async def get(self, memory_id: int, *, project: str | None = None) -> Memory:
        """One memory by id (``store.memories.get``)."""
        return await self.run(_get, memory_id, project=project)

    async def historian(
        self, messages: Sequence[dict[str, Any]], *, project: str | None = None, **options: Any
    ) -> HistorianReport:
        """Run the historian on a transcript chunk (:func:`~plugin_sdk.stages.historian.run_historian`)."""
        from plugin_sdk.stages.historian import run_historian

        return await self.run(run_historian, messages, project=project, **options)

    async def aclose(self) -> None:
        """Finish the queued calls, close every worker's connections, stop the workers."""
        if self._closed:
            return
        self._closed = True
        for _ in self._threads:
            self._jobs.put(_STOP)
        for thread in self._threads:
            await asyncio.to_thread(thread.join)

    async def __aenter__(self) -> AsyncStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _call(
        self, stores: dict[str, Store], project: str, fn: Callable[..., T], args: Any, kwargs: Any
    ) -> T:
        """``fn`` on this worker's store of ``project``; a lost server connection is reopened.

        A server engine's connection can be lost under a store (a restart, a
        failover). The call that meets it runs once more on a new connection
        when its store had been open before it; a second loss is raised. A
        transaction cut off before its COMMIT reached the server left nothing;
        in the rare case the COMMIT landed and only its answer was lost, the
        rerun of a write finds its own text and counts it seen twice.
        """
        from plugin_sdk.store.connection import Store

        def opening() -> Store:
            return Store(self.path, project=project, plugins=self.plugins, tokenizer=self.tokenizer)

        reused = project in stores
        store = _store(stores, project, opening)
        try:
            return fn(store, *args, **kwargs)
        except Exception:
            if not (reused and store.lost):
                raise
        return fn(_store(stores, project, opening), *args, **kwargs)

    def _work(self) -> None:
        stores: dict[str, Store] = {}
        try:
            while (job := self._jobs.get()) is not _STOP:
                fn, args, kwargs, project, future = job
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    future.set_result(self._call(stores, project, fn, args, kwargs))
                except BaseException as error:
                    future.set_exception(error)
        finally:
            for store in stores.values():
                store.close()


def _store(stores: dict[str, Store], project: str, opening: Callable[[], Store]) -> Store:
    store = stores.get(project)
    if store is not None and store.lost:  # found lost before use: opened again
        del stores[project]
        store.db.close()
        store = None
    if store is None:
        store = stores[project] = opening()
    return store


def _search(store: Store, query: str, options: dict[str, Any]) -> list[SearchHit]:
    return store.memories.search(query, **options)


def _write(store: Store, content: str, category: str, options: dict[str, Any]) -> WriteResult:
    return store.memories.write(content, category, **options)


def _get(store: Store, memory_id: int) -> Memory:
    return store.memories.get(memory_id)
