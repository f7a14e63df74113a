"""The Claude Code round trip in real processes, with a fake ``claude`` that is slow.

install -> SessionEnd -> the next SessionStart: the SessionEnd hook must return
well before the model has answered (it queues the session and starts a
detached drain), and the drained memory must be in the next session's block.
``examples/claude_code_roundtrip.sh`` shows the same steps to a person.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

#: The fake model's answer time; SessionEnd must return in well under it.
MODEL_SECONDS = 6
FAKE_CLAUDE = f"""#!/bin/sh
cat > /dev/null
sleep {MODEL_SECONDS}
printf '%s\\n' '{{"type":"result","is_error":false,"result":"<facts category=\\"CONFIGURATION\\">\\n- The app reads its port from APP_PORT (default 8080).\\n</facts>"}}'
"""
TURNS = [
    {
        "type": "user",
        "uuid": "u1",
        "sessionId": "s1",
        "timestamp": "2026-09-01T10:00:00Z",
        "message": {"role": "user", "content": "What port does the app use?"},
    },
    {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "u1",
        "sessionId": "s1",
        "timestamp": "2026-09-01T10:00:05Z",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "It reads APP_PORT, default 8080."}],
        },
    },
]


def test_session_end_returns_before_the_slow_model_and_the_next_session_sees_the_memory(
    tmp_path: Path,
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text(FAKE_CLAUDE)
    claude.chmod(0o755)
    app = tmp_path / "app"
    app.mkdir()
    session = tmp_path / "s1.jsonl"
    session.write_text("".join(json.dumps(turn) + "\n" for turn in TURNS))
    db = tmp_path / "memory.db"
    scripts = Path(sys.executable).parent
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MEMSDK_")},
        "PATH": f"{bin_dir}:{scripts}:{os.environ['PATH']}",
        "MEMSDK_USER_PATH": str(tmp_path / "user"),
        "MEMSDK_LOAD_PLUGINS": "",
    }
    install = [str(scripts / "memsdk"), "claude-code", "install", "--project-dir", str(app)]
    install += ["--db", str(db), "--project", "app", "--yes"]
    subprocess.run(install, env=env, check=True, capture_output=True, timeout=300)

    def hook(event: str, **fields: str) -> tuple[float, str]:
        payload = {"session_id": "s1", "transcript_path": str(session), "cwd": str(app)}
        words = [str(scripts / "memsdk-hook"), "claude-code", event, "--project", "app"]
        begun = time.monotonic()
        done = subprocess.run(
            [*words, "--db", str(db), "--model", "claude-code"],
            input=json.dumps({**payload, "hook_event_name": event, **fields}),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return time.monotonic() - begun, done.stdout

    seconds, _ = hook("SessionEnd", reason="exit")
    assert seconds < MODEL_SECONDS - 2, f"SessionEnd took {seconds:.1f} s: it waited for the model"
    from plugin_sdk import Store

    deadline = time.monotonic() + 180
    while True:
        with Store(db, project="app") as store:
            found = [hit.memory.content for hit in store.memories.search("APP_PORT")]
        if found or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert any("APP_PORT" in text for text in found), "the detached drain stored nothing"
    _, answer = hook("SessionStart")
    assert "APP_PORT" in json.loads(answer)["hookSpecificOutput"]["additionalContext"]
