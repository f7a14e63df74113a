"""The owner of observations, entity_observations: every statement that touches them.

An observation arrives ``queued`` (or ``invalid``), the Retain Job settles it
(``retained``, ``dark``, ``failed``...; :data:`OUTCOME`, one statement for the
single and the batched job), review decides a dark one. Its links to the
entities it names (:data:`LINK`) are held while it waits for review. Retention
(:meth:`ObservationRows.prune`) is in ``observation_prune.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

Row = Sequence[Any]

# The Retain Job's outcome of one observation (status, schema_fit, route, handler,
# memory_id, duplicate, half_life_days, deferred, processed_at, project, id).
OUTCOME = """UPDATE observations SET status = ?, schema_fit = ?, route = ?, handler = ?,
                  memory_id = ?, duplicate = ?, half_life_days = ?, deferred = ?,
                  processed_at = ?, error = NULL
              WHERE project = ? AND id = ?"""

LINK = """INSERT OR IGNORE INTO entity_observations (entity_id, project, observation_id, role,
              category, topic, at, created, held) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"""

_LATEST = """SELECT o.id, o.timestamp, o.category, o.topic,
                    json_extract(o.document, '$.payload_typed.text')
             FROM entity_observations l JOIN observations o
                  ON o.project = l.project AND o.id = l.observation_id
             WHERE l.entity_id = ? AND l.held = 0
             ORDER BY l.at DESC, l.observation_id DESC LIMIT ?"""

_LATEST_LINKS = """SELECT observation_id, at, category, topic, project FROM entity_observations
                   WHERE entity_id = ? AND held = 0
                   ORDER BY at DESC, observation_id DESC LIMIT ?"""

_INSERT = """INSERT INTO observations (project, id, status, source, source_ref, timestamp,
               category, topic, sentiment, correlation, content_hash, error, received_at, document)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""

_LINKED_BY = ("topic", "category")

RECENT = 10  # the truth digest's latest observations (retain/truth.py RECENT_OBSERVATIONS)

# The project's prunable observations: retained, received before the cut-off,
# named by no fact and by no entity's latest RECENT links.
_PRUNABLE = """SELECT o.id FROM observations o
    WHERE o.project = :project AND o.status = 'retained' AND o.received_at < :before
      AND NOT EXISTS (SELECT 1 FROM facts f
                      WHERE f.project = o.project AND f.observation_id = o.id)
      AND NOT EXISTS (
          SELECT 1 FROM entity_observations l
          WHERE l.project = o.project AND l.observation_id = o.id AND l.held = 0
            AND (SELECT count(*) FROM entity_observations n
                 WHERE n.entity_id = l.entity_id AND n.held = 0
                   AND (n.at > l.at OR (n.at = l.at AND n.observation_id > l.observation_id))
                ) < :recent)"""


@attrs.frozen
class Pruned:
    """What a prune removed (or would remove, for a dry run) and what it kept."""

    pruned: int
    kept_for_facts: int
    kept_for_truths: int
    dry_run: bool


