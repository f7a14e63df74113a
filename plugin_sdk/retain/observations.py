"""Observations in: validate, put in the observation inbox, read.

An observation is the typed boundary between what parses sources and the
Retain Job (``schemas/observation.schema.json``, explained in
``docs/retain.md``). :func:`observe` takes the lines of a JSONL file and, in
one transaction:

- **bad lines** (not JSON, not an object, not valid against the schema, or an
  id already used for different content) are reported by line number and
  reason, and not stored: the file is where they are fixed;
- lines the schema accepts but **the store cannot take** (a category that is
  not an active category of the store, a sentiment its grid does not have, a
  relation type its graph does not declare) are reported too, and kept with
  status ``invalid`` and the reason, so nothing is lost: observing the line
  again once the store can take it (a pack installed) puts it in the inbox,
  and a corrected line with the same id replaces it;
- **good lines** go to the observation inbox: stored with status ``queued``,
  waiting for the Retain Job;
- a line whose id is already stored with the same content is a **replay** and
  changes nothing at all.

Nothing is half-written: the whole file commits, or (on an error that is not
about one line, such as a locked store) none of it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import datetime
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import InvalidDocument, InvalidObservation, MemsdkError, NotFound
from plugin_sdk.grid.policy import Grid, grid
from plugin_sdk.plugin.records import Observation, ObservedFact, ObservedRelation
from plugin_sdk.store.limits import MAX_LINE_BYTES, check_tree, loads_json

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

STATUSES = ("queued", "retained", "dark", "rejected", "invalid", "failed")
DEFAULT_SENTIMENT = "neutral"


@attrs.frozen
class BadLine:
    """A line that was reported; ``kept`` when it is stored as ``invalid``."""

    line: int
    id: str | None
    reason: str
    kept: bool = False

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.define
class ObserveReport:
    """What :func:`observe` did with each line.

    ``queued`` holds the ids put in the inbox (named after their status).
    """

    queued: list[str] = attrs.field(factory=list)
    replayed: list[str] = attrs.field(factory=list)
    bad: list[BadLine] = attrs.field(factory=list)
    blank: int = 0

    @property
    def ok(self) -> bool:
        return not self.bad

    def to_dict(self) -> dict[str, Any]:
        return {
            "queued": self.queued,
            "replayed": self.replayed,
            "bad": [b.to_dict() for b in self.bad],
            "blank": self.blank,
        }


@cache
def observation_schema() -> dict[str, Any]:
    """The observation JSON Schema shipped inside the package."""
    text = (
        resources.files("plugin_sdk").joinpath("schemas/observation.schema.json").read_text("utf-8")
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> Any:
    import jsonschema  # here, not at import: hosts that never validate do not pay for it

    return jsonschema.Draft202012Validator(observation_schema())


@cache
def _compiled() -> Callable[[Any], Any]:
    """The schema compiled to Python once (fastjsonschema): the fast yes-or-no check.

    A document it refuses is validated again by :func:`_validator`, whose
    errors name the path and reason the report shows.
    """
    import fastjsonschema  # here, not at import, as jsonschema above

    compiled: Callable[[Any], Any] = fastjsonschema.compile(_inlined(observation_schema()))
    return compiled


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with each ``{"$ref": "#/$defs/..."}`` replaced by the definition itself.

    The same checks; fastjsonschema then writes them inline instead of
    calling a function per entity name, which formats the name's path on
    every call, valid or not.
    """
    definitions = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and len(node) == 1:
                return resolve(definitions[ref.removeprefix("#/$defs/")])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(value) for value in node]
        return node

    return {key: resolve(value) for key, value in schema.items() if key != "$defs"}


def _valid(document: Mapping[str, Any]) -> bool:
    import fastjsonschema

    try:
        _compiled()(document)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def normalize_topic(topic: str) -> str:
    return " ".join(topic.casefold().split())


_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def canonical(document: Mapping[str, Any]) -> str:
    """The document as compact JSON with sorted keys: what is hashed and stored."""
    return _CANONICAL.encode(document)


def content_hash(document: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(document).encode("utf-8")).hexdigest()


def parse_line(text: str) -> dict[str, Any]:
    """One JSONL line as an observation document (:class:`InvalidObservation` if not)."""
    try:
        document = loads_json(text, max_bytes=MAX_LINE_BYTES)
    except json.JSONDecodeError as error:
        raise InvalidObservation(f"not JSON: {error.msg} (column {error.colno})") from error
    except InvalidDocument as error:
        raise InvalidObservation(error.reason, error.path) from error
    if not isinstance(document, dict):
        raise InvalidObservation(f"an observation is a JSON object, not {type(document).__name__}")
    return document


def check_document(document: Mapping[str, Any]) -> Observation:
    """Validate a document against the schema and read it (:class:`InvalidObservation`)."""
    try:
        check_tree(document)
    except InvalidDocument as error:
        raise InvalidObservation(error.reason, error.path or "(top level)") from error
    return _checked(document)


