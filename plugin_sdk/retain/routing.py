"""schema_fit routing: the Retain Job's policy, from the packs' ``[retain]`` sections.

An observation's schema_fit (0..1, see ``fit.py``) picks its route:

- **dark** when ``fit < dark_matter_below``: novel, unclassified signal, held
  provisionally until a person triages it (``dark_matter.py``); what it
  creates gets its half-life multiplied by ``dark_matter_half_life_factor``;
- **fast** when ``fit > fast_track_above``: the expensive content dedup pass is
  skipped; what it creates gets ``fast_track_half_life_factor``;
- **normal** otherwise (both bounds included).

``truth_impact_threshold`` is the impact an entity gathers before its Compiled
Truth is regenerated (``truth.py``).

**Where the values come from.** The ``[retain]`` section of the installed
packs, read in install order like the grid: the first pack to set a key owns
it. Every key must be set by some pack (:class:`NoRetainPolicy` names the
missing ones), and the merged thresholds must not cross.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from plugin_sdk.errors import NoRetainPolicy, PackError

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

KEYS = (
    "dark_matter_below",
    "fast_track_above",
    "dark_matter_half_life_factor",
    "fast_track_half_life_factor",
    "truth_impact_threshold",
)
ROUTES = ("dark", "normal", "fast")


@attrs.frozen
class RetainPolicy:
    """The store's effective ``[retain]`` values, and which pack owns each."""

    dark_matter_below: float
    fast_track_above: float
    dark_matter_half_life_factor: float
    fast_track_half_life_factor: float
    truth_impact_threshold: float
    owners: dict[str, str] = attrs.field(factory=dict, eq=False)

    def route(self, fit: float) -> str:
        """``dark``, ``normal`` or ``fast`` for a schema_fit value."""
        if fit < self.dark_matter_below:
            return "dark"
        if fit > self.fast_track_above:
            return "fast"
        return "normal"

    def factor(self, route: str) -> float:
        """The half-life factor of a route (1 on the normal path)."""
        if route == "dark":
            return self.dark_matter_half_life_factor
        if route == "fast":
            return self.fast_track_half_life_factor
        return 1.0

    def to_dict(self) -> dict[str, Any]:
        return {key: {"value": getattr(self, key), "pack": self.owners.get(key)} for key in KEYS}


def policy(store: Store) -> RetainPolicy:
    """The store's effective retain policy (cached until a pack is installed or upgraded)."""
    return store.packs.derived("retain", merge)


def merge(documents: Iterable[tuple[str, Mapping[str, Any]]]) -> RetainPolicy:
    """The effective policy of pack documents in install order (first to set a key owns it)."""
    values: dict[str, float] = {}
    owners: dict[str, str] = {}
    for pack, document in documents:
        for key, value in (document.get("retain") or {}).items():
            if key not in values:
                values[key] = float(value)
                owners[key] = pack
    missing = [key for key in KEYS if key not in values]
    if missing:
        raise NoRetainPolicy(
            "no installed pack sets retain."
            + ", retain.".join(missing)
            + "; install a pack with a [retain] section (the built-in packs have one: "
            "memsdk pack install ops)"
        )
    if values["dark_matter_below"] > values["fast_track_above"]:
        raise NoRetainPolicy(
            f"retain.dark_matter_below {values['dark_matter_below']} (pack "
            f"{owners['dark_matter_below']}) is above retain.fast_track_above "
            f"{values['fast_track_above']} (pack {owners['fast_track_above']})"
        )
    return RetainPolicy(**values, owners=owners)


def validate_retain(document: Mapping[str, Any], source: str) -> None:
    """The check the JSON Schema cannot make: a pack's thresholds do not cross."""
    section = document.get("retain") or {}
    below, above = section.get("dark_matter_below"), section.get("fast_track_above")
    if below is not None and above is not None and below > above:
        raise PackError(
            source,
            f"dark_matter_below ({below}) is above fast_track_above ({above})",
            "retain.dark_matter_below",
        )
