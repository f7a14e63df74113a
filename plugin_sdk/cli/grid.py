"""``memsdk grid show``: the entity grid, its defaults and what lives in each cell."""

from __future__ import annotations

from typing import Any

import click

from plugin_sdk.cli.common import JSON_OPTION, echo_json, open_store, store_options
from plugin_sdk.grid import overrides as grid_overrides
from plugin_sdk.grid.policy import Grid, grid
from plugin_sdk.store.connection import Store
from plugin_sdk.store.models import MEMORY_TYPES, REFERENTS

WIDTH = 15


@click.group(name="grid")
def grid_group() -> None:
    """The entity grid: memory type × referent cells and their decay defaults."""


@grid_group.command()
@store_options
@JSON_OPTION
def show(db: str | None, project: str | None, as_json: bool) -> None:
    """Every cell with its half-life, emotional multiplier and counts; then the rules.

    The referent axis carries its reading (interior, exterior, transversal)
    when a pack gives one; values this store overrides are marked with *.
    """
    with open_store(db, project) as store:
        policy = grid(store)
        counts = cell_counts(store)
        overridden = grid_overrides.overrides(store)
    if as_json:
        echo_json(
            {
                "default_cell": policy.default_cell,
                "readings": policy.readings,
                "overrides": overridden,
                "cells": {
                    cell: {
                        "half_life_days": d.half_life_days,
                        "emotional_multiplier": d.emotional_multiplier,
                        "pack": d.pack,
                        **counts.get(cell, {"entities": 0, "memories": 0}),
                    }
                    for cell, d in policy.cells.items()
                },
                "emotions": policy.emotions,
                "namespaces": [
                    {
                        "pattern": r.pattern,
                        "cell": r.cell,
                        "half_life_days": r.half_life_days,
                        "pinned": r.pinned,
                        "pack": r.pack,
                    }
                    for r in policy.namespaces
                ],
                "relations": {
                    r.name: {"sigma_days": r.sigma_days, "pack": r.pack}
                    for r in policy.relations.values()
                },
            }
        )
        return
    for line in render(policy, counts, store.project, overridden):
        click.echo(line.rstrip())


def cell_counts(store: Store) -> dict[str, dict[str, int]]:
    """Per cell: entities of the project and its active memories placed there."""
    counts: dict[str, dict[str, int]] = {}
    for table, rows in (
        ("entities", store.tables.entities.counts_by_cell(store.project)),
        ("memories", store.tables.cells.counts_by_cell(store.project)),
    ):
        for memory_type, referent, n in rows:
            cell = counts.setdefault(f"{memory_type}.{referent}", {"entities": 0, "memories": 0})
            cell[table] = n
    return counts


