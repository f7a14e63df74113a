"""Built-in schema_fit: the weighted measure of ``plugin_sdk/retain/fit.py``.

This plugin only registers that measure as the fallback implementation of
the hook; the measure is the retain area's own logic, not plugin API (a
plugin that wants another measure implements ``schema_fit`` itself), hence
the import from ``plugin_sdk.retain.fit``.
"""

from __future__ import annotations

from collections.abc import Mapping

from plugin_sdk.plugin import Entity, Observation, Store, hookimpl
from plugin_sdk.retain.fit import measure


@hookimpl(trylast=True)
def schema_fit(
    store: Store, observation: Observation, entities: Mapping[str, Entity | None]
) -> float:
    return measure(store, observation, entities)
