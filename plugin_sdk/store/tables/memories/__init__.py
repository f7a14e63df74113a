"""The owners of a memory's rows and of its indexes: full text, vectors, near-duplicate bands.

``memories.py`` (with ``memory_reads.py``), ``search.py``, ``vectors.py`` and
``neardup.py``, reached as ``store.tables.memories``, ``.search``, ``.vectors``
and ``.neardup``.
"""
