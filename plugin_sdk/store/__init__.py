"""The store: the SQLite file, its migrations, the memory table and its records.

The bottom layer. It imports no other area; areas attach their facades to a
:class:`~plugin_sdk.store.connection.Store` from above (see ``connection.FACADES``).
"""
