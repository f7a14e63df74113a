"""A store copied whole, from one read transaction: what ``memsdk backup`` runs.

SQLite's online backup copies every page in one step, so the copy is one
consistent moment of the store while other processes write; it is written
beside the destination and renamed into place only when complete.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from plugin_sdk.errors import NoStore, StoreError
from plugin_sdk.store import driver


def backup(source: Path, destination: Path) -> dict[str, Any]:
    """Copy the store at ``source`` to ``destination`` (a new file); what was copied.

    The copy is written beside ``destination`` and renamed into place only
    when complete, so a failed backup leaves no partial file behind.
    """
    if not source.exists():
        raise NoStore(f"no store at {source}")
    if destination.exists():
        raise StoreError(f"{destination} exists; a backup never overwrites a file")
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_name(f".{destination.name}.partial")
    reader = driver.connect(f"file:{source}?mode=ro", uri=True)
    writer = driver.connect(partial)
    try:
        reader.backup(writer)  # all pages in one step: one consistent snapshot
        (pages,) = writer.execute("PRAGMA page_count").fetchone()
        writer.commit()
    except driver.Error as error:
        writer.close()
        partial.unlink(missing_ok=True)
        raise StoreError(f"backup of {source} failed: {error}") from error
    finally:
        reader.close()
    writer.close()
    os.chmod(partial, 0o600)
    partial.rename(destination)
    return {
        "source": str(source),
        "destination": str(destination),
        "pages": pages,
        "bytes": destination.stat().st_size,
    }