def _checked(document: Mapping[str, Any]) -> Observation:
    """:func:`check_document` for a document :func:`parse_line` has already checked."""
    errors = (
        []
        if _valid(document)
        else sorted(_validator().iter_errors(document), key=lambda e: list(map(str, e.path)))
    )
    if errors:
        first = errors[0]
        path = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in first.path)
        message = first.message
        if first.validator == "pattern" and first.schema.get("description"):
            message = f"{first.instance!r} is not valid: {first.schema['description']}"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InvalidObservation(message + more, path.replace(".[", "[") or "(top level)")
    stamp = str(document["timestamp"])
    try:
        datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError as error:
        raise InvalidObservation(f"not a date and time: {error}", "timestamp") from error
    return from_document(document)


def from_document(document: Mapping[str, Any]) -> Observation:
    """Read a (valid) document into an :class:`Observation`."""
    payload = dict(document["payload_typed"])
    return Observation(
        id=document["id"],
        source=document["source"],
        timestamp=document["timestamp"],
        category=document["category"],
        actors=tuple(document["actors"]),
        topic=normalize_topic(document["topic"]),
        sentiment=document.get("sentiment", DEFAULT_SENTIMENT),
        text=payload["text"].strip(),
        facts=tuple(
            ObservedFact(f["subject"], f["predicate"], f["object"])
            for f in payload.get("facts", [])
        ),
        relations=tuple(
            ObservedRelation(r["source"], r["type"], r["target"])
            for r in payload.get("relations", [])
        ),
        source_ref=document.get("source_ref"),
        correlation=document.get("correlation"),
        payload=payload,
    )


def store_problem(
    store: Store,
    observation: Observation,
    *,
    categories: Collection[str] | None = None,
    policy: Grid | None = None,
) -> str | None:
    """Why the store cannot take a (schema-valid) observation, or ``None``.

    ``categories`` and ``policy`` (the active category names and the grid) are
    read from the store unless given (:func:`observe` reads them once per run).
    """
    if categories is None:
        categories = store.category_names()
    if observation.category not in categories:
        return str(store.unknown_category(observation.category))
    if policy is None:
        policy = grid(store)
    if observation.sentiment not in policy.emotions:
        return (
            f"unknown sentiment {observation.sentiment!r}; the grid's emotional tags are: "
            + ", ".join(sorted(policy.emotions))
        )
    for relation in observation.relations:
        if relation.type not in policy.relations:
            known = ", ".join(sorted(policy.relations)) or "none"
            return f"unknown relation type {relation.type!r}; the graph has: {known}"
        if relation.source == relation.target:
            return f"a relation from {relation.source} to itself"
    return None


CHUNK = 500  # lines read, looked up and stored together


@attrs.frozen
class _Line:
    """A line that passed the schema, waiting for the store's verdict."""

    number: int
    observation: Observation
    document: str  # as stored: :func:`canonical`
    digest: str


def observe(store: Store, lines: Iterable[str], *, project: str | None = None) -> ObserveReport:
    """Validate observation lines; the good ones go to the inbox (see the module docstring).

    Lines are taken in chunks of :data:`CHUNK`: each chunk's ids are looked up
    in one query and its rows stored with one statement; the report lists
    every outcome in line order, as one line at a time would.
    """
    project = project or store.project
    report = ObserveReport()
    seen_in_file: dict[str, tuple[int, str]] = {}
    now = store.now()
    with store.atomic():
        policy = grid(store)  # a clear error, before any line, when no pack has a grid
        categories = frozenset(store.category_names())
        chunk: list[_Line | BadLine | str] = []
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                report.blank += 1
                continue
            chunk.append(_read(number, text, seen_in_file))
            if len(chunk) >= CHUNK:
                _take(store, project, chunk, now, report, categories, policy)
                chunk = []
        _take(store, project, chunk, now, report, categories, policy)
    return report


def _read(
    number: int, text: str, seen_in_file: dict[str, tuple[int, str]]
) -> _Line | BadLine | str:
    """One line: a :class:`_Line` to take, a :class:`BadLine`, or the id of an in-file replay."""
    ident: str | None = None
    try:
        document = parse_line(text)
        raw_id = document.get("id")
        ident = raw_id if isinstance(raw_id, str) else None
        observation = _checked(document)
    except InvalidObservation as error:
        return BadLine(number, ident, str(error))
    text = canonical(document)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    earlier = seen_in_file.get(observation.id)
    if earlier is not None:
        if earlier[1] == digest:
            return observation.id
        return BadLine(
            number,
            observation.id,
            f"id {observation.id!r} is used by line {earlier[0]} for different content",
        )
    seen_in_file[observation.id] = (number, digest)
    return _Line(number, observation, text, digest)