def render(
    policy: Grid,
    counts: dict[str, dict[str, Any]],
    project: str,
    overridden: dict[str, float] | None = None,
) -> list[str]:
    overridden = overridden or {}
    packs = sorted({d.pack for d in policy.cells.values()})
    lines = [
        f"Grid (from pack {', '.join(packs)}); each cell: half-life × emotional multiplier,",
        f"then entities / memories in project {project!r}. Default cell: " + policy.default_cell,
        "",
    ]
    if policy.readings:  # the referent axis read as interior / exterior, above its names
        lines.append(" " * 12 + "".join(policy.readings.get(r, "").ljust(WIDTH) for r in REFERENTS))
    lines.append(" " * 12 + "".join(r.ljust(WIDTH) for r in REFERENTS))
    for memory_type in MEMORY_TYPES:
        defaults, filled = [], []
        for referent in REFERENTS:
            cell = f"{memory_type}.{referent}"
            d = policy.cells[cell]
            mark = "*" if any(k.startswith(f"cells.{cell}.") for k in overridden) else ""
            defaults.append(
                f"{_days(d.half_life_days)} ×{d.emotional_multiplier:g}{mark}".ljust(WIDTH)
            )
            n = counts.get(cell, {"entities": 0, "memories": 0})
            filled.append(f"{n['entities']} / {n['memories']}".ljust(WIDTH))
        lines.append(memory_type.ljust(12) + "".join(defaults))
        lines.append(" " * 12 + "".join(filled))
    if policy.readings:
        lines += [
            "",
            "Referent axis: "
            + "; ".join(
                f"{reading}: {', '.join(r for r in REFERENTS if policy.readings.get(r) == reading)}"
                for reading in dict.fromkeys(
                    policy.readings[r] for r in REFERENTS if r in policy.readings
                )
            ),
        ]
    lines += ["", "Emotions: " + ", ".join(f"{k} ×{v:g}" for k, v in policy.emotions.items())]
    if policy.namespaces:
        lines += ["", "Namespace rules (the most specific match wins):"]
        for r in sorted(policy.namespaces, key=lambda r: r.pattern):
            parts = [r.cell or "cell by classify"]
            if r.half_life_days is not None:
                parts.append(f"half-life {_days(r.half_life_days)}")
            if r.pinned:
                parts.append("pinned")
            lines.append(f"  {r.pattern:<26} {', '.join(parts)}")
    if policy.relations:
        lines += ["", "Relation types (weight_temporal = exp(-days/σ)):"]
        for rel in policy.relations.values():
            lines.append(f"  {rel.name:<18} σ = {_days(rel.sigma_days)}  {rel.description}")
    if overridden:
        lines += ["", "Overrides of this store (* above; memsdk grid reset KEY clears one):"]
        lines += [f"  {key} = {value:g}" for key, value in overridden.items()]
    return lines


@grid_group.command(name="set")
@click.argument("key")
@click.argument("value", type=float)
@click.option("--note", help="Why, for the history.")
@store_options
@JSON_OPTION
def set_value(
    key: str, value: float, note: str | None, db: str | None, project: str | None, as_json: bool
) -> None:
    """Override one grid value for this store (it wins over every pack until reset).

    KEY is cells.TYPE.REFERENT.half_life_days, cells.TYPE.REFERENT.emotional_multiplier,
    emotions.TAG or relations.TYPE.sigma_days.
    """
    with open_store(db, project) as store:
        old = grid_overrides.set_value(store, key, value, note=note)
    if as_json:
        echo_json({"key": key, "old_value": old, "new_value": value, "note": note})
        return
    click.echo(f"{key}: {old:g} -> {value:g} (override)")


@grid_group.command(name="reset")
@click.argument("key", required=False)
@click.option("--all", "everything", is_flag=True, help="Clear every override.")
@store_options
@JSON_OPTION
def reset(
    key: str | None, everything: bool, db: str | None, project: str | None, as_json: bool
) -> None:
    """Clear the override of KEY (or --all): the packs' value applies again."""
    if (key is None) == (not everything):
        raise click.UsageError("give a KEY or --all")
    with open_store(db, project) as store:
        cleared = grid_overrides.reset(store, key)
    if as_json:
        echo_json({"cleared": list(cleared)})
        return
    click.echo(f"cleared: {', '.join(cleared)}" if cleared else "no override to clear")


@grid_group.command(name="history")
@click.argument("key", required=False)
@store_options
@JSON_OPTION
def history(key: str | None, db: str | None, project: str | None, as_json: bool) -> None:
    """Every change to the grid's overrides (optionally of one KEY), oldest first."""
    with open_store(db, project) as store:
        events = grid_overrides.history(store, key)
    if as_json:
        echo_json([e.to_dict() for e in events])
        return
    for e in events:
        old = "-" if e.old_value is None else f"{e.old_value:g}"
        new = "-" if e.new_value is None else f"{e.new_value:g}"
        note = f"  ({e.note})" if e.note else ""
        click.echo(f"{e.at}  {e.source:<8} {e.key}: {old} -> {new}{note}")


def _days(value: float) -> str:
    return f"{value:g}d"
