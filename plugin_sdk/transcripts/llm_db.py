"""What both readers of an ``llm`` logs database share: the connection, the report, the schema."""

from __future__ import annotations

import json
from typing import Any

from plugin_sdk.store import driver
from plugin_sdk.transcripts.model import ImportReport


class LogsDatabase:
    """An open ``logs.db``: which tables and columns this ``llm`` version wrote."""

    def __init__(self, db: driver.Connection, report: ImportReport, limit: int) -> None:
        self.db = db
        self.report = report
        self.limit = limit  # tool output characters kept (0: all)
        self.tables = {
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }

    def columns(self, table: str) -> set[str]:
        if table not in self.tables:
            return set()
        return {row[1] for row in self.db.execute(f'PRAGMA table_info("{table}")')}


def plain(value: Any) -> str:
    """A value as text: a string as it is, null as nothing, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return json.dumps(value, ensure_ascii=False)


def location_name(location: Any) -> str | None:
    """An attachment's file name, from its path or URL."""
    if not isinstance(location, str) or not location:
        return None
    return location.rstrip("/").rsplit("/", 1)[-1] or location
