"""Per-paper terms and weekly trending terms in DuckDB.

The work is done by the pure functions of :mod:`paperwatch.analysis.terms`; this module holds the
small DuckDB I/O around them:

- :func:`update_paper_terms` fills ``paper_terms`` (and ``paper_terms_extracted``) for papers
  not extracted yet — call it after each load;
- :func:`trending_terms_for_week` tests a week's terms against its baseline weeks
  (:func:`paperwatch.analysis.trend_stats.score_trending_terms`), returns a :class:`TrendingResult`
  for the report (new, rising and falling terms, or the distinctive terms of a first week,
  each with its weekly shares over the last :data:`CHART_WEEKS` weeks) and (with
  ``persist=True``) stores the rows in the ``trending_terms`` table for ad-hoc SQL.

Weeks are ISO week strings ``YYYY-Www`` (``papers.first_seen_week``).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import duckdb
import polars as pl

from paperwatch import db
from paperwatch.analysis.terms import BATCH_SIZE, EXTRACTOR_VERSION, acronym_aliases, extract_terms
from paperwatch.analysis.trend_stats import (
    bar_heights,
    distinctive_terms,
    load_english_frequencies,
    log2_label,
    merge_same_papers,
    score_trending_terms,
    sentence_with_term,
    weekly_shares,
)
from paperwatch.clock import previous_weeks
from paperwatch.db import read_sql
from paperwatch.db.term_weeks import cache_is_current, refresh_term_weeks
from paperwatch.settings import Settings, TrendingSettings

#: Weeks shown in each term's small chart: this week and the seven before.
CHART_WEEKS = 8

#: Abstracts read at most to find the acronyms the corpus defines (a sample is enough).
DEFINITION_SAMPLE = 2_000

#: The kinds of rows, in the order the report shows them.
KINDS = ("new", "rising", "falling", "distinctive")


@dataclass(frozen=True, slots=True)
class ExamplePaper:
    """A paper of the week that uses a term: its id, method name (or None), first sentence,
    and ``sentence``, its first sentence that uses the term (the first sentence when none
    does, :func:`paperwatch.analysis.trend_stats.sentence_with_term`)."""

    paper_id: str
    method_name: str | None
    first_sentence: str
    sentence: str = ""


@dataclass(frozen=True, slots=True)
class WeekShare:
    """One bar of a term's small chart: an ISO week, the share of its papers using the term
    (None: no papers that week) and the bar's height in pixels (0-24)."""

    week: str
    share: float | None
    height_px: int


@dataclass(frozen=True, slots=True)
class TrendingTerm:
    """One row of the trending section.

    Attributes:
        term: canonical term (an acronym the corpus defines counts as its expansion).
        direction: the kind: 'new', 'rising', 'falling', or 'distinctive' (no baseline: a
            term frequent this week and rare in general English, not a trend).
        rank: 1-based within its kind.
        papers_week: papers of the week with the term.
        papers_baseline: papers of the baseline weeks with it (None for 'distinctive').
        rate_week: papers_week / papers of the week (0-1).
        rate_baseline: papers_baseline / papers of the baseline (None for 'distinctive').
        log2_ratio: the effect size: log2 of the share this week over the share before
            (each smoothed by ½ paper); for 'distinctive', over its frequency in English.
        p_value: two-sided p of the beta-binomial test (None for 'distinctive').
        q_value: Benjamini-Hochberg adjusted p (None for 'distinctive').
        new_this_week: no paper of the baseline has the term.
        effect: the effect size as shown: "×3.2", "÷4.0", or "new".
        also: terms found in exactly the same papers this week, shown with this one
            (:func:`paperwatch.analysis.trend_stats.merge_same_papers`).
        history: the term's share in each of the last :data:`CHART_WEEKS` weeks, oldest
            first, this week last.
        examples: up to ``Settings.trending.examples_per_term`` papers of the week with it.
    """

    term: str
    direction: str
    rank: int
    papers_week: int
    papers_baseline: int | None
    rate_week: float
    rate_baseline: float | None
    log2_ratio: float
    p_value: float | None
    q_value: float | None
    new_this_week: bool
    effect: str
    also: tuple[str, ...] = ()
    history: tuple[WeekShare, ...] = ()
    examples: tuple[ExamplePaper, ...] = ()


