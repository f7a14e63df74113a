"""``memsdk demo``: a sample store and a readable report of what it holds.

The demo installs a pack (a built-in name or a pack file), loads the sample
memories that pack ships (``packs/samples/NAME.jsonl``) in one transaction,
and reports counts per category in the DB's priority order, where each
category's criteria come from, how many repeats deduplication folded, and a
few searches. A pack that ships no sample (a pack author's own file, say)
gets one generated from its criteria: each category's positive examples
become memories of that category, and a few of them become the searches.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import attrs
import plugin_sdk_packs

from plugin_sdk.composites.fragment import fragment, reconstruct
from plugin_sdk.errors import CompositeError, MemsdkError
from plugin_sdk.grid import acts
from plugin_sdk.grid.cells import classify_cells
from plugin_sdk.grid.policy import has_grid
from plugin_sdk.packs.documents import Pack
from plugin_sdk.packs.sources import resolve_pack
from plugin_sdk.stages.dreamer import Dreamer
from plugin_sdk.stages.inject import DEFAULT_BUDGET, inject
from plugin_sdk.store.connection import Store

LONG_MEMORY_CHARS = 600
GENERATED_QUERIES = 3
MAP_TASK = "map"
CONSOLIDATE_TASK = "consolidate"


@attrs.define
class DemoReport:
    pack: str
    version: str
    written: int
    folded: int
    rows: list[dict[str, Any]]
    searches: list[dict[str, Any]]
    total_tokens: int
    fragments: list[dict[str, Any]] = attrs.field(factory=list)
    example: dict[str, Any] | None = None
    injection: dict[str, Any] | None = None
    themes: int = 0
    grid: dict[str, Any] | None = None


def sample_for(pack_name: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The sample memories and demo queries a built-in pack ships."""
    import plugin_sdk_packs

    text = plugin_sdk_packs.sample(pack_name)
    if text is None:
        raise MemsdkError(
            f"pack {pack_name!r} ships no demo sample (packs/samples/{pack_name}.jsonl)"
        )
    items = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise MemsdkError(f"sample {pack_name}.jsonl line {number}: {error.msg}") from error
    return items, list(plugin_sdk_packs.SAMPLE_QUERIES.get(pack_name, []))


def generated_sample(pack: Pack) -> tuple[list[dict[str, Any]], list[str]]:
    """A sample built from the pack's own criteria: the positive examples.

    Each example becomes a memory of its category (highest priority first);
    the first example of the first few categories gives a search of its two
    longest words, so every search finds something.
    """
    items: list[dict[str, Any]] = []
    queries: list[str] = []
    for spec in sorted(pack.categories.values(), key=lambda s: (s.priority, s.name)):
        examples = [str(e) for e in spec.criteria.get("positive_examples", [])]
        items += [{"category": spec.name, "content": example} for example in examples]
        if examples and len(queries) < GENERATED_QUERIES:
            words = re.findall(r"[^\W\d_]{4,}", examples[0])
            longest = sorted(sorted(set(words), key=len, reverse=True)[:2], key=words.index)
            if longest:
                queries.append(" ".join(longest))
    if not items:
        raise MemsdkError(f"pack {pack.name!r} ships no sample and its criteria give no examples")
    return items, queries


def _sample(pack: Pack) -> tuple[list[dict[str, Any]], list[str]]:
    """The shipped sample when it fits the pack (names only its categories), else a generated one."""
    if plugin_sdk_packs.sample(pack.name) is not None:
        items, queries = sample_for(pack.name)
        if {item.get("category") for item in items} <= set(pack.categories):
            return items, queries
    return generated_sample(pack)


