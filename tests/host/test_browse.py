"""A store people can browse: the views, the shipped metadata, and Datasette's own test client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from plugin_sdk import Store
from plugin_sdk.cli import cli
from plugin_sdk.host.browse import datasette_metadata
from plugin_sdk.host.demo import run_demo
from plugin_sdk.testing import fresh_plugin_manager

VIEWS = (
    "memories_view",
    "composites_view",
    "composite_members_view",
    "entities_view",
    "memory_entities_view",
)


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("browse") / "memory.db"
    with Store(path, project="demo", plugins=fresh_plugin_manager()) as store:
        run_demo(store, "ops")
    return path


def test_views_put_the_text_first_and_name_what_ids_point_at(demo_db: Path) -> None:
    with Store(demo_db, project="demo") as store:
        names = {
            row[0] for row in store.db.execute("SELECT name FROM sqlite_master WHERE type = 'view'")
        }
        assert set(VIEWS) <= names
        columns = [row[1] for row in store.db.execute("PRAGMA table_info(memories_view)")]
        assert columns[:3] == ["id", "content", "category"]
        assert {"project", "created_at", "updated_at", "category_label"} <= set(columns)
        for view in VIEWS:
            count = store.db.execute(f"SELECT count(*) FROM [{view}]").fetchone()[0]
            assert count > 0, view
        member = store.db.execute(
            "SELECT member, head FROM composite_members_view LIMIT 1"
        ).fetchone()
        assert all(isinstance(text, str) and text for text in member)


def test_the_metadata_is_keyed_by_the_store_name(tmp_path: Path) -> None:
    shipped = datasette_metadata()
    assert set(shipped["databases"]) == {"memory"}
    tables = shipped["databases"]["memory"]["tables"]
    assert set(VIEWS) <= set(tables)
    out = CliRunner().invoke(cli, ["datasette-metadata", "--db", str(tmp_path / "team.db")])
    assert out.exit_code == 0
    assert set(json.loads(out.output)["databases"]) == {"team"}


datasette = pytest.importorskip("datasette.app")


def get(ds: Any, path: str) -> Any:
    async def fetch() -> Any:
        return await ds.client.get(path)

    return asyncio.run(fetch())


def test_datasette_finds_a_memory_through_search(demo_db: Path) -> None:
    with Store(demo_db, project="demo") as store:
        target = store.memories.search("failover")[0].memory
    ds = datasette.Datasette([str(demo_db)], metadata=datasette_metadata(demo_db))
    found = get(ds, "/memory/memories_view.json?_search=failover&_shape=objects")
    assert found.status_code == 200, found.text
    rows = found.json()["rows"]
    assert target.id in [row["id"] for row in rows]
    assert all("failover" in row["content"].lower() for row in rows)
    page = get(ds, "/memory/memories_view")
    assert page.status_code == 200
    assert 'name="_search"' in page.text  # the search box
    faceted = get(ds, "/memory/memories_view.json?_facet=category&_shape=objects&_size=1")
    assert faceted.json()["facet_results"]