@dataclass(frozen=True, slots=True)
class TrendingResult:
    """The trending terms of one ISO week, as the report shows them.

    Attributes:
        week: the ISO week, e.g. '2026-W48'.
        has_baseline: the baseline weeks hold at least one paper (and the week too); when
            False, ``new``, ``rising`` and ``falling`` are empty and the report shows
            ``distinctive``.
        baseline_weeks: the ISO weeks of the baseline, oldest first.
        chart_weeks: the ISO weeks of the small charts, oldest first (this week last).
        papers_week: papers first seen in ``week``.
        papers_baseline: papers first seen in the baseline weeks.
        new: the top ``Settings.trending.top_n`` new terms (rank 1 first).
        rising: the top ``top_n`` rising terms.
        falling: the top ``top_n`` falling terms.
        distinctive: without a baseline, at most ``first_week_terms`` distinctive terms.
        tested: terms tested (with support) this week; 0 without a baseline.
        min_support: the minimum support used.
        fdr: the false discovery rate controlled.
        aliases: acronym → canonical term merged this week ({"LLM": "large language model"}).
    """

    week: str
    has_baseline: bool
    baseline_weeks: list[str]
    papers_week: int
    papers_baseline: int
    chart_weeks: list[str] = field(default_factory=list)
    new: list[TrendingTerm] = field(default_factory=list)
    rising: list[TrendingTerm] = field(default_factory=list)
    falling: list[TrendingTerm] = field(default_factory=list)
    distinctive: list[TrendingTerm] = field(default_factory=list)
    tested: int = 0
    min_support: int = 1
    fdr: float = 0.05
    aliases: dict[str, str] = field(default_factory=dict)

    @property
    def shown(self) -> list[TrendingTerm]:
        """Every shown row: new, rising, falling, then distinctive."""
        return [*self.new, *self.rising, *self.falling, *self.distinctive]

    @property
    def examples(self) -> dict[str, tuple[ExamplePaper, ...]]:
        """Example papers by term, for every shown term."""
        return {row.term: row.examples for row in self.shown}


# --- paper_terms -------------------------------------------------------------


def update_paper_terms(con: duckdb.DuckDBPyConnection, paper_ids: list[str] | None = None) -> int:
    """Extract and store the terms of papers not extracted yet (or by an older rule version).

    Reads ``papers`` (restricted to ``paper_ids`` when given), runs
    :func:`paperwatch.analysis.terms.extract_terms` in batches of :data:`paperwatch.analysis.terms.BATCH_SIZE`,
    and for each batch, in one transaction, replaces those papers' rows of ``paper_terms``
    and records them in ``paper_terms_extracted`` (bulk insert from Arrow); then counts the
    weeks whose terms changed again into the per-week cache
    (:func:`paperwatch.db.term_weeks.refresh_term_weeks`). Idempotent.

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
    refresh_term_weeks(con)
    return done


def store_new_paper_terms(
    con: duckdb.DuckDBPyConnection, papers: pl.DataFrame, terms: pl.DataFrame
) -> int:
    """Store terms extracted elsewhere for papers that have none yet (just inserted).

    Inserts only (no delete: the papers are new), in one transaction, so the cost does
    not grow with ``paper_terms``. Used by the batch loader with terms extracted where
    the files were cleaned (:func:`paperwatch.db.batches.store_batch_terms`).

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
                con.register(name, db.arrow_view(frame))
            if ids is not None:
                con.execute(read_sql("queries", "delete_paper_terms_of_ids"))
            con.execute(read_sql("queries", "insert_paper_terms"))
        finally:
            for name in frames:
                con.unregister(name)


