"""Stress: many processes on one store at once, as a host runs them.

On one store file (the ``ops`` pack, a generated observation inbox) this starts,
at the same moment:

- ``--writers`` writer processes, each writing ``--writes`` distinct memories
  one ``memories.write`` call (one transaction) at a time, from a fresh
  connection (the first write of a connection is where a deferred ``BEGIN``
  used to fail);
- ``memsdk mcp`` (stdio), driven by the mcp SDK's client, answering
  ``memory_search`` calls in a loop until the writers finish;
- ``memsdk retain run`` over ``--observations`` observations;
- ``memsdk dream run`` (every task).

Then it checks and reports: lock errors surfaced anywhere (writers, MCP,
retain, dream: a "database is locked" or ``StoreBusy``), writes lost or
applied twice (every written text is there once, with ``seen_count`` 1), the
inbox emptied, ``memsdk doctor`` clean, and throughput (writes/s across all
writers, searches/s). It exits 1 if any check fails.

The baseline, in the same run: the writers alone (``--baseline-writes`` each)
on a fresh store, once with transactions begun the way they were before
(a deferred ``BEGIN``, no retry) and once with memsdk's; it reports the lock
errors each way saw and their writes/s.

With ``--db postgresql://…`` the store is a fresh schema of that database
(dropped after), served by TWO ``memsdk mcp --http`` processes (one token
file): the writers write through the servers' ``memory_write`` tool, half
through each, a search loop runs against each server, and the retain and
dream runs are processes on the same database. The checks are the same
(the writes counted by the tools' source, ``mcp``); the deferred-``BEGIN``
baseline is SQLite's and is not run.

Run from the repository root::

    .venv/bin/python bench/stress.py                                  # 8 x 1,000 writes
    .venv/bin/python bench/stress.py --writers 4 --writes 100 --observations 100 \
        --baseline-writes 0                                           # CI size
    .venv/bin/python bench/stress.py --json > stress.json
    .venv/bin/python bench/stress.py --db 'postgresql://memsdk@/memsdk?host=/tmp/pg'  # two servers
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_retain import PACK, Stream
from bench_store import environment, load_average
from places import server_version

from plugin_sdk import Store, resolve_pack
from plugin_sdk.grid.policy import grid
from plugin_sdk.host.mcp_tools import SOURCE as MCP_SOURCE
from plugin_sdk.retain.observations import observe
from plugin_sdk.store.doctor import doctor
from plugin_sdk.store.postgres import is_url

PROJECT = "stress"
SOURCE = "stress"
LOCKED = ("database is locked", "StoreBusy", "store is busy", "database table is locked")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def memsdk() -> str:
    return str(Path(sys.executable).with_name("memsdk"))


# One writer process


def http_writer(url: str, token: str, category: str, worker: int, writes: int, go: str) -> None:
    """Wait for ``go``, then write through the MCP server at ``url``; print a JSON result line."""
    import anyio

    async def main() -> dict[str, Any]:
        errors: list[str] = []
        async with http_session(url, token) as session:
            while not os.path.exists(go):
                await anyio.sleep(0.002)
            started = time.perf_counter()
            for i in range(writes):
                try:
                    reply = await session.call_tool(
                        "memory_write",
                        {"content": f"stress writer {worker} item {i}", "category": category},
                    )
                    if reply.is_error:
                        errors.append(" ".join(getattr(b, "text", "") for b in reply.content))
                except Exception as error:  # counted and reported, never hidden
                    errors.append(f"{type(error).__name__}: {error}")
            return {"seconds": time.perf_counter() - started, "errors": errors}

    result = anyio.run(main)
    print(json.dumps({"worker": worker, **result}))


def writer(db: str, worker: int, writes: int, go: str, deferred: bool = False) -> None:
    """Wait for ``go`` to exist, then write; print a JSON result line.

    ``deferred``: the baseline, transactions begin as they did before issue 16
    (a deferred ``BEGIN``, no retry).
    """
    if deferred:
        from plugin_sdk.store import locking

        def deferred_begin(conn: Any, mode: str = "", *, attempts: int = 1) -> None:
            conn.execute("BEGIN")

        locking.begin = deferred_begin  # type: ignore[assignment]
    store = Store(db, project=PROJECT)
    if deferred:
        store.db.conn.isolation_level = ""
    category = store.category_names()[0]
    while not os.path.exists(go):
        time.sleep(0.002)
    errors: list[str] = []
    started = time.perf_counter()
    for i in range(writes):
        try:
            store.memories.write(f"stress writer {worker} item {i}", category, source=SOURCE)
        except Exception as error:  # counted and reported, never hidden
            errors.append(f"{type(error).__name__}: {error}")
    seconds = time.perf_counter() - started
    store.close()
    print(json.dumps({"worker": worker, "seconds": seconds, "errors": errors}))


# The MCP server, searched until told to stop


def search_loop(db: str, stop: threading.Event, result: dict[str, Any]) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    server = StdioServerParameters(
        command=sys.executable,
        args=[
            "-c",
            "from plugin_sdk.cli import main; main()",
            "mcp",
            "--db",
            db,
            "--project",
            PROJECT,
        ],
        env={**os.environ},
    )

    async def main() -> None:
        calls = errors = 0
        messages: list[str] = []
        started = time.perf_counter()
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(server, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result["ready"] = True
                while not stop.is_set() or calls == 0:
                    reply = await session.call_tool(
                        "memory_search", {"query": f"stress writer {calls % 8}", "limit": 5}
                    )
                    calls += 1
                    if reply.is_error:
                        errors += 1
                        messages.append(" ".join(getattr(b, "text", "") for b in reply.content))
        result.update(
            calls=calls,
            errors=errors,
            messages=messages[:5],
            seconds=time.perf_counter() - started,
        )

    try:
        anyio.run(main)
    except Exception as error:  # reported as a failure of the run
        detail = getattr(error, "exceptions", [error])
        result.update(crashed=f"{type(error).__name__}: {error}: {detail!r}")


# PostgreSQL: two HTTP servers on one database


def http_session(url: str, token: str) -> Any:
    """An initialized mcp SDK client session on the server at ``url`` (an async context)."""
    from contextlib import asynccontextmanager

    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    @asynccontextmanager
    async def session() -> Any:
        headers = {"Authorization": f"Bearer {token}", "X-Memsdk-Project": PROJECT}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=120) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            yield client

    return session()


def http_search_loop(url: str, token: str, stop: threading.Event, result: dict[str, Any]) -> None:
    """``memory_search`` through the server at ``url`` until ``stop``; as :func:`search_loop`."""
    import anyio

    async def main() -> None:
        calls = errors = 0
        messages: list[str] = []
        started = time.perf_counter()
        async with http_session(url, token) as session:
            result["ready"] = True
            while not stop.is_set() or calls == 0:
                reply = await session.call_tool(
                    "memory_search", {"query": f"stress writer {calls % 8}", "limit": 5}
                )
                calls += 1
                if reply.is_error:
                    errors += 1
                    messages.append(" ".join(getattr(b, "text", "") for b in reply.content))
        result.update(
            calls=calls, errors=errors, messages=messages[:5], seconds=time.perf_counter() - started
        )

    try:
        anyio.run(main)
    except Exception as error:  # reported as a failure of the run
        detail = getattr(error, "exceptions", [error])
        result.update(crashed=f"{type(error).__name__}: {error}: {detail!r}")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_servers(db: str, tokens: Path, tmp: Path, count: int = 2) -> list[tuple[Any, str]]:
    """``count`` ``memsdk mcp --http`` processes on ``db``: ``(process, URL)`` each, listening."""
    import socket

    servers = []
    for _ in range(count):
        port = free_port()
        log_file = (tmp / f"server-{port}.log").open("wb")
        process = subprocess.Popen(
            [memsdk(), "mcp", "--db", db, "--tokens", str(tokens), "--http", f"127.0.0.1:{port}"],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env={**os.environ},
        )
        log_file.close()
        servers.append((process, port))
    deadline = time.monotonic() + 60
    for process, port in servers:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    text = (tmp / f"server-{port}.log").read_text("utf-8", "replace")
                    raise SystemExit(
                        f"memsdk mcp --http on port {port} did not start:\n{text}"
                    ) from None
                time.sleep(0.2)
    return [(process, f"http://127.0.0.1:{port}/mcp") for process, port in servers]


# The run


def prepare(db: str | Path, observations: int, seed: int) -> int:
    with Store(db, project=PROJECT) as store:
        store.packs.install(resolve_pack(PACK))
        categories = store.category_names()
        relations = sorted(grid(store).relations)
        stream = Stream(observations, max(20, observations // 5), categories, relations, seed)
        report = observe(store, stream.lines())
        if report.bad:
            raise SystemExit(f"generated observations were refused: {report.bad[:3]}")
        return len(stream.documents)


def writers_only(tmp: Path, args: argparse.Namespace, *, deferred: bool) -> dict[str, Any]:
    """The baseline: the writers alone, transactions begun the old way (deferred)."""
    db = str(tmp / f"writers-{'deferred' if deferred else 'immediate'}.db")
    go = str(tmp / f"go-{deferred}")
    with Store(db, project=PROJECT) as store:
        store.packs.install(resolve_pack(PACK))
    command = [sys.executable, __file__, "--db", db, "--writes", str(args.baseline_writes)]
    command += ["--go", go] + (["--deferred"] if deferred else [])
    writers = [
        subprocess.Popen([*command, "--writer", str(w)], stdout=subprocess.PIPE)
        for w in range(args.writers)
    ]
    time.sleep(0.5 + 0.1 * args.writers)
    started = time.perf_counter()
    Path(go).touch()
    reports = [json.loads(w.communicate()[0].decode().splitlines()[-1]) for w in writers]
    seconds = time.perf_counter() - started
    errors = [e for r in reports for e in r["errors"]]
    return {
        "writes": args.writers * args.baseline_writes,
        "lock_errors": sum(any(word in e for word in LOCKED) for e in errors),
        "other_errors": sum(not any(word in e for word in LOCKED) for e in errors),
        "writes_per_second": round(args.writers * args.baseline_writes / seconds, 1),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"environment": environment(args.dir or tempfile.gettempdir())}
    results["args"] = vars(args)
    pg = args.db is not None
    schema = None
    servers: list[tuple[Any, str]] = []
    with tempfile.TemporaryDirectory(prefix="memsdk-stress-", dir=args.dir) as tmp_name:
        tmp = Path(tmp_name)
        db = str(tmp / "stress.db")
        if pg:
            from plugin_sdk.testing import postgres_schema

            db, schema = postgres_schema(args.db)
            results["environment"]["server"] = server_version(args.db)
        try:
            return run_on(args, results, tmp, db, servers)
        finally:
            for process, _url in servers:
                process.terminate()
            for process, _url in servers:
                process.wait(timeout=30)
            if schema is not None:
                from plugin_sdk.testing import drop_postgres_schemas

                drop_postgres_schemas(args.db, [schema])


def run_on(
    args: argparse.Namespace,
    results: dict[str, Any],
    tmp: Path,
    db: str,
    servers: list[tuple[Any, str]],
) -> dict[str, Any]:
    """The run on the store at ``db``; ``servers`` collects the HTTP servers started (PostgreSQL)."""
    pg = args.db is not None
    go = str(tmp / "go")
    log(
        f"preparing {'a new schema' if pg else db}: the {PACK} pack, {args.observations} observations ..."
    )
    inbox = prepare(db, args.observations, args.seed)
    env = {**os.environ, "MEMSDK_PROJECT": PROJECT}

    stop = threading.Event()
    searches: list[dict[str, Any]] = []
    threads = []
    token = category = ""
    if pg:
        from plugin_sdk.host.mcp_http import add_token

        with Store(db, project=PROJECT) as store:
            category = store.category_names()[0]  # the one writer() writes to
        tokens = tmp / "tokens.json"
        token = add_token(tokens, "stress", [PROJECT])
        log("starting two memsdk mcp --http servers on the schema ...")
        servers.extend(start_servers(db, tokens, tmp, 2))
        for _process, url in servers:
            searches.append({})
            threads.append(
                threading.Thread(target=http_search_loop, args=(url, token, stop, searches[-1]))
            )
    else:
        searches.append({})
        threads.append(threading.Thread(target=search_loop, args=(db, stop, searches[-1])))
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while not all(r.get("ready") or "crashed" in r for r in searches):
        if time.monotonic() > deadline:
            raise SystemExit("the MCP server did not start within 60 s")
        time.sleep(0.05)

    log(f"starting {args.writers} writers x {args.writes} writes, retain run, dream run ...")
    writers = []
    for w in range(args.writers):
        command = [sys.executable, __file__, "--writer", str(w), "--db", db]
        if pg:  # writer w writes through server w % 2
            command += ["--via", servers[w % len(servers)][1], "--token", token]
            command += ["--category", category]
        command += ["--writes", str(args.writes), "--go", go]
        writers.append(
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        )
    time.sleep(0.5 + 0.1 * args.writers)  # let them open their stores
    started = time.perf_counter()
    Path(go).touch()
    stages = {
        name: subprocess.Popen(
            [memsdk(), *command, "--db", db, "--project", PROJECT],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for name, command in (("retain", ["retain", "run"]), ("dream", ["dream", "run"]))
    }
    outputs = [w.communicate() for w in writers]
    writing = time.perf_counter() - started
    stop.set()
    stage_out = {name: p.communicate() for name, p in stages.items()}
    for thread in threads:
        thread.join(timeout=120)
    elapsed = time.perf_counter() - started

    surfaced: list[str] = []
    reports = []
    for w, (out, err) in zip(writers, outputs, strict=True):
        if w.returncode != 0 or not out.strip():
            surfaced.append(f"writer exited {w.returncode}: {err.decode()[-500:]}")
            continue
        report = json.loads(out.decode().strip().splitlines()[-1])
        reports.append(report)
        surfaced += report["errors"]
    for name, (_out, err) in stage_out.items():
        if stages[name].returncode != 0:
            surfaced.append(f"{name} run exited {stages[name].returncode}: {err.decode()[-500:]}")
    for mcp_result in searches:
        surfaced += mcp_result.get("messages", [])
        if "crashed" in mcp_result:
            surfaced.append(f"mcp: {mcp_result['crashed']}")
    lock_errors = [e for e in surfaced if any(word in e for word in LOCKED)]

    expected = args.writers * args.writes
    with Store(db, project=PROJECT) as store:
        (present, distinct, extra) = store.db.execute(
            """SELECT count(*), count(DISTINCT content), coalesce(sum(seen_count - 1), 0)
               FROM memories WHERE source = ?""",
            [MCP_SOURCE if pg else SOURCE],
        ).fetchone()
        queued = store.db.execute(
            "SELECT count(*) FROM observations WHERE project = ? AND status = 'queued'",
            [PROJECT],
        ).fetchone()[0]
    health = doctor(db)
    results["run"] = {
        "writers": args.writers,
        "writes_each": args.writes,
        "observations": inbox,
        "seconds_writing": round(writing, 2),
        "seconds_total": round(elapsed, 2),
        "writes_per_second": round(expected / writing, 1),
        "slowest_writer_seconds": round(max((r["seconds"] for r in reports), default=0), 2),
        "mcp_servers": len(searches),
        "mcp_searches": sum(r.get("calls", 0) for r in searches),
        "mcp_searches_per_second": round(
            sum(r.get("calls", 0) / max(r.get("seconds", 1), 1e-9) for r in searches), 1
        ),
        "lock_errors_surfaced": len(lock_errors),
        "other_errors": len(surfaced) - len(lock_errors),
        "errors_shown": surfaced[:5],
        "writes_lost": expected - distinct,
        "writes_duplicated": (present - distinct) + int(extra),
        "inbox_left": queued,
        "retain_exit": stages["retain"].returncode,
        "dream_exit": stages["dream"].returncode,
        "doctor_ok": health.ok,
        "doctor_findings": [f"{f.severity}: {f.check}: {f.detail}" for f in health.findings],
    }
    if args.baseline_writes and not pg:
        log(f"baseline: {args.writers} writers x {args.baseline_writes}, deferred BEGIN ...")
        results["baseline_deferred"] = writers_only(tmp, args, deferred=True)
        log("the same writers, memsdk (BEGIN IMMEDIATE) ...")
        results["same_writers_memsdk"] = writers_only(tmp, args, deferred=False)
    results["environment"]["load_average_end"] = load_average()
    return results


def passed(results: dict[str, Any]) -> bool:
    run = results["run"]
    memsdk = results.get("same_writers_memsdk", {"lock_errors": 0, "other_errors": 0})
    return (
        memsdk["lock_errors"] == 0
        and memsdk["other_errors"] == 0
        and run["lock_errors_surfaced"] == 0
        and run["other_errors"] == 0
        and run["writes_lost"] == 0
        and run["writes_duplicated"] == 0
        and run["inbox_left"] == 0
        and run["doctor_ok"]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--writes", type=int, default=1000, help="per writer")
    parser.add_argument("--observations", type=int, default=400)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--dir", help="where the temporary store goes")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--writer", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--db",
        help="a postgresql:// URL: the run in a fresh schema there, behind two HTTP servers",
    )
    parser.add_argument("--via", help=argparse.SUPPRESS)
    parser.add_argument("--token", help=argparse.SUPPRESS)
    parser.add_argument("--category", help=argparse.SUPPRESS)
    parser.add_argument(
        "--baseline-writes",
        type=int,
        default=200,
        help="per writer, for the baseline with deferred BEGIN (0: skip it)",
    )
    parser.add_argument("--go", help=argparse.SUPPRESS)
    parser.add_argument("--deferred", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.writer is not None:
        if args.via:
            http_writer(args.via, args.token, args.category, args.writer, args.writes, args.go)
        else:
            writer(args.db, args.writer, args.writes, args.go, args.deferred)
        return
    if args.db is not None and not is_url(args.db):
        parser.error(
            f"--db takes a postgresql:// URL (SQLite stores are made for the run): {args.db}"
        )
    results = run(args)
    outcome = results["run"]
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        env = results["environment"]
        print(
            f"Python {env['python']}, SQLite {env['sqlite']}, load {env['loadavg_start']} -> {env['load_average_end']}"
        )
        if "server" in env:
            print(f"Engine: {env['server']}, two memsdk mcp --http servers")
        for key, value in outcome.items():
            print(f"{key:>24}: {value}")
        if "baseline_deferred" in results:
            old, new = results["baseline_deferred"], results["same_writers_memsdk"]
            print(f"Writers alone, {old['writes']:,} writes each way:")
            print(f"  {'':24} {'lock errors':>12} {'writes/s':>10}")
            print(
                f"  {'baseline: deferred BEGIN':24} {old['lock_errors']:>12} {old['writes_per_second']:>10}"
            )
            print(
                f"  {'memsdk: BEGIN IMMEDIATE':24} {new['lock_errors']:>12} {new['writes_per_second']:>10}"
            )
    if not passed(results):
        print("STRESS FAILED", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
