"""Search: a question as typed, to the memories a project may read, best first.

- ``query.py``: reading a plain-language query (tokens, stopwords, phrases);
- ``when.py``: dates and relative times in a query; ``occurred_at`` parsing;
- ``engine.py``: candidates from the live-only full-text index, the project
  inside the MATCH, the common-word rule, plugin fusion; the index check;
- ``ranking.py``: the ranking formula and its per-store settings.

``store.memories.search`` is the way in; ``docs/search.md`` explains it all.
"""