# --- weekly scores -----------------------------------------------------------


def _counts_sql(name: str, cached: bool) -> str:
    """``sql/queries/<name>.sql``, or its ``cached_<name>.sql`` twin (same parameters, same
    rows) that reads the per-week cache ``term_week_stats`` when ``cached``."""
    return read_sql("queries", f"cached_{name}" if cached else name)


def _week_sizes(
    con: duckdb.DuckDBPyConnection, weeks: list[str]
) -> tuple[dict[str, int], dict[str, int]]:
    """Papers first seen in each of ``weeks``, and their words (0 when none)."""
    rows = con.execute(read_sql("queries", "week_paper_counts"), {"weeks": weeks}).fetchall()
    papers = {str(week): int(n) for week, n, _ in rows}
    words = {str(week): int(w or 0) for week, _, w in rows}
    return {w: papers.get(w, 0) for w in weeks}, {w: words.get(w, 0) for w in weeks}


def _aliases(
    con: duckdb.DuckDBPyConnection, weeks: list[str], cached: bool = False
) -> dict[str, str]:
    """Acronyms used bare in ``weeks`` that papers of those weeks define, with their
    canonical term (:func:`paperwatch.analysis.terms.acronym_aliases`); ``cached``: the
    acronyms and their definitions are found through the per-week cache (:func:`_counts_sql`)."""
    bounds = {"weeks": weeks, "first": min(weeks), "last": max(weeks)}
    sql = _counts_sql("term_acronyms", cached)
    acronyms = [r[0] for r in con.execute(sql, bounds).fetchall()]
    if not acronyms:
        return {}
    papers = con.sql(
        _counts_sql("term_acronym_definitions", cached),
        params={**bounds, "acronyms": acronyms, "limit": DEFINITION_SAMPLE},
    ).pl()
    found = acronym_aliases(papers, acronyms)
    return dict(zip(found["acronym"].to_list(), found["canonical"].to_list(), strict=True))


def _alias_params(aliases: dict[str, str]) -> dict[str, list[str]]:
    names = sorted(aliases)
    return {"acronyms": names, "canonicals": [aliases[a] for a in names]}


def _document_frequencies(
    con: duckdb.DuckDBPyConnection,
    week: str,
    baseline_weeks: list[str],
    n_week: int,
    n_baseline: int,
    min_support: int,
    aliases: dict[str, str],
    cached: bool = False,
) -> pl.DataFrame:
    """Rows ``term``, ``week``, ``papers`` (Int64) of the terms that can pass
    ``min_support``, in ``week`` and each baseline week
    (``sql/queries/term_document_frequencies.sql``; ``cached``: :func:`_counts_sql`)."""
    weeks = [week, *baseline_weeks]
    params = {
        "week": week,
        "baseline": baseline_weeks,
        "first": min(weeks),
        "last": max(weeks),
        "min_support": min_support,
        "n_week": n_week,
        "n_baseline": n_baseline,
        **_alias_params(aliases),
    }
    rows = con.sql(_counts_sql("term_document_frequencies", cached), params=params).pl()
    if cached:  # unordered; byte order of the strings, as DuckDB's (binary collation) orders
        rows = rows.sort("term", "week")
    return rows.select("term", "week", pl.col("papers").cast(pl.Int64))


