"""A store people can browse: Datasette metadata for the views ``m011_browse_views`` adds.

The shipped file, ``datasette-metadata.json``, labels the views, names their
facets and points their search box at ``memories_fts``; it is written for a
store called ``memory.db`` (the default). :func:`datasette_metadata` gives the
same for any store file, keyed by the name Datasette gives it (the file's
stem)::

    memsdk datasette-metadata --db team.db > metadata.json
    datasette team.db --metadata metadata.json
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

SHIPPED_NAME = "memory"


def datasette_metadata(db: str | Path | None = None) -> dict[str, Any]:
    """The metadata for the store at ``db`` (default: the shipped one, for ``memory.db``)."""
    text = resources.files("plugin_sdk.host").joinpath("datasette-metadata.json").read_text()
    document: dict[str, Any] = json.loads(text)
    if db is not None:
        name = Path(db).stem
        document["databases"] = {name: document["databases"][SHIPPED_NAME]}
    return document
