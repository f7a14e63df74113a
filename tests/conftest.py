"""Shared fixtures: temp-file stores, small pack documents, pack files, table dumps.

A store a test gets from ``new_store`` (and so ``store`` and ``empty_store``)
is a copy of a template migrated and given its packs once per session
(:class:`plugin_sdk.testing.StoreTemplates`); tests about creating or migrating
a store open a new ``Store`` themselves.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings

from plugin_sdk import Pack, Store, resolve_pack

if TYPE_CHECKING:  # imported by pytest as a plugin below, not here (assertion rewriting)
    from plugin_sdk.testing import PostgresTemplates, StoreTemplates

# CI runs the same examples every time (a failure there is reproducible, never
# a fluke of the draw); locally hypothesis keeps exploring new ones.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# The fixtures memsdk offers plugin authors (memsdk_store, memsdk_plugins,
# scripted_model), used as a third party would use them.
pytest_plugins = ["plugin_sdk.testing"]

# A hook run in a test answers in-process and starts no hook server (one would
# outlive the test); tests/host/test_hook_server.py turns it on where it is tested.
os.environ["MEMSDK_HOOK_SERVER"] = "0"

# No test touches the real user folder (~/.config/memsdk): a store or token
# file a command finds by default lives in a folder of this test run.
os.environ["MEMSDK_USER_PATH"] = tempfile.mkdtemp(prefix="memsdk-user-")

PROJECT = "test-project"
POLICY_TABLES = ("packs", "categories", "criteria", "criteria_history", "memories")
MEMORY_TMP = Path("/dev/shm")
MEMORY_TMP_FREE = 2 * 1024**3


def pytest_configure(config: pytest.Config) -> None:
    """Temporary files in memory (``/dev/shm``) when it is there with room to spare.

    A store waits for the disk at every commit; on a slow disk the suite spends
    half its time there, and no test checks what a disk adds (a kill -9 loses
    nothing written either way). ``TMPDIR``, ``--basetemp`` or
    ``MEMSDK_TEST_TMP=disk`` keep the usual place.
    """
    if config.option.basetemp or os.environ.get("TMPDIR"):
        return
    if os.environ.get("MEMSDK_TEST_TMP") == "disk":
        return
    try:
        room = os.statvfs(MEMORY_TMP)
    except OSError:
        return
    if room.f_bavail * room.f_frsize < MEMORY_TMP_FREE or not os.access(MEMORY_TMP, os.W_OK):
        return
    tempfile.tempdir = str(MEMORY_TMP)
    os.environ["TMPDIR"] = str(MEMORY_TMP)  # for the subprocesses, too


@pytest.fixture(scope="session")
def ops_pack() -> Pack:
    """The built-in ``ops`` pack, resolved once."""
    return resolve_pack("ops")


#: A PostgreSQL database for the suite (a libpq URL; ``.ci/run`` starts one):
#: when set, every test that takes its store from ``new_store`` runs on both engines.
POSTGRES_URL = os.environ.get("MEMSDK_TEST_POSTGRES", "")
ENGINES = ["sqlite", "postgresql"] if POSTGRES_URL else ["sqlite"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """The engine a test's stores from ``new_store`` run on (both, when PostgreSQL is set).

    ``@pytest.mark.sqlite_only("why")`` keeps a test on SQLite: for what only
    SQLite has (FTS5's own syntax and tables, the file, its pragmas).
    """
    marker = request.node.get_closest_marker("sqlite_only")
    if request.param == "postgresql" and marker is not None:
        pytest.skip(f"SQLite only: {marker.args[0] if marker.args else 'engine-specific'}")
    return str(request.param)


@pytest.fixture(scope="session")
def postgres_templates() -> Iterator[PostgresTemplates | None]:
    """New PostgreSQL stores as clones of a migrated template database (or None: no server)."""
    if not POSTGRES_URL:
        yield None
        return
    from plugin_sdk.testing import PostgresTemplates

    templates = PostgresTemplates(POSTGRES_URL)
    yield templates
    templates.close()


@pytest.fixture
def new_store(
    tmp_path: Path,
    memsdk_templates: StoreTemplates,
    engine: str,
    postgres_templates: PostgresTemplates | None,
) -> Iterator[Callable[..., Store]]:
    """``new_store(*packs, name="store.db", project=..., **store_options)`` -> an open store.

    On SQLite: a new file in the test's ``tmp_path`` with ``packs`` installed,
    copied from a template. On PostgreSQL: a new database cloned from a
    migrated template, with ``packs`` installed, dropped after the test. Project
    ``test-project`` unless told otherwise. Every store it opened is closed
    after the test.
    """
    opened: list[Store] = []
    databases: list[str] = []

    def open_new(
        *packs: Pack, name: str = "store.db", project: str = PROJECT, **options: Any
    ) -> Store:
        if engine == "postgresql":
            assert postgres_templates is not None
            url = postgres_templates.new()
            databases.append(url)
            store = Store(url, project=project, **options)
            opened.append(store)
            for pack in packs:
                store.packs.install(pack)
            return store
        store = memsdk_templates.open(tmp_path / name, *packs, project=project, **options)
        opened.append(store)
        return store

    yield open_new
    for store in opened:
        store.close()
    for url in databases:
        assert postgres_templates is not None
        postgres_templates.drop(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[str], str]]:
    """``store_location(name)`` -> where a new store may be made, for tests that open it themselves.

    On SQLite a file path in ``tmp_path``; on PostgreSQL the URL of a new,
    empty schema of the test database (dropped after the test), so several
    processes can open the same new store by its location. The PostgreSQL
    case is skipped, saying so, unless ``MEMSDK_TEST_POSTGRES`` is set.
    """
    schemas: list[str] = []
    if request.param == "postgresql" and not POSTGRES_URL:
        pytest.skip("PostgreSQL: set MEMSDK_TEST_POSTGRES to a database URL to run it")

    def location(name: str) -> str:
        if request.param == "sqlite":
            return str(tmp_path / name)
        from plugin_sdk.testing import postgres_schema

        url, schema = postgres_schema(POSTGRES_URL)
        schemas.append(schema)
        return url

    yield location
    if schemas:
        from plugin_sdk.testing import drop_postgres_schemas

        drop_postgres_schemas(POSTGRES_URL, schemas)


@pytest.fixture
def store(new_store: Callable[..., Store], ops_pack: Pack) -> Store:
    """A temp-file store for project ``test-project`` with the built-in ``ops`` pack."""
    return new_store(ops_pack, name="m.db")


@pytest.fixture
def empty_store(new_store: Callable[..., Store]) -> Store:
    """A temp-file store for project ``test-project`` with no pack installed."""
    return new_store(name="empty.db")


def category_doc(
    kind: str = "content",
    priority: int = 10,
    definition: str = "A test category.",
    **criteria: Any,
) -> dict[str, Any]:
    """One category of a pack document; extra keyword arguments are criteria fields."""
    return {"kind": kind, "priority": priority, "criteria": {"definition": definition, **criteria}}


def pack_doc_factory(
    categories: dict[str, dict[str, Any]] | None = None,
    *,
    name: str = "garden",
    version: str = "1.0.0",
    description: str = "A small pack for tests.",
) -> dict[str, Any]:
    """A complete, valid pack document (one category unless told otherwise)."""
    if categories is None:
        categories = {"GARDEN_LOG": category_doc()}
    return {
        "format": 1,
        "name": name,
        "version": version,
        "description": description,
        "categories": categories,
    }


@pytest.fixture
def category() -> Callable[..., dict[str, Any]]:
    """``category(kind=..., priority=..., definition=..., **criteria)`` -> category dict."""
    return category_doc


@pytest.fixture
def pack_doc() -> Callable[..., dict[str, Any]]:
    """``pack_doc(categories, name=..., version=...)`` -> pack document dict."""
    return pack_doc_factory


def to_toml(document: dict[str, Any]) -> str:
    """Render a pack-shaped dict as TOML (tables, strings, ints, bools, lists)."""
    lines: list[str] = []

    def key(k: str) -> str:
        return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)  # JSON string escapes are valid TOML basic strings
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        raise TypeError(f"cannot render {type(v).__name__} as TOML here")

    def table(prefix: list[str], d: dict[str, Any]) -> None:
        if prefix:
            lines.append("")
            lines.append("[" + ".".join(key(p) for p in prefix) + "]")
        for k, v in d.items():
            if not isinstance(v, dict):
                lines.append(f"{key(k)} = {value(v)}")
        for k, v in d.items():
            if isinstance(v, dict):
                table([*prefix, k], v)

    table([], document)
    return "\n".join(lines) + "\n"


@pytest.fixture
def write_pack(tmp_path: Path) -> Callable[..., Path]:
    """``write_pack(document, filename="pack.toml")`` writes TOML or JSON by suffix."""

    def write(document: dict[str, Any], filename: str = "pack.toml") -> Path:
        path = tmp_path / filename
        if path.suffix == ".json":
            path.write_text(json.dumps(document, indent=2), "utf-8")
        else:
            path.write_text(to_toml(document), "utf-8")
        return path

    return write


def dump_tables(store: Store, tables: tuple[str, ...] = POLICY_TABLES) -> dict[str, list[tuple]]:
    """Every row of the policy and memory tables, for before/after comparisons.

    Rows in a total order: SQLite's rowid; on PostgreSQL (no rowid where the
    key is an ``id``), the rows sorted whole.
    """
    if store.engine == "postgresql":
        return {
            table: sorted(
                (tuple(row) for row in store.db.execute(f"SELECT * FROM {table}")), key=repr
            )
            for table in tables
        }
    return {
        table: [tuple(row) for row in store.db.execute(f"SELECT * FROM {table} ORDER BY rowid")]
        for table in tables
    }


@pytest.fixture
def table_dump() -> Callable[[Store], dict[str, list[tuple]]]:
    """``table_dump(store)`` -> rows of packs, categories, criteria, history, memories."""
    return dump_tables