def paper_set_keys(
    con: duckdb.DuckDBPyConnection,
    week: str,
    terms: list[str],
    aliases: dict[str, str],
    cached: bool = False,
) -> dict[str, str]:
    """A key of the set of papers of the ISO week ``week`` (``'2026-W41'``) with each of
    ``terms`` (canonical terms; an acronym of ``aliases`` counts as its expansion), for
    :func:`paperwatch.analysis.trend_stats.merge_same_papers` (``sql/queries/term_week_papers.sql``).

    The key is ``'<size>:<XOR>:<sum>'`` of the DuckDB 64-bit ``hash`` of the paper ids:
    equal for the same set; two different sets of the same size share it with a
    probability of about 2⁻⁶⁴. Its size is fixed whatever the set's (id lists of a common
    term ran DuckDB out of memory: docs/design.md, "Trending terms in the database").
    Terms without a paper that week are missing. ``cached``: the keys of terms no alias
    touches are read from the per-week cache (:func:`_counts_sql`; the same keys).
    """
    if not terms:
        return {}
    rows = con.execute(
        _counts_sql("term_week_papers", cached),
        {"week": week, "terms": terms, **_alias_params(aliases)},
    ).fetchall()
    return {term: key for term, key in rows}


def _histories(
    con: duckdb.DuckDBPyConnection,
    terms: list[str],
    weeks: list[str],
    sizes: dict[str, int],
    aliases: dict[str, str],
    this_week: Mapping[str, int],
    cached: bool = False,
) -> dict[str, tuple[WeekShare, ...]]:
    """Each term's bars over ``weeks`` (``sql/queries/term_weekly_papers.sql``; ``cached``:
    :func:`_counts_sql`). When no week but the last holds papers (a first week), the counts
    are ``this_week`` (papers of the last week per term, the document frequencies already
    read) and nothing is queried."""
    if not terms:
        return {}
    if all(sizes.get(w, 0) == 0 for w in weeks[:-1]):
        rows = pl.DataFrame(
            {
                "term": terms,
                "week": [weeks[-1]] * len(terms),
                "papers": [this_week.get(term, 0) for term in terms],
            },
            schema={"term": pl.String, "week": pl.String, "papers": pl.Int64},
        )
    else:
        rows = con.sql(
            _counts_sql("term_weekly_papers", cached),
            params={
                "terms": terms,
                "weeks": weeks,
                "first": min(weeks),
                "last": max(weeks),
                **_alias_params(aliases),
            },
        ).pl()
    shares = weekly_shares(rows, sizes, weeks)
    out = {}
    for term in terms:
        values = shares.get(term, [0.0 if sizes.get(w, 0) else None for w in weeks])
        out[term] = tuple(
            WeekShare(w, v, h) for w, v, h in zip(weeks, values, bar_heights(values), strict=True)
        )
    return out


def _examples(
    con: duckdb.DuckDBPyConnection,
    week: str,
    terms: list[str],
    per_term: int,
    aliases: dict[str, str],
    also: dict[str, tuple[str, ...]],
    cached: bool = False,
) -> dict[str, tuple[ExamplePaper, ...]]:
    if not terms or per_term <= 0:
        return {}
    names = {term: [term, *also.get(term, ())] for term in terms}
    for acronym, canonical in aliases.items():
        names.setdefault(canonical, [canonical]).append(acronym)
    found: dict[str, list[ExamplePaper]] = {}
    rows = _example_rows(con, week, terms, per_term, aliases, cached)
    for term, paper_id, method_name, first_sentence, abstract in rows:
        sentence = sentence_with_term(abstract or "", names.get(term, [term])) or first_sentence
        found.setdefault(term, []).append(
            ExamplePaper(paper_id, method_name, first_sentence, sentence)
        )
    return {term: tuple(papers) for term, papers in found.items()}


def _example_rows(
    con: duckdb.DuckDBPyConnection,
    week: str,
    terms: list[str],
    per_term: int,
    aliases: dict[str, str],
    cached: bool,
) -> list[tuple[Any, ...]]:
    """Rows of ``sql/queries/term_examples.sql``. With ``cached``, when no alias touches
    ``terms``, first from the week's repeated terms (``cached_term_examples.sql``): the
    same rows when every term gets ``per_term`` of them there, else the plain query's."""
    params = {"week": week, "terms": terms, "per_term": per_term, **_alias_params(aliases)}
    if cached and not set(terms) & {*aliases, *aliases.values()}:
        rows = con.execute(read_sql("queries", "cached_term_examples"), params).fetchall()
        got = Counter(row[0] for row in rows)
        if all(got[term] == per_term for term in terms):
            return rows
    return con.execute(read_sql("queries", "term_examples"), params).fetchall()


