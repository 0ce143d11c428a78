"""Which terms changed this week: the statistics of the trending section. Pure functions.

The method was chosen by measurement (``bench/trend_sim.py``, table in docs/terms.md): an
exact per-term test on document frequencies that allows for the week-to-week wobble of a
term's share, with the false discovery rate controlled over the terms tested.

- :func:`score_trending_terms`: for each term with support, the number of this week's papers
  that use it is compared with its *beta-binomial* posterior predictive distribution given
  the baseline weeks (the baseline share's own uncertainty plus the wobble of shares from
  week to week, :func:`estimate_dispersion`); new and rising terms: two-sided p-values and
  Benjamini-Hochberg q-values over every term tested; falling terms: one-sided p-values and
  q-values over their own family, the terms with the power to fall (:func:`fall_power`,
  :func:`tarone_family`; independent filtering, Bourgon, Gentleman & Huber 2010); ranked
  by effect size (log2 ratio of shares).

Generic words and a first week's distinctive terms are in :mod:`paperwatch.analysis.english`,
the shaping of the rows shown (sub-terms, same papers, charts) in
:mod:`paperwatch.analysis.term_rows`; both are importable from here too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import polars as pl

from paperwatch.analysis.english import (
    GENERIC_ZIPF,
    KEYNESS_SMOOTHING,
    UNKNOWN_FREQUENCY,
    _not_generic,
    distinctive_terms,
    english_frequency,
    is_generic,
    keyness_bound,
    load_english_frequencies,
)
from paperwatch.analysis.term_rows import (
    bar_heights,
    drop_covered,
    log2_label,
    merge_same_papers,
    sentence_with_term,
    weekly_shares,
)

__all__ = [
    "GENERIC_ZIPF",
    "KEYNESS_SMOOTHING",
    "RANK_Z",
    "SCORE_COLUMNS",
    "SCREEN_COUNT",
    "SCREEN_P",
    "UNKNOWN_FREQUENCY",
    "bar_heights",
    "benjamini_hochberg",
    "beta_binomial_p_values",
    "distinctive_terms",
    "drop_covered",
    "english_frequency",
    "estimate_dispersion",
    "fall_power",
    "is_generic",
    "keyness_bound",
    "load_english_frequencies",
    "log2_label",
    "merge_same_papers",
    "rank_trends",
    "score_trending_terms",
    "sentence_with_term",
    "tarone_family",
    "weekly_shares",
]

#: Exact beta-binomial tails are summed for every term with fewer papers than this this week,
#: and for the others when a normal approximation gives a two-sided p below SCREEN_P.
SCREEN_COUNT = 50
SCREEN_P = 0.25

#: Rising and falling terms are ranked by the end of the effect's 95 % interval nearest to
#: no change (log2 ratio ∓ 1.96 standard errors), so that a term of few papers with a large
#: but uncertain ratio does not pass one whose large ratio is certain.
RANK_Z = 1.96

#: Columns of :func:`score_trending_terms`'s result.
SCORE_COLUMNS = (
    "term",
    "kind",
    "rank",
    "papers_week",
    "papers_baseline",
    "rate_week",
    "rate_baseline",
    "log2_ratio",
    "p_value",
    "q_value",
)


def estimate_dispersion(weekly: pl.DataFrame, week_sizes: Mapping[str, int]) -> float:
    """How much terms' shares of papers wobble from week to week beyond sampling noise.

    Model: a term's true share in week k is p·(1 + ε_k), E ε_k = 0, Var ε_k = τ² (a common
    coefficient of variation τ: the between-week variance of a share grows with its square,
    as in the negative binomial "NB2" variance μ + τ²μ², Cameron & Trivedi (1986), J. Appl.
    Econometrics 1(1):29-53). Then Var(y_k) = n_k p(1 − p) + τ² n_k² p², and the moment
    estimator pooled over the terms w with at least 5 baseline papers is

        τ² = max(0, Σ_w [K/(K − 1) · Σ_k (y_wk − n_k p̂_w)² − Σ_k n_k p̂_w (1 − p̂_w)]
                    / Σ_w Σ_k n_k² p̂_w²),   p̂_w = Σ_k y_wk / Σ_k n_k,

    over the K baseline weeks that hold papers (after Williams (1982), "Extra-binomial
    variation in logistic linear models", Applied Statistics 31(2):144-148, with the
    variance proportional to p² instead of p(1 − p)).

    Args:
        weekly: columns ``term`` (str), ``week`` (str), ``papers`` (int): papers of that
            baseline week with the term; weeks without one may be absent (0).
        week_sizes: papers of each baseline week (weeks with 0 papers are ignored).

    Returns:
        τ² ≥ 0 (0 when fewer than two weeks hold papers or no term has 5 papers).
    """
    weeks = sorted(w for w, n in week_sizes.items() if n > 0)
    if len(weeks) < 2 or weekly.height == 0:
        return 0.0
    sizes = np.array([week_sizes[w] for w in weeks], dtype=float)
    counts = (
        weekly.filter(pl.col("week").is_in(weeks))
        .pivot(on="week", index="term", values="papers", aggregate_function="sum")
        .fill_null(0)
    )
    for w in weeks:
        if w not in counts.columns:
            counts = counts.with_columns(pl.lit(0).alias(w))
    y = counts.select(weeks).to_numpy().astype(float)
    total = y.sum(axis=1)
    keep = total >= 5
    if not keep.any():
        return 0.0
    y, total = y[keep], total[keep]
    k = len(weeks)
    p = total / sizes.sum()
    expected = np.outer(p, sizes)
    excess = (k / (k - 1)) * ((y - expected) ** 2).sum(axis=1) - (expected * (1 - p)[:, None]).sum(
        axis=1
    )
    scale = (np.outer(p, sizes) ** 2).sum(axis=1)
    return max(0.0, float(excess.sum() / scale.sum()))


def beta_binomial_p_values(
    papers_week: np.ndarray,
    papers_baseline: np.ndarray,
    n_week: int,
    n_baseline: int,
    dispersion: float,
    baseline_weeks: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """One-sided p-values of this week's count against the baseline, for every term.

    This week's count y ~ BetaBinomial(n_week, a, b): the posterior predictive of the share
    given the baseline (Jeffreys prior: share ~ Beta(y_j + ½, n_j − y_j + ½)), widened by
    the week-to-week wobble τ² (:func:`estimate_dispersion`) of this week's share and of the
    baseline mean over K weeks. With p̂ = (y_j + ½)/(n_j + 1), the share's variance
    p̂(1 − p̂)/(κ + 1) = p̂(1 − p̂)/(n_j + 1) + τ² (1 + 1/K) p̂² gives the concentration κ,
    and a = p̂κ, b = (1 − p̂)κ. With τ² = 0 it is the Bayesian counterpart of Fisher's
    exact test; the beta-binomial for over-dispersed counts after Skellam (1948), J. R.
    Stat. Soc. B 10(2):257-261.

    Args:
        papers_week, papers_baseline: int arrays of the same length (papers with each term).
        n_week, n_baseline: papers of the week and of the baseline, > 0.
        dispersion: τ² ≥ 0.
        baseline_weeks: K, the baseline weeks holding papers (≥ 1).

    Returns:
        (p_up, p_down): P(Y ≥ y) and P(Y ≤ y) per term, float arrays, exact on the side of
        the predictive mean the count is on (the other side is 1). A term with 50 papers or
        more whose normal approximation gives a two-sided p above 0.25 keeps the
        approximation (it can never be reported: Benjamini-Hochberg never rejects a p above
        the FDR, and such p-values do not change the q-values of those it rejects).
    """
    # Imported here: scipy.stats costs about a second to import, and a report without a
    # baseline (a first week) never tests a term.
    from scipy import stats

    yi = np.asarray(papers_week, dtype=float)
    p_hat, a, b = _predictive(papers_baseline, n_baseline, dispersion, baseline_weeks)
    # The predictive mean and variance: a normal approximation screens out the terms that
    # are clearly not significant (two-sided p > 0.25 with 50 papers or more: summing the
    # exact tail costs time in proportion to the count), whose p-values stay approximate.
    mean = n_week * p_hat
    var = n_week * p_hat * (1 - p_hat) * (a + b + n_week) / (a + b + 1)
    z = (yi - mean) / np.sqrt(np.maximum(var, 1e-12))
    p_up = stats.norm.sf(z)
    p_down = stats.norm.cdf(z)
    exact = (yi < SCREEN_COUNT) | (2 * np.minimum(p_up, p_down) < SCREEN_P)
    up = exact & (yi >= mean)
    down = exact & (yi < mean)
    p_up[up] = stats.betabinom.sf(yi[up] - 1, n_week, a[up], b[up])
    p_down[up] = 1.0
    p_down[down] = stats.betabinom.cdf(yi[down], n_week, a[down], b[down])
    p_up[down] = 1.0
    return np.clip(p_up, 0.0, 1.0), np.clip(p_down, 0.0, 1.0)


def _predictive(
    papers_baseline: np.ndarray, n_baseline: int, dispersion: float, baseline_weeks: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(p̂, a, b) of :func:`beta_binomial_p_values`' predictive, per term."""
    yj = np.asarray(papers_baseline, dtype=float)
    p_hat = (yj + 0.5) / (n_baseline + 1)
    inv = 1.0 / (n_baseline + 1) + dispersion * (1 + 1 / max(baseline_weeks, 1)) * p_hat / (
        1 - p_hat
    )
    kappa = np.maximum(1.0 / inv - 1.0, 1e-6)
    return p_hat, p_hat * kappa, (1 - p_hat) * kappa


