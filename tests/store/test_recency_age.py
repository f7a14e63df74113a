"""The recency prior's age: computed in Python, equal to SQLite's julianday difference."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from plugin_sdk.store.search.ranking import _age_days

NOW = datetime(2026, 12, 2, 15, 0, tzinfo=timezone.utc)
MOMENTS = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(timezone.utc)
)
SPELLINGS = st.sampled_from(
    [
        lambda m: m.isoformat(),  # what memsdk stores: +00:00, microseconds
        lambda m: m.strftime("%Y-%m-%dT%H:%M:%SZ"),
        lambda m: m.strftime("%Y-%m-%d %H:%M:%S"),  # no zone: UTC, as SQLite reads it
        lambda m: m.strftime("%Y-%m-%d"),
    ]
)


@given(MOMENTS, SPELLINGS)
def test_the_age_is_sqlites_julianday_difference(moment: datetime, spell: object) -> None:
    text = spell(moment)  # type: ignore[operator]
    expected = (
        sqlite3.connect(":memory:")
        .execute("SELECT max(0.0, julianday(?) - julianday(?))", [NOW.isoformat(), text])
        .fetchone()[0]
    )
    age = _age_days(text, NOW)
    assert age is not None and expected is not None
    assert abs(age - expected) * 86400 < 0.002  # SQLite keeps milliseconds


def test_a_later_time_is_age_zero_and_text_that_is_no_time_has_none() -> None:
    assert _age_days((NOW + timedelta(days=3)).isoformat(), NOW) == 0.0
    assert _age_days("yesterday", NOW) is None
    assert _age_days(None, NOW) is None
    assert _age_days((NOW - timedelta(days=2)).isoformat(), NOW) == 2.0
