"""The owners of the grid: entities, memories' cells, relations, and facts and truths on entities.

``entities.py``, ``cells.py``, ``relations.py``, ``facts.py`` and ``truths.py``,
reached as ``store.tables.entities``, ``.cells``, ``.relations``, ``.facts``
and ``.truths``.
"""