class ObservationRows:
    """Statements on observations, entity_observations; reached as ``store.tables.observations``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # The inbox

    def states(self, project: str, ids: Sequence[str]) -> list[tuple[str, str, str, str | None]]:
        """(id, status, content_hash, error) of those of ``ids`` already stored."""
        return self.db.conn.execute(
            f"""SELECT id, status, content_hash, error FROM observations
                WHERE project = ? AND id IN ({", ".join("?" * len(ids))})""",
            [project, *ids],
        ).fetchall()

    def replace_many(self, replaced: Iterable[Row], rows: Iterable[Row]) -> None:
        """Delete the (project, id) rows ``replaced``, then insert ``rows`` (14 columns each)."""
        conn = self.db.conn
        conn.executemany("DELETE FROM observations WHERE project = ? AND id = ?", replaced)
        conn.executemany(_INSERT, rows)

    def queued_count(self, project: str) -> int:
        """Observations of the project waiting in the inbox."""
        row = self.db.conn.execute(
            "SELECT count(*) FROM observations WHERE project = ? AND status = 'queued'",
            [project],
        ).fetchone()
        return int(row[0])

    def requeue_failed(self, project: str) -> int:
        """Put the project's failed observations back in the inbox; how many."""
        cursor = self.db.execute(
            """UPDATE observations SET status = 'queued', error = NULL
               WHERE project = ? AND status = 'failed'""",
            [project],
        )
        return cursor.rowcount

    def queued(self, project: str, size: int) -> list[tuple[str, str]]:
        """(id, document) of up to ``size`` queued observations, oldest first."""
        return self.db.conn.execute(
            """SELECT id, document FROM observations WHERE project = ? AND status = 'queued'
               ORDER BY rowid LIMIT ?""",
            [project, size],
        ).fetchall()

    # Outcomes

    def set_outcome(self, outcome: Row) -> None:
        """One observation's outcome (:data:`OUTCOME`'s parameters)."""
        self.db.execute(OUTCOME, list(outcome))

    def set_outcomes(self, outcomes: Iterable[Row]) -> None:
        """A batch's outcomes, one ``executemany``."""
        self.db.conn.executemany(OUTCOME, outcomes)

    def set_failed(self, project: str, ident: str, message: str, now: str) -> None:
        """The observation failed with ``message``."""
        self.db.conn.execute(
            """UPDATE observations SET status = 'failed', error = ?, processed_at = ?
               WHERE project = ? AND id = ?""",
            [message, now, project, ident],
        )

    def decide(self, project: str, ident: str, status: str, review: str, now: str,
               reason: str | None) -> int:  # fmt: skip
        """Review's decision on a dark observation; 0 when it is no longer dark."""
        return self.db.execute(
            """UPDATE observations SET status = ?, review = ?, reviewed_at = ?, error = ?
               WHERE project = ? AND id = ? AND status = 'dark'""",
            [status, review, now, reason, project, ident],
        ).rowcount

    # Reads

    def get(self, project: str, ident: str) -> dict[str, Any] | None:
        """The observation's row, or ``None``."""
        rows = list(
            self.db.query(
                "SELECT * FROM observations WHERE project = ? AND id = ?", [project, ident]
            )
        )
        return rows[0] if rows else None

    def listing(self, project: str, status: str | None, limit: int | None) -> list[dict[str, Any]]:
        """The project's rows in arrival order, optionally of one status, at most ``limit``."""
        sql = "SELECT * FROM observations WHERE project = ?"
        params: list[Any] = [project]
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        sql += " ORDER BY rowid"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return list(self.db.query(sql, params))

    def counts(self, project: str) -> list[tuple[str, int]]:
        """(status, count) of the project's observations."""
        return self.db.execute(
            "SELECT status, count(*) FROM observations WHERE project = ? GROUP BY status",
            [project],
        ).fetchall()

    def deferred(self, project: str, ident: str) -> str | None:
        """The deferred relations (JSON) the job kept for a dark observation."""
        return self.db.execute(
            "SELECT deferred FROM observations WHERE project = ? AND id = ?", [project, ident]
        ).fetchone()[0]

    def texts(self, project: str, idents: Sequence[str]) -> list[tuple[str, str]]:
        """(id, text) of those of ``idents`` that exist."""
        return self.db.conn.execute(
            f"""SELECT id, json_extract(document, '$.payload_typed.text') FROM observations
                WHERE project = ? AND id IN ({", ".join("?" * len(idents))})""",
            [project, *idents],
        ).fetchall()

    def snapshot(self) -> list[tuple[Any, ...]]:
        """Every observation's outcome, clock-free (``retain/end_state.py``)."""
        return self.db.conn.execute(
            """SELECT id, status, schema_fit, route, handler, memory_id, duplicate,
                      half_life_days, deferred, error FROM observations ORDER BY id"""
        ).fetchall()

    # Links to entities

    def link_many(self, rows: Iterable[Row]) -> None:
        """Link observations to the entities they name (:data:`LINK`'s parameters)."""
        self.db.conn.executemany(LINK, rows)

    def release_links(self, project: str, ident: str) -> None:
        """An accepted observation's links stop being held."""
        self.db.execute(
            "UPDATE entity_observations SET held = 0 WHERE project = ? AND observation_id = ?",
            [project, ident],
        )

    def unlink(self, project: str, ident: str) -> None:
        """A rejected observation names no entity."""
        self.db.execute(
            "DELETE FROM entity_observations WHERE project = ? AND observation_id = ?",
            [project, ident],
        )

    def linked(self, entity_id: int, column: str, value: str) -> bool:
        """Whether a retained observation on ``value`` (a topic or category) names the entity."""
        if column not in _LINKED_BY:
            raise ValueError(f"links are looked up by topic or category, not {column!r}")
        return (
            self.db.conn.execute(
                f"""SELECT 1 FROM entity_observations
                    WHERE entity_id = ? AND {column} = ? AND held = 0 LIMIT 1""",
                [entity_id, value],
            ).fetchone()
            is not None
        )

    def latest(self, entity_id: int, limit: int) -> list[tuple[Any, ...]]:
        """(id, timestamp, category, topic, text) of the entity's latest retained observations."""
        return self.db.conn.execute(_LATEST, [entity_id, limit]).fetchall()

    def latest_links(self, entity_id: int, limit: int) -> list[tuple[Any, ...]]:
        """(observation id, at, category, topic, project) of the entity's latest links."""
        return self.db.conn.execute(_LATEST_LINKS, [entity_id, limit]).fetchall()

    def links_snapshot(self) -> list[tuple[Any, ...]]:
        """Every link, clock-free (``retain/end_state.py``)."""
        return self.db.conn.execute(
            """SELECT entity_id, observation_id, role, category, topic,
                      created, held FROM entity_observations ORDER BY 1, 2"""
        ).fetchall()

    # Retention

    def keep_days(self) -> int | None:
        """The store's retention in days, or ``None`` when it is not set (the default applies)."""
        row = self.db.conn.execute("SELECT keep_days FROM observation_retention").fetchone()
        return int(row[0]) if row else None

    def set_keep_days(self, days: int, now: str) -> None:
        """Set the store's retention in days."""
        self.db.execute(
            """INSERT INTO observation_retention (id, keep_days, updated_at) VALUES (1, ?, ?)
               ON CONFLICT (id) DO UPDATE SET keep_days = excluded.keep_days,
                   updated_at = excluded.updated_at""",
            [days, now],
        )

    def pruned_states(self, project: str, ids: Sequence[str]) -> list[tuple[str, str]]:
        """(id, content_hash) of those of ``ids`` pruned already."""
        return self.db.conn.execute(
            f"""SELECT id, content_hash FROM observation_tombstones
                WHERE project = ? AND id IN ({", ".join("?" * len(ids))})""",
            [project, *ids],
        ).fetchall()

    def prune(self, project: str, before: str, now: str, *, dry_run: bool = False) -> Pruned:
        """Prune the project's observations received before ``before`` (see the module
        docstring; call inside a transaction)."""
        params = {"project": project, "before": before, "recent": RECENT}
        self.db.conn.execute("CREATE TEMP TABLE IF NOT EXISTS prune_ids (id TEXT PRIMARY KEY)")
        self.db.conn.execute("DELETE FROM temp.prune_ids")
        self.db.conn.execute(f"INSERT INTO temp.prune_ids {_PRUNABLE}", params)
        (pruned,) = self.db.conn.execute("SELECT count(*) FROM temp.prune_ids").fetchone()
        (old,) = self.db.conn.execute(
            """SELECT count(*) FROM observations WHERE project = ? AND status = 'retained'
               AND received_at < ?""",
            [project, before],
        ).fetchone()
        (for_facts,) = self.db.conn.execute(
            """SELECT count(*) FROM observations o WHERE o.project = ? AND o.status = 'retained'
               AND o.received_at < ? AND EXISTS (SELECT 1 FROM facts f
                   WHERE f.project = o.project AND f.observation_id = o.id)""",
            [project, before],
        ).fetchone()
        if not dry_run:
            self.db.conn.execute(
                """INSERT INTO observation_tombstones
                       (project, id, content_hash, received_at, pruned_at)
                   SELECT project, id, content_hash, received_at, ? FROM observations
                   WHERE project = ? AND id IN (SELECT id FROM temp.prune_ids)
                   ON CONFLICT (project, id) DO UPDATE SET content_hash = excluded.content_hash,
                       received_at = excluded.received_at, pruned_at = excluded.pruned_at""",
                [now, project],
            )
            self.db.conn.execute(
                "DELETE FROM observations WHERE project = ? AND id IN (SELECT id FROM temp.prune_ids)",
                [project],
            )
        self.db.conn.execute("DELETE FROM temp.prune_ids")
        return Pruned(int(pruned), int(for_facts), int(old - pruned - for_facts), dry_run)
