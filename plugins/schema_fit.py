"""Built-in schema_fit: the weighted measure of ``plugin_sdk/retain/fit.py``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plugin_sdk import hookimpl
from plugin_sdk.retain.fit import measure


@hookimpl(trylast=True)
def schema_fit(store: Any, observation: Any, entities: Mapping[str, Any]) -> float:
    return measure(store, observation, entities)
