"""Fixtures and helpers for plugin and pack authors' tests.

Use it from a ``conftest.py``::

    pytest_plugins = ["plugin_sdk.testing"]

    def test_my_pack(memsdk_store):
        memsdk_store.packs.install(resolve_pack("my_pack.toml"))

Fixtures: ``memsdk_plugins`` (a fresh plugin manager with the built-ins and no
third-party plugins), ``scripted_model`` (a :class:`ScriptedModel`, registered
on that manager), ``memsdk_store`` (a fresh store in a temporary directory,
project ``test``, using that manager; no pack installed), ``memsdk_templates``
(a :class:`StoreTemplates` for the session: a store with packs installed, as a
copy of one built once).

:class:`HashEmbedder` is a deterministic embedding model for tests of vector
search: no download, no network, the same vectors in every process.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from plugin_sdk.packs.documents import Pack
from plugin_sdk.plugin.hookspecs import hookimpl
from plugin_sdk.plugin.manager import PluginManager, make_plugin_manager
from plugin_sdk.plugin.records import Embeddings, Prompt
from plugin_sdk.store.connection import Store


class ScriptedModel:
    """A deterministic model: answers prompts from a list, in order.

    Each answer is a string or a callable taking the :class:`Prompt`. Every
    prompt is kept in ``prompts``. Running out of answers raises
    ``AssertionError`` naming the prompt's purpose, so a test never passes on
    an unplanned model call. Register it on a plugin manager:
    ``pm.register(model, name="scripted-model")``.
    """

    def __init__(self, answers: Iterable[str | Callable[[Prompt], str]] = ()) -> None:
        self.answers = list(answers)
        self.prompts: list[Prompt] = []

    def add(self, *answers: str | Callable[[Prompt], str]) -> None:
        self.answers.extend(answers)

    @hookimpl
    def model_complete(self, prompt: Prompt) -> str:
        self.prompts.append(prompt)
        if not self.answers:
            raise AssertionError(
                f"ScriptedModel has no answer left for a {prompt.purpose!r} prompt"
            )
        answer = self.answers.pop(0)
        return answer(prompt) if callable(answer) else answer


PUNCTUATION = ".,;:!?()[]{}\"'"


class HashEmbedder:
    """A deterministic embedder (the ``model_embed`` hook) from hashed character n-grams.

    Each lower-cased word, padded as ``#word#``, adds its character trigrams
    and the whole word into ``dim`` buckets (blake2b of the gram and
    ``salt``, with a sign); texts sharing words or word parts get similar
    vectors, so tests can tell vector search from full-text search without
    a real model. ``model`` is ``hash-ngrams/<dim>`` plus ``/<salt>`` when a
    salt is given: a different salt is a different model. ``calls`` counts
    the calls and ``texts`` the texts embedded. Register it on a plugin
    manager: ``pm.register(HashEmbedder(), name="test-embedder")``.
    """

    def __init__(self, dim: int = 64, *, salt: str = "") -> None:
        self.dim = dim
        self.salt = salt
        self.model = f"hash-ngrams/{dim}" + (f"/{salt}" if salt else "")
        self.calls = 0
        self.texts = 0

    def vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dim
        for word in text.lower().split():
            padded = "#" + word.strip(PUNCTUATION) + "#"
            grams = [padded[i : i + 3] for i in range(len(padded) - 2)] + [padded]
            for gram in grams:
                digest = hashlib.blake2b(
                    f"{self.salt}\0{gram}".encode("utf-8", "surrogatepass"), digest_size=8
                ).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dim
                vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        return vector

    @hookimpl
    def model_embed(self, texts: list[str]) -> Embeddings:
        self.calls += 1
        self.texts += len(texts)
        return Embeddings(model=self.model, vectors=[self.vector(text) for text in texts])


def fresh_plugin_manager(*plugins: tuple[str, object]) -> PluginManager:
    """The built-ins only (no third-party plugins), plus ``plugins``."""
    return make_plugin_manager(allow=(), block=(), plugins=plugins, trace=False)


class StoreTemplates:
    """New stores as copies of templates: migrated once, with packs installed once.

    A new store is migrated when it is opened and a pack installed into it
    writes its categories and criteria; a test suite that does this for every
    test spends its time there. :meth:`open` builds a template for each list of
    packs the first time it is asked for (in ``directory``, closed, so the file
    is the whole store), then copies the file and opens the copy: the same
    store, with the packs installed at the time the template was built.
    A test that needs a store clock's time on the packs opens a new store.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._templates: dict[tuple[tuple[str, str, str], ...], Path] = {}

    def template(self, packs: Iterable[Pack] = ()) -> Path:
        """The template file: a migrated store with ``packs`` installed in order."""
        packs = list(packs)
        key = tuple((pack.name, pack.source, pack.content_hash) for pack in packs)
        path = self._templates.get(key)
        if path is None:
            path = self.directory / f"template-{len(self._templates)}.db"
            try:
                with Store(path, project="template", plugins=fresh_plugin_manager()) as store:
                    for pack in packs:
                        store.packs.install(pack)
            except BaseException:
                for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                    leftover.unlink(missing_ok=True)
                raise
            self._templates[key] = path
        return path

    def copy(self, path: str | Path, *packs: Pack) -> Path:
        """A new store file at ``path`` with ``packs`` installed (closed, for a command to open)."""
        path = Path(path)
        if path.exists():
            raise FileExistsError(f"{path} exists: a template is copied only to a new file")
        template = self.template(packs)
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, path)
        return path

    def open(self, path: str | Path, *packs: Pack, **options: Any) -> Store:
        """A new store at ``path`` with ``packs`` installed; ``options`` go to :class:`Store`."""
        return Store(self.copy(path, *packs), **options)


