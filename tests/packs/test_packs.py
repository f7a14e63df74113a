"""Pack documents: the built-in files validate; bad files are refused with a precise error."""

from __future__ import annotations

from pathlib import Path

import pytest

from plugin_sdk import PackError, load_pack_file, resolve_pack, validate_pack

PACK_FILES = sorted((Path(__file__).resolve().parents[2] / "packs").glob("*.toml"))


def test_there_are_built_in_packs():
    assert {p.stem for p in PACK_FILES} >= {"dev", "ops"}


@pytest.mark.parametrize("path", PACK_FILES, ids=[p.name for p in PACK_FILES])
def test_every_built_in_pack_file_validates(path):
    pack = load_pack_file(path)
    assert pack.name == path.stem
    assert pack.source == str(path)
    assert pack.categories
    for spec in pack.categories.values():
        assert spec.criteria["definition"].strip()
        assert spec.kind in ("content", "intent")
    assert resolve_pack(pack.name).content_hash == pack.content_hash


def test_a_valid_pack_fills_missing_criteria_fields(write_pack, pack_doc, category):
    doc = pack_doc({"GARDEN_LOG": category(positive_examples=["Sowed basil on May 3."])})
    pack = load_pack_file(write_pack(doc))
    spec = pack.categories["GARDEN_LOG"]
    assert spec.criteria == {
        "definition": "A test category.",
        "positive_examples": ["Sowed basil on May 3."],
        "negative_examples": [],
        "exclusions": [],
    }
    assert spec.promotable is False


@pytest.mark.parametrize("filename", ["bad.toml", "bad.json"])
def test_schema_error_names_the_file_and_the_path_inside(write_pack, pack_doc, category, filename):
    doc = pack_doc({"FOO": category(kind="opinion")})
    path = write_pack(doc, filename)
    with pytest.raises(PackError) as excinfo:
        load_pack_file(path)
    error = excinfo.value
    assert str(path) in str(error)
    assert "categories.FOO.kind" in str(error)
    assert "opinion" in str(error)
    assert (error.source, error.path) == (str(path), "categories.FOO.kind")


@pytest.mark.parametrize("filename", ["list.toml", "list.json"])
def test_schema_error_in_a_list_item_names_its_index(write_pack, pack_doc, category, filename):
    doc = pack_doc({"FOO": category(negative_examples=["fine", ""])})
    path = write_pack(doc, filename)
    with pytest.raises(PackError) as excinfo:
        load_pack_file(path)
    assert "categories.FOO.criteria.negative_examples[1]" in str(excinfo.value)
    assert str(path) in str(excinfo.value)


def test_missing_top_level_field_is_named(write_pack, pack_doc):
    doc = pack_doc()
    del doc["version"]
    path = write_pack(doc)
    with pytest.raises(PackError, match="'version' is a required property") as excinfo:
        load_pack_file(path)
    assert str(path) in str(excinfo.value)


def test_unknown_key_in_a_category_is_refused(write_pack, pack_doc, category):
    doc = pack_doc({"FOO": {**category(), "colour": "green"}})
    with pytest.raises(PackError, match="colour") as excinfo:
        load_pack_file(write_pack(doc))
    assert excinfo.value.path == "categories.FOO"


