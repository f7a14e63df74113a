"""Projects as a wall: every id-taking entry point x (own, another project's, shared).

Project ``home`` reads. Project ``away`` holds a private memory and a shared
one (``scope='global'`` and shareable). A private memory of another project
is not found, in the same words as an id that does not exist; a shared one
can be read (get, expand, search, inject) and not changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin_sdk import NotFound, Store, resolve_pack
from plugin_sdk.cli import cli
from plugin_sdk.composites import groups, refsets
from plugin_sdk.composites.fragment import fragment, reconstruct
from plugin_sdk.errors import InvalidProposal, ReadOnlyMemory
from plugin_sdk.host.mcp_tools import call_tool, tool_specs
from plugin_sdk.proposals.filing import propose
from plugin_sdk.stages.inject import expand, inject
from plugin_sdk.store.visibility import readable_sql

HOME, AWAY = "home", "away"
STEPS = "Failover:\n\n1. Drain the primary.\n\n2. Promote the replica.\n\n3. Repoint the DNS."


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    """A store file with memories of two projects; the ids by name."""
    path = tmp_path / "walls.db"
    with Store(path, project=AWAY) as away:
        away.packs.install(resolve_pack("ops"))
        category = away.category_names()[0]
        private = away.memories.write(f"Away keeps its {STEPS}", category).id
        shared = away.memories.write(
            f"Everyone may read this. {STEPS}", category, scope="global", shareable=True
        ).id
        away_other = away.memories.write("Away's second memory.", category).id
        composite = away.composites.create("theme", away_other, [private]).id
        set_id = refsets.freeze(away, composite)
    with Store(path, project=HOME) as home:
        own = home.memories.write(f"Home keeps its {STEPS}", category).id
        own2 = home.memories.write("Home's second memory.", category).id
    return {
        "path": path,
        "category": category,
        "own": own,
        "own2": own2,
        "other": private,
        "shared": shared,
        "away_composite": composite,
        "away_set": set_id,
    }


def home(world: dict[str, Any]) -> Store:
    return Store(world["path"], project=HOME)


# The API: each entry point run on one id; the expected outcome per kind of id.

Call = Callable[[Store, dict[str, Any], int], Any]


def _get(store: Store, w: dict[str, Any], i: int) -> Any:
    return store.memories.get(i)


def _update(store: Store, w: dict[str, Any], i: int) -> Any:
    return store.memories.update(i, importance=77)


def _archive(store: Store, w: dict[str, Any], i: int) -> Any:
    return store.memories.archive(i)


def _merge_source(store: Store, w: dict[str, Any], i: int) -> Any:
    return store.memories.merge([i], into=w["own2"])


def _merge_target(store: Store, w: dict[str, Any], i: int) -> Any:
    return store.memories.merge([w["own2"]], into=i)


def _forget(store: Store, w: dict[str, Any], i: int) -> Any:
    return store.memories.forget(i, reason="test")


def _fragment(store: Store, w: dict[str, Any], i: int) -> Any:
    return fragment(store, i)


def _composite_head(store: Store, w: dict[str, Any], i: int) -> Any:
    return store.composites.create("theme", i, [w["own2"]])


def _composite_member(store: Store, w: dict[str, Any], i: int) -> Any:
    return store.composites.create("theme", w["own2"], [i])


def _composite_add(store: Store, w: dict[str, Any], i: int) -> Any:
    composite = store.composites.create("theme", w["own2"], [])
    return store.composites.add(composite.id, i)


def _expand(store: Store, w: dict[str, Any], i: int) -> Any:
    return expand(store, i)


def _link(store: Store, w: dict[str, Any], i: int) -> Any:
    return store.entities.link(i, ["svc:db"], role="subject")


def _links_of(store: Store, w: dict[str, Any], i: int) -> Any:
    return store.entities.of_memory(i)


def _evidence(store: Store, w: dict[str, Any], i: int) -> Any:
    diff = {"action": "write", "category": w["category"], "content": f"A note {i}."}
    return propose(
        store, diff_type="memory_entry", rationale="r", evidence=[i], diff=diff, source="t"
    )


def _proposal_update(store: Store, w: dict[str, Any], i: int) -> Any:
    diff = {"action": "update", "id": i, "content": f"Changed text {i}."}
    return propose(
        store, diff_type="memory_entry", rationale="r", evidence=[], diff=diff, source="t"
    )


OK, MISSING, READ_ONLY, REFUSED = "ok", NotFound, ReadOnlyMemory, InvalidProposal

# entry point -> expected for (own, other project's, other project's shared)
API: dict[str, tuple[Call, tuple[Any, Any, Any]]] = {
    "memories.get": (_get, (OK, MISSING, OK)),
    "memories.update": (_update, (OK, MISSING, READ_ONLY)),
    "memories.archive": (_archive, (OK, MISSING, READ_ONLY)),
    "memories.merge source": (_merge_source, (OK, MISSING, READ_ONLY)),
    "memories.merge target": (_merge_target, (OK, MISSING, READ_ONLY)),
    "memories.forget": (_forget, (OK, MISSING, READ_ONLY)),
    "fragment": (_fragment, (OK, MISSING, READ_ONLY)),
    "composites.create head": (_composite_head, (OK, MISSING, READ_ONLY)),
    "composites.create member": (_composite_member, (OK, MISSING, READ_ONLY)),
    "composites.add": (_composite_add, (OK, MISSING, READ_ONLY)),
    "expand": (_expand, (OK, MISSING, OK)),
    "entities.link": (_link, (OK, MISSING, READ_ONLY)),
    "entities.of_memory": (_links_of, (OK, MISSING, OK)),
    "queue evidence": (_evidence, (OK, REFUSED, OK)),
    "queue memory_entry update": (_proposal_update, (OK, REFUSED, REFUSED)),
}
KINDS = ("own", "other", "shared")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("entry", list(API))
def test_api_matrix(world, entry, kind):
    call, expected = API[entry]
    outcome = expected[KINDS.index(kind)]
    memory_id = world[kind]
    with home(world) as store:
        if outcome == OK:
            call(store, world, memory_id)
            return
        with pytest.raises(outcome) as raised:
            call(store, world, memory_id)
    message = str(raised.value)
    if outcome is NotFound:  # worded exactly as an id that does not exist
        assert f"no memory with id {memory_id} in project 'home'" in message
    if outcome is ReadOnlyMemory:
        assert "shared from project 'away'" in message
    with Store(world["path"], project=AWAY) as away:  # nothing changed over there
        memory = away.memories.get(memory_id)
        assert (memory.status, memory.importance) == ("active", 50)
        assert away.memories.get(world["other"]).content.startswith("Away keeps")


def test_a_missing_id_reads_exactly_as_another_projects_id(world):
    with home(world) as store:
        with pytest.raises(NotFound) as missing:
            store.memories.get(99999)
        with pytest.raises(NotFound) as walled:
            store.memories.get(world["other"])
    assert str(missing.value).replace("99999", "N") == str(walled.value).replace(
        str(world["other"]), "N"
    )


def test_composites_and_reference_sets_of_another_project_are_not_found(world):
    with home(world) as store:
        for step in (
            lambda: store.composites.get(world["away_composite"]),
            lambda: store.composites.add(world["away_composite"], world["own"]),
            lambda: store.composites.delete(world["away_composite"]),
            lambda: refsets.freeze(store, world["away_composite"]),
            lambda: refsets.read(store, world["away_set"]),
        ):
            with pytest.raises(NotFound):
                step()


def test_search_and_inject_read_own_and_shared_memories_only(world):
    with home(world) as store:
        found = {hit.memory.id for hit in store.memories.search("replica")}
        assert found == {world["own"], world["shared"]}
        shown = set(inject(store, budget=4000).shown)
        assert {world["own"], world["shared"]} <= shown
        assert world["other"] not in shown


def test_expand_of_a_shared_header_shows_only_what_the_reader_may_read(world):
    with Store(world["path"], project=AWAY) as away:
        done = fragment(away, world["shared"])
        away.memories.update(done.header, scope="global", shareable=True)
        away.memories.update(done.details[0], scope="global", shareable=True)
    with home(world) as store:
        expansion = expand(store, done.header)
    assert expansion.shown == [done.details[0]]


def test_a_composite_made_before_the_wall_does_not_leak_a_foreign_member(world):
    # a composite stored before this check existed: home's head, away's member
    with home(world) as store:
        composite = store.composites.create("theme", world["own"], [world["own2"]])
        store.db.execute(
            "UPDATE composite_members SET member_memory_id = ? WHERE composite_id = ?",
            [world["other"], composite.id],
        )
        assert expand(store, world["own"]).shown == []
        result = inject(store, budget=4000)
        assert result.coverage <= 1.0  # the account is read from the open store
    assert "Away keeps" not in result.text


def test_readable_sql_is_the_rule(world):
    with home(world) as store:
        ids = {
            row[0]
            for row in store.db.execute(f"SELECT id FROM memories m WHERE {readable_sql()}", [HOME])
        }
    assert ids == {world["own"], world["own2"], world["shared"]}


# The command line and the MCP tools: the same wall, as one-line errors.

CLI: dict[str, tuple[Callable[[dict[str, Any], int], list[str]], tuple[str, str, str]]] = {
    "memory get": (lambda w, i: ["memory", "get", str(i)], ("ok", "missing", "ok")),
    "memory update": (
        lambda w, i: ["memory", "update", str(i), "--importance", "70"],
        ("ok", "missing", "read-only"),
    ),
    "memory archive": (lambda w, i: ["memory", "archive", str(i)], ("ok", "missing", "read-only")),
    "memory merge": (
        lambda w, i: ["memory", "merge", str(i), "--into", str(w["own2"])],
        ("ok", "missing", "read-only"),
    ),
    "forget": (lambda w, i: ["forget", str(i)], ("ok", "missing", "read-only")),
    "expand": (lambda w, i: ["expand", str(i)], ("ok", "missing", "ok")),
    "composite create": (
        lambda w, i: ["composite", "create", "theme", str(w["own2"]), str(i)],
        ("ok", "missing", "read-only"),
    ),
    "entity link": (
        lambda w, i: ["entity", "link", str(i), "svc:db"],
        ("ok", "missing", "read-only"),
    ),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", list(CLI))
def test_cli_matrix(world, command, kind):
    args, expected = CLI[command]
    outcome = expected[KINDS.index(kind)]
    memory_id = world[kind]
    result = CliRunner().invoke(
        cli, [*args(world, memory_id), "--db", str(world["path"]), "--project", HOME]
    )
    if outcome == "ok":
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1, result.output
    if outcome == "missing":
        assert f"Error: no memory with id {memory_id} in project 'home'" in result.output
    else:
        assert "shared from project 'away'" in result.output


MCP: dict[str, tuple[Callable[[dict[str, Any], int], dict[str, Any]], tuple[str, str, str]]] = {
    "memory_get": (lambda w, i: {"id": i}, ("ok", "missing", "ok")),
    "memory_expand": (lambda w, i: {"id": i}, ("ok", "missing", "ok")),
    "memory_update": (lambda w, i: {"id": i, "importance": 70}, ("ok", "missing", "read-only")),
    "memory_archive": (lambda w, i: {"id": i}, ("ok", "missing", "read-only")),
    "memory_merge": (
        lambda w, i: {"source_ids": [i], "into": w["own2"]},
        ("ok", "missing", "read-only"),
    ),
    "memory_forget": (lambda w, i: {"id": i}, ("ok", "missing", "read-only")),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("tool", list(MCP))
def test_mcp_matrix(world, tool, kind):
    args, expected = MCP[tool]
    outcome = expected[KINDS.index(kind)]
    memory_id = world[kind]
    with home(world) as store:
        result = call_tool(store, tool_specs(store), tool, args(world, memory_id))
    if outcome == "ok":
        assert not result.is_error, result.text
        if tool == "memory_get":
            assert json.dumps(result.data)
        return
    assert result.is_error
    if outcome == "missing":
        assert result.text == f"{tool}: no memory with id {memory_id} in project 'home'"
    else:
        assert "shared from project 'away'" in result.text


# Issue 25: what another project sees counts and names only what it may read.


def test_a_shared_heads_annotation_counts_only_the_members_the_reader_may_see(world):
    with Store(world["path"], project=AWAY) as away:
        category = world["category"]
        head = away.memories.write("Shared runbook head.", category, scope="global", shareable=True)
        step = away.memories.write("Shared step.", category, scope="global", shareable=True)
        hidden = away.memories.write("Private step.", category)
        away.composites.create("sequence", head.id, [step.id, hidden.id])
        assert f"[{head.id}: 2 details]" in inject(away, budget=4000).text  # the owner sees both
    with home(world) as store:
        text = inject(store, budget=4000).text
        assert expand(store, head.id).shown == [step.id]
        assert f"[{head.id}: 1 detail]" in text
        assert groups.notes(store, [head.id])[head.id] == ("sequence", "1 detail")
        [composite] = store.composites.by_head(head.id)
        assert composite.members == [step.id]  # the private member is not named either
        assert store.composites.by_member(hidden.id) == []


def _error(args: list[str], world: dict[str, Any]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [*args, "--db", str(world["path"]), "--project", HOME])
    return result.exit_code, result.output


def _api_error(call: Callable[[], Any]) -> tuple[str, str]:
    try:
        call()
    except Exception as error:  # the class is what is compared
        return type(error).__name__, str(error)
    return "no error", ""


ID_COMMANDS: dict[str, Callable[[int], list[str]]] = {
    "memory get": lambda i: ["memory", "get", str(i)],
    "expand": lambda i: ["expand", str(i)],
    "composite show": lambda i: ["composite", "show", str(i)],
    "composite reconstruct": lambda i: ["composite", "reconstruct", str(i)],
    "composite list --head": lambda i: ["composite", "list", "--head", str(i)],
    "composite list --member": lambda i: ["composite", "list", "--member", str(i)],
    "composite freeze": lambda i: ["composite", "freeze", str(i)],
    "composite fragment": lambda i: ["composite", "fragment", str(i)],
    "memory update": lambda i: ["memory", "update", str(i), "--importance", "70"],
    "memory archive": lambda i: ["memory", "archive", str(i)],
    "memory merge": lambda i: ["memory", "merge", str(i), "--into", str(i)],
    "forget": lambda i: ["forget", str(i)],
    "entity link": lambda i: ["entity", "link", str(i), "svc:db"],
    "queue show": lambda i: ["queue", "show", str(i)],
}
ID_CALLS: dict[str, Callable[[Store, int], Any]] = {
    "memories.get": lambda s, i: s.memories.get(i),
    "expand": lambda s, i: expand(s, i),
    "composites.get": lambda s, i: s.composites.get(i),
    "composites.by_head": lambda s, i: s.composites.by_head(i),
    "composites.by_member": lambda s, i: s.composites.by_member(i),
    "reconstruct": lambda s, i: reconstruct(s, i),
    "fragment": lambda s, i: fragment(s, i),
    "memories.update": lambda s, i: s.memories.update(i, importance=70),
    "memories.forget": lambda s, i: s.memories.forget(i, reason="t"),
    "memories.merge": lambda s, i: s.memories.merge([i], into=i),
    "entities.of_memory": lambda s, i: s.entities.of_memory(i),
}
MISSING_ID = 99999


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_an_id_behind_the_wall_answers_exactly_as_a_missing_one(world, data):
    # every id of away's the home project may not read: memories, a head, a member,
    # composite and proposal ids of away's
    walled = data.draw(st.sampled_from(["other", "away_composite", "away_set"]))
    walled_id = world[walled]
    command = data.draw(st.sampled_from(sorted(ID_COMMANDS)))
    code, said = _error(ID_COMMANDS[command](walled_id), world)
    missing_code, missing_said = _error(ID_COMMANDS[command](MISSING_ID), world)
    assert (code, said.replace(str(walled_id), "N")) == (
        missing_code,
        missing_said.replace(str(MISSING_ID), "N"),
    )
    call = data.draw(st.sampled_from(sorted(ID_CALLS)))
    with home(world) as store:
        kind, message = _api_error(lambda: ID_CALLS[call](store, walled_id))
        missing_kind, missing_message = _api_error(lambda: ID_CALLS[call](store, MISSING_ID))
    assert (kind, message.replace(str(walled_id), "N")) == (
        missing_kind,
        missing_message.replace(str(MISSING_ID), "N"),
    )
