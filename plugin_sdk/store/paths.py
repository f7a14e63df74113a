"""Where memsdk keeps its files: one function, so tests can point it elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

import click

USER_PATH_ENV = "MEMSDK_USER_PATH"
DB_FILENAME = "memory.db"


def user_dir() -> Path:
    """The directory for memsdk's own files.

    ``MEMSDK_USER_PATH`` when set, else the platform's application
    directory for ``memsdk`` (``~/.config/memsdk`` on Linux, ``~/Library/
    Application Support/memsdk`` on macOS, ``%APPDATA%\\memsdk`` on Windows).
    """
    override = os.environ.get(USER_PATH_ENV)
    if override:
        return Path(override).expanduser()
    return Path(click.get_app_dir("memsdk"))


def default_db_path() -> Path:
    """The store used when no ``--db`` is given."""
    return user_dir() / DB_FILENAME
