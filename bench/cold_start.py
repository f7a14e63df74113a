"""Cold start: a fresh ``memsdk`` process per call, as a coding agent's hooks run it.

Builds the demo store once (``memsdk demo --db``), warms it (one run of each
command, so exact counts are cached in the store), then times fresh
processes, median of ``--reps`` runs each, in this order, interleaved so load
changes hit all of them alike:

- ``python -c pass``: the interpreter alone (the floor);
- ``python -c "import sqlite_utils"``: the one library every store call needs;
- ``memsdk inject``: the memory block of the demo project;
- ``memsdk recall QUERY``: when this memsdk has the command;
- ``memsdk hook claude-code SessionStart`` and ``UserPromptSubmit``: a recorded
  payload on standard input;
- the lean ``memsdk-hook claude-code SessionStart`` and ``UserPromptSubmit``,
  in-process (``MEMSDK_HOOK_SERVER=0``) and answered by the store's running
  hook server (``memsdk hook server``, started before the runs and stopped
  after them; the answers of both are checked to be the same bytes);
- the same, served, as ``claude-code install`` writes it: ``python -S
  plugin_sdk/host/claude/hook_client.py`` (no site-packages at start-up).

Prints each median, its ratio to ``python -c pass`` and to ``import
sqlite_utils``, whether it is within the goal (``--goal``, 250 ms; the read
hooks' goal is 120 ms), and the machine's load average before and after: on
a shared machine quote the ratios. Run from the repository root::

    .venv/bin/python bench/cold_start.py
    .venv/bin/python bench/cold_start.py --reps 21 --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAYLOADS = ROOT / "tests" / "data" / "claude_code"
#: The hooks' client as ``claude-code install`` writes it (``python -S CLIENT``).
CLIENT = ROOT / "plugin_sdk" / "host" / "claude" / "hook_client.py"


def memsdk() -> list[str]:
    script = Path(sys.executable).with_name("memsdk")
    return [str(script)] if script.exists() else [sys.executable, "-m", "plugin_sdk.cli"]


def timed(command: list[str], stdin: str | None, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, input=stdin, text=True, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def start_server(db: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """The store's hook server, started and answering (its socket made)."""
    sys.path.insert(0, str(ROOT))
    from plugin_sdk.host.claude.hook_client import socket_path
    from plugin_sdk.host.claude.hook_server import server_command

    server = subprocess.Popen(server_command(Path(db)), env=env, stderr=subprocess.DEVNULL)
    for _ in range(600):
        if os.path.exists(socket_path(db)):
            return server
        time.sleep(0.05)
    server.terminate()
    raise SystemExit("the hook server did not start in 30 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=11, help="runs per command (median kept)")
    parser.add_argument("--goal", type=float, default=0.250, help="seconds")
    parser.add_argument(
        "--hook-goal", type=float, default=0.120, help="seconds, for the read hooks (memsdk-hook)"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="memsdk-cold-") as tmp:
        db = str(Path(tmp) / "demo.db")
        env = {**os.environ, "MEMSDK_USER_PATH": tmp, "MEMSDK_DB": db, "MEMSDK_PROJECT": "demo"}
        subprocess.run([*memsdk(), "demo", "--db", db], env=env, check=True, capture_output=True)
        has_recall = (
            subprocess.run([*memsdk(), "recall", "--help"], env=env, capture_output=True).returncode
            == 0
        )
        session = (PAYLOADS / "SessionStart.json").read_text()
        prompt = json.loads((PAYLOADS / "UserPromptSubmit.json").read_text())
        prompt["prompt"] = "How do we handle a failover of the primary database?"
        lean = str(Path(sys.executable).with_name("memsdk-hook"))
        bare = [sys.executable, "-S", str(CLIENT)]
        served = {**env, "MEMSDK_HOOK_SERVER": "1"}
        in_process = {**env, "MEMSDK_HOOK_SERVER": "0"}
        commands: dict[str, tuple[list[str], str | None]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], None),
            "import sqlite_utils": ([sys.executable, "-c", "import sqlite_utils"], None),
            "memsdk inject": ([*memsdk(), "inject"], None),
            "memsdk hook claude-code SessionStart": (
                [*memsdk(), "hook", "claude-code", "SessionStart"],
                session,
            ),
            "memsdk-hook claude-code SessionStart": (
                [lean, "claude-code", "SessionStart"],
                session,
            ),
            "memsdk-hook claude-code UserPromptSubmit": (
                [lean, "claude-code", "UserPromptSubmit"],
                json.dumps(prompt),
            ),
            "memsdk-hook SessionStart, hook server": (
                [lean, "claude-code", "SessionStart"],
                session,
            ),
            "memsdk-hook UserPromptSubmit, hook server": (
                [lean, "claude-code", "UserPromptSubmit"],
                json.dumps(prompt),
            ),
            "python -S hook_client SessionStart, hook server": (
                [*bare, "claude-code", "SessionStart"],
                session,
            ),
            "python -S hook_client UserPromptSubmit, hook server": (
                [*bare, "claude-code", "UserPromptSubmit"],
                json.dumps(prompt),
            ),
            "memsdk hook claude-code UserPromptSubmit": (
                [*memsdk(), "hook", "claude-code", "UserPromptSubmit"],
                json.dumps(prompt),
            ),
        }
        if has_recall:
            commands["memsdk recall"] = ([*memsdk(), "recall", "database failover"], None)
        envs = {name: served if "hook server" in name else in_process for name in commands}
        load_before = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
        server = start_server(db, env)
        try:
            for name, (command, stdin) in commands.items():  # warm: files cached, counts kept
                timed(command, stdin, envs[name])
            for event, stdin in (
                ("SessionStart", session),
                ("UserPromptSubmit", json.dumps(prompt)),
            ):
                answers = [
                    subprocess.run(
                        [lean, "claude-code", event],
                        input=stdin,
                        text=True,
                        env=e,
                        capture_output=True,
                        check=True,
                    ).stdout
                    for e in (in_process, served)
                ]
                if answers[0] != answers[1]:
                    raise SystemExit(f"{event}: the hook server's answer differs from in-process")
            times: dict[str, list[float]] = {name: [] for name in commands}
            for _ in range(args.reps):
                for name, (command, stdin) in commands.items():
                    times[name].append(timed(command, stdin, envs[name]))
        finally:
            server.terminate()
            server.wait()
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians["import sqlite_utils"]
    floor = medians["python -c pass"]
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    result = {
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cpu",
        "load_before": [round(x, 2) for x in load_before],
        "load": [round(x, 2) for x in load],
        "reps": args.reps,
        "goal_ms": round(args.goal * 1000),
        "median_ms": {name: round(value * 1000, 1) for name, value in medians.items()},
        "ratio_to_python_pass": {name: round(value / floor, 2) for name, value in medians.items()},
        "ratio_to_import_sqlite_utils": {
            name: round(value / base, 2) for name, value in medians.items()
        },
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"Python {result['python']}, {result['machine']}, load {result['load_before']} -> "
        f"{result['load']}, {args.reps} runs"
    )
    for name, value in medians.items():
        goal = args.hook_goal if name.startswith(("memsdk-hook", "python -S")) else args.goal
        mark = (
            ""
            if name in ("python -c pass", "import sqlite_utils")
            else ("  within goal" if value <= goal else f"  over the {round(goal * 1000)} ms goal")
        )
        print(
            f"{name:<44} {value * 1000:7.1f} ms  x{value / floor:5.2f} of python -c pass"
            f"  x{value / base:5.2f} of import sqlite_utils{mark}"
        )


if __name__ == "__main__":
    main()