def test_toml_syntax_error_names_the_file(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text('format = 1\nname = "garden\n[categories\n', "utf-8")
    with pytest.raises(PackError, match="TOML") as excinfo:
        load_pack_file(path)
    assert str(path) in str(excinfo.value)


def test_json_syntax_error_names_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"format": 1, "name": "garden",', "utf-8")
    with pytest.raises(PackError, match="JSON") as excinfo:
        load_pack_file(path)
    assert str(path) in str(excinfo.value)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (
            '{"format": 1, "name": "garden", "name": "other", "version": "1.0.0", '
            '"description": "d", "categories": {"FOO": {"kind": "content", "priority": 1, '
            '"criteria": {"definition": "x"}}}}',
            "name",
        ),
        (
            '{"format": 1, "name": "garden", "version": "1.0.0", "description": "d", '
            '"categories": {"FOO": {"kind": "content", "priority": 1, '
            '"criteria": {"definition": "x"}}, '
            '"FOO": {"kind": "intent", "priority": 2, "criteria": {"definition": "y"}}}}',
            "FOO",
        ),
    ],
    ids=["top-level", "category"],
)
def test_json_duplicate_keys_are_refused(tmp_path, text, key):
    path = tmp_path / "dup.json"
    path.write_text(text, "utf-8")
    with pytest.raises(PackError, match="duplicate key") as excinfo:
        load_pack_file(path)
    assert repr(key) in str(excinfo.value)
    assert str(path) in str(excinfo.value)


@pytest.mark.parametrize("name", ["garden_log", "Garden", "G", "1ABC", "GARDEN-LOG"])
def test_bad_category_names_are_refused(write_pack, pack_doc, category, name):
    path = write_pack(pack_doc({name: category()}))
    with pytest.raises(PackError) as excinfo:
        load_pack_file(path)
    assert name in str(excinfo.value)
    assert "categories" in str(excinfo.value)
    assert str(path) in str(excinfo.value)


@pytest.mark.parametrize("version", ["1.0", "1", "v1.0.0", "01.0.0", "1.0.0.0", "1.0.x", ""])
def test_bad_versions_are_refused(write_pack, pack_doc, version):
    path = write_pack(pack_doc(version=version))
    with pytest.raises(PackError) as excinfo:
        load_pack_file(path)
    assert excinfo.value.path == "version"
    assert str(path) in str(excinfo.value)


@pytest.mark.parametrize("version", ["0.0.1", "1.2.3", "1.0.0-rc.1", "2.10.3+build.5"])
def test_semantic_versions_are_accepted(write_pack, pack_doc, version):
    assert load_pack_file(write_pack(pack_doc(version=version))).version == version


@pytest.mark.parametrize("name", ["Garden", "garden pack", "_garden", ""])
def test_bad_pack_names_are_refused(pack_doc, name):
    with pytest.raises(PackError) as excinfo:
        validate_pack(pack_doc(name=name), source="inline")
    assert excinfo.value.path == "name"


def test_toml_and_json_of_the_same_document_are_the_same_pack(write_pack, pack_doc, category):
    doc = pack_doc(
        {"GARDEN_LOG": category(exclusions=["Shopping lists."]), "SEED_BANK": category()}
    )
    from_toml = load_pack_file(write_pack(doc, "same.toml"))
    from_json = load_pack_file(write_pack(doc, "same.json"))
    assert from_toml.content_hash == from_json.content_hash
    assert from_toml.categories == from_json.categories


def test_other_file_types_and_missing_files_are_refused(tmp_path, pack_doc):
    yaml = tmp_path / "pack.yaml"
    yaml.write_text("format: 1\n", "utf-8")
    with pytest.raises(PackError, match=r"\.yaml"):
        load_pack_file(yaml)
    missing = tmp_path / "missing.toml"
    with pytest.raises(PackError, match="cannot read") as excinfo:
        load_pack_file(missing)
    assert str(missing) in str(excinfo.value)


def test_a_pack_must_be_a_table(tmp_path):
    path = tmp_path / "list.json"
    path.write_text("[1, 2]", "utf-8")
    with pytest.raises(PackError, match="table/object"):
        load_pack_file(path)


def test_resolve_pack_by_path_and_unknown_name(write_pack, pack_doc):
    path = write_pack(pack_doc(name="by-path"))
    assert resolve_pack(path).name == "by-path"
    assert resolve_pack(str(path)).name == "by-path"
    with pytest.raises(PackError, match="ops"):
        resolve_pack("no-such-pack-anywhere")
