"""The SQLite driver every connection and every ``except`` in memsdk uses.

sqlite-utils picks its driver when it is first imported: ``pysqlite3`` when
that package is installed (the ``vec`` extra installs ``pysqlite3-binary`` on
Linux x86_64, where it can load extensions such as sqlite-vec), else the
standard library's ``sqlite3``. The two modules' exceptions are separate
class trees (``pysqlite3.dbapi2.OperationalError`` is not a subclass of
``sqlite3.OperationalError``), so code that opens a connection with one and
catches the other's errors misses them; sqlite-utils itself then leaks
errors it means to handle. memsdk therefore takes the driver from
sqlite-utils, here, once::

    from plugin_sdk.store import driver

    connection = driver.connect(path)
    try: ...
    except driver.OperationalError: ...

Never ``import sqlite3`` for a connection or an ``except`` clause in
``plugin_sdk``: use these names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3 as module
else:
    from sqlite_utils.utils import sqlite3 as module

#: The driver module itself (``pysqlite3`` or ``sqlite3``).
sqlite = module
#: ``"pysqlite3"`` or ``"sqlite3"``: which driver this process uses.
name: str = module.__name__.partition(".")[0]

connect = module.connect
complete_statement = module.complete_statement
Connection = module.Connection
Cursor = module.Cursor
Row = module.Row
Error = module.Error
DatabaseError = module.DatabaseError
IntegrityError = module.IntegrityError
OperationalError = module.OperationalError
ProgrammingError = module.ProgrammingError
sqlite_version: str = module.sqlite_version
sqlite_version_info: tuple[int, int, int] = module.sqlite_version_info


def can_load_extensions() -> bool:
    """Whether this driver's connections can load SQLite extensions at all."""
    return hasattr(module.Connection, "enable_load_extension")
