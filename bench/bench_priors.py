"""The ranking priors' read: memories' ages computed in Python against julianday in SQL.

Search reads each candidate's importance, pin, time and strength once
(``store/search/ranking.py``, ``_priors``). Its memory's age used to be
``julianday(now) - julianday(at)`` in SQL, which on PostgreSQL is a SQL
function of the compat schema; it is now the row's time parsed in Python
(``_age_days``) on PostgreSQL; SQLite keeps the SQL form, where julianday
is native and a little quicker. This times both on one store, interleaved,
and checks they agree to the millisecond:

    .venv/bin/python bench/bench_priors.py [--db postgresql://…] [--n 3000] [--ids 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from datetime import datetime, timezone

from places import Places

from plugin_sdk import Store, validate_pack
from plugin_sdk.store.search.ranking import _age_days
from plugin_sdk.testing import pack_document

READ = """SELECT m.id, coalesce(m.occurred_at, m.created_at) AS at{age}, c.strength
          FROM memories m LEFT JOIN memory_cells c ON c.memory_id = m.id
          WHERE m.id IN (SELECT value FROM json_each(?))"""
IN_SQL = ", max(0.0, julianday(?) - julianday(coalesce(m.occurred_at, m.created_at)))"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="a postgresql:// URL (default: a SQLite file)")
    parser.add_argument("--n", type=int, default=3000, help="memories in the store")
    parser.add_argument("--ids", type=int, default=200, help="candidates a read asks for")
    parser.add_argument("--reps", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        places = Places(folder, args.db)
        try:
            run(places.new("priors.db"), args)
        finally:
            places.close()


def run(location: str, args: argparse.Namespace) -> None:
    pack = validate_pack(
        pack_document("bench", "1.0.0", {"BENCH_NOTES": "content"}), source="bench"
    )
    with Store(location, project="bench") as store:
        store.packs.install(pack)
        items = [
            {
                "content": f"note {i} about ferry {i % 97}",
                "category": "BENCH_NOTES",
                "occurred_at": f"2026-0{1 + i % 9}-1{i % 10}T10:00:00+00:00",
            }
            for i in range(args.n)
        ]
        store.memories.write_many(items)
        ids = json.dumps(list(range(1, args.n + 1, max(1, args.n // args.ids)))[: args.ids])
        now = datetime.now(timezone.utc)
        in_sql, in_python = [], []
        for _ in range(args.reps):
            begun = time.perf_counter()
            old = store.db.execute(READ.format(age=IN_SQL), [now.isoformat(), ids]).fetchall()
            in_sql.append(time.perf_counter() - begun)
            begun = time.perf_counter()
            rows = store.db.execute(READ.format(age=""), [ids]).fetchall()
            ages = {row[0]: _age_days(row[1], now) for row in rows}
            in_python.append(time.perf_counter() - begun)
            assert all(abs(row[2] - ages[row[0]]) * 86400 < 0.002 for row in old)
        a, b = statistics.median(in_sql), statistics.median(in_python)
        print(f"{store.engine}, {len(rows)} candidates of {args.n}, load {os.getloadavg()[0]:.1f}")
        print(f"  julianday in SQL (before): median {a * 1e3:.2f} ms")
        print(f"  ages in Python (now):      median {b * 1e3:.2f} ms   ({a / b:.2f}x faster)")


if __name__ == "__main__":
    main()