def _take(
    store: Store,
    project: str,
    chunk: list[_Line | BadLine | str],
    now: str,
    report: ObserveReport,
    categories: Collection[str],
    policy: Grid,
) -> None:
    ids = [item.observation.id for item in chunk if isinstance(item, _Line)]
    stored: dict[str, tuple[str, str, str | None]] = {}
    if ids:
        for ident, status, stored_hash, error in store.tables.observations.states(project, ids):
            stored[ident] = (status, stored_hash, error)
        missing = [ident for ident in ids if ident not in stored]
        if missing:  # a pruned observation's line is still a replay
            for ident, stored_hash in store.tables.observations.pruned_states(project, missing):
                stored[ident] = ("pruned", stored_hash, None)
    replaced: list[tuple[str, str]] = []
    rows: list[tuple[Any, ...]] = []
    for item in chunk:
        if isinstance(item, BadLine):
            report.bad.append(item)
            continue
        if isinstance(item, str):
            report.replayed.append(item)
            continue
        observation, number, digest = item.observation, item.number, item.digest
        problem = store_problem(store, observation, categories=categories, policy=policy)
        row = stored.get(observation.id)
        if row is not None:
            status, stored_hash, error = row
            if status != "invalid":
                if stored_hash == digest:
                    report.replayed.append(observation.id)  # a replay: nothing changes
                else:
                    report.bad.append(
                        BadLine(
                            number,
                            observation.id,
                            f"observation {observation.id!r} was already observed with "
                            f"different content (it is {status}); a new observation needs a "
                            "new id",
                        )
                    )
                continue
            if (stored_hash, error) == (digest, problem):
                report.bad.append(BadLine(number, observation.id, str(problem), kept=True))
                continue  # still invalid for the same reason: nothing changes
            replaced.append((project, observation.id))
        rows.append(
            (
                project,
                observation.id,
                "invalid" if problem else "queued",
                observation.source,
                observation.source_ref,
                observation.timestamp,
                observation.category,
                observation.topic,
                observation.sentiment,
                observation.correlation,
                digest,
                problem,
                now,
                item.document,
            )
        )
        if problem is not None:
            report.bad.append(BadLine(number, observation.id, problem, kept=True))
        else:
            report.queued.append(observation.id)
    store.tables.observations.replace_many(replaced, rows)


# Reading


@attrs.frozen
class StoredObservation:
    """One row of ``observations``: the observation and what the Retain Job made of it."""

    observation: Observation
    project: str
    status: str
    schema_fit: float | None
    route: str | None
    handler: str | None
    memory_id: int | None
    duplicate: bool
    half_life_days: float | None
    review: str | None
    error: str | None
    received_at: str
    processed_at: str | None
    reviewed_at: str | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> StoredObservation:
        return cls(
            observation=from_document(json.loads(row["document"])),
            project=row["project"],
            status=row["status"],
            schema_fit=row["schema_fit"],
            route=row["route"],
            handler=row["handler"],
            memory_id=row["memory_id"],
            duplicate=bool(row["duplicate"]),
            half_life_days=row["half_life_days"],
            review=row["review"],
            error=row["error"],
            received_at=row["received_at"],
            processed_at=row["processed_at"],
            reviewed_at=row["reviewed_at"],
        )

    @property
    def id(self) -> str:
        return self.observation.id

    def to_dict(self) -> dict[str, Any]:
        o = self.observation
        return {
            "id": o.id,
            "status": self.status,
            "category": o.category,
            "actors": list(o.actors),
            "topic": o.topic,
            "sentiment": o.sentiment,
            "text": o.text,
            "schema_fit": self.schema_fit,
            "route": self.route,
            "handler": self.handler,
            "memory_id": self.memory_id,
            "duplicate": self.duplicate,
            "half_life_days": self.half_life_days,
            "review": self.review,
            "error": self.error,
            "received_at": self.received_at,
            "processed_at": self.processed_at,
            "reviewed_at": self.reviewed_at,
        }


def get(store: Store, observation_id: str, *, project: str | None = None) -> StoredObservation:
    """One stored observation by id (:class:`NotFound` if there is none)."""
    row = store.tables.observations.get(project or store.project, observation_id)
    if row is None:
        raise NotFound(f"no observation {observation_id!r} in project {project or store.project!r}")
    return StoredObservation.from_row(row)


def listing(
    store: Store,
    *,
    status: str | None = None,
    project: str | None = None,
    limit: int | None = 100,
) -> list[StoredObservation]:
    """Stored observations in the order they arrived, optionally of one status."""
    if status is not None and status not in STATUSES:
        raise MemsdkError(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
    rows = store.tables.observations.listing(project or store.project, status, limit)
    return [StoredObservation.from_row(row) for row in rows]


def counts(store: Store, *, project: str | None = None) -> dict[str, int]:
    """How many observations of a project are in each status."""
    rows = store.tables.observations.counts(project or store.project)
    found = {status: 0 for status in STATUSES}
    found.update({status: n for status, n in rows})
    return found
