"""Where a benchmark's stores go: files in a temporary folder, or fresh PostgreSQL schemas.

``--db postgresql://…`` (a libpq URL) puts every store a benchmark makes in
a new schema of that database (``plugin_sdk.testing.postgres_schema``), each
dropped when the store is removed or the run ends; without it, each store is
a file in the run's temporary folder, as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from plugin_sdk.store.postgres import is_url


class Places:
    """New store locations, named as files would be; :meth:`close` removes what is left."""

    def __init__(self, folder: str | Path, db: str | None = None) -> None:
        if db is not None and not is_url(db):
            raise SystemExit(f"--db must be a postgresql:// URL, not {db!r}")
        self.folder = Path(folder)
        self.db = db
        self._schemas: dict[str, str] = {}

    @property
    def engine(self) -> str:
        return "postgresql" if self.db else "sqlite"

    def new(self, name: str) -> str:
        """A location for a new store: ``folder/name``, or the URL of a new, empty schema."""
        if self.db is None:
            return str(self.folder / name)
        from plugin_sdk.testing import postgres_schema

        url, schema = postgres_schema(self.db)
        self._schemas[url] = schema
        return url

    def remove(self, place: str) -> None:
        """Delete the store at ``place`` (its files, or its schema)."""
        if self.db is None:
            for name in (place, f"{place}-wal", f"{place}-shm"):
                Path(name).unlink(missing_ok=True)
            return
        schema = self._schemas.pop(place, None)
        if schema is not None:
            from plugin_sdk.testing import drop_postgres_schemas

            drop_postgres_schemas(self.db, [schema])

    def close(self) -> None:
        for place in list(self._schemas):
            self.remove(place)

    def __enter__(self) -> Places:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def server_version(db: str) -> str:
    """The PostgreSQL server's version and durability settings, for the report."""
    import psycopg

    names = ("fsync", "synchronous_commit", "full_page_writes", "shared_buffers")
    with psycopg.connect(db, autocommit=True) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]
        settings = {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in names}
    return f"PostgreSQL {version} ({', '.join(f'{k}={v}' for k, v in settings.items())})"
