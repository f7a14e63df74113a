"""Cold start: what a fresh ``memsdk`` process loads on the hook paths (timings: bench/cold_start.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from plugin_sdk import Store
from plugin_sdk.host.demo import run_demo
from plugin_sdk.stages.inject import inject
from plugin_sdk.store.tokens import count_cached, default_counter
from plugin_sdk.testing import fresh_plugin_manager


class CountingCounter:
    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return len(text.split())


def test_count_cached_is_exact_and_counts_a_text_once(tmp_path: Path) -> None:
    counter = CountingCounter()
    with Store(tmp_path / "m.db", project="p", tokenizer=counter) as store:
        assert count_cached(store, "three little words") == 3
        assert count_cached(store, "three little words") == 3
        assert counter.calls == 1
        assert count_cached(store, "") == 0
    with Store(tmp_path / "m.db", project="p") as store:  # another counter: its own count
        assert count_cached(store, "three little words") == default_counter().count(
            "three little words"
        )


def test_a_warm_inject_loads_no_tokenizer_and_no_schema_validator(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    with Store(db, project="demo", plugins=fresh_plugin_manager()) as store:
        run_demo(store, "ops")
        expected = inject(store).text  # counted once, now cached
    script = (
        "import json, sys\n"
        "from plugin_sdk.cli import main\n"
        f"sys.argv = ['memsdk', 'inject', '--db', {str(db)!r}, '--project', 'demo', '--json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('tiktoken', 'jsonschema', 'mcp'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    *output, loaded = result.stdout.strip().splitlines()
    assert json.loads(loaded) == []
    assert json.loads("\n".join(output))["text"] == expected


def test_the_bench_times_the_client_install_writes() -> None:
    """bench/cold_start.py runs the hooks' client from where it is (it moved to host/claude/)."""
    import runpy

    from plugin_sdk.host.claude import hook_client

    bench = runpy.run_path(str(Path(__file__).parents[2] / "bench" / "cold_start.py"))
    assert Path(bench["CLIENT"]).resolve() == Path(hook_client.__file__).resolve()