def benjamini_hochberg(p_values: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values), Benjamini & Hochberg (1995), J. R.
    Stat. Soc. B 57(1):289-300, via ``scipy.stats.false_discovery_control``. Empty in,
    empty out."""
    from scipy import stats  # imported when needed, as in beta_binomial_p_values

    ps = np.asarray(p_values, dtype=float)
    if ps.size == 0:
        return ps
    return np.asarray(stats.false_discovery_control(ps, method="bh"))


def _with_support(
    both: pl.DataFrame, n_week: int, n_baseline: int, min_support: int
) -> pl.DataFrame:
    yi, yj = pl.col("papers_week"), pl.col("papers_baseline")
    return both.filter((yi >= min_support) | (yj * n_week >= min_support * n_baseline))


def _check_scoring(n_week: int, n_baseline: int, min_support: int, fdr: float) -> None:
    """Raise the ValueError of :func:`score_trending_terms` for inputs it cannot score."""
    if n_week <= 0 or n_baseline <= 0:
        raise ValueError(f"n_week and the baseline must be positive, got {n_week}, {n_baseline}")
    if min_support < 1:
        raise ValueError(f"min_support must be at least 1, got {min_support}")
    if not 0 < fdr < 1:
        raise ValueError(f"fdr must be between 0 and 1, got {fdr}")


def _week_and_baseline(week_df: pl.DataFrame, baseline_weekly: pl.DataFrame) -> pl.DataFrame:
    """One row per term of either frame: ``term``, ``papers_week``, ``papers_baseline``
    (Int64 sums, 0 when absent)."""
    week = week_df.group_by("term").agg(papers_week=pl.col("papers").sum().cast(pl.Int64))
    base = baseline_weekly.group_by("term").agg(
        papers_baseline=pl.col("papers").sum().cast(pl.Int64)
    )
    return week.join(base, on="term", how="full", coalesce=True).with_columns(
        pl.col("papers_week", "papers_baseline").fill_null(0)
    )


def score_trending_terms(
    week_df: pl.DataFrame,
    baseline_weekly: pl.DataFrame,
    n_week: int,
    baseline_sizes: Mapping[str, int],
    min_support: int,
    *,
    fdr: float = 0.05,
    dispersion: float | None = None,
) -> pl.DataFrame:
    """Terms new, rising or falling this week against the baseline weeks, with FDR control.

    A term is *tested* when it has support: at least ``min_support`` papers this week, or a
    baseline rate that predicts that many this week. Each tested term gets two-sided
    p = min(1, 2 · min(P(Y ≥ y), P(Y ≤ y))) from :func:`beta_binomial_p_values` and a
    Benjamini-Hochberg q-value over all tested terms; a term that rose is reported when
    q ≤ ``fdr`` and it has ``min_support`` papers this week (so a singleton never trends).
    Falls are tested in their own family (:func:`_falls`: the terms with the power to fall,
    one-sided p, BH over the family, q ≤ ``fdr``). No generic term is reported
    (:func:`is_generic`). Kinds: *new* (no baseline paper has it), *rising*, *falling*. A sub-term is dropped when a reported longer term of the same kind
    containing it accounts for all but fewer than ``min_support`` of its papers (this week,
    and in the baseline scaled to this week's size): "large language" under "large language
    model". Effect size: :func:`_effects`.

    Args:
        week_df: columns ``term`` (str), ``papers`` (int): papers of this week with the term.
        baseline_weekly: columns ``term``, ``week`` (ISO week str), ``papers`` (int): per
            baseline week; weeks where a term is absent may be left out.
        n_week: papers of this week, > 0.
        baseline_sizes: papers of each baseline week (ISO week → count); their sum > 0.
        min_support: ≥ 1, see above.
        fdr: the false discovery rate controlled (0 < fdr < 1).
        dispersion: τ²; None estimates it from ``baseline_weekly`` (:func:`estimate_dispersion`).

    Returns:
        Reported terms, columns :data:`SCORE_COLUMNS`: term, kind ('new' | 'rising' |
        'falling'), rank (1-based per kind, :func:`rank_trends`), papers_week,
        papers_baseline (Int64), rate_week, rate_baseline (shares 0-1), log2_ratio, p_value
        (two-sided; one-sided for falls), q_value (Float64, in the kind's family). Rows: new, then rising, then falling. Deterministic.

    Raises:
        ValueError: n_week or the baseline is empty, min_support < 1, or fdr not in (0, 1).
    """
    n_baseline = int(sum(baseline_sizes.values()))
    _check_scoring(n_week, n_baseline, min_support, fdr)
    if dispersion is None:
        dispersion = estimate_dispersion(baseline_weekly, baseline_sizes)
    both = _week_and_baseline(week_df, baseline_weekly)
    tested = _with_support(both, n_week, n_baseline, min_support).sort("term")
    weeks_with_papers = sum(1 for n in baseline_sizes.values() if n > 0)
    p_up, p_down = beta_binomial_p_values(
        tested["papers_week"].to_numpy(),
        tested["papers_baseline"].to_numpy(),
        n_week,
        n_baseline,
        dispersion,
        weeks_with_papers,
    )
    p_two = np.minimum(1.0, 2 * np.minimum(p_up, p_down))
    q = benjamini_hochberg(p_two)
    scored = _effects(tested, p_two, q, n_week, n_baseline, dispersion, weeks_with_papers)
    rises = scored.filter(
        (pl.col("q_value") <= fdr)
        & (pl.col("kind") != "falling")
        & (pl.col("papers_week") >= min_support)
    )
    known = tested.select("term", _p_down=pl.Series(p_down, dtype=pl.Float64))
    falls = _falls(both, known, n_week, n_baseline, dispersion, weeks_with_papers, fdr)
    reported = pl.concat([rises, falls.select(rises.columns)])
    # The word lists and wordfreq only for the terms that passed the test (a few of the
    # thousands tested), each looked up once in plain Python (no per-row Polars callback).
    reported = reported.filter(pl.Series(_not_generic(reported["term"]), dtype=pl.Boolean))
    reported = drop_covered(reported, min_support, n_week, n_baseline, by="kind")
    return rank_trends(reported)


def fall_power(
    papers_baseline: np.ndarray,
    n_week: int,
    n_baseline: int,
    dispersion: float,
    baseline_weeks: int = 1,
) -> np.ndarray:
    """The smallest one-sided p-value a fall can reach: P(Y = 0), no paper this week.

    It depends on the baseline count (and the sizes and τ²) only, never on this week's
    count: under the null the two are independent, so filtering on it keeps the test's
    error rate (independent filtering, Bourgon, Gentleman & Huber (2010), PNAS
    107(21):9546-9551; the minimum attainable p-value of a discrete test, Tarone (1990),
    Biometrics 46(2):515-522).

    Args:
        papers_baseline: int array, baseline papers with each term.
        n_week, n_baseline, dispersion, baseline_weeks: as in :func:`beta_binomial_p_values`.

    Returns:
        Float array of P(Y ≤ 0) under :func:`beta_binomial_p_values`' predictive.
    """
    from scipy import special  # imported when needed, as in beta_binomial_p_values

    # P(Y = 0) of BetaBinomial(n, a, b) = B(a, b + n) / B(a, b), in closed form (summing
    # the tail as beta_binomial_p_values does costs a Python call per term).
    _, a, b = _predictive(papers_baseline, n_baseline, dispersion, baseline_weeks)
    return np.asarray(np.exp(special.betaln(a, b + n_week) - special.betaln(a, b)))


def tarone_family(min_p: np.ndarray, fdr: float) -> np.ndarray:
    """Which tests enter a family: those whose smallest attainable p-value is ≤ fdr/K, for
    the smallest K ≥ 1 with at most K such tests (Tarone 1990, Biometrics 46(2):515-522;
    for the false discovery rate, Gilbert (2005), J. R. Stat. Soc. C 54(1):143-158). A test
    left out could not be a discovery even as the only one of a family of K.

    Args:
        min_p: the smallest attainable p-value of each test (:func:`fall_power`).
        fdr: the false discovery rate (0 < fdr < 1).

    Returns:
        Boolean mask over ``min_p`` (all False when it is empty).
    """
    ps = np.asarray(min_p, dtype=float)
    if ps.size == 0:
        return np.zeros(0, dtype=bool)
    ordered = np.sort(ps)
    ks = np.arange(1, ps.size + 1)
    fits = np.searchsorted(ordered, fdr / ks, side="right") <= ks
    k = int(ks[np.argmax(fits)]) if fits.any() else ps.size
    return ps <= fdr / k


def _falls(
    both: pl.DataFrame,
    known: pl.DataFrame,
    n_week: int,
    n_baseline: int,
    dispersion: float,
    weeks_with_papers: int,
    fdr: float,
) -> pl.DataFrame:
    """The falling terms, tested in their own family: terms with the power to fall.

    A term enters the family when it is not generic (:func:`is_generic`) and a fall to no
    paper this week could be a discovery (:func:`fall_power`, :func:`tarone_family`): both
    depend on the term and its baseline count only. In the family each term gets the
    one-sided p = P(Y ≤ y) of :func:`beta_binomial_p_values` and a Benjamini-Hochberg
    q-value over the family (Benjamini & Hochberg 1995); a term whose share fell with
    q ≤ ``fdr`` is reported. ``known``: columns ``term``, ``_p_down``, the one-sided
    p-values already computed for some terms (the same inputs give the same value).
    Returns the rows of :func:`_effects` of kind 'falling'.
    """
    # A term expected in fewer than one paper this week cannot fall significantly (P(Y = 0)
    # > 1/e): not computed.
    cand = both.filter(pl.col("papers_baseline") * n_week >= n_baseline).sort("term")
    min_p = fall_power(
        cand["papers_baseline"].to_numpy(), n_week, n_baseline, dispersion, weeks_with_papers
    )
    # The word lists only for the terms that can enter a family (min_p ≤ fdr).
    cand = cand.with_columns(_min_p=pl.Series(min_p, dtype=pl.Float64)).filter(
        pl.col("_min_p") <= fdr
    )
    cand = cand.filter(pl.Series(_not_generic(cand["term"]), dtype=pl.Boolean))
    family = cand.filter(pl.Series(tarone_family(cand["_min_p"].to_numpy(), fdr))).join(
        known, on="term", how="left", maintain_order="left"
    )
    # The exact tails are summed only for the terms not tested with the risers.
    missing = family["_p_down"].is_null().to_numpy()
    p_down = family["_p_down"].fill_null(1.0).to_numpy().copy()
    _, p_down[missing] = beta_binomial_p_values(
        family["papers_week"].to_numpy()[missing],
        family["papers_baseline"].to_numpy()[missing],
        n_week,
        n_baseline,
        dispersion,
        weeks_with_papers,
    )
    q = benjamini_hochberg(p_down)
    scored = _effects(
        family.drop("_min_p", "_p_down"),
        p_down,
        q,
        n_week,
        n_baseline,
        dispersion,
        weeks_with_papers,
    )
    return scored.filter((pl.col("q_value") <= fdr) & (pl.col("kind") == "falling"))


def _effects(
    tested: pl.DataFrame,
    p_two: np.ndarray,
    q: np.ndarray,
    n_week: int,
    n_baseline: int,
    dispersion: float,
    weeks_with_papers: int,
) -> pl.DataFrame:
    """``tested`` with ``p_value``, ``q_value``, ``rate_week``, ``rate_baseline``,
    ``log2_ratio``, ``_log2_se``, ``_log2_bound`` and ``kind``.

    Effect size: log2 ratio of the shares, each smoothed by ½ paper,
    log2((y_i + ½)/(n_i + 1)) − log2((y_j + ½)/(n_j + 1)), with the standard error of a
    log ratio of proportions (delta method: 1/(y_i + ½) − 1/(n_i + 1) + 1/(y_j + ½) −
    1/(n_j + 1), plus the wobble τ²(1 + 1/K), over ln 2); ``_log2_bound`` is the end of its
    :data:`RANK_Z` interval nearest to 0.
    """
    yi, yj = pl.col("papers_week"), pl.col("papers_baseline")
    return (
        tested.with_columns(
            p_value=pl.Series(p_two, dtype=pl.Float64),
            q_value=pl.Series(q, dtype=pl.Float64),
            rate_week=yi / n_week,
            rate_baseline=yj / n_baseline,
            log2_ratio=((yi + 0.5) / (n_week + 1)).log(2) - ((yj + 0.5) / (n_baseline + 1)).log(2),
            _log2_se=(
                1 / (yi + 0.5)
                - 1 / (n_week + 1)
                + 1 / (yj + 0.5)
                - 1 / (n_baseline + 1)
                + dispersion * (1 + 1 / max(weeks_with_papers, 1))
            ).sqrt()
            / math.log(2),
        )
        .with_columns(
            _log2_bound=pl.col("log2_ratio")
            - pl.col("log2_ratio").sign() * RANK_Z * pl.col("_log2_se"),
        )
        .with_columns(
            kind=pl.when(pl.col("rate_week") <= pl.col("rate_baseline"))
            .then(pl.lit("falling"))
            .when(yj == 0)
            .then(pl.lit("new"))
            .otherwise(pl.lit("rising"))
        )
    )


def rank_trends(reported: pl.DataFrame) -> pl.DataFrame:
    """Order and rank rows of :func:`score_trending_terms` (needs its ``_log2_bound``
    column): rank 1-based per kind, new by share this week; rising and falling by the end
    of the log2_ratio's 95 % interval nearest to 0 (:data:`RANK_Z`), largest change first;
    then q-value, then term. Returns columns :data:`SCORE_COLUMNS`."""
    order = (
        pl.when(pl.col("kind") == "new")
        .then(-pl.col("rate_week"))
        .when(pl.col("kind") == "rising")
        .then(-pl.col("_log2_bound"))
        .otherwise(pl.col("_log2_bound"))
    )
    kind_order = pl.col("kind").replace_strict({"new": 0, "rising": 1, "falling": 2})
    return (
        reported.with_columns(_order=order, _kind=kind_order)
        .sort("_kind", "_order", "q_value", "term")
        .with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("kind"))
        .select(*SCORE_COLUMNS)
    )
