"""The PostgreSQL engine: the store's owners' SQL on a PostgreSQL server.

``Store("postgresql://…")`` opens one of these instead of a SQLite file
(``docs/postgres.md``). :mod:`.dialect` rewrites the owners' statements, which
are written once in the SQL both engines share, where SQLite's spelling
differs (placeholders, ``INSERT OR IGNORE``, ``LIKE``); :mod:`.database`
gives the store the connection interface it uses on SQLite; :mod:`.schema`
creates and fences the schema. Needs the ``postgres`` extra (psycopg 3).
"""

from __future__ import annotations

URL_PREFIXES = ("postgresql://", "postgres://")


def is_url(path: str) -> bool:
    """Whether ``path`` names a PostgreSQL database (a libpq URL), not a SQLite file."""
    return path.startswith(URL_PREFIXES)
