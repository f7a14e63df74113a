"""``memsdk mcp``: tested end to end with the mcp SDK's own client over stdio.

The server runs as ``memsdk mcp`` in a subprocess on a temp store whose only
pack is a custom one, so every category the client sees came from the DB.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from plugin_sdk import Store, inject, validate_pack
from plugin_sdk.cli import cli
from plugin_sdk.host.mcp_server import INJECT_URI, INSTALL_HINT, PROMPT_NAME
from plugin_sdk.host.mcp_tools import ToolSpec, call_tool, tool_specs
from plugin_sdk.testing import StoreTemplates, pack_document

mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

PROJECT = "orchard-host"
ORCHARD = pack_document(
    "orchard", "1.0.0", {"ORCHARD_RULES": "intent", "ORCHARD_GRAFTS": "content"}
)
TOOLS = {
    "memory_write",
    "memory_search",
    "memory_recall",
    "memory_get",
    "memory_expand",
    "memory_update",
    "memory_archive",
    "memory_outcome",
    "memory_merge",
    "memory_forget",
    "memory_list",
    "memory_recent",
    "memory_toc",
}


@pytest.fixture
def db(tmp_path: Path, memsdk_templates: StoreTemplates) -> Path:
    """A store with the custom pack and one memory."""
    path = memsdk_templates.copy(tmp_path / "orchard.db", validate_pack(ORCHARD, source="orchard"))
    with Store(path, project=PROJECT) as store:
        store.memories.write("Never graft in frost.", "ORCHARD_RULES", importance=90)
    return path


@asynccontextmanager
async def client(db: Path, *args: str) -> AsyncIterator[ClientSession]:
    """``memsdk mcp --db DB`` in a subprocess, and an initialized client session on it."""
    server = StdioServerParameters(
        command=sys.executable,
        args=[
            "-c",
            "from plugin_sdk.cli import main; main()",
            "mcp",
            "--db",
            str(db),
            "--project",
            PROJECT,
            *args,
        ],
        env={"MEMSDK_LOAD_PLUGINS": ""},
        cwd=str(db.parent),
    )
    with (db.parent / "server.log").open("w") as errlog:
        async with (
            stdio_client(server, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def run(db: Path, scenario: Callable[[ClientSession], Awaitable[None]], *args: str) -> None:
    async def main() -> None:
        async with client(db, *args) as session:
            await scenario(session)

    anyio.run(main)


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


@pytest.mark.slow
def test_tool_schemas_take_the_categories_from_the_store(db):
    with Store(db, project=PROJECT) as store:
        names = store.category_names()
    assert names == ["ORCHARD_RULES", "ORCHARD_GRAFTS"]
    seen: dict[str, Any] = {}

    async def scenario(session: ClientSession) -> None:
        listed = await session.list_tools()
        seen.update({tool.name: tool for tool in listed.tools})

    run(db, scenario)
    assert set(seen) == TOOLS
    write = seen["memory_write"]
    assert write.input_schema["properties"]["category"]["enum"] == names
    assert write.input_schema["required"] == ["content", "category"]
    assert "ORCHARD_GRAFTS (content): Memories of kind content filed as ORCHARD_GRAFTS." in (
        write.description
    )
    for name in ("memory_search", "memory_update"):
        assert seen[name].input_schema["properties"]["category"]["enum"] == names
    assert seen["memory_search"].annotations.read_only_hint is True
    assert seen["memory_archive"].annotations.read_only_hint is False


@pytest.mark.slow
def test_write_search_get_update_merge_archive_round_trip(db):
    out: dict[str, Any] = {}

    async def scenario(session: ClientSession) -> None:
        wrote = await session.call_tool(
            "memory_write",
            {
                "content": "Row 4: Bramley scions on M26 rootstock, 2026-03-02.",
                "category": "ORCHARD_GRAFTS",
            },
        )
        assert not wrote.is_error, text_of(wrote)
        new_id = wrote.structured_content["id"]
        assert wrote.structured_content["created"] is True
        assert text_of(wrote) == f"Wrote memory {new_id} (ORCHARD_GRAFTS)."
        again = await session.call_tool(
            "memory_write",
            {
                "content": "row 4: bramley scions on M26 rootstock, 2026-03-02",
                "category": "ORCHARD_GRAFTS",
            },
        )
        assert again.structured_content == {
            "id": new_id,
            "created": False,
            "status": "active",
            "seen_count": 2,
        }
        found = await session.call_tool("memory_search", {"query": "bramley rootstock"})
        assert not found.is_error
        assert found.structured_content["results"][0]["id"] == new_id
        assert f"[{new_id}] ORCHARD_GRAFTS: Row 4: Bramley" in text_of(found)
        none = await session.call_tool(
            "memory_search", {"query": "bramley", "category": "ORCHARD_RULES"}
        )
        assert none.structured_content == {"results": []}
        got = await session.call_tool("memory_get", {"id": new_id})
        assert got.structured_content["content"].startswith("Row 4: Bramley")
        assert got.structured_content["seen_count"] == 2
        other = await session.call_tool(
            "memory_write",
            {"content": "Row 4 has Bramley on M26 since March.", "category": "ORCHARD_GRAFTS"},
        )
        other_id = other.structured_content["id"]
        changed = await session.call_tool(
            "memory_update", {"id": other_id, "importance": 70, "pinned": True}
        )
        assert changed.structured_content["importance"] == 70
        assert changed.structured_content["pinned"] is True
        merged = await session.call_tool("memory_merge", {"source_ids": [other_id], "into": new_id})
        assert not merged.is_error, text_of(merged)
        assert merged.structured_content["merged_from"] == [other_id]
        expanded = await session.call_tool("memory_expand", {"id": new_id})
        assert expanded.structured_content["shown"] == [new_id]
        archived = await session.call_tool("memory_archive", {"id": new_id})
        assert archived.structured_content["status"] == "archived"
        out["ids"] = (new_id, other_id)

    run(db, scenario)
    new_id, other_id = out["ids"]
    with Store(db, project=PROJECT) as store:
        kept = store.memories.get(new_id)
        assert (kept.status, kept.source, kept.merged_from) == ("archived", "mcp", [other_id])
        assert store.memories.get(other_id).superseded_by == new_id


@pytest.mark.slow
def test_errors_come_back_as_tool_errors_naming_the_problem(db):
    async def scenario(session: ClientSession) -> None:
        unknown = await session.call_tool(
            "memory_write", {"content": "Pears like it damp.", "category": "PEAR_NOTES"}
        )
        assert unknown.is_error
        assert text_of(unknown) == (
            "memory_write: unknown category 'PEAR_NOTES'; this store's categories are: "
            "ORCHARD_RULES, ORCHARD_GRAFTS"  # priority order
        )
        missing = await session.call_tool("memory_get", {"id": 9999})
        assert missing.is_error
        assert text_of(missing).startswith("memory_get: no memory with id 9999")
        bad = await session.call_tool(
            "memory_write", {"content": "x", "category": "ORCHARD_RULES", "importance": 500}
        )
        assert bad.is_error
        assert (
            text_of(bad)
            == "memory_write: argument importance: 500 is greater than the maximum of 100"
        )
        extra = await session.call_tool("memory_archive", {"id": 1, "force": True})
        assert extra.is_error and "'force' was unexpected" in text_of(extra)
        nothing = await session.call_tool("memory_update", {"id": 1})
        assert text_of(nothing) == (
            "memory_update: give at least one of content, category, importance, pinned"
        )
        cross = await session.call_tool("memory_update", {"id": 1, "category": "ORCHARD_GRAFTS"})
        assert not cross.is_error  # the store decides: a known category is fine
        unknown_tool = await session.call_tool("memory_obliterate", {"id": 1})
        assert unknown_tool.is_error
        assert text_of(unknown_tool).startswith(
            "memory_obliterate: unknown tool 'memory_obliterate'"
        )
        # The server is still there after every error.
        still = await session.call_tool("memory_get", {"id": 1})
        assert not still.is_error
        assert still.structured_content["category"] == "ORCHARD_GRAFTS"

    run(db, scenario)


@pytest.mark.slow
def test_integers_out_of_range_are_tool_errors_not_protocol_errors(db):
    big = 10**30
    seen: dict[str, Any] = {}

    async def scenario(session: ClientSession) -> None:
        listed = await session.list_tools()
        seen.update({tool.name: tool.input_schema for tool in listed.tools})
        got = await session.call_tool("memory_get", {"id": big})
        assert got.is_error
        assert text_of(got) == (
            f"memory_get: argument id: {big} is greater than the maximum of {2**63 - 1}"
        )
        for name, args in (
            ("memory_expand", {"id": 1, "budget": big}),
            ("memory_merge", {"source_ids": [1, big], "into": 1}),
            ("memory_update", {"id": -big, "pinned": True}),
        ):
            outcome = await session.call_tool(name, args)
            assert outcome.is_error, text_of(outcome)
            assert text_of(outcome).startswith(f"{name}: argument ")
        assert not (await session.call_tool("memory_get", {"id": 1})).is_error

    run(db, scenario)
    integers = [
        spec
        for schema in seen.values()
        for spec in [*schema["properties"].values(), schema["properties"].get("source_ids", {})]
        for spec in [spec, spec.get("items", {})]
        if spec.get("type") == "integer"
    ]
    assert integers and all(
        spec["minimum"] >= -(2**63) and spec["maximum"] <= 2**63 - 1 for spec in integers
    )


def test_an_argument_the_handler_cannot_use_is_a_tool_error(db):
    def overflow(store: Store, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        raise OverflowError("Python int too large to convert to SQLite INTEGER")

    spec = ToolSpec(
        "memory_odd",
        "odd",
        {"type": "object", "properties": {}},
        overflow,
        title="Odd",
        output_schema={"type": "object"},
    )
    with Store(db, project=PROJECT) as store:
        outcome = call_tool(store, [spec], "memory_odd", {})
    assert outcome.is_error
    assert outcome.text == (
        "memory_odd: cannot use these arguments "
        "(OverflowError: Python int too large to convert to SQLite INTEGER)"
    )


@pytest.mark.slow
def test_the_memory_block_is_a_resource_and_a_prompt(db):
    out: dict[str, Any] = {}

    async def scenario(session: ClientSession) -> None:
        resources = await session.list_resources()
        assert [str(r.uri) for r in resources.resources] == [INJECT_URI]
        read = await session.read_resource(INJECT_URI)
        out["resource"] = read.contents[0].text
        prompts = await session.list_prompts()
        assert [p.name for p in prompts.prompts] == [PROMPT_NAME]
        prompt = await session.get_prompt(PROMPT_NAME)
        out["prompt"] = prompt.messages[0].content.text

    run(db, scenario, "--budget", "300")
    with Store(db, project=PROJECT) as store:
        expected = inject(store, budget=300).text
    assert out["resource"] == expected == out["prompt"]
    assert "## ORCHARD_RULES" in expected and "Never graft in frost." in expected


@pytest.mark.slow
def test_pack_option_installs_a_missing_pack_before_serving(tmp_path):
    pack = tmp_path / "plums.json"
    pack.write_text(
        json.dumps(pack_document("plums", "1.0.0", {"PLUM_VARIETIES": "content"})),
        "utf-8",
    )
    db = tmp_path / "new.db"
    seen: dict[str, Any] = {}

    async def scenario(session: ClientSession) -> None:
        listed = await session.list_tools()
        write = next(t for t in listed.tools if t.name == "memory_write")
        seen["enum"] = write.input_schema["properties"]["category"]["enum"]

    run(db, scenario, "--pack", str(pack))
    assert seen["enum"] == ["PLUM_VARIETIES"]


def test_without_the_extra_one_line_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "mcp", None)  # import mcp now fails, as when not installed
    result = CliRunner().invoke(cli, ["mcp", "--db", str(tmp_path / "m.db")])
    assert result.exit_code == 1
    assert result.output == f"Error: {INSTALL_HINT}\n"
    assert not (tmp_path / "m.db").exists()


def test_a_store_without_categories_is_refused_before_serving(tmp_path):
    result = CliRunner().invoke(cli, ["mcp", "--db", str(tmp_path / "m.db"), "--project", "p"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: store ")
    assert "has no categories: install a pack first" in result.output


def test_ids_of_another_project_are_not_this_servers(db):
    with Store(db, project="elsewhere") as other:
        foreign = other.memories.write("Elsewhere: a secret plan.", "ORCHARD_RULES").id
    with Store(db, project=PROJECT) as store:
        specs = tool_specs(store)
        for name, args in (
            ("memory_get", {"id": foreign}),
            ("memory_archive", {"id": foreign}),
            ("memory_expand", {"id": foreign}),
            ("memory_merge", {"source_ids": [foreign], "into": 1}),
        ):
            outcome = call_tool(store, specs, name, args)
            assert outcome.is_error
            assert outcome.text == f"{name}: no memory with id {foreign} in project {PROJECT!r}"
        assert other_status(db, foreign) == "active"


def other_status(db, memory_id):
    with Store(db, project="elsewhere") as other:
        return other.memories.get(memory_id).status


def test_every_tool_has_a_title_an_output_schema_and_annotations(db):
    seen: dict[str, Any] = {}
    instructions: list[str] = []

    async def scenario(session: ClientSession) -> None:
        instructions.append((await session.initialize()).instructions or "")  # the kept result
        listed = await session.list_tools()
        seen.update({tool.name: tool for tool in listed.tools})

    run(db, scenario)
    assert set(seen) == TOOLS
    for tool in seen.values():
        assert tool.title and tool.annotations.title == tool.title, tool.name
        assert tool.output_schema["type"] == "object", tool.name
        assert tool.annotations.open_world_hint is False
        assert tool.annotations.idempotent_hint is not None
    read_only = {name for name, tool in seen.items() if tool.annotations.read_only_hint}
    assert read_only == {
        "memory_search",
        "memory_recall",
        "memory_get",
        "memory_list",
        "memory_recent",
        "memory_toc",
        "memory_expand",
    }
    destructive = {name for name, tool in seen.items() if tool.annotations.destructive_hint}
    assert destructive == {"memory_update", "memory_archive", "memory_merge", "memory_forget"}
    assert f"Long-term memory for project {PROJECT!r}." in instructions[0]


def test_list_recent_toc_and_lenient_ids(db):
    out: dict[str, Any] = {}

    async def scenario(session: ClientSession) -> None:
        for n in range(3):
            await session.call_tool(
                "memory_write",
                {"content": f"Graft row {n} in March.", "category": "ORCHARD_GRAFTS"},
            )
        first = await session.call_tool("memory_list", {"limit": 2})
        second = await session.call_tool(
            "memory_list", {"limit": 2, "offset": first.structured_content["next_offset"]}
        )
        grafts = await session.call_tool(
            "memory_list", {"category": "ORCHARD_GRAFTS", "order": "newest"}
        )
        recent = await session.call_tool("memory_recent", {"limit": 2})
        toc = await session.call_tool("memory_toc", {})
        one_id = first.structured_content["memories"][0]["id"]
        by_text = await session.call_tool("memory_get", {"id": f"[{one_id}]"})
        by_hash = await session.call_tool("memory_get", {"id": f"#{one_id}"})
        bad = await session.call_tool("memory_get", {"id": "twelve"})
        out.update(locals())

    run(db, scenario)
    first, second = out["first"].structured_content, out["second"].structured_content
    assert len(first["memories"]) == 2 and first["next_offset"] == 2
    assert len(second["memories"]) == 2 and second["next_offset"] is None
    contents = [m["content"] for m in out["grafts"].structured_content["memories"]]
    assert contents == ["Graft row 2 in March.", "Graft row 1 in March.", "Graft row 0 in March."]
    recent = out["recent"].structured_content["memories"]
    assert [m["content"] for m in recent] == ["Graft row 2 in March.", "Graft row 1 in March."]
    toc = out["toc"].structured_content
    assert "Never graft in frost." in toc["text"] and toc["tokens"] <= toc["budget"]
    assert text_of(out["toc"]) == toc["text"]
    assert out["by_text"].structured_content["id"] == out["one_id"]
    assert out["by_hash"].structured_content["id"] == out["one_id"]
    assert out["bad"].is_error and "argument id" in text_of(out["bad"])


def test_memory_recall_over_mcp_answers_a_plain_question_within_its_budget(db: Path) -> None:
    with Store(db, project=PROJECT) as store:
        graft = store.memories.write(
            "Row 4 holds bramley scions grafted on M26 rootstock.",
            "ORCHARD_GRAFTS",
            occurred_at="2026-03-02",
        ).id

    async def check() -> None:
        async with client(db) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert tools["memory_recall"].annotations.read_only_hint is True
            assert "plain language" in tools["memory_search"].description
            found = await session.call_tool(
                "memory_recall", {"query": "What's grafted on row 4's rootstock?", "budget": 200}
            )
            assert not found.is_error, text_of(found)
            data = found.structured_content
            assert data["shown"][0] == graft
            assert data["tokens"] <= 200
            # the category shown as the UserPromptSubmit hook's block shows it
            assert f"[{graft}] (2026-03-02) ORCHARD_GRAFTS: Row 4 holds bramley" in text_of(found)
            assert "matched" in " ".join(data["why"][str(graft)])
            empty = await session.call_tool("memory_recall", {"query": 'NEAR( " OR *'})
            assert not empty.is_error

    anyio.run(check)
