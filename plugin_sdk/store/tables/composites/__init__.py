"""The owners of what the block groups and ranks: composites, reference sets, the table of contents.

``composites.py`` (with ``composite_reads.py``), ``refsets.py`` and ``toc.py``,
reached as ``store.tables.composites``, ``.refsets`` and ``.toc``.
"""