def run_demo(store: Store, pack_name: str = "ops") -> DemoReport:
    """Install ``pack_name`` (a name or a pack file; unless present), load a sample, and report."""
    pack = resolve_pack(pack_name, store.plugins)
    if pack.name not in {p.name for p in store.packs.installed()}:
        store.packs.install(pack)
    items, queries = _sample(pack)
    results = store.memories.write_many(items)
    created = sum(1 for r in results if r.created)
    fragments = fragment_long(store)
    themes = _build_map(store)
    grid_report = _build_grid(store, pack.name)
    counts = store.memories.counts()
    tokens = store.tables.memories.active_tokens_by_category(store.project)
    rows: list[dict[str, Any]] = []
    for category in store.categories():
        overridden = [f for f, c in category.criteria.items() if c.source == "override"]
        rows.append(
            {
                "category": category.name,
                "kind": category.kind,
                "priority": category.priority,
                "active": counts.get(category.name, {}).get("active", 0),
                "tokens": tokens.get(category.name, 0) or 0,
                "criteria": f"override: {', '.join(overridden)}"
                if overridden
                else f"pack {category.pack} default",
            }
        )
    searches = []
    for query in queries:
        hits = store.memories.search(query, limit=3)
        searches.append(
            {
                "query": query,
                "hits": [
                    {"id": h.memory.id, "category": h.memory.category, "content": h.memory.content}
                    for h in hits
                ],
            }
        )
    return DemoReport(
        pack=pack.name,
        version=pack.version,
        written=created,
        folded=len(results) - created,
        rows=rows,
        searches=searches,
        total_tokens=sum(row["tokens"] for row in rows),
        fragments=fragments,
        example=_example(store, fragments),
        injection=inject(store, budget=DEFAULT_BUDGET).to_dict(),
        themes=themes,
        grid=grid_report,
    )


def _build_grid(store: Store, pack_name: str) -> dict[str, Any] | None:
    """Sample entities, relations and actor links; cells for every memory; one consolidation."""
    if not has_grid(store):
        return None
    text = plugin_sdk_packs.sample_grid(pack_name)
    sample = json.loads(text) if text else {"entities": [], "relations": [], "links": []}
    with store.atomic():
        for spec in sample["entities"]:
            store.entities.ensure(
                spec["name"], cell=spec.get("cell"), emotional_tag=spec.get("emotion")
            )
        for source, kind, target in sample["relations"]:
            store.relations.relate(source, target, kind)
        for link in sample["links"]:
            hits = store.memories.search(link["query"], limit=1)
            for role in ("actors", "subjects"):
                if hits and link.get(role):
                    store.entities.link(hits[0].memory.id, link[role], role=role[:-1])
    placed = classify_cells(store, store.memories.list(limit=None))
    dreamer = Dreamer(store)
    if CONSOLIDATE_TASK in dreamer.tasks:
        dreamer.run(CONSOLIDATE_TASK)
    return {
        "entities": store.entities.count(),
        "relations": len(sample["relations"]),
        "placed": placed,
        "acts": acts.distribution(store),
    }


def _build_map(store: Store) -> int:
    """Run the dreamer's map task (theme headers), if a plugin provides it."""
    dreamer = Dreamer(store)
    if MAP_TASK not in dreamer.tasks:
        return 0
    dreamer.run(MAP_TASK)
    return len(store.composites.all(type="theme"))


def fragment_long(store: Store, min_chars: int = LONG_MEMORY_CHARS) -> list[dict[str, Any]]:
    """Fragment every active memory longer than ``min_chars`` that splits."""
    done = []
    for memory in store.memories.list(limit=None):
        if len(memory.content) < min_chars:
            continue
        try:
            result = fragment(store, memory.id)
        except CompositeError:
            continue  # no steps, settings or paragraphs: stays whole
        done.append(
            {
                "original": result.original,
                "header": result.header,
                "details": result.details,
                "category": memory.category,
            }
        )
    return done


