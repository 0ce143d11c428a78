"""Per-paper terms and weekly trending terms in DuckDB.

The work is done by the pure functions of :mod:`paperwatch.terms`; this module holds the
small DuckDB I/O around them:

- :func:`update_paper_terms` fills ``paper_terms`` (and ``paper_terms_extracted``) for papers
  not extracted yet — call it after each load;
- :func:`trending_terms_for_week` scores a week against its baseline weeks, returns a
  :class:`TrendingResult` for the report and (with ``persist=True``) stores the rows in the
  ``trending_terms`` table for ad-hoc SQL.

Weeks are ISO week strings ``YYYY-Www`` (``papers.first_seen_week``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import duckdb
import polars as pl

from paperwatch import db
from paperwatch.clock import previous_weeks
from paperwatch.db import read_sql
from paperwatch.settings import Settings
from paperwatch.terms import (
    BATCH_SIZE,
    EXTRACTOR_VERSION,
    bar_percentages,
    extract_terms,
    frequent_terms,
    score_trending_terms,
)


@dataclass(frozen=True, slots=True)
class ExamplePaper:
    """A paper of the week that uses a term: its id, method name (or None), first sentence."""

    paper_id: str
    method_name: str | None
    first_sentence: str


@dataclass(frozen=True, slots=True)
class TrendingTerm:
    """One row of the trending section.

    Attributes:
        term: canonical term.
        direction: 'rising', 'falling' or 'frequent' (no baseline: not a trend).
        rank: 1-based within its direction.
        papers_week: papers of the week with the term.
        papers_baseline: papers of the baseline weeks with it (None for 'frequent').
        rate_week: papers_week / papers of the week (0-1).
        rate_baseline: papers_baseline / papers of the baseline (None for 'frequent').
        delta_log_odds: the log-odds ratio δ (None for 'frequent').
        score: the z-score (None for 'frequent').
        new_this_week: no paper of the baseline has the term (False for 'frequent').
        bar_pct: bar width 0-100 (%): |score| (or papers, for 'frequent') against the
            largest one of its list.
        examples: up to ``Settings.trending.examples_per_term`` papers of the week with it.
    """

    term: str
    direction: str
    rank: int
    papers_week: int
    papers_baseline: int | None
    rate_week: float
    rate_baseline: float | None
    delta_log_odds: float | None
    score: float | None
    new_this_week: bool
    bar_pct: int
    examples: tuple[ExamplePaper, ...] = ()


@dataclass(frozen=True, slots=True)
class TrendingResult:
    """The trending terms of one ISO week, as the report shows them.

    Attributes:
        week: the ISO week, e.g. '2026-W48'.
        has_baseline: the baseline weeks hold at least one paper (and the week too); when
            False, ``rising`` and ``falling`` are empty and the report shows ``frequent``.
        baseline_weeks: the ISO weeks of the baseline, oldest first.
        papers_week: papers first seen in ``week``.
        papers_baseline: papers first seen in the baseline weeks.
        rising: the top ``Settings.trending.top_n`` rising terms (rank 1 first).
        falling: the top ``top_n`` falling terms.
        frequent: the ``top_n`` most frequent terms of the week (always computed).
        min_support: the minimum support used.
    """

    week: str
    has_baseline: bool
    baseline_weeks: list[str]
    papers_week: int
    papers_baseline: int
    rising: list[TrendingTerm] = field(default_factory=list)
    falling: list[TrendingTerm] = field(default_factory=list)
    frequent: list[TrendingTerm] = field(default_factory=list)
    min_support: int = 1

    @property
    def examples(self) -> dict[str, tuple[ExamplePaper, ...]]:
        """Example papers by term, for every shown term."""
        return {row.term: row.examples for row in (*self.rising, *self.falling, *self.frequent)}


# --- paper_terms -------------------------------------------------------------


def update_paper_terms(con: duckdb.DuckDBPyConnection, paper_ids: list[str] | None = None) -> int:
    """Extract and store the terms of papers not extracted yet (or by an older rule version).

    Reads ``papers`` (restricted to ``paper_ids`` when given), runs
    :func:`paperwatch.terms.extract_terms` in batches of :data:`paperwatch.terms.BATCH_SIZE`,
    and for each batch, in one transaction, replaces those papers' rows of ``paper_terms``
    and records them in ``paper_terms_extracted`` (bulk insert from Arrow). Idempotent.

    Args:
        con: a read-write connection with the schema applied (:func:`paperwatch.db.writer`).
        paper_ids: only these papers (ids not in ``papers`` are ignored); None for all.

    Returns:
        The number of papers whose terms were extracted by this call.

    Raises:
        duckdb.Error: a read or write failed (the failing batch is rolled back).
    """
    pending = con.sql(
        read_sql("queries", "papers_needing_terms"),
        params={"version": EXTRACTOR_VERSION, "paper_ids": paper_ids},
    ).pl()
    done = 0
    for offset in range(0, pending.height, BATCH_SIZE):
        batch = pending.slice(offset, BATCH_SIZE)
        terms = extract_terms(batch)
        counts = _term_counts(batch, terms)
        _store_paper_terms(con, batch.select("paper_id"), _with_weeks(terms, batch), counts)
        done += batch.height
    return done


def store_new_paper_terms(
    con: duckdb.DuckDBPyConnection, papers: pl.DataFrame, terms: pl.DataFrame
) -> int:
    """Store terms extracted elsewhere for papers that have none yet (just inserted).

    Inserts only (no delete: the papers are new), in one transaction, so the cost does
    not grow with ``paper_terms``. Used by the batch loader with terms extracted where
    the files were cleaned (:func:`paperwatch.batches.store_batch_terms`).

    Args:
        papers: columns ``paper_id`` and ``first_seen_week`` (the papers, with or without
            terms).
        terms: columns ``paper_id``, ``term``, ``n`` as :func:`extract_terms` returns them,
            and ``first_seen_week`` when the caller has it already.

    Returns:
        The number of papers recorded in ``paper_terms_extracted``.
    """
    counts = _term_counts(papers, terms)
    _store_paper_terms(con, None, _with_weeks(terms, papers), counts)
    return counts.height


def _with_weeks(terms: pl.DataFrame, papers: pl.DataFrame) -> pl.DataFrame:
    """``terms`` with each paper's ``first_seen_week`` from ``papers`` (rows in order)."""
    if "first_seen_week" in terms.columns:
        return terms
    weeks = papers.select("paper_id", "first_seen_week")
    return terms.join(weeks, on="paper_id", how="left", maintain_order="left")


