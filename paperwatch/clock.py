"""Time: the run's clock ("as of"), ISO weeks in the configured time zone.

A week is an ISO 8601 week (Monday to Sunday) written ``YYYY-Www`` (``2026-W48``),
determined in the configured IANA time zone. Stored timestamps are UTC
``timestamptz``; backfills and tests set the clock with ``--as-of`` instead of
sleeping.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, tzinfo

_WEEK = re.compile(r"\A(?P<year>\d{4})-W(?P<week>\d{2})\Z")
# ISO years a report can cover: it reads up to 104 earlier weeks (the baseline) and ends
# at the next Monday, and Python's dates stop at the years 1 and 9999.
FIRST_YEAR, LAST_YEAR = 1900, 9998


def now_utc() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


def parse_as_of(value: str | None, tz: tzinfo) -> datetime:
    """Parse an ISO 8601 date or date-time into an aware UTC datetime.

    ``None`` gives the current time. A value without an offset (``2026-11-23`` or
    ``2026-11-23T09:00``) is read in ``tz``; a date alone means its midnight.

    Raises:
        ValueError: the value is not ISO 8601, or its year is outside
            ``FIRST_YEAR``-``LAST_YEAR``.
    """
    if value is None:
        return now_utc()
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"--as-of {value!r} is not an ISO 8601 date or date-time (e.g. 2026-11-23T09:00)"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=tz)
    try:
        moment = parsed.astimezone(UTC)
    except OverflowError:
        moment = None
    if moment is None or not FIRST_YEAR <= moment.year <= LAST_YEAR:
        raise ValueError(
            f"--as-of {value!r} is outside the years {FIRST_YEAR}-{LAST_YEAR} paperwatch reports on"
        )
    return moment


def iso_week(moment: datetime, tz: tzinfo) -> str:
    """The ISO week (``YYYY-Www``) of an aware datetime, as seen in ``tz``.

    Raises:
        ValueError: ``moment`` is naive.
    """
    if moment.tzinfo is None:
        raise ValueError("iso_week needs an aware datetime")
    year, week, _ = moment.astimezone(tz).isocalendar()
    return f"{year:04d}-W{week:02d}"


def after_tomorrow(moment: datetime, now: datetime, tz: tzinfo) -> date | None:
    """Tomorrow's date in ``tz`` when ``moment`` falls on a later day there, else None.

    The bound of ``--as-of`` without ``--allow-future``: any time today or tomorrow (a
    clock a little ahead, a file dated in another zone) is accepted; a later day is not.

    Raises:
        ValueError: ``moment`` or ``now`` is naive.
    """
    if moment.tzinfo is None or now.tzinfo is None:
        raise ValueError("after_tomorrow needs aware datetimes")
    tomorrow = now.astimezone(tz).date() + timedelta(days=1)
    return tomorrow if moment.astimezone(tz).date() > tomorrow else None


def parse_week(week: str) -> tuple[int, int]:
    """Split ``YYYY-Www`` into (ISO year, ISO week), checking the week exists.

    Raises:
        ValueError: not exactly of that form (white space around it too: the week names
            the report's files), week 53 in a year that has 52, or a year outside
            ``FIRST_YEAR``-``LAST_YEAR``.
    """
    match = _WEEK.match(week)
    if not match:
        raise ValueError(f"week {week!r} is not an ISO week like 2026-W48")
    year, number = int(match.group("year")), int(match.group("week"))
    if not FIRST_YEAR <= year <= LAST_YEAR:
        raise ValueError(
            f"week {week!r} is outside the ISO years {FIRST_YEAR}-{LAST_YEAR} paperwatch reports on"
        )
    try:
        date.fromisocalendar(year, number, 1)
    except ValueError:
        raise ValueError(
            f"week {week!r} does not exist (ISO year {year} has no week {number})"
        ) from None
    return year, number


def week_days(week: str) -> tuple[date, date]:
    """The Monday and Sunday of ``week``."""
    year, number = parse_week(week)
    return date.fromisocalendar(year, number, 1), date.fromisocalendar(year, number, 7)


def shift_week(week: str, weeks: int) -> str:
    """The ISO week ``weeks`` before (negative) or after (positive) ``week``."""
    year, number = parse_week(week)
    monday = date.fromisocalendar(year, number, 1) + timedelta(weeks=weeks)
    iso_year, iso_number, _ = monday.isocalendar()
    return f"{iso_year:04d}-W{iso_number:02d}"


def previous_week(moment: datetime, tz: tzinfo) -> str:
    """The ISO week that ended before the week of ``moment`` (what a Monday report covers)."""
    return shift_week(iso_week(moment, tz), -1)


def previous_weeks(week: str, count: int) -> list[str]:
    """The ``count`` ISO weeks before ``week``, oldest first.

    Works across year boundaries and 53-week years: ``previous_weeks("2027-W01", 5)``
    is ``["2026-W49", "2026-W50", "2026-W51", "2026-W52", "2026-W53"]``.

    Raises:
        ValueError: ``week`` is not a valid ISO week, or ``count`` is negative.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    parse_week(week)
    return [shift_week(week, -k) for k in range(count, 0, -1)]


def week_monday(week: str) -> date:
    """The Monday of ``week``."""
    return week_days(week)[0]