def _example(store: Store, fragments: list[dict[str, Any]]) -> dict[str, Any] | None:
    for item in fragments:
        header = store.memories.get(item["header"])
        if header.kind == "intent":
            details = [store.memories.get(d).content for d in item["details"]]
            themes = [c for c in store.composites.by_member(header.id) if c.type == "theme"]
            place = [header.category]
            if themes:
                place.append(
                    f"theme #{themes[0].head} {store.memories.get(themes[0].head).content!r}"
                )
            place.append(f"header #{header.id}")
            place.append(f"{len(details)} details")
            return {
                "place": " > ".join(place),
                "header": header.id,
                "category": header.category,
                "title": header.content,
                "details": details,
                "exact": reconstruct(store, header.id)
                == store.memories.get(item["original"]).content,
            }
    return None


def render(report: DemoReport, echo: Callable[[str], None], *, width: int = 96) -> None:
    """Print a report for a person."""
    echo(
        f"Pack {report.pack} {report.version}: "
        f"{report.written} memories written, {report.folded} repeats folded by deduplication"
    )
    echo("")
    echo(f"{'category':<18} {'kind':<8} {'prio':>4} {'memories':>8} {'tokens':>7}  criteria from")
    for row in report.rows:
        echo(
            f"{row['category']:<18} {row['kind']:<8} {row['priority']:>4} {row['active']:>8} "
            f"{row['tokens']:>7}  {row['criteria']}"
        )
    echo(
        f"{'total':<18} {'':<8} {'':>4} {sum(r['active'] for r in report.rows):>8} "
        f"{report.total_tokens:>7}"
    )
    echo("")
    echo(
        f"All active memories together are {report.total_tokens} tokens; "
        "an injection budget is about 4000, so the injector must choose."
    )
    details = sum(len(f["details"]) for f in report.fragments)
    echo("")
    echo(
        f"Fragmentation: {len(report.fragments)} long memories became headers over "
        f"{details} details (originals superseded, nothing lost); the map task grouped "
        f"the rest under {report.themes} theme headers."
    )
    example = report.example
    if example:
        echo(
            f"  header #{example['header']} ({example['category']}): {_clip(example['title'], width - 24)}"
        )
        for detail in example["details"][:4]:
            echo(f"    - {_clip(detail, width - 8)}")
        if len(example["details"]) > 4:
            echo(f"    ... and {len(example['details']) - 4} more (memsdk composite map)")
        echo(f"  its place in the map: {example['place']}")
        echo(f"  header + details reconstruct the original exactly: {example['exact']}")
    if report.grid:
        echo("")
        echo(
            f"Grid: {report.grid['entities']} entities and {report.grid['relations']} relations; "
            f"{report.grid['placed']} memories placed on the grid (memory type × referent), "
            "strength computed by the consolidation pass (memsdk grid show)."
        )
        for actor, counts in report.grid["acts"].items():
            main = acts.predominant(counts)
            shown = ", ".join(f"{act} {n}" for act, n in counts.items() if n)
            echo(f"  with {actor}: {('predominantly ' + main) if main else 'mixed'} ({shown})")
    for search in report.searches:
        echo("")
        echo(f"search {search['query']!r}:")
        if not search["hits"]:
            echo("  (no matches)")
        for hit in search["hits"]:
            echo(f"  #{hit['id']:<5} {hit['category']:<16} {_clip(hit['content'], width - 26)}")


def _clip(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def render_injection(report: DemoReport, echo: Callable[[str], None]) -> None:
    """The injected table of contents and its token account."""
    if report.injection is None:
        return
    shown = report.injection
    echo(f"The injected table of contents ({shown['budget']}-token budget):")
    echo("")
    echo(shown["text"] or f"({shown['note']})")
    echo("")
    echo(
        f"Account: {shown['tokens']}/{shown['budget']} tokens; {len(shown['shown'])} of "
        f"{shown['candidates']} headers and standalone memories shown; {shown['reachable']} of "
        f"{shown['active']} active memories reachable directly or by one expand "
        f"(coverage {shown['coverage']:.0%})."
    )