def _term_counts(papers: pl.DataFrame, terms: pl.DataFrame) -> pl.DataFrame:
    """One ``paper_terms_extracted`` row per paper: how many terms it has (0 when none)."""
    return (
        papers.select("paper_id")
        .join(terms.group_by("paper_id").agg(terms=pl.len()), on="paper_id", how="left")
        .select(
            "paper_id",
            extractor_version=pl.lit(EXTRACTOR_VERSION, dtype=pl.Int32),
            terms=pl.col("terms").fill_null(0).cast(pl.Int32),
            extracted_at=pl.lit(datetime.now(UTC)),
        )
    )


def _store_paper_terms(
    con: duckdb.DuckDBPyConnection,
    ids: pl.DataFrame | None,
    terms: pl.DataFrame,
    counts: pl.DataFrame,
) -> None:
    """Write ``terms`` and ``counts`` in one transaction; with ``ids``, first delete what
    those papers had (re-extraction). Without ``ids`` (new papers) it only inserts, so its
    cost does not grow with ``paper_terms``."""
    frames = {"_pw_terms": terms, "_pw_counts": counts} | (
        {"_pw_ids": ids} if ids is not None else {}
    )
    with db.transaction(con):
        try:
            for name, frame in frames.items():
                con.register(name, frame.to_arrow())
            if ids is not None:
                con.execute(
                    "delete from paper_terms where paper_id in (select paper_id from _pw_ids)"
                )
                con.execute(
                    "delete from paper_terms_extracted where paper_id in (select paper_id from _pw_ids)"
                )
            con.execute(
                "insert into paper_terms (paper_id, term, n, first_seen_week) "
                "select paper_id, term, n, first_seen_week from _pw_terms"
            )
            con.execute(
                "insert into paper_terms_extracted (paper_id, extractor_version, terms, extracted_at) "
                "select paper_id, extractor_version, terms, extracted_at from _pw_counts"
            )
        finally:
            for name in frames:
                con.unregister(name)


# --- weekly scores -----------------------------------------------------------


def _paper_count(con: duckdb.DuckDBPyConnection, weeks: list[str]) -> int:
    rows = con.execute(read_sql("queries", "week_paper_counts"), {"weeks": weeks}).fetchall()
    return int(sum(row[1] for row in rows))


