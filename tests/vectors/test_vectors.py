"""Hybrid retrieval: vectors from the host's embedder, kept in step with the memories.

Runs on whichever SQLite driver sqlite-utils uses: with the standard
library's, queries scan ``memory_vectors``; with ``memsdk[vec]`` (pysqlite3
and sqlite-vec) the same tests go through the sqlite-vec mirror.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from plugin_sdk import Dreamer, Store, validate_pack
from plugin_sdk.errors import EmbeddingError
from plugin_sdk.plugin.hookspecs import hookimpl
from plugin_sdk.plugin.records import Embeddings
from plugin_sdk.store import driver
from plugin_sdk.store.tables.memories.vectors import load_sqlite_vec
from plugin_sdk.testing import HashEmbedder, fresh_plugin_manager, pack_document
from plugin_sdk.vectors.embed import embed
from plugin_sdk.vectors.fusion import fuse, hybrid_search
from plugin_sdk.vectors.index import drop_vectors

PACK = pack_document("vecs", "1.0.0", {"NOTES": "content", "RULES": "content"})

NOTES = [
    "deploy failed on friday because the database migration locked the users table",
    "the staging cluster runs kubernetes 1.29 with three worker nodes",
    "Alice prefers tabs over spaces in python files",
    "rotate the api keys every ninety days",
    "the backup job writes snapshots to the cold storage bucket at midnight",
]


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(dim=64)


@pytest.fixture
def vstore(tmp_path: Path, embedder: HashEmbedder) -> Iterator[Store]:
    plugins = fresh_plugin_manager(("test-embedder", embedder))
    store = Store(tmp_path / "v.db", project="p", plugins=plugins)
    store.packs.install(validate_pack(PACK, source="test"))
    try:
        yield store
    finally:
        store.close()


def write_notes(store: Store) -> list[int]:
    # One write each: separate notes, not one batch (a batch's memories are neighbours).
    return [store.memories.write(c, "NOTES").id for c in NOTES]


def embed_all(store: Store) -> list:
    return Dreamer(store).run("embed")


def vector_ids(store: Store, model: str | None = None) -> list[int]:
    sql = "SELECT memory_id FROM memory_vectors"
    params: list[str] = []
    if model is not None:
        sql += " WHERE model = ?"
        params.append(model)
    return sorted(row[0] for row in store.db.execute(sql + " ORDER BY memory_id", params))


def test_writes_do_not_embed_and_the_task_embeds_in_batches(vstore, embedder):
    ids = write_notes(vstore)
    assert embedder.calls == 0  # writes stay cheap: nothing is embedded on write by default
    (report,) = embed_all(vstore)
    assert report.finished_pass
    assert vector_ids(vstore, embedder.model) == ids
    assert embedder.texts == len(NOTES) + 1  # one batch plus the probe that names the model
    assert vstore.vectors.check() == []
    embed_all(vstore)
    assert embedder.texts == len(NOTES) + 2  # the next pass embeds nothing again (probe only)


def test_the_embed_task_is_resumable_and_reports_progress(vstore, embedder):
    ids = write_notes(vstore)
    dreamer = Dreamer(vstore)
    seen = []
    dreamer.tasks["embed"] = type(dreamer.tasks["embed"])(
        **{**_fields(dreamer.tasks["embed"]), "batch_size": 2}
    )
    (first,) = dreamer.run("embed", max_batches=1, progress=lambda t, d, n: seen.append((d, n)))
    assert not first.finished_pass and len(vector_ids(vstore)) == 2
    assert seen == [(2, len(NOTES))]
    (rest,) = dreamer.run("embed", progress=lambda t, d, n: seen.append((d, n)))
    assert rest.finished_pass
    assert vector_ids(vstore) == ids
    assert [done for done, _ in seen] == [2, 4, 5]


def _fields(task):
    import attrs

    return attrs.asdict(task, recurse=False)


def test_hybrid_on_and_off_on_the_same_store(vstore, embedder):
    ids = write_notes(vstore)
    embed_all(vstore)
    question = "redeployment lockups"  # no word of it is in a note; parts of words are
    on = vstore.memories.search(question, limit=3)  # search fuses the vector plugin's list
    assert on and on[0].memory.id == ids[0]
    assert "offered by a search_candidates plugin" in on[0].why
    assert hybrid_search(vstore, question, limit=3)[0].memory.id == ids[0]
    vstore.plugins.unregister(name="test-embedder")
    assert vstore.memories.search(question) == []  # no embedder: lexical only, no word matches
    assert hybrid_search(vstore, question, limit=3) == []
    lexical = vstore.memories.search("kubernetes", limit=3)
    assert [hit.memory.id for hit in lexical] == [ids[1]]


def test_hybrid_fuses_full_text_and_vectors_by_reciprocal_rank(vstore):
    ids = write_notes(vstore)
    embed_all(vstore)
    hits = hybrid_search(vstore, "kubernetes cluster", limit=5)
    assert hits[0].memory.id == ids[1]  # first in both lists
    assert [hit.rank for hit in hits] == sorted(hit.rank for hit in hits)
    assert fuse([[3, 1], [1, 2]]) == [(1, 1 / 61 + 1 / 62), (3, 1 / 61), (2, 1 / 62)]
    assert fuse([[5, 4], [4, 5]])[0][0] == 4  # a tie goes to the smaller id


def test_without_an_embedder_nothing_is_embedded_and_search_stays_lexical(tmp_path):
    store = Store(tmp_path / "plain.db", project="p", plugins=fresh_plugin_manager())
    store.packs.install(validate_pack(PACK, source="test"))
    write_notes(store)
    (report,) = embed_all(store)
    assert report.finished_pass and report.handled == 0
    assert vector_ids(store) == []
    assert (
        store.plugins.hook.search_candidates(store=store, query="deploy", project="p", limit=5)
        == []
    )  # the plugin answers None, which pluggy leaves out
    assert [h.memory.content for h in hybrid_search(store, "kubernetes")] == [NOTES[1]]
    store.close()


def test_search_candidates_offers_only_active_memories_readable_from_the_project(vstore):
    ids = write_notes(vstore)
    other = vstore.memories.write(NOTES[0] + " again", "NOTES", project="other").id
    shared = vstore.memories.write(
        NOTES[0] + " for all", "NOTES", project="other", scope="global", shareable=True
    ).id
    embed_all(vstore)
    Dreamer(vstore, project="other").run("embed")
    assert other in vector_ids(vstore) and shared in vector_ids(vstore)
    (offered,) = [
        answer
        for answer in vstore.plugins.hook.search_candidates(
            store=vstore, query=NOTES[0], project="p", limit=10
        )
        if answer
    ]
    assert offered[0] == ids[0]
    assert shared in offered and other not in offered
    vstore.memories.archive(ids[0])
    (offered,) = [
        a
        for a in vstore.plugins.hook.search_candidates(
            store=vstore, query=NOTES[0], project="p", limit=10
        )
        if a
    ]
    assert ids[0] not in offered


def test_update_drops_the_old_vector_and_the_task_embeds_the_new_text(vstore, embedder):
    ids = write_notes(vstore)
    embed_all(vstore)
    vstore.memories.update(ids[3], content="renew the tls certificates every ninety days")
    assert ids[3] not in vector_ids(vstore)  # never found by its old text
    assert vstore.vectors.check() == []
    vstore.memories.update(ids[2], importance=90)  # not the text: the vector stays
    assert ids[2] in vector_ids(vstore)
    embed_all(vstore)
    assert ids[3] in vector_ids(vstore)
    assert hybrid_search(vstore, "certificate renewal", limit=1)[0].memory.id == ids[3]
    assert vstore.vectors.check() == []


def test_merge_and_archive_drop_vectors(vstore):
    ids = write_notes(vstore)
    duplicate = vstore.memories.write(NOTES[1] + " today", "NOTES").id
    embed_all(vstore)
    vstore.memories.merge([duplicate], into=ids[1])
    vstore.memories.archive(ids[4])
    assert vector_ids(vstore) == [ids[0], ids[1], ids[2], ids[3]]
    assert vstore.vectors.check() == []
    hits = hybrid_search(vstore, "backup snapshots cold storage", limit=5)
    assert ids[4] not in [hit.memory.id for hit in hits]


def test_a_model_change_re_embeds_and_prunes_the_old_model(vstore, embedder):
    ids = write_notes(vstore)
    embed_all(vstore)
    vstore.plugins.unregister(name="test-embedder")
    newer = HashEmbedder(dim=32, salt="v2")
    vstore.plugins.register(newer, name="newer-embedder")
    question = "kubernetes workers"
    assert hybrid_search(vstore, question)[0].memory.id == ids[1]  # full text still finds it
    assert (
        vstore.plugins.hook.search_candidates(store=vstore, query=question, project="p", limit=5)
        == []
    )  # no vector of the new model yet: nothing offered
    (report,) = embed_all(vstore)
    assert report.finished_pass
    assert vector_ids(vstore, newer.model) == ids
    assert vector_ids(vstore, embedder.model) == []  # pruned after the full pass
    assert vstore.vectors.model == newer.model
    assert vstore.vectors.check() == []
    assert hybrid_search(vstore, "kubernetes worker node", limit=1)[0].memory.id == ids[1]


def test_a_model_change_in_the_middle_of_a_pass_starts_the_pass_over(vstore, embedder):
    ids = write_notes(vstore)
    dreamer = Dreamer(vstore)
    dreamer.tasks["embed"] = type(dreamer.tasks["embed"])(
        **{**_fields(dreamer.tasks["embed"]), "batch_size": 2}
    )
    dreamer.run("embed", max_batches=1)
    vstore.plugins.unregister(name="test-embedder")
    newer = HashEmbedder(dim=64, salt="v2")
    vstore.plugins.register(newer, name="newer-embedder")
    (report,) = dreamer.run("embed")
    assert report.finished_pass
    assert vector_ids(vstore, newer.model) == ids
    assert vector_ids(vstore, embedder.model) == []


def test_embed_on_write_when_the_store_asks(vstore, embedder):
    vstore.vectors.embed_on_write = True
    first = vstore.memories.write(NOTES[0], "NOTES").id
    assert vector_ids(vstore) == [first]
    calls = embedder.calls
    vstore.memories.write(NOTES[0], "NOTES")  # a repeat: already embedded, not asked again
    assert embedder.calls == calls
    vstore.vectors.embed_on_write = False
    second = vstore.memories.write(NOTES[1], "NOTES").id
    assert second not in vector_ids(vstore)


def test_embed_on_write_embeds_a_batch_in_one_call(vstore, embedder):
    vstore.vectors.embed_on_write = True
    calls = embedder.calls
    items = [{"content": c, "category": "NOTES"} for c in [*NOTES[:3], NOTES[0]]]
    ids = [r.id for r in vstore.memories.write_many(items)]
    assert embedder.calls == calls + 1  # one embedder call for the batch's three new texts
    assert vector_ids(vstore) == sorted(set(ids))
    many = [{"content": f"note number {i} on the rota", "category": "NOTES"} for i in range(130)]
    ids = [r.id for r in vstore.memories.write_many(many)]
    assert embedder.calls == calls + 1 + 3  # 64 texts to a call
    assert set(ids) <= set(vector_ids(vstore))


def test_put_keeps_a_vector_only_for_the_text_that_was_embedded(vstore):
    ids = write_notes(vstore)
    got = embed(vstore, [NOTES[0], NOTES[1]])
    vstore.memories.update(ids[1], content="something else entirely")  # changed meanwhile
    assert vstore.vectors.put(got, [(ids[0], NOTES[0]), (ids[1], NOTES[1])]) == 1
    assert vector_ids(vstore) == [ids[0]]


def test_drop_vectors_removes_every_model(vstore, embedder):
    ids = write_notes(vstore)
    embed_all(vstore)
    other = HashEmbedder(dim=16, salt="x")
    got = embed(vstore, NOTES[:2])
    assert got is not None
    vstore.plugins.register(other, name="first")  # registered last: answers first
    assert vstore.vectors.put(embed(vstore, NOTES[:2]), [(ids[0], NOTES[0]), (ids[1], NOTES[1])])
    assert drop_vectors(vstore, [ids[0], ids[0]]) == 2
    assert ids[0] not in vector_ids(vstore)
    assert vstore.vectors.check() == []


def test_a_deleted_memory_takes_its_vectors_along(vstore):
    ids = write_notes(vstore)
    embed_all(vstore)
    with vstore.atomic():
        vstore.db.execute("DELETE FROM memories WHERE id = ?", [ids[0]])
    assert ids[0] not in vector_ids(vstore)
    assert vstore.vectors.check() == []


def test_embedder_answers_are_checked(vstore):
    class Broken:
        def __init__(self, answer):
            self.answer = answer

        @hookimpl
        def model_embed(self, texts):
            return self.answer

    for answer, message in [
        ([[1.0]], "1 vectors for 2 texts"),
        ([[1.0], [1.0, 2.0]], "lengths"),
        ([[1.0], [float("nan")]], "NaN"),
        ([["a"], [1.0]], "not numbers"),
        (Embeddings(model="", vectors=[[1.0], [2.0]]), "model id"),
    ]:
        plugin = Broken(answer)
        vstore.plugins.register(plugin, name="broken")
        with pytest.raises(EmbeddingError, match=message):
            embed(vstore, ["a", "b"])
        vstore.plugins.unregister(name="broken")


def test_plain_vectors_are_kept_under_a_model_named_by_their_length(vstore):
    class Plain:
        @hookimpl
        def model_embed(self, texts, purpose):
            assert purpose == "document"
            return [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]

    vstore.plugins.register(Plain(), name="plain")
    got = embed(vstore, ["a", "b"])
    assert got.model == "unnamed/3" and got.dim == 3
    assert list(got.vectors[0]) == [1.0, 0.0, 0.0]
    assert got.vectors[1] is None  # a zero vector has no direction: not stored


def test_status_reports_the_driver_and_the_mirror(vstore, embedder):
    write_notes(vstore)
    embed_all(vstore)
    status = vstore.vectors.status()
    assert status["models"] == {embedder.model: {"dim": 64, "vectors": len(NOTES)}}
    assert status["model"] == embedder.model
    if status["sqlite_vec"] is None:
        assert status["why_no_sqlite_vec"] and status["mirror_model"] is None
    else:
        assert status["mirror_model"] == embedder.model
        assert vstore.tables.vectors.mirror_size() == len(NOTES)


needs_sqlite_vec = pytest.mark.skipif(
    load_sqlite_vec(driver.connect(":memory:"))[0] is None,
    reason="sqlite-vec cannot load with this driver (install memsdk[vec])",
)


def without_extension(store: Store) -> Store:
    """Make ``store`` behave like a process whose SQLite cannot load sqlite-vec."""
    store.vectors._extension = (None, "simulated: no extension")
    return store


@needs_sqlite_vec
def test_the_mirror_catches_up_with_changes_made_without_the_extension(tmp_path, embedder):
    path = tmp_path / "shared.db"
    plugins = fresh_plugin_manager(("test-embedder", embedder))
    with Store(path, project="p", plugins=plugins) as first:
        first.packs.install(validate_pack(PACK, source="test"))
        ids = write_notes(first)
        embed_all(first)
        assert first.vectors.status()["mirror_model"] == embedder.model
        assert first.tables.vectors.mirror_size() == len(NOTES)
    with without_extension(Store(path, project="p", plugins=plugins)) as plain:
        plain.memories.update(ids[1], content="the staging cluster moved to nomad")
        plain.memories.archive(ids[3])
        embed_all(plain)  # embeds the new text; the mirror is not touched
        assert plain.db.execute("SELECT count(*) FROM vector_changes").fetchone()[0] == 2
    with Store(path, project="p", plugins=plugins) as again:
        # A query reads without writing: the listed ids are scored from the table.
        hits = hybrid_search(again, "nomad staging", limit=5)
        assert hits[0].memory.id == ids[1]
        assert ids[3] not in [hit.memory.id for hit in hybrid_search(again, NOTES[3])]
        assert again.db.execute("SELECT count(*) FROM vector_changes").fetchone()[0] == 2
        assert again.vectors.check() == []
        again.vectors.sync()
        assert again.db.execute("SELECT count(*) FROM vector_changes").fetchone()[0] == 0
        assert again.tables.vectors.mirror_size() == len(NOTES) - 1
        assert again.vectors.check() == []


@needs_sqlite_vec
def test_a_missing_mirror_is_rebuilt(tmp_path, embedder):
    path = tmp_path / "plain.db"
    plugins = fresh_plugin_manager(("test-embedder", embedder))
    with without_extension(Store(path, project="p", plugins=plugins)) as plain:
        plain.packs.install(validate_pack(PACK, source="test"))
        ids = write_notes(plain)
        embed_all(plain)
        assert not plain.tables.vectors.mirror_exists()
    with Store(path, project="p", plugins=plugins) as again:
        assert hybrid_search(again, "kubernetes workers", limit=1)[0].memory.id == ids[1]
        again.vectors.sync()
        assert again.tables.vectors.mirror_size() == len(NOTES)
        assert again.vectors.check() == []


LEAN_HOOK_MODULES = {
    "plugin_sdk/host/claude/hook_entry.py",
    "plugin_sdk/host/claude/hook_queue.py",
    "plugin_sdk/store/tables/queues/hooks.py",
}


def test_no_module_in_the_sdk_uses_the_sqlite3_module_directly():
    root = Path(__file__).resolve().parents[2]
    offenders = [
        str(path.relative_to(root))
        for folder in ("plugin_sdk", "plugins")
        for path in (root / folder).rglob("*.py")
        if path.name != "driver.py"
        # The lean hook path opens the file with the standard library's sqlite3
        # on purpose (no sqlite-utils import before every prompt); it catches
        # only its own errors and never shares a connection with the store.
        and str(path.relative_to(root)) not in LEAN_HOOK_MODULES
        and any(
            line.strip().startswith(("import sqlite3", "from sqlite3")) or "sqlite3." in line
            for line in path.read_text("utf-8").splitlines()
        )
    ]
    assert offenders == []


def test_the_store_raises_the_drivers_own_errors(vstore):
    import sqlite_utils.utils

    assert driver.sqlite is sqlite_utils.utils.sqlite3
    with pytest.raises(driver.OperationalError):
        vstore.db.execute("SELECT no_such_column FROM memories")


def test_forget_takes_the_vectors_along(vstore):
    ids = write_notes(vstore)
    embed_all(vstore)
    vstore.memories.forget(ids[2], reason="asked to")
    assert ids[2] not in vector_ids(vstore)
    assert vstore.vectors.check() == []
    hits = hybrid_search(vstore, NOTES[2], limit=5)
    assert ids[2] not in [hit.memory.id for hit in hits]
