"""The owners of the store's tables: one module per group, holding all of its statements (``schema.sql`` names each table's owner)."""
