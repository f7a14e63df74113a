"""Retention: a prune keeps exactly what Compiled Truth and the conflicts need (issue 25 item 9)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin_sdk import Store
from plugin_sdk.retain import retention, truth
from plugin_sdk.retain.dark_matter import conflicts, pending
from plugin_sdk.retain.job import retain
from plugin_sdk.retain.observations import counts, observe
from tests.retain.test_retain import jsonl, obs
from tests.retain.test_retain_property import copy_of, observation_docs  # noqa: F401 (a fixture)


@st.composite
def long_streams(draw: Any) -> list[dict[str, Any]]:
    size = draw(st.integers(min_value=1, max_value=24))  # past the digest's 10 latest
    return [draw(observation_docs(f"obs-{i}")) for i in range(size)]


def answers(store: Store) -> dict[str, Any]:
    """What truth show, the conflicts and a rerun of the digest answer."""
    ids = [row[0] for row in store.db.execute("SELECT id FROM entities ORDER BY id")]
    return {
        "digests": {i: truth.digest(store, store.entities.get(i)) for i in ids},
        "truths": {i: [t.markdown for t in truth.history(store, i)] for i in ids},
        "conflicts": [c for c in conflicts(store, status=None)],
        "pending": [s.id for s in pending(store)],
    }


def statuses(store: Store) -> dict[str, str]:
    return dict(store.db.execute("SELECT id, status FROM observations").fetchall())


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(stream=long_streams(), late=st.integers(min_value=0, max_value=3))
def test_a_prune_keeps_what_truths_and_conflicts_need(copy_of, stream, late):  # noqa: F811
    store = copy_of()
    try:
        assert observe(store, jsonl(*stream)).ok
        retain(store, batch_size=4)
        queued = [f"late-{i}" for i in range(late)]  # observed, not yet retained
        assert observe(store, jsonl(*(obs(i, ["bird:heron:grey"], "Late.") for i in queued))).ok
        before, was = answers(store), statuses(store)
        dry = retention.prune(store, older_than=0, dry_run=True)
        assert statuses(store) == was
        report = retention.prune(store, older_than=0)
        assert report.pruned == dry.pruned
        assert answers(store) == before  # the digest rerun, truth show, conflicts: the same
        now = statuses(store)
        gone = set(was) - set(now)
        assert len(gone) == report.pruned
        assert all(was[i] == "retained" for i in gone)  # never queued, dark, failed...
        assert all(now[i] == "queued" for i in queued)
        facts = {row[0] for row in store.db.execute("SELECT observation_id FROM facts")}
        assert not gone & facts  # every fact's source can still be shown
        again = observe(store, jsonl(*stream))  # a pruned observation's replay stays a replay
        assert again.queued == [] and again.bad == []
        assert retain(store).processed == late
    finally:
        store.close()


def test_old_observations_past_the_latest_ten_are_pruned_and_recent_ones_kept(copy_of):  # noqa: F811
    store = copy_of()
    try:
        docs = [obs(f"o-{i}", ["bird:heron:grey"], f"Heron {i}.") for i in range(14)]
        assert observe(store, jsonl(*docs)).ok
        retain(store)
        assert retention.prune(store).pruned == 0  # within the default 30 days
        report = retention.prune(store, older_than=0)
        assert report.pruned == 4 and report.kept_for_truths == 10
        assert counts(store)["retained"] == 10
    finally:
        store.close()


def test_the_retention_is_a_store_setting_with_a_documented_default(copy_of):  # noqa: F811
    store = copy_of()
    try:
        assert retention.keep_days(store) == retention.DEFAULT_DAYS == 30
        retention.set_keep_days(store, 7)
        assert retention.keep_days(store) == 7
        with __import__("pytest").raises(Exception, match="at least 1 day"):
            retention.set_keep_days(store, 0)
    finally:
        store.close()