def postgres_schema(url: str) -> tuple[str, str]:
    """A new, empty schema in the PostgreSQL database at ``url``: ``(store URL, schema)``.

    The store URL sets ``search_path`` to the schema (then ``public``, where
    pgvector's type lives), so a store opened on it lives there alone. Drop it
    with :func:`drop_postgres_schemas`.
    """
    import uuid
    from urllib.parse import quote

    import psycopg

    schema = f"memsdk_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options={quote(f'-csearch_path={schema},public')}", schema


class PostgresTemplates:
    """New PostgreSQL stores as databases cloned from a migrated template.

    Creating the schema takes most of a new store's time (its tables,
    triggers and functions); ``CREATE DATABASE … TEMPLATE`` copies a migrated
    one in a fraction of that. :meth:`new` gives the URL of a new database
    holding an empty, migrated store; :meth:`drop` removes it. The template
    (one per process, so parallel test workers never share one) is built on
    first use and dropped by :meth:`close`. ``url`` is the server's
    database to connect to for these statements.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self._template: str | None = None
        self._made: list[str] = []

    def _admin(self) -> Any:
        import psycopg

        return psycopg.connect(self.url, autocommit=True)

    def _url_of(self, database: str) -> str:
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(self.url)
        return urlunsplit(parts._replace(path=f"/{database}"))

    def template(self) -> str:
        if self._template is None:
            import os
            import uuid

            name = f"memsdk_tmpl_{os.getpid()}_{uuid.uuid4().hex[:6]}"
            with self._admin() as admin:
                admin.execute(f'CREATE DATABASE "{name}"')
            try:
                Store(self._url_of(name), project="template").close()
            except BaseException:
                with self._admin() as admin:
                    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                raise
            self._template = name
        return self._template

    def new(self) -> str:
        """The URL of a new database with a migrated, empty store in it."""
        import uuid

        name = f"memsdk_test_{uuid.uuid4().hex[:12]}"
        template = self.template()
        with self._admin() as admin:
            admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        self._made.append(name)
        return self._url_of(name)

    def drop(self, url: str) -> None:
        from urllib.parse import urlsplit

        name = urlsplit(url).path.lstrip("/")
        with self._admin() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if name in self._made:
            self._made.remove(name)

    def close(self) -> None:
        with self._admin() as admin:
            for name in [*self._made, *([self._template] if self._template else [])]:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._made.clear()
        self._template = None


def drop_postgres_schemas(url: str, schemas: Iterable[str]) -> None:
    """Drop schemas made by :func:`postgres_schema` (and everything in them)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        for schema in schemas:
            admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(scope="session")
def memsdk_templates(tmp_path_factory: pytest.TempPathFactory) -> StoreTemplates:
    return StoreTemplates(tmp_path_factory.mktemp("memsdk-templates"))


@pytest.fixture
def memsdk_plugins() -> PluginManager:
    return fresh_plugin_manager()


@pytest.fixture
def scripted_model(memsdk_plugins: PluginManager) -> ScriptedModel:
    model = ScriptedModel()
    memsdk_plugins.register(model, name="scripted-model")
    return model


@pytest.fixture
def memsdk_store(
    tmp_path: Path, memsdk_plugins: PluginManager, memsdk_templates: StoreTemplates
) -> Iterator[Store]:
    store = memsdk_templates.open(
        tmp_path / "memsdk-test.db", project="test", plugins=memsdk_plugins
    )
    try:
        yield store
    finally:
        store.close()


def pack_document(
    name: str, version: str, categories: dict[str, str], **extra: Any
) -> dict[str, Any]:
    """A minimal valid pack document: ``categories`` maps name -> kind."""
    return {
        "format": 1,
        "name": name,
        "version": version,
        "description": f"Test pack {name}.",
        "categories": {
            category: {
                "kind": kind,
                "priority": 10 * (index + 1),
                "criteria": {"definition": f"Memories of kind {kind} filed as {category}."},
            }
            for index, (category, kind) in enumerate(categories.items())
        },
        **extra,
    }


def grid_section(
    half_life_days: float = 30.0, emotional_multiplier: float = 1.0, **extra: Any
) -> dict[str, Any]:
    """A valid ``[grid]`` section with the same defaults in every cell (for ``pack_document``)."""
    from plugin_sdk.store.models import MEMORY_TYPES, REFERENTS

    defaults = {"half_life_days": half_life_days, "emotional_multiplier": emotional_multiplier}
    return {
        "default_cell": f"{MEMORY_TYPES[1]}.{REFERENTS[3]}",
        "cells": {t: {r: dict(defaults) for r in REFERENTS} for t in MEMORY_TYPES},
        "emotions": {"neutral": 1.0, "positive": 1.3, "negative": 1.5, "critical": 2.0},
        **extra,
    }
