"""Pack documents: load a pack from TOML, JSON or a mapping, and validate it.

The JSON Schema ``schemas/pack.schema.json`` ships in the package and is the
contract (``docs/pack-format.md`` explains it). Validation errors name the
source (a file path, or an entry point) and the path inside the document, such
as ``categories.NOTES.kind``. Loading writes nothing; ``install.py`` puts a
validated pack into a store.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping
from functools import cache, partial
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from plugin_sdk.errors import InvalidDocument, PackError
from plugin_sdk.packs.sections import validate_sections
from plugin_sdk.store.limits import MAX_PACK_BYTES, check_tree
from plugin_sdk.store.models import CRITERIA_FIELDS, LIST_FIELDS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

MAX_REPORTED_ERRORS = 5


@attrs.frozen
class CategorySpec:
    """A category as a pack declares it."""

    name: str
    kind: str
    priority: int
    promotable: bool
    label: str | None
    criteria: dict[str, Any]


@attrs.frozen
class Pack:
    """A validated pack document."""

    name: str
    version: str
    description: str
    categories: dict[str, CategorySpec]
    document: dict[str, Any]
    source: str
    content_hash: str


@cache
def pack_schema() -> dict[str, Any]:
    """The pack JSON Schema shipped inside the package."""
    text = resources.files("plugin_sdk").joinpath("schemas/pack.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def load_pack_file(path: str | Path) -> Pack:
    """Read and validate a pack file (``.toml`` or ``.json``)."""
    path = Path(path)
    source = str(path)
    try:
        text = path.read_text("utf-8")
    except OSError as error:
        raise PackError(source, f"cannot read file: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise PackError(source, f"not UTF-8 text: {error}") from error
    return parse_pack_text(text, source=source, suffix=path.suffix.lower())


def parse_pack_text(text: str, *, source: str, suffix: str) -> Pack:
    """Parse pack text; ``suffix`` (``.toml`` or ``.json``) picks the syntax.

    The text is at most :data:`~plugin_sdk.store.limits.MAX_PACK_BYTES`, and
    the document is checked by ``check_tree`` (depth, finite numbers,
    integers in SQLite's range, valid Unicode) before the schema.
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_PACK_BYTES:
        raise PackError(source, f"{size} bytes; a pack is at most {MAX_PACK_BYTES}")
    if suffix == ".toml":
        try:
            document = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise PackError(source, f"TOML syntax error: {error}") from error
        except RecursionError as error:
            raise PackError(source, "nested too deeply to read") from error
        except ValueError as error:  # an integer of more digits than Python converts
            raise PackError(source, f"TOML value refused: {str(error).split(';')[0]}") from error
    elif suffix == ".json":
        try:
            document = json.loads(
                text,
                object_pairs_hook=partial(_no_duplicate_keys, source),
                parse_constant=_no_constant,
            )
        except json.JSONDecodeError as error:
            raise PackError(
                source,
                f"JSON syntax error: {error.msg} (line {error.lineno}, column {error.colno})",
            ) from error
        except InvalidDocument as error:
            raise PackError(source, error.reason) from error
        except RecursionError as error:
            raise PackError(source, "nested too deeply to read") from error
        except ValueError as error:
            if isinstance(error, PackError):
                raise
            raise PackError(source, f"JSON value refused: {str(error).split(';')[0]}") from error
    else:
        raise PackError(source, f"unknown pack file type {suffix!r}; use .toml or .json")
    return validate_pack(document, source=source)


def validate_pack(document: Any, *, source: str) -> Pack:
    """Validate a pack document against the schema and build a :class:`Pack`."""
    if not isinstance(document, Mapping):
        raise PackError(source, f"a pack is a table/object, not {type(document).__name__}")
    document = dict(document)
    try:
        check_tree(document)
    except InvalidDocument as error:
        raise PackError(source, error.reason, error.path) from error
    import jsonschema  # here, not at import: opening a store does not validate packs

    validator = jsonschema.Draft202012Validator(pack_schema())
    errors = sorted(
        validator.iter_errors(document), key=lambda e: (list(map(str, e.path)), e.message)
    )
    if errors:
        first = errors[0]
        more = len(errors) - 1
        message = first.message
        if more:
            others = "; ".join(
                f"{_dotted(e.path)}: {e.message}" for e in errors[1:MAX_REPORTED_ERRORS]
            )
            message += f" (and {more} more: {others})"
        raise PackError(source, message, _dotted(first.path))
    validate_sections(document, source)
    categories = {
        name: CategorySpec(
            name=name,
            kind=spec["kind"],
            priority=spec["priority"],
            promotable=spec.get("promotable", False),
            label=spec.get("label"),
            criteria=_full_criteria(spec["criteria"]),
        )
        for name, spec in document["categories"].items()
    }
    return Pack(
        name=document["name"],
        version=document["version"],
        description=document["description"],
        categories=categories,
        document=document,
        source=source,
        content_hash=content_hash(document),
    )


def content_hash(document: Mapping[str, Any]) -> str:
    """SHA-256 of the document's canonical JSON (key order and syntax do not matter)."""
    canonical = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _full_criteria(criteria: Mapping[str, Any]) -> dict[str, Any]:
    full = {
        field: criteria.get(field, [] if field in LIST_FIELDS else "") for field in CRITERIA_FIELDS
    }
    return {field: list(value) if field in LIST_FIELDS else value for field, value in full.items()}


def _dotted(path: Any) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else str(p) for p in path]
    return ".".join(parts).replace(".[", "[") or "(top level)"


def _no_constant(name: str) -> Any:
    raise InvalidDocument(f"{name} is not a finite number (JSON has no {name})")


def _no_duplicate_keys(source: str, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise PackError(source, f"duplicate key {key!r}")
        result[key] = value
    return result