def _term(
    row: dict[str, Any],
    kind: str,
    examples: dict[str, tuple[ExamplePaper, ...]],
    histories: dict[str, tuple[WeekShare, ...]],
) -> TrendingTerm:
    distinctive = kind == "distinctive"
    new = kind == "new"
    return TrendingTerm(
        term=row["term"],
        direction=kind,
        rank=int(row["rank"]),
        papers_week=int(row["papers_week"]),
        papers_baseline=None if distinctive else int(row["papers_baseline"]),
        rate_week=float(row["rate_week"]),
        rate_baseline=None if distinctive else float(row["rate_baseline"]),
        log2_ratio=float(row["log2_ratio"]),
        p_value=None if distinctive else float(row["p_value"]),
        q_value=None if distinctive else float(row["q_value"]),
        new_this_week=new,
        effect="new" if new else log2_label(float(row["log2_ratio"])),
        also=tuple(row.get("also") or ()),
        history=histories.get(row["term"], ()),
        examples=examples.get(row["term"], ()),
    )


def trending_terms_for_week(
    con: duckdb.DuckDBPyConnection,
    week: str,
    settings: Settings,
    *,
    persist: bool = True,
    use_cache: bool = True,
) -> TrendingResult:
    """Test the terms of ``week`` against the ``settings.trending.baseline_weeks`` before it.

    Reads ``papers`` and ``paper_terms`` (run :func:`update_paper_terms` first); acronyms
    defined in the last :data:`CHART_WEEKS` weeks count as their expansion. With a baseline,
    terms are tested by :func:`paperwatch.analysis.trend_stats.score_trending_terms`;
    without one (``has_baseline`` False) the week's distinctive terms are listed
    (:func:`paperwatch.analysis.trend_stats.distinctive_terms`). Every shown term gets its
    weekly share over the last :data:`CHART_WEEKS` weeks and its example papers.

    Counts come from the per-week cache (:mod:`paperwatch.db.term_weeks`) when every week
    read is current there, else from ``paper_terms``: the same result.

    Args:
        con: a DuckDB connection (read-only is enough when ``persist`` is False).
        week: ISO week ``YYYY-Www``.
        settings: uses ``trending.baseline_weeks``, ``min_support``, ``top_n``, ``fdr``,
            ``first_week_terms`` and ``examples_per_term``.
        persist: replace the week's rows of ``trending_terms`` with every reported row
            (:func:`store_trending_terms`), and bring the cache's weeks up to date.
        use_cache: False reads every count from ``paper_terms`` (the plain path).

    Returns:
        A :class:`TrendingResult`; rows ranked deterministically (ties broken by term).

    Raises:
        ValueError: ``week`` is not a valid ISO week.
        duckdb.Error: a query failed (a read-only connection with ``persist=True``).
    """
    cfg = settings.trending
    baseline_weeks = previous_weeks(week, cfg.baseline_weeks)
    chart_weeks = [*previous_weeks(week, CHART_WEEKS - 1), week]
    all_weeks = sorted({*baseline_weeks, *chart_weeks})
    sizes, words = _week_sizes(con, all_weeks)
    n_week = sizes[week]
    baseline_sizes = {w: sizes[w] for w in baseline_weeks}
    n_baseline = sum(baseline_sizes.values())
    has_baseline = n_week > 0 and n_baseline > 0
    cached = n_week > 0 and use_cache and _cache_ready(con, all_weeks, refresh=persist)
    aliases, counts = _week_counts(
        con, (week, baseline_weeks, all_weeks), (n_week, n_baseline), cfg.min_support, cached
    )
    week_df = counts.filter(pl.col("week") == week).select("term", "papers")
    sizes_now = (n_week, baseline_sizes, words[week])
    scored, shown, tested = _shown_terms(
        con, week, counts, sizes_now, cfg, aliases, has_baseline, cached
    )
    terms = sorted({row["term"] for rows in shown.values() for row in rows})
    also = {row["term"]: tuple(row.get("also") or ()) for rows in shown.values() for row in rows}
    per_term = min(cfg.examples_per_term, 1) if shown["distinctive"] else cfg.examples_per_term
    examples = _examples(con, week, terms, per_term, aliases, also, cached)
    this_week = dict(zip(week_df["term"].to_list(), week_df["papers"].to_list(), strict=True))
    histories = _histories(con, terms, chart_weeks, sizes, aliases, this_week, cached)
    rows = {kind: [_term(r, kind, examples, histories) for r in shown[kind]] for kind in KINDS}
    result = TrendingResult(
        week=week,
        has_baseline=has_baseline,
        baseline_weeks=baseline_weeks,
        papers_week=n_week,
        papers_baseline=n_baseline,
        chart_weeks=chart_weeks,
        new=rows["new"],
        rising=rows["rising"],
        falling=rows["falling"],
        distinctive=rows["distinctive"],
        tested=tested,
        min_support=cfg.min_support,
        fdr=cfg.fdr,
        aliases=aliases,
    )
    if persist:
        store_trending_terms(con, result, scored)
    return result


