"""Time in queries: dates and relative times, read against the store's clock.

:func:`time_range` finds one time expression in a query and returns the span
it names, in UTC, as a half-open ``[start, end)`` pair of ISO 8601 strings
(an open side is ``None``):

- ISO dates: ``2025-05-03`` (that day), ``2025-05`` (that month);
- ``today``, ``yesterday``, ``this``/``last`` ``week``/``month``/``year``
  (weeks start on Monday), ``N days``/``weeks``/``months`` ``ago`` (that
  day, week or month);
- month names: ``in May``, ``May 2025``, ``on 12 May``, ``May 12th``; without
  a year, the latest such month not after the clock. ``May`` and ``March``
  count as months only next to a preposition, a day or a year ("may I"
  stays a word);
- ``before``/``after``/``since`` followed by any of the above: the open span
  on that side.

Search boosts memories whose ``occurred_at`` (else ``created_at``) falls in
the span (``docs/search.md``); it never drops the others, so a misread date
costs ranking, not results. Words that only say *when* (``yesterday``,
``last``, ``week``, ``ago``...) are returned in ``words`` so the caller can
leave them out of the text match.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import attrs

from plugin_sdk.errors import InvalidMemory

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_AMBIGUOUS = {"may", "march", "mar", "jan", "dec", "sep", "aug", "oct", "nov", "jun", "jul", "apr"}
_PREPOSITIONS = {"in", "on", "of", "during", "since", "before", "after", "until", "by", "from"}
TIME_WORDS = frozenset(
    {"today", "yesterday", "last", "this", "week", "month", "year", "ago", "days", "weeks"}
    | {"months", "day", "past", "recently", "lately"}
)
_TOKEN = re.compile(r"\d{4}-\d{2}(?:-\d{2})?|[^\W_]+")
_DAY = re.compile(r"(\d{1,2})(?:st|nd|rd|th)?")


@attrs.frozen
class TimeRange:
    """A span of time a query names; ``start``/``end`` are ISO strings or ``None``."""

    start: str | None
    end: str | None
    words: frozenset[str]
    phrase: str

    def contains(self, when: str | None) -> bool:
        if not when:
            return False
        return (self.start is None or when >= self.start) and (self.end is None or when < self.end)


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


def _month(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=timezone.utc)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=timezone.utc)
    return start, end


def _latest_month(now: datetime, month: int) -> tuple[datetime, datetime]:
    year = now.year if month <= now.month else now.year - 1
    return _month(year, month)


def _span(words: list[str], i: int, now: datetime) -> tuple[datetime, datetime, int] | None:
    """The span named by the expression starting at ``words[i]``, and its length."""
    word = words[i]
    nxt = words[i + 1] if i + 1 < len(words) else ""
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", word):
        try:
            day = datetime.strptime(word, "%Y-%m-%d").replace(tzinfo=timezone.utc)
        except ValueError:
            return None
        return day, day + timedelta(days=1), 1
    if re.fullmatch(r"\d{4}-\d{2}", word) and 1 <= int(word[5:]) <= 12:
        return (*_month(int(word[:4]), int(word[5:])), 1)
    if word == "today":
        return today, today + timedelta(days=1), 1
    if word == "yesterday":
        return today - timedelta(days=1), today, 1
    if word in ("this", "last", "past") and nxt in ("week", "month", "year"):
        back = word != "this"
        if nxt == "week":
            start = today - timedelta(days=today.weekday() + 7 * back)
            return start, start + timedelta(days=7), 2
        if nxt == "month":
            year, month = (
                (today.year, today.month - back) if today.month > back else (today.year - 1, 12)
            )
            return (*_month(year, month), 2)
        start = datetime(today.year - back, 1, 1, tzinfo=timezone.utc)
        return start, datetime(start.year + 1, 1, 1, tzinfo=timezone.utc), 2
    ago = words[i + 2] if i + 2 < len(words) else ""
    if word.isdigit() and ago == "ago" and int(word) < 1000:
        count = int(word)
        if nxt in ("day", "days"):
            start = today - timedelta(days=count)
            return start, start + timedelta(days=1), 3
        if nxt in ("week", "weeks"):
            start = today - timedelta(days=today.weekday() + 7 * count)
            return start, start + timedelta(days=7), 3
        if nxt in ("month", "months"):
            index = today.year * 12 + today.month - 1 - count
            return (*_month(index // 12, index % 12 + 1), 3)
    return _named_month(words, i, now)


def _named_month(words: list[str], i: int, now: datetime) -> tuple[datetime, datetime, int] | None:
    word = words[i]
    before = words[i - 1] if i > 0 else ""
    after = words[i + 1] if i + 1 < len(words) else ""
    day_before = bool(_DAY.fullmatch(before))
    month = MONTHS.get(word)
    if month is None:
        return None
    year_after = after.isdigit() and len(after) == 4
    day_after = bool(_DAY.fullmatch(after)) and not year_after
    if word in _AMBIGUOUS and not (
        before in _PREPOSITIONS or day_before or year_after or day_after
    ):
        return None
    if year_after:
        return (*_month(int(after), month), 2)
    return (*_latest_month(now, month), 1)


def time_range(text: str, now: datetime) -> TimeRange | None:
    """The first time expression in ``text``, read against ``now``; ``None`` if there is none."""
    words = [w.lower() for w in _TOKEN.findall(text)]
    for i in range(len(words)):
        found = _span(words, i, now)
        if found is None:
            continue
        start, end, length = found
        used = words[i : i + length]
        side = words[i - 1] if i > 0 else ""
        phrase = " ".join(used)
        if side == "before":
            start_iso, end_iso = None, _iso(start)
        elif side in ("after", "since"):
            start_iso, end_iso = _iso(end if side == "after" else start), None
        else:
            start_iso, end_iso = _iso(start), _iso(end)
        if side in ("before", "after", "since", "in", "on", "during"):
            phrase = f"{side} {phrase}"
        spent = frozenset(used) if TIME_WORDS.intersection(used) else frozenset()
        return TimeRange(start_iso, end_iso, spent, phrase)
    return None


def utc_iso(value: str | datetime | None) -> str | None:
    """An ISO 8601 time (or datetime) as the store keeps times: UTC, microseconds.

    A time without an offset is taken as UTC; a date alone is its midnight.
    """
    if value is None or value == "":
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = datetime.fromisoformat(text)
        except ValueError as error:
            raise InvalidMemory(f"occurred_at is not an ISO 8601 time: {value!r}") from error
    if not isinstance(value, datetime):
        raise InvalidMemory(f"occurred_at must be an ISO 8601 string or a datetime, got {value!r}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat(timespec="microseconds")
