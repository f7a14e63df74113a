"""The owner of hook_queue, hook_runs and hook_notices: the statements a host's hooks run.

The lean hook entry point runs before every prompt, so these statements run
on a plain standard-library ``sqlite3`` connection (no sqlite-utils import);
they are functions of that connection rather than methods of a store.
"""

from __future__ import annotations