def _cache_ready(con: duckdb.DuckDBPyConnection, weeks: list[str], *, refresh: bool) -> bool:
    """Whether the counts of ``weeks`` can be read from the per-week cache; with
    ``refresh`` (a read-write connection) the stale weeks are counted again first."""
    if refresh:
        refresh_term_weeks(con, weeks)
        return True
    return cache_is_current(con, weeks)


def _week_counts(
    con: duckdb.DuckDBPyConnection,
    weeks: tuple[str, list[str], list[str]],
    sizes: tuple[int, int],
    min_support: int,
    cached: bool,
) -> tuple[dict[str, str], pl.DataFrame]:
    """The aliases (:func:`_aliases`) and document frequencies
    (:func:`_document_frequencies`) of a week; ``weeks``: the week, its baseline weeks and
    every week read; ``sizes``: papers of the week and of the baseline. Empty when the week
    has no papers."""
    week, baseline_weeks, all_weeks = weeks
    n_week, n_baseline = sizes
    counts = pl.DataFrame(schema={"term": pl.String, "week": pl.String, "papers": pl.Int64})
    if n_week <= 0:
        return {}, counts
    # wordfreq (is_generic, the distinctive terms) loads in a thread while DuckDB, which
    # releases the GIL, reads the week's terms.
    loading = threading.Thread(target=load_english_frequencies, name="wordfreq", daemon=True)
    loading.start()
    aliases = _aliases(con, all_weeks, cached)
    counts = _document_frequencies(
        con, week, baseline_weeks, n_week, n_baseline, min_support, aliases, cached
    )
    loading.join()
    return aliases, counts


