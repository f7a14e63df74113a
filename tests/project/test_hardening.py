"""Input that used to break the store: each is refused in one clear line, the store unchanged.

Regression cases (NaN and infinity in packs, a catastrophic cue regex, deep
nesting, 2^63, 5,000-digit integers, lone surrogates, U+2028 in JSON Lines,
a NUL in a proposal's path, a missing migration record, secrets in errors,
file modes) and fuzz tests (hypothesis) over CLI arguments, packs,
observation lines, transcript records, search strings and MCP arguments.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin_sdk import MemsdkError, NotFound, PackError, Store, resolve_pack
from plugin_sdk.cli import cli
from plugin_sdk.errors import InvalidMemory, InvalidProposal, QueueError, StoreError
from plugin_sdk.grid.cells import rule_cell
from plugin_sdk.grid.policy import grid
from plugin_sdk.host.mcp_tools import call_tool, tool_specs
from plugin_sdk.packs.documents import parse_pack_text, validate_pack
from plugin_sdk.proposals.filing import propose
from plugin_sdk.proposals.queue import approve
from plugin_sdk.redact import redact
from plugin_sdk.retain.observations import observe
from plugin_sdk.store import driver
from plugin_sdk.store.limits import MAX_DEPTH, jsonl_lines
from plugin_sdk.transcripts import load_transcript

FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
OPS = resolve_pack("ops")


def ops_document() -> dict[str, Any]:
    return json.loads(json.dumps(OPS.document))


def dump(store: Store) -> list[Any]:
    """Every row of the tables a refused step must leave alone."""
    rows: list[Any] = []
    for table in ("memories", "observations", "proposals", "composites", "packs", "categories"):
        rows += store.db.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
    return rows


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "hard.db"
    with Store(path, project="p") as store:
        store.packs.install(OPS)
        store.memories.write("Restart the cache nightly.", store.category_names()[0])
    return path


# Packs: finite numbers, RE2 regexes, depth, size ----------------------------------------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_infinity_in_a_pack_are_refused_naming_the_field(value):
    document = ops_document()
    document["grid"]["cells"]["episodic"]["self"]["half_life_days"] = value
    with pytest.raises(PackError) as refused:
        validate_pack(document, source="ops.json")
    assert refused.value.path == "grid.cells.episodic.self.half_life_days"
    assert "not a finite number" in refused.value.reason


@pytest.mark.parametrize(
    ("text", "suffix"),
    [
        ('name = "x"\nvalue = nan\n', ".toml"),
        ('name = "x"\nvalue = inf\n', ".toml"),
        ('{"name": "x", "value": NaN}', ".json"),
        ('{"name": "x", "value": -Infinity}', ".json"),
        ('{"name": "x", "value": 1e999}', ".json"),
    ],
)
def test_non_finite_numbers_in_pack_text_are_refused(text, suffix):
    with pytest.raises(PackError, match="finite"):
        parse_pack_text(text, source=f"x{suffix}", suffix=suffix)


@pytest.mark.parametrize(
    ("text", "suffix", "words"),
    [
        ("[" * 5000 + "]" * 5000, ".json", "nested too deeply"),
        ("a = " + "[" * 5000 + "]" * 5000, ".toml", "nested too deeply"),
        ('{"priority": ' + "9" * 5000 + "}", ".json", "refused"),
        ("priority = " + "9" * 5000, ".toml", "refused"),
        ('{"name": "\\ud800"}', ".json", "surrogate"),
        ('{"n": 9223372036854775808}', ".json", "outside SQLite's range"),
    ],
)
def test_deep_huge_and_invalid_pack_documents_are_pack_errors(text, suffix, words):
    with pytest.raises(PackError, match=words):
        parse_pack_text(text, source=f"x{suffix}", suffix=suffix)


def test_a_pack_nested_just_past_the_limit_is_refused_with_its_path():
    document = ops_document()
    deep: Any = "leaf"
    for _ in range(MAX_DEPTH):
        deep = [deep]
    document["grid"]["acts"]["directive"] = deep
    with pytest.raises(PackError, match="nested too deeply") as refused:
        validate_pack(document, source="ops.json")
    assert refused.value.path.startswith("grid.acts.directive")


@pytest.mark.parametrize(
    "pattern", ["(?=deploy)", "(?<!no )deploy", r"(a)\1", "(?>atomic)", "(unclosed"]
)
def test_a_cue_regex_re2_cannot_run_is_refused_at_validation_naming_the_field(pattern):
    document = ops_document()
    document["grid"]["cues"]["referent"]["self"] = [pattern]
    with pytest.raises(PackError, match="not a regular expression") as refused:
        validate_pack(document, source="ops.json")
    assert refused.value.path == "grid.cues.referent.self[0]"


def test_a_catastrophic_cue_regex_runs_in_linear_time(tmp_path):
    document = ops_document()
    document["grid"]["cues"]["referent"]["self"] = ["(a+)+$", "(x+x+)+y", "(a|aa)+$"]
    pack = validate_pack(document, source="ops.json")  # valid: RE2 runs it in linear time
    with Store(tmp_path / "re.db", project="p") as store:
        store.packs.install(pack)
        policy = grid(store)
        evil = "a" * 50_000 + "!"
        started = time.perf_counter()
        rule_cell(policy, evil, None, False)
        rule_cell(policy, "x" * 50_000, None, False)
    assert time.perf_counter() - started < 5  # Python's re: longer than the universe


# Ids and limits: SQLite's 64-bit range ----------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "get", "9223372036854775808"],
        ["memory", "get", str(10**400)],
        ["memory", "archive", "--", "0"],
        ["memory", "search", "cache", "--limit", "9223372036854775808"],
        ["memory", "list", "--offset", "99999999999999999999"],
        ["expand", "1", "--budget", "9223372036854775808"],
        ["composite", "show", "9223372036854775808"],
        ["queue", "show", "9223372036854775808"],
        ["forget", "9223372036854775808"],
        ["inject", "--budget", "9223372036854775808"],
    ],
)
def test_cli_integers_out_of_range_are_usage_errors(db, args):
    result = CliRunner().invoke(cli, [*args, "--db", str(db), "--project", "p"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "9223372036854775807" in lines[0]


def test_api_ids_and_limits_out_of_range_are_clear_errors(db):
    with Store(db, project="p") as store:
        before = dump(store)
        for big in (2**63, 10**30, -1, 0):
            with pytest.raises(NotFound, match="ids are whole numbers"):
                store.memories.get(big)
            with pytest.raises(NotFound, match="ids are whole numbers"):
                store.memories.update(big, importance=5)
            with pytest.raises(NotFound):
                store.composites.get(big)
        with pytest.raises(InvalidMemory, match="limit"):
            store.memories.search("cache", limit=2**63)
        with pytest.raises(InvalidMemory, match="offset"):
            store.memories.list(offset=2**64)
        assert dump(store) == before


# Observation lines and transcripts: depth, digits, surrogates, JSON Lines -----------------------


def line(**overrides: Any) -> str:
    document = {
        "id": "o-1",
        "source": "test",
        "timestamp": "2026-03-01T10:00:00Z",
        "category": next(iter(OPS.categories)),
        "topic": "cache",
        "actors": ["svc:cache"],
        "payload_typed": {"text": "The cache restarted."},
    }
    document.update(overrides)
    return json.dumps(document)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ('{"a": ' + "1" * 5000 + "}", "digits"),
        (line(payload_typed={"text": "\ud800 lone"}), "surrogate"),
        (line(payload_typed={"text": "x", "n": float("nan")}), "not a finite number"),
        (line(topic=2**64), "outside SQLite's range"),
        ("x" * (1024 * 1024 + 1), "larger than"),
    ],
)
def test_bad_observation_lines_are_reported_and_nothing_is_stored(db, text, words):
    with Store(db, project="p") as store:
        before = dump(store)
        report = observe(store, [text, line(id="o-ok")])
        assert [b.line for b in report.bad] == [1] and words in report.bad[0].reason
        assert report.queued == ["o-ok"]
        assert len(dump(store)) == len(before) + 1


def test_json_lines_are_split_on_newline_only(db, tmp_path):
    separators = "a\u2028b\u2029c\u0085d\x1ce\x1df\x0bg\x0ch"
    assert jsonl_lines("x\ny\r\n") == ["x", "y\r"]
    assert len(separators.splitlines()) > 1 and jsonl_lines(separators) == [separators]
    path = tmp_path / "obs.jsonl"
    path.write_text(
        line(id="o-1", payload_typed={"text": f"The cache {separators} restarted."}) + "\r\n",
        "utf-8",
    )
    result = CliRunner().invoke(cli, ["observe", str(path), "--db", str(db), "--project", "p"])
    assert result.exit_code == 0, result.output
    assert "Queued 1;" in result.output and "bad lines 0" in result.output
    transcript = tmp_path / "session.jsonl"
    record = {
        "type": "user",
        "sessionId": "s",
        "message": {"role": "user", "content": f"keep {separators} together"},
    }
    transcript.write_text(json.dumps(record, ensure_ascii=False) + "\n", "utf-8")
    loaded = load_transcript(transcript, format="claude-code")
    assert [m.text for m in loaded.messages] == [f"keep {separators} together"]
    assert loaded.report.problems == []


def test_a_deep_transcript_record_is_a_problem_not_a_crash(tmp_path):
    transcript = tmp_path / "session.jsonl"
    ok = json.dumps(
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "hi"}}
    )
    transcript.write_text(ok + "\n" + "[" * 50_000 + "]" * 50_000 + "\n", "utf-8")
    loaded = load_transcript(transcript, format="claude-code")
    assert [m.text for m in loaded.messages] == ["hi"]
    assert len(loaded.report.problems) == 1


def test_lone_surrogates_in_text_are_invalid_memories_and_a_search_drops_them(db):
    with Store(db, project="p") as store:
        before = dump(store)
        with pytest.raises(InvalidMemory, match="surrogate"):
            store.memories.write("half \ud800 a pair", store.category_names()[0])
        # A query is read, never stored: issue 14 wants no query string to raise.
        assert store.memories.search("\udfff") == []
        assert dump(store) == before
    result = CliRunner().invoke(
        cli, ["memory", "write", "bad \udcff", "-c", "OPS_RULES", "--db", str(db), "--project", "p"]
    )
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1


# Proposals, migrations, secrets, file modes ----------------------------------------------------


def test_a_nul_in_a_proposal_path_is_refused_before_any_state_change(db):
    with Store(db, project="p") as store:
        diff = {"path": "notes\x00.md", "base": None, "before": None, "after": "x\n"}
        with pytest.raises(InvalidProposal, match="control character"):
            propose(store, diff_type="claude_md", rationale="r", evidence=[], diff=diff, source="t")
        # one stored before the check existed: approval refuses it, and it stays pending
        store.db.execute(
            """INSERT INTO proposals (project, diff_type, rationale, evidence, diff, diff_hash,
                   source, created_at, updated_at)
               VALUES ('p', 'claude_md', 'r', '[]', ?, 'h', 't', 'now', 'now')""",
            [json.dumps(diff)],
        )
        store.db.conn.commit()
        (proposal_id,) = store.db.execute("SELECT max(id) FROM proposals").fetchone()
        with pytest.raises(QueueError, match="control character"):
            approve(store, proposal_id)
        status = store.db.execute(
            "SELECT status FROM proposals WHERE id = ?", [proposal_id]
        ).fetchone()[0]
        assert status == "pending"


def test_a_store_with_a_missing_migration_record_is_a_clear_error(db):
    connection = driver.connect(db)
    connection.execute("DELETE FROM _sqlite_migrations WHERE name = 'm007_queue'")
    connection.commit()
    connection.close()
    with pytest.raises(StoreError, match="m007_queue") as refused:
        Store(db, project="p")
    assert not isinstance(refused.value.__cause__, AssertionError)
    result = CliRunner().invoke(cli, ["memory", "list", "--db", str(db), "--project", "p"])
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "secret",
    [
        "sk-proj-AbCdEfGhIjKlMnOpQrStUv",
        "sk-ant-api03-AbCdEfGhIjKlMnOp",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123",
    ],
)
def test_credentials_are_redacted_from_printed_and_stored_errors(tmp_path, secret):
    assert secret not in redact(f"Error 401: Incorrect API key provided: {secret}.")
    for header in (f"Authorization: Bearer {secret}", f"authorization={secret}"):
        assert secret not in redact(header)
    assert redact("the file is missing") == "the file is missing"

    from plugin_sdk.plugin.hookspecs import hookimpl
    from plugin_sdk.stages.dreamer import Dreamer
    from plugin_sdk.testing import fresh_plugin_manager

    class Leaky:
        @hookimpl
        def register_dreamer_tasks(self, register):
            from plugin_sdk.plugin.records import DreamerTask

            def run(context):
                raise MemsdkError(f"provider said: invalid key {secret}")

            register(DreamerTask("leaky", "leaks a key in its error", run))

    plugins = fresh_plugin_manager(("leaky", Leaky()))
    with Store(tmp_path / "d.db", project="p", plugins=plugins) as store:
        store.packs.install(OPS)
        with pytest.raises(MemsdkError):
            Dreamer(store).run("leaky")
        (stored,) = store.db.execute(
            "SELECT last_error FROM dreamer_state WHERE task = 'leaky'"
        ).fetchone()
    assert secret not in stored and "[redacted]" in stored


def test_cli_errors_are_redacted(db):
    result = CliRunner().invoke(
        cli,
        ["memory", "get", "1", "--db", str(db), "--project", "p", "--json"],
        env={"MEMSDK_PROJECT": "p"},
    )
    assert result.exit_code == 0
    leaky = CliRunner().invoke(
        cli, ["pack", "install", "/no/such/sk-proj-AbCdEfGhIjKlMnOpQrStUv.toml", "--db", str(db)]
    )
    assert leaky.exit_code != 0 and "sk-proj-AbCdEfGhIjKlMnOpQrStUv" not in leaky.output


def test_a_new_store_is_private_to_its_owner(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSDK_USER_PATH", str(tmp_path / "user"))
    from plugin_sdk.store.paths import default_db_path

    old_umask = os.umask(0o022)
    try:
        with Store(default_db_path(), project="p") as store:
            store.packs.install(OPS)
            mode = {
                name: stat.S_IMODE(os.stat(path).st_mode)
                for name, path in (
                    ("dir", tmp_path / "user"),
                    ("db", default_db_path()),
                    ("wal", Path(f"{default_db_path()}-wal")),
                    ("shm", Path(f"{default_db_path()}-shm")),
                )
            }
    finally:
        os.umask(old_umask)
    assert mode == {"dir": 0o700, "db": 0o600, "wal": 0o600, "shm": 0o600}


# Fuzz: no traceback for any input; a refusal is one line and changes nothing ---------------------

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
ANY_TEXT = st.text(max_size=40)  # lone surrogates included
NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(["0", "-1", "9223372036854775807", "9223372036854775808", "1e9", "x"]),
)
COMMANDS = [
    ["memory", "get"],
    ["memory", "archive"],
    ["memory", "update", "{n}", "--content"],
    ["memory", "write", "{t}", "-c"],
    ["memory", "search"],
    ["memory", "search", "{t}", "--raw", "-n"],
    ["memory", "merge", "{n}", "--into"],
    ["expand"],
    ["composite", "create", "theme", "{n}"],
    ["entity", "link", "{n}"],
    ["forget"],
    ["forget", "--secret"],
    ["queue", "show"],
    ["inject", "--budget"],
]


@FUZZ
@given(
    command=st.sampled_from(COMMANDS),
    value=st.one_of(NUMBERS, ANY_TEXT),
    text=ANY_TEXT,
    number=NUMBERS,
)
def test_fuzz_cli_arguments(db, command, value, text, number):
    args = [part.replace("{n}", number).replace("{t}", text) for part in command] + [value]
    with Store(db, project="p") as store:
        before = dump(store)
    result = CliRunner().invoke(cli, [*args, "--db", str(db), "--project", "p"], input="n\n")
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        result.exception,
    )
    if result.exit_code != 0:
        # one line says why: an error, or the answer "n" to forget's question
        errors = [x for x in result.output.splitlines() if x.startswith("Error") or x == "Aborted!"]
        assert len(errors) == 1, (args, result.output)
        with Store(db, project="p") as store:
            assert dump(store) == before, args


JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        ANY_TEXT,
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(ANY_TEXT, children, max_size=4)
    ),
    max_leaves=20,
)


@FUZZ
@given(document=st.dictionaries(st.sampled_from(list(ops_document())), JSON_VALUES, max_size=8))
def test_fuzz_pack_documents(document):
    full = {**ops_document(), **document}
    try:
        validate_pack(full, source="fuzz.json")
    except PackError as error:
        assert str(error).startswith("invalid pack fuzz.json")


@FUZZ
@given(text=st.one_of(ANY_TEXT, st.binary(max_size=200).map(lambda b: b.decode("latin-1"))))
def test_fuzz_pack_text(text):
    for suffix in (".toml", ".json"):
        with contextlib.suppress(PackError):
            parse_pack_text(text, source=f"fuzz{suffix}", suffix=suffix)


@FUZZ
@given(
    fields=st.dictionaries(
        st.sampled_from(["id", "category", "topic", "actors", "payload_typed", "timestamp", "x"]),
        JSON_VALUES,
        max_size=4,
    ),
    raw=ANY_TEXT,
)
def test_fuzz_observation_lines(db, fields, raw):
    with Store(db, project="p") as store:
        try:
            text = line(**fields)
        except (TypeError, ValueError):
            text = raw
        before = len(dump(store))
        report = observe(store, [text, raw])
        for bad in report.bad:
            assert bad.reason and bad.line in (1, 2)
        assert len(dump(store)) <= before + len(report.queued) + len(report.bad)


@FUZZ
@given(records=st.lists(st.one_of(JSON_VALUES.map(json.dumps), ANY_TEXT), max_size=5))
def test_fuzz_transcript_records(records):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.jsonl"
        path.write_text("\n".join(records), "utf-8", errors="surrogatepass")
        with contextlib.suppress(MemsdkError):
            load_transcript(path, format="claude-code")


@FUZZ
@given(query=ANY_TEXT, raw=st.booleans(), limit=st.integers(min_value=-5, max_value=2**70))
def test_fuzz_search_strings(db, query, raw, limit):
    with Store(db, project="p") as store:
        try:
            store.memories.search(query, raw=raw, limit=limit)
        except InvalidMemory as error:
            assert str(error) and "Traceback" not in str(error)


@FUZZ
@given(
    tool=st.sampled_from(
        [
            "memory_write",
            "memory_search",
            "memory_get",
            "memory_expand",
            "memory_update",
            "memory_archive",
            "memory_merge",
            "memory_forget",
        ]
    ),
    arguments=st.dictionaries(
        st.sampled_from(["id", "query", "content", "category", "limit", "budget", "into", "x"]),
        JSON_VALUES,
        max_size=4,
    ),
)
def test_fuzz_mcp_arguments(db, tool, arguments):
    with Store(db, project="p") as store:
        before = dump(store)
        outcome = call_tool(store, tool_specs(store), tool, arguments)
        if outcome.is_error:
            assert "\n" not in outcome.text
            assert dump(store) == before