def _document_frequencies(
    con: duckdb.DuckDBPyConnection,
    week: str,
    baseline_weeks: list[str],
    n_week: int,
    n_baseline: int,
    min_support: int,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(week, baseline) frames of columns ``term``, ``papers`` (Int64) with the terms that can
    pass ``min_support`` (``sql/queries/term_document_frequencies.sql``)."""
    weeks = [week, *baseline_weeks]
    params = {
        "week": week,
        "baseline": baseline_weeks,
        "first": min(weeks),
        "last": max(weeks),
        "min_support": min_support,
        "n_week": n_week,
        "n_baseline": n_baseline,
    }
    both = con.sql(read_sql("queries", "term_document_frequencies"), params=params).pl()
    frames = []
    for column in ("papers_week", "papers_baseline"):
        if both.height == 0:
            frames.append(pl.DataFrame(schema={"term": pl.String, "papers": pl.Int64}))
            continue
        frames.append(
            both.filter(pl.col(column) > 0).select("term", papers=pl.col(column).cast(pl.Int64))
        )
    return frames[0], frames[1]


def _examples(
    con: duckdb.DuckDBPyConnection, week: str, terms: list[str], per_term: int
) -> dict[str, tuple[ExamplePaper, ...]]:
    if not terms or per_term <= 0:
        return {}
    cursor = con.execute(
        read_sql("queries", "term_examples"),
        {"week": week, "terms": terms, "per_term": per_term},
    )
    found: dict[str, list[ExamplePaper]] = {}
    for term, paper_id, method_name, first_sentence in cursor.fetchall():
        found.setdefault(term, []).append(ExamplePaper(paper_id, method_name, first_sentence))
    return {term: tuple(papers) for term, papers in found.items()}


def _rows(df: pl.DataFrame, direction: str, score_column: str | None) -> list[dict[str, Any]]:
    rows = df.to_dicts()
    values = [float(r[score_column] if score_column else r["papers_week"]) for r in rows]
    for row, pct in zip(rows, bar_percentages(values), strict=True):
        row["bar_pct"] = pct
        row["direction"] = direction
    return rows


def _term(row: dict[str, Any], examples: dict[str, tuple[ExamplePaper, ...]]) -> TrendingTerm:
    frequent = row["direction"] == "frequent"
    return TrendingTerm(
        term=row["term"],
        direction=row["direction"],
        rank=int(row["rank"]),
        papers_week=int(row["papers_week"]),
        papers_baseline=None if frequent else int(row["papers_baseline"]),
        rate_week=float(row["rate_week"]),
        rate_baseline=None if frequent else float(row["rate_baseline"]),
        delta_log_odds=None if frequent else float(row["delta_log_odds"]),
        score=None if frequent else float(row["z"]),
        new_this_week=False if frequent else bool(row["new_this_week"]),
        bar_pct=int(row["bar_pct"]),
        examples=examples.get(row["term"], ()),
    )


def trending_terms_for_week(
    con: duckdb.DuckDBPyConnection, week: str, settings: Settings, *, persist: bool = True
) -> TrendingResult:
    """Score the terms of ``week`` against the ``settings.trending.baseline_weeks`` before it.

    Reads ``papers`` and ``paper_terms`` (run :func:`update_paper_terms` first), scores with
    :func:`paperwatch.terms.score_trending_terms` (log-odds ratio with an informative
    Dirichlet prior, Monroe, Colaresi & Quinn 2008) and lists the week's most frequent terms
    with :func:`paperwatch.terms.frequent_terms`. With no paper in the week or in the
    baseline weeks, ``has_baseline`` is False and there are no rising/falling rows.

    Args:
        con: a DuckDB connection (read-only is enough when ``persist`` is False).
        week: ISO week ``YYYY-Www``.
        settings: uses ``trending.baseline_weeks``, ``min_support``, ``top_n``,
            ``prior_papers``, ``min_z`` and ``examples_per_term``.
        persist: replace the week's rows of the ``trending_terms`` table with every scored
            row (all significant rising and falling terms, or the top frequent terms when
            there is no baseline), in one transaction.

    Returns:
        A :class:`TrendingResult`; rows ranked deterministically (ties broken by term).

    Raises:
        ValueError: ``week`` is not a valid ISO week.
        duckdb.Error: a query failed (a read-only connection with ``persist=True``).
    """
    cfg = settings.trending
    baseline_weeks = previous_weeks(week, cfg.baseline_weeks)
    n_week = _paper_count(con, [week])
    n_baseline = _paper_count(con, baseline_weeks)
    has_baseline = n_week > 0 and n_baseline > 0
    week_df, baseline_df = _document_frequencies(
        con, week, baseline_weeks, n_week, n_baseline, cfg.min_support
    )

    scored = pl.DataFrame()
    rising_df = falling_df = pl.DataFrame()
    if has_baseline:
        scored = score_trending_terms(
            week_df,
            baseline_df,
            n_week,
            n_baseline,
            cfg.min_support,
            prior_papers=cfg.prior_papers,
            min_z=cfg.min_z,
        )
        rising_df = scored.filter(pl.col("direction") == "rising").head(cfg.top_n)
        falling_df = scored.filter(pl.col("direction") == "falling").head(cfg.top_n)
    frequent_df = (
        frequent_terms(week_df, n_week, cfg.min_support, cfg.top_n)
        if n_week > 0
        else pl.DataFrame(schema={"term": pl.String, "papers_week": pl.Int64})
    )

    shown = {
        "rising": _rows(rising_df, "rising", "z") if has_baseline else [],
        "falling": _rows(falling_df, "falling", "z") if has_baseline else [],
        "frequent": _rows(frequent_df, "frequent", None),
    }
    terms = sorted({row["term"] for rows in shown.values() for row in rows})
    examples = _examples(con, week, terms, cfg.examples_per_term)
    result = TrendingResult(
        week=week,
        has_baseline=has_baseline,
        baseline_weeks=baseline_weeks,
        papers_week=n_week,
        papers_baseline=n_baseline,
        rising=[_term(r, examples) for r in shown["rising"]],
        falling=[_term(r, examples) for r in shown["falling"]],
        frequent=[_term(r, examples) for r in shown["frequent"]],
        min_support=cfg.min_support,
    )
    if persist:
        store_trending_terms(con, result, scored if has_baseline else None)
    return result


def trending_rows(result: TrendingResult, scored: pl.DataFrame | None) -> pl.DataFrame:
    """Rows of the ``trending_terms`` table for a result (pure).

    Args:
        result: from :func:`trending_terms_for_week`.
        scored: every scored row (output of :func:`paperwatch.terms.score_trending_terms`)
            when the week has a baseline; None otherwise, and the frequent terms are stored.

    Returns:
        Columns of ``sql/tables/trending_terms.sql`` except ``computed_at``.
    """
    base = {"week": result.week, "min_support": result.min_support}
    if scored is not None:
        rows = scored.select(
            "term",
            "direction",
            "rank",
            "papers_week",
            "papers_baseline",
            "rate_week",
            "rate_baseline",
            "delta_log_odds",
            score=pl.col("z"),
            new_this_week=pl.col("new_this_week"),
        )
    else:
        rows = pl.DataFrame(
            [
                {
                    "term": r.term,
                    "direction": r.direction,
                    "rank": r.rank,
                    "papers_week": r.papers_week,
                    "papers_baseline": None,
                    "rate_week": r.rate_week,
                    "rate_baseline": None,
                    "delta_log_odds": None,
                    "score": None,
                    "new_this_week": False,
                }
                for r in result.frequent
            ],
            schema={
                "term": pl.String,
                "direction": pl.String,
                "rank": pl.Int64,
                "papers_week": pl.Int64,
                "papers_baseline": pl.Int64,
                "rate_week": pl.Float64,
                "rate_baseline": pl.Float64,
                "delta_log_odds": pl.Float64,
                "score": pl.Float64,
                "new_this_week": pl.Boolean,
            },
        )
    return rows.with_columns(
        week=pl.lit(base["week"]),
        baseline_weeks=pl.lit(result.baseline_weeks, dtype=pl.List(pl.String)),
        min_support=pl.lit(base["min_support"], dtype=pl.Int32),
    )


def store_trending_terms(
    con: duckdb.DuckDBPyConnection, result: TrendingResult, scored: pl.DataFrame | None
) -> None:
    """Replace the week's rows of ``trending_terms`` (one transaction, bulk insert from Arrow).

    Raises:
        duckdb.Error: the write failed (rolled back).
    """
    rows = trending_rows(result, scored).with_columns(computed_at=pl.lit(datetime.now(UTC)))
    con.execute("begin")
    try:
        con.register("_pw_trending", rows.to_arrow())
        con.execute("delete from trending_terms where week = ?", [result.week])
        con.execute(
            "insert into trending_terms (week, term, direction, rank, papers_week, "
            "papers_baseline, rate_week, rate_baseline, delta_log_odds, score, new_this_week, "
            "baseline_weeks, min_support, computed_at) select week, term, direction, rank, "
            "papers_week, papers_baseline, rate_week, rate_baseline, delta_log_odds, score, "
            "new_this_week, baseline_weeks, min_support, computed_at from _pw_trending"
        )
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    finally:
        con.unregister("_pw_trending")
