"""The per-week cache of term document frequencies (``term_week_stats``,
``term_week_definitions``, ``term_week_repeats``, ``term_weeks``).

The trending section counts, for each ISO week it reads, the papers of each term; a busy
week has millions of ``paper_terms`` rows. ``term_week_stats`` holds those counts per
(week, term) with a key of the set of the term's papers, ``term_week_definitions`` the
parenthesised words that may define acronyms, ``term_week_repeats`` the rows of terms used
twice or more in a paper (the example papers), and ``term_weeks`` the fingerprint
of each week they were counted from (``sql/tables/term_weeks.sql``). A week is used from the
cache only while its fingerprint is unchanged: any write of a paper's terms, a paper added
or removed, a re-keyed or rebuilt file changes it, and the week is counted again.

- :func:`stale_term_weeks`: the weeks whose cached counts are missing or out of date;
- :func:`refresh_term_weeks`: count those weeks again (after a load, or before a report).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb

from paperwatch import db


@dataclass(frozen=True, slots=True)
class WeekFingerprint:
    """A week as it is now: papers with extracted terms, the hash of their
    ``paper_terms_extracted`` rows, and its ``paper_terms`` rows."""

    week: str
    papers: int
    extracted: int
    term_rows: int


def stale_term_weeks(
    con: duckdb.DuckDBPyConnection, weeks: list[str] | None = None
) -> list[WeekFingerprint]:
    """The weeks of ``weeks`` (all when None) whose cached counts are missing or out of date
    (``sql/queries/term_weeks_stale.sql``), with their fingerprint now, by week. A week
    without papers or terms is never stale unless it is cached.

    Raises:
        duckdb.CatalogException: the database has no cache tables (an older schema).
    """
    rows = con.execute(db.read_sql("queries", "term_weeks_stale"), {"weeks": weeks}).fetchall()
    return [WeekFingerprint(str(w), int(p), int(x), int(r)) for w, p, x, r in rows]


def refresh_term_weeks(
    con: duckdb.DuckDBPyConnection, weeks: list[str] | None = None, at: datetime | None = None
) -> list[str]:
    """Count the stale weeks of ``weeks`` (all when None) again into ``term_week_stats``,
    ``term_week_definitions`` and ``term_week_repeats`` and record their fingerprints in
    ``term_weeks``, in one transaction.

    Args:
        con: a read-write connection with the schema applied.
        at: recorded as ``computed_at`` (aware; now when None).

    Returns:
        The weeks counted again, by week (empty when the cache was up to date).

    Raises:
        duckdb.Error: a read or write failed (rolled back).
    """
    when = at or datetime.now(UTC)
    with db.transaction(con):
        stale = stale_term_weeks(con, weeks)
        for week in stale:
            params = {"week": week.week}
            con.execute(db.read_sql("queries", "delete_term_week_stats"), params)
            con.execute(db.read_sql("queries", "delete_term_week_definitions"), params)
            con.execute(db.read_sql("queries", "delete_term_week_repeats"), params)
            if week.papers == 0 and week.term_rows == 0:
                con.execute(db.read_sql("queries", "delete_term_week"), params)
                continue
            con.execute(db.read_sql("queries", "insert_term_week_stats"), params)
            con.execute(db.read_sql("queries", "insert_term_week_definitions"), params)
            con.execute(db.read_sql("queries", "insert_term_week_repeats"), params)
            con.execute(
                db.read_sql("queries", "upsert_term_week"),
                {
                    "week": week.week,
                    "papers": week.papers,
                    "extracted": week.extracted,
                    "term_rows": week.term_rows,
                    "at": when,
                },
            )
    return [week.week for week in stale]


def cache_is_current(con: duckdb.DuckDBPyConnection, weeks: list[str]) -> bool:
    """True when every week of ``weeks`` can be read from the cache as it is (False, too,
    when the database has no cache tables)."""
    try:
        return not stale_term_weeks(con, weeks)
    except duckdb.CatalogException:
        return False
