"""The hook server: the read hooks answered by a running process, byte for byte as in-process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plugin_sdk import Store
from plugin_sdk.host.claude import hook_client
from plugin_sdk.host.claude.claude_hooks import hook_command, install
from plugin_sdk.host.claude.hook_server import server_command
from plugin_sdk.packs.documents import validate_pack
from plugin_sdk.testing import fresh_plugin_manager, pack_document

PAYLOADS = Path(__file__).parents[1] / "data" / "claude_code"
PACK = pack_document("harbour", "1.0.0", {"BERTH_RULES": "intent", "QUAY_STATE": "content"})
HOOK = str(Path(sys.executable).with_name("memsdk-hook"))
CLIENT = hook_command("/x/memsdk")  # python -S .../hook_client.py


def make_store(path: Path) -> Path:
    with Store(path, project="harbour", plugins=fresh_plugin_manager()) as store:
        store.packs.install(validate_pack(PACK, source="harbour"))
        store.memories.write("Check the berth rules before any tide change.", "BERTH_RULES")
        store.memories.write("Tide times are converted at the edge of the API.", "QUAY_STATE")
    return path


def env(served: bool) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith("MEMSDK_")}
    return {**keep, "MEMSDK_HOOK_SERVER": "1" if served else "0"}


def prompt(text: str) -> str:
    document = json.loads((PAYLOADS / "UserPromptSubmit.json").read_text())
    document.pop("transcript_path", None)
    return json.dumps({**document, "prompt": text})


def hook(
    db: Path, event: str, stdin: str, served: bool, command: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    words = [*(command or [HOOK]), "claude-code", event, "--db", str(db), "--project", "harbour"]
    return subprocess.run(
        words, input=stdin, text=True, capture_output=True, env=env(served), cwd=db.parent
    )


def wait_for(check: object, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture
def server_of() -> Iterator[object]:
    """Start a hook server on a store; each is stopped (by its pid) after the test."""
    started: list[subprocess.Popen[bytes]] = []

    def start(db: Path, *options: str) -> subprocess.Popen[bytes]:
        server = subprocess.Popen(
            [*server_command(db), *options], env=env(True), stderr=subprocess.PIPE
        )
        started.append(server)
        return server

    yield start
    for server in started:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        if server.stderr is not None:
            server.stderr.close()


def served_answer(db: Path, event: str, stdin: str) -> dict | None:
    argv = ["claude-code", event, "--db", str(db), "--project", "harbour"]
    old = os.getcwd()
    os.chdir(db.parent)
    try:
        return hook_client.ask(str(db), argv, stdin, timeout=30)
    finally:
        os.chdir(old)


def test_the_servers_answers_are_the_in_process_ones_byte_for_byte(
    tmp_path: Path, server_of: object
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = make_store(tmp_path / "a" / "harbour.db")
    second = tmp_path / "b" / "harbour.db"
    shutil.copyfile(first, second)
    server_of(second)  # type: ignore[operator]
    wait_for(lambda: os.path.exists(hook_client.socket_path(str(second))))
    cases = [
        ("SessionStart", (PAYLOADS / "SessionStart.json").read_text()),
        ("UserPromptSubmit", prompt("What are the berth rules for a tide change?")),
        ("UserPromptSubmit", prompt("zebra quokka")),  # nothing answers: {}
        ("UserPromptSubmit", json.dumps({"prompt": 7})),  # malformed: one line, exit 1
        ("SessionStart", "not json"),
    ]
    for event, stdin in cases:
        alone = hook(first, event, stdin, served=False)
        answer = served_answer(second, event, stdin)
        assert answer is not None, (event, stdin)
        assert (answer["code"], answer["stdout"], answer["stderr"]) == (
            alone.returncode,
            alone.stdout,
            alone.stderr,
        ), (event, stdin)
        through = hook(second, event, stdin, served=True)  # the console script prints it as is
        assert (through.returncode, through.stdout) == (alone.returncode, alone.stdout)
        bare = hook(second, event, stdin, served=True, command=CLIENT)  # what install writes
        assert (bare.returncode, bare.stdout) == (alone.returncode, alone.stdout)
    assert "Check the berth rules" in hook(second, "SessionStart", cases[0][1], True).stdout


def test_the_socket_appears_only_once_it_accepts(tmp_path: Path) -> None:
    """A client that sees the path can connect, however slow the server's start-up.

    The server here is slowed between making its socket and listening (its
    store connection takes 1.5 s, as on a loaded machine); a path published at
    ``bind`` refuses connections that long.
    """
    import socket

    db = make_store(tmp_path / "harbour.db")
    slow = (
        "import sys, time; from plugin_sdk.host.claude import hook_server as s; "
        "connect = s.driver.connect; s.driver = type('D', (), {'connect': staticmethod("
        "lambda path: (time.sleep(1.5), connect(path))[1])}); "
        "print(s.serve(__import__('pathlib').Path(sys.argv[1])), file=sys.stderr)"
    )
    server = subprocess.Popen([sys.executable, "-c", slow, str(db)], env=env(True))
    try:
        path = hook_client.socket_path(str(db))
        deadline = time.monotonic() + 30
        while not os.path.exists(path):
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.001)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(path)  # refused if the file came before listen()
        assert not os.path.exists(path.removesuffix(".sock") + ".next")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def test_the_server_sees_what_other_processes_write(tmp_path: Path, server_of: object) -> None:
    db = make_store(tmp_path / "harbour.db")
    server_of(db)  # type: ignore[operator]
    wait_for(lambda: os.path.exists(hook_client.socket_path(str(db))))
    question = prompt("Which pilot boat serves the north quay?")
    assert json.loads(served_answer(db, "UserPromptSubmit", question)["stdout"]) == {}  # type: ignore[index]
    with Store(db, project="harbour", plugins=fresh_plugin_manager()) as store:
        store.memories.write("The pilot boat Kestrel serves the north quay.", "QUAY_STATE")
    answer = served_answer(db, "UserPromptSubmit", question)
    assert answer is not None
    assert "Kestrel" in answer["stdout"]


def test_one_server_per_store_its_socket_private_and_gone_when_the_store_is_replaced(
    tmp_path: Path, server_of: object
) -> None:
    db = make_store(tmp_path / "harbour.db")
    first = server_of(db)  # type: ignore[operator]
    path = hook_client.socket_path(str(db))
    wait_for(lambda: os.path.exists(path))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert Path(path + ".lock").read_text().strip() == str(first.pid)
    second = server_of(db)  # type: ignore[operator]
    assert second.wait(timeout=60) == 0
    assert b"another hook server" in second.stderr.read()
    assert first.poll() is None
    other = make_store(tmp_path / "other.db")
    os.replace(other, db)  # the store file replaced (a restore, a new store)
    assert first.wait(timeout=30) == 0
    assert b"removed or replaced" in first.stderr.read()
    assert not os.path.exists(path)
    assert served_answer(db, "SessionStart", "{}") is None  # no server: in-process


def test_an_idle_server_stops(tmp_path: Path, server_of: object) -> None:
    db = make_store(tmp_path / "harbour.db")
    server = server_of(db, "--idle-minutes", "0.02")  # type: ignore[operator]
    assert server.wait(timeout=60) == 0
    assert b"stopped: idle" in server.stderr.read()
    assert not os.path.exists(hook_client.socket_path(str(db)))


def test_a_hook_with_no_server_answers_in_process_and_starts_one(tmp_path: Path) -> None:
    db = make_store(tmp_path / "harbour.db")
    path = hook_client.socket_path(str(db))
    result = hook(db, "SessionStart", (PAYLOADS / "SessionStart.json").read_text(), served=True)
    assert result.returncode == 0, result.stderr
    assert "Check the berth rules" in result.stdout
    try:
        wait_for(lambda: os.path.exists(path))
        assert served_answer(db, "SessionStart", "{}") is not None
    finally:
        wait_for(lambda: Path(path + ".lock").read_text().strip() != "")
        os.kill(int(Path(path + ".lock").read_text()), signal.SIGTERM)
        wait_for(lambda: not os.path.exists(path))


def test_a_long_store_path_gets_a_socket_in_a_private_runtime_folder(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60) / "harbour.db"
    path = hook_client.socket_path(str(deep))
    assert len(path.encode()) <= hook_client.MAX_SUN_PATH
    assert os.path.basename(path).endswith(".hook.sock")
    assert hook_client.socket_path(str(deep)) == path  # stable


def test_the_client_imports_only_the_standard_library() -> None:
    code = (
        "import sys; import plugin_sdk.host.claude.hook_client; "
        "print(sorted(m for m in sys.modules if m.startswith(('plugin_sdk', 'sqlite', 'pluggy', "
        "'click', 'attrs', 'typing'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.replace("'", '"')) == [
        "plugin_sdk",
        "plugin_sdk._lazy",
        "plugin_sdk.host",
        "plugin_sdk.host.claude",
        "plugin_sdk.host.claude.hook_client",
    ]


def test_without_site_packages_the_client_still_answers_in_process(tmp_path: Path) -> None:
    db = make_store(tmp_path / "harbour.db")
    stdin = prompt("What are the berth rules for a tide change?")
    bare = hook(db, "UserPromptSubmit", stdin, served=False, command=CLIENT)
    alone = hook(db, "UserPromptSubmit", stdin, served=False)
    assert bare.returncode == 0, bare.stderr
    assert bare.stdout == alone.stdout and "BERTH_RULES: Check the berth rules" in bare.stdout


def test_install_moves_an_old_memsdk_hook_entry_to_the_bare_client(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    old = "/venv/bin/memsdk-hook claude-code {} --project app --db /d.db"
    hooks = {
        e: [{"hooks": [{"type": "command", "command": old.format(e)}]}] for e in ["SessionStart"]
    }
    settings.write_text(json.dumps({"hooks": hooks}))
    for change in install(tmp_path, "/venv/bin/memsdk", ["--project", "app"]):
        change.write()
    (entry,) = json.loads(settings.read_text())["hooks"]["SessionStart"][0]["hooks"]
    assert entry["command"].split()[1:3] == ["-S", CLIENT[2]]
    assert entry["command"].endswith("claude-code SessionStart --project app")


def test_a_request_the_client_gave_up_on_runs_nothing(tmp_path: Path, server_of: object) -> None:
    import socket

    db = make_store(tmp_path / "harbour.db")
    server_of(db)  # type: ignore[operator]
    path = hook_client.socket_path(str(db))
    wait_for(lambda: os.path.exists(path))
    request = {
        "protocol": hook_client.PROTOCOL,
        "db": os.path.realpath(db),
        "argv": ["claude-code", "SessionStart", "--db", str(db), "--project", "harbour"],
        "stdin": "{}",
        "cwd": str(tmp_path),
        "env": {},
        "client": os.stat(hook_client.__file__).st_mtime,
        "deadline": time.time() - 1,  # the client answered in-process already
    }
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        conn.sendall(json.dumps(request).encode())
        conn.shutdown(socket.SHUT_WR)
        reply = conn.recv(1000)
    assert json.loads(reply) == {}
    with Store(db, project="harbour", plugins=fresh_plugin_manager()) as store:
        assert store.db.execute("SELECT count(*) FROM hook_runs").fetchone()[0] == 0
    assert served_answer(db, "SessionStart", "{}") is not None  # in time: it runs
    with Store(db, project="harbour", plugins=fresh_plugin_manager()) as store:
        assert store.db.execute("SELECT count(*) FROM hook_runs").fetchone()[0] == 1