def _shown_terms(
    con: duckdb.DuckDBPyConnection,
    week: str,
    counts: pl.DataFrame,
    sizes: tuple[int, dict[str, int], int],
    cfg: TrendingSettings,
    aliases: dict[str, str],
    has_baseline: bool,
    cached: bool = False,
) -> tuple[pl.DataFrame | None, dict[str, list[dict[str, Any]]], int]:
    """The terms shown for ``week``: ``(every reported row or None, rows shown by kind,
    terms tested)``. ``counts``: :func:`_document_frequencies`; ``sizes``: papers of the
    week, papers of each baseline week, words of the week; ``cached``: :func:`_counts_sql`."""
    n_week, baseline_sizes, words_week = sizes
    week_df = counts.filter(pl.col("week") == week).select("term", "papers")
    scored: pl.DataFrame | None = None
    shown: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    tested = 0
    if has_baseline:
        baseline_df = counts.filter(pl.col("week") != week)
        scored = score_trending_terms(
            week_df, baseline_df, n_week, baseline_sizes, cfg.min_support, fdr=cfg.fdr
        )
        sets = paper_set_keys(con, week, scored["term"].to_list(), aliases, cached)
        scored = merge_same_papers(scored, sets)
        tested = counts.select("term").n_unique()
        for kind in ("new", "rising", "falling"):
            shown[kind] = scored.filter(pl.col("kind") == kind).head(cfg.top_n).to_dicts()
    elif n_week > 0 and cfg.first_week_terms > 0:
        candidates = distinctive_terms(
            week_df,
            n_week,
            words_week,
            cfg.min_support,
            3 * cfg.first_week_terms,
            defined=frozenset(aliases.values()),
        )
        sets = paper_set_keys(con, week, candidates["term"].to_list(), aliases, cached)
        merged = merge_same_papers(candidates.with_columns(kind=pl.lit("distinctive")), sets)
        shown["distinctive"] = merged.head(cfg.first_week_terms).to_dicts()

    return scored, shown, tested


#: Columns of the ``trending_terms`` table written by :func:`store_trending_terms`.
TRENDING_SCHEMA = pl.Schema(
    {
        "term": pl.String(),
        "direction": pl.String(),
        "rank": pl.Int64(),
        "papers_week": pl.Int64(),
        "papers_baseline": pl.Int64(),
        "rate_week": pl.Float64(),
        "rate_baseline": pl.Float64(),
        "log2_ratio": pl.Float64(),
        "p_value": pl.Float64(),
        "q_value": pl.Float64(),
        "new_this_week": pl.Boolean(),
        "same_papers": pl.List(pl.String),
    }
)


def trending_rows(result: TrendingResult, scored: pl.DataFrame | None) -> pl.DataFrame:
    """Rows of the ``trending_terms`` table for a result (pure).

    Args:
        result: from :func:`trending_terms_for_week`.
        scored: every reported row (output of
            :func:`paperwatch.analysis.trend_stats.score_trending_terms`, not only the top ``top_n``)
            when the week has a baseline; None otherwise, and the distinctive terms are
            stored.

    Returns:
        Columns of ``sql/tables/trending_terms.sql`` except ``computed_at``.
    """
    if scored is not None:
        rows = scored.select(
            "term",
            direction=pl.col("kind"),
            rank=pl.col("rank"),
            papers_week=pl.col("papers_week"),
            papers_baseline=pl.col("papers_baseline"),
            rate_week=pl.col("rate_week"),
            rate_baseline=pl.col("rate_baseline"),
            log2_ratio=pl.col("log2_ratio"),
            p_value=pl.col("p_value"),
            q_value=pl.col("q_value"),
            new_this_week=pl.col("kind") == "new",
            same_papers=pl.col("also"),
        ).cast(TRENDING_SCHEMA)
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
                    "log2_ratio": r.log2_ratio,
                    "p_value": None,
                    "q_value": None,
                    "new_this_week": False,
                    "same_papers": list(r.also),
                }
                for r in result.distinctive
            ],
            schema=TRENDING_SCHEMA,
        )
    return rows.with_columns(
        week=pl.lit(result.week),
        baseline_weeks=pl.lit(result.baseline_weeks, dtype=pl.List(pl.String)),
        min_support=pl.lit(result.min_support, dtype=pl.Int32),
        fdr=pl.lit(result.fdr, dtype=pl.Float64),
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
        db.query(con, "delete_trending_terms_of_week", week=result.week)
        con.execute(read_sql("queries", "insert_trending_terms"))
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    finally:
        con.unregister("_pw_trending")
