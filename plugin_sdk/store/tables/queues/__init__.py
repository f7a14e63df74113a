"""The owners of work waiting and its records: observations, proposals, the hook queue, sessions.

``observations.py`` (the Retain Job's inbox), ``proposals.py`` (the review
queue, with ``undo_log.py``: an apply's undo recording), ``hooks.py`` (the
hook queue, runs and notices, on a plain sqlite3 connection: this package
imports nothing, so the lean hook entry point stays lean) and ``sessions.py``
(sessions' surfaces and injections, the dreamer's leases, the transcript
import ledger), reached as ``store.tables.observations``, ``.proposals``,
``.sessions``; the hooks' statements are functions of a connection.
"""
