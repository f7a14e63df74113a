"""Third-party packs found through real ``memsdk.packs`` entry points.

Each test builds an installed distribution in ``tmp_path`` (a package plus a
``*.dist-info`` directory with METADATA and entry_points.txt) and puts it on
``sys.path``; ``importlib.metadata`` then finds it like any pip-installed one.
"""

from __future__ import annotations

import importlib
import sys

import pytest

from plugin_sdk import PackError, Store, available_packs, resolve_pack

ACME_DOC = {
    "format": 1,
    "name": "acme",
    "version": "1.0.0",
    "description": "Acme's gardening categories.",
    "categories": {
        "GARDEN_LOG": {
            "kind": "content",
            "priority": 10,
            "label": "Garden log",
            "criteria": {
                "definition": "What was sown, planted, pruned or harvested, and when.",
                "positive_examples": ["Sowed basil in tray 3 on May 3."],
            },
        },
        "COMPOST_RULES": {
            "kind": "intent",
            "priority": 5,
            "criteria": {"definition": "Rules for the compost heap."},
        },
    },
}

ORCHARD_TOML = """\
format = 1
name = "orchard"
version = "2.3.0"
description = "Fruit trees."

[categories.ORCHARD_GRAFTS]
kind = "content"
priority = 10

[categories.ORCHARD_GRAFTS.criteria]
definition = "Which scion went onto which rootstock, and when."
"""


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A fake site-packages on sys.path; ``site.distribution(...)`` adds one."""
    root = tmp_path / "site"
    root.mkdir()
    modules: list[str] = []

    class Site:
        path = root

        def distribution(self, dist_name, version, module, module_source, entry_points):
            package = root / module
            package.mkdir()
            (package / "__init__.py").write_text(module_source, "utf-8")
            info = root / f"{dist_name.replace('-', '_')}-{version}.dist-info"
            info.mkdir()
            (info / "METADATA").write_text(
                f"Metadata-Version: 2.1\nName: {dist_name}\nVersion: {version}\n", "utf-8"
            )
            lines = ["[memsdk.packs]"]
            lines += [f"{name} = {target}" for name, target in entry_points.items()]
            (info / "entry_points.txt").write_text("\n".join(lines) + "\n", "utf-8")
            (info / "RECORD").write_text("", "utf-8")
            modules.append(module)
            importlib.invalidate_caches()
            return package

    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    yield Site()
    for module in modules:
        sys.modules.pop(module, None)
    importlib.invalidate_caches()


def by_name():
    return {a.name: a for a in available_packs()}


def test_a_third_party_dict_pack_is_found_installed_and_used(site, tmp_path):
    site.distribution(
        "acme-pack", "1.0", "acme_pack", f"PACK = {ACME_DOC!r}\n", {"acme": "acme_pack:PACK"}
    )
    found = by_name()
    assert {"acme", "ops", "dev"} <= set(found)
    acme = found["acme"]
    assert acme.error is None
    assert acme.pack is not None
    assert set(acme.pack.categories) == {"GARDEN_LOG", "COMPOST_RULES"}
    assert "acme-pack" in acme.origin

    pack = resolve_pack("acme")
    assert pack.name == "acme"
    assert pack.content_hash == acme.pack.content_hash
    with Store(tmp_path / "acme.db", project="garden") as store:
        store.packs.install(pack)
        assert store.category_names() == ["COMPOST_RULES", "GARDEN_LOG"]
        result = store.memories.write("Sowed basil in tray 3 on May 3.", "GARDEN_LOG")
        memory = store.memories.get(result.id)
        assert (memory.category, memory.kind, memory.project) == ("GARDEN_LOG", "content", "garden")
        assert [h.memory.id for h in store.memories.search("basil")] == [result.id]
        assert store.category("GARDEN_LOG").value("positive_examples") == [
            "Sowed basil in tray 3 on May 3."
        ]
        assert store.packs.get("acme").source.startswith("entry point 'acme'")


def test_a_third_party_pack_file_named_by_path_is_found(site, tmp_path):
    package = site.distribution(
        "orchard-pack",
        "2.3",
        "orchard_pack",
        "from pathlib import Path\nPACK_FILE = str(Path(__file__).with_name('orchard.toml'))\n",
        {"orchard": "orchard_pack:PACK_FILE"},
    )
    (package / "orchard.toml").write_text(ORCHARD_TOML, "utf-8")
    assert by_name()["orchard"].error is None
    with Store(tmp_path / "orchard.db", project="orchard") as store:
        store.packs.install(resolve_pack("orchard"))
        assert store.memories.write("Grafted the Cox onto M26.", "ORCHARD_GRAFTS").created


def test_a_broken_entry_point_is_reported_by_name_without_raising(site):
    site.distribution(
        "broken-pack",
        "0.1",
        "broken_pack_mod",
        'raise RuntimeError("kaboom while importing")\n',
        {"broken": "broken_pack_mod:PACK"},
    )
    found = by_name()
    broken = found["broken"]
    assert broken.pack is None
    assert "broken" in broken.error
    assert "kaboom while importing" in broken.error
    assert found["ops"].pack is not None
    with pytest.raises(PackError, match="kaboom"):
        resolve_pack("broken")


def test_invalid_and_misnamed_third_party_packs_are_reported(site):
    bad = {**ACME_DOC, "name": "badkind"}
    bad["categories"] = {"GARDEN_LOG": {**ACME_DOC["categories"]["GARDEN_LOG"], "kind": "odd"}}
    misnamed = {**ACME_DOC, "name": "somebody-else"}
    site.distribution(
        "mixed-packs",
        "1.0",
        "mixed_packs",
        f"BAD = {bad!r}\nMISNAMED = {misnamed!r}\n",
        {"badkind": "mixed_packs:BAD", "misnamed": "mixed_packs:MISNAMED"},
    )
    found = by_name()
    assert found["badkind"].pack is None
    assert "categories.GARDEN_LOG.kind" in found["badkind"].error
    assert found["misnamed"].pack is None
    assert "somebody-else" in found["misnamed"].error
