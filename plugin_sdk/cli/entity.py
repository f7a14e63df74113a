"""``memsdk entity``: add, show, list, relate, link, and the acts per actor."""

from __future__ import annotations

import click

from plugin_sdk.cli.common import ID, JSON_OPTION, count, echo_json, open_store, store_options
from plugin_sdk.grid import acts as speech_acts
from plugin_sdk.grid.entities import Entity
from plugin_sdk.store.models import CELLS


@click.group()
def entity() -> None:
    """Entities: durable graph nodes named namespace:slug, on the grid."""


@entity.command()
@click.argument("name")
@click.option("--cell", type=click.Choice(CELLS), help="Place it here (default: see docs/grid.md).")
@click.option("--half-life", type=click.FloatRange(min=0, min_open=True), help="Days.")
@click.option("--pin/--no-pin", default=None, help="Pinned entities never decay.")
@click.option("--emotion", help="An emotional tag of the grid (neutral, positive, ...).")
@store_options
@JSON_OPTION
def add(
    name: str,
    cell: str | None,
    half_life: float | None,
    pin: bool | None,
    emotion: str | None,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Add the entity NAME (for example world:person:anya)."""
    with open_store(db, project) as store:
        added = store.entities.add(
            name, cell=cell, half_life_days=half_life, pinned=pin, emotional_tag=emotion
        )
    if as_json:
        echo_json(added.to_dict())
        return
    click.echo(
        f"Added entity {added.id} {added.name}: {added.cell} ({added.cell_signal}), "
        f"half-life {added.half_life_days:g} days"
        + (", pinned" if added.pinned else "")
        + (
            f", {added.emotional_tag} ×{added.emotional_multiplier:g}"
            if added.emotional_tag
            else ""
        )
    )


@entity.command()
@click.argument("name")
@store_options
@JSON_OPTION
def show(name: str, db: str | None, project: str | None, as_json: bool) -> None:
    """Show an entity (by name or id): its cell, strength now, relations and memories."""
    with open_store(db, project) as store:
        found = store.entities.get(name, project=store.project)
        now = store.now()
        strength = found.strength_now(now)
        relations = [
            (r, r.weight * store.relations.weight_now(r)) for r in store.relations.of(found.id)
        ]
        memories = store.entities.memories_of(found.id)
    if as_json:
        echo_json(
            {
                **found.to_dict(),
                "strength_now": "pinned" if found.pinned else strength,
                "relations": [{**r.to_dict(), "weight_now": w} for r, w in relations],
                "memories": memories,
            }
        )
        return
    click.echo(f"{found.name} (entity {found.id}, {found.status})")
    click.echo(f"  cell: {found.cell} ({found.cell_signal})")
    click.echo(f"  strength now: {_strength(found, strength)}")
    click.echo(
        f"  half-life {found.half_life_days:g} days, emotional ×{found.emotional_multiplier:g}"
        f" ({found.emotional_tag or 'cell default'}), outcomes +{found.positive_outcomes}"
        f" -{found.negative_outcomes}, retrievals {found.retrieval_count}"
    )
    click.echo(f"  last seen {found.last_seen_at}")
    for r, weight in relations:
        click.echo(
            f"  {r.source} -{r.type}-> {r.target}  weight now {weight:.3f}"
            f" (evidence {r.evidence_count}, last seen {r.last_seen_at[:10]})"
        )
    if memories:
        click.echo(f"  memories: {', '.join(map(str, memories))}")


@entity.command(name="list")
@click.option("--cell", type=click.Choice(CELLS), help="Only this cell.")
@click.option("--ns", "pattern", help="Only names matching this pattern (agent:*:relationship:*).")
@click.option("--status", type=click.Choice(["active", "provisional", "archived"]))
@click.option("--limit", type=count(1), default=100, show_default=True)
@store_options
@JSON_OPTION
def list_entities(
    cell: str | None,
    pattern: str | None,
    status: str | None,
    limit: int,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """List entities by name, filtered by cell, namespace pattern or status."""
    with open_store(db, project) as store:
        found = store.entities.list(cell=cell, pattern=pattern, status=status, limit=limit)
        now = store.now()
        rows = [(e, e.strength_now(now)) for e in found]
    if as_json:
        echo_json([{**e.to_dict(), "strength_now": _json(e, s)} for e, s in rows])
        return
    if rows:
        click.echo(f"{'id':>6}  {'name':<40} {'cell':<20} strength now")
    for e, s in rows:
        click.echo(f"{e.id:>6}  {e.name:<40} {e.cell:<20} {_strength(e, s)}")
    if not rows:
        click.echo("No entities match.")


@entity.command()
@click.argument("source")
@click.argument("type")
@click.argument("target")
@click.option(
    "--weight",
    type=click.FloatRange(min=0, min_open=True),
    help="The edge's weight (default: 1.0 for a new edge, unchanged for an existing one).",
)
@store_options
@JSON_OPTION
def relate(
    source: str,
    type: str,
    target: str,
    weight: float | None,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Relate SOURCE to TARGET with a relation TYPE of the graph (see memsdk grid show)."""
    with open_store(db, project) as store:
        relation = store.relations.relate(
            source, target, type, weight=weight, project=store.project
        )
    if as_json:
        echo_json(relation.to_dict())
        return
    click.echo(
        f"{relation.source} -{relation.type}-> {relation.target} "
        f"(evidence {relation.evidence_count})"
    )


@entity.command()
@click.argument("memory_id", type=ID)
@click.argument("names", nargs=-1, required=True)
@click.option("--role", type=click.Choice(["actor", "subject"]), default="actor")
@store_options
@JSON_OPTION
def link(
    memory_id: int,
    names: tuple[str, ...],
    role: str,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Link memory MEMORY_ID to the entities NAMES (created if new) as actors or subjects."""
    with open_store(db, project) as store:
        linked = store.entities.link(memory_id, names, role=role)
    if as_json:
        echo_json({"memory": memory_id, "role": role, "entities": [e.to_dict() for e in linked]})
        return
    click.echo(f"Linked memory {memory_id} to {', '.join(e.name for e in linked)} as {role}")


@entity.command(name="acts")
@click.option("--actor", help="Only this actor entity.")
@store_options
@JSON_OPTION
def acts_command(actor: str | None, db: str | None, project: str | None, as_json: bool) -> None:
    """Illocutionary acts of interaction memories, per actor (classify sets them)."""
    with open_store(db, project) as store:
        found = speech_acts.distribution(store, actor=actor)
    if as_json:
        echo_json(found)
        return
    for name, counts in found.items():
        main = speech_acts.predominant(counts)
        shown = ", ".join(f"{act} {n}" for act, n in counts.items() if n)
        click.echo(f"{name:<40} {('predominantly ' + main) if main else 'mixed':<26} {shown}")
    if not found:
        click.echo(
            "No interaction memories are typed yet (link actors, then memsdk dream run classify)."
        )


def _strength(entity: Entity, value: float) -> str:
    return "pinned (never decays)" if entity.pinned else f"{value:.3f}"


def _json(entity: Entity, value: float) -> float | str:
    return "pinned" if entity.pinned else value
