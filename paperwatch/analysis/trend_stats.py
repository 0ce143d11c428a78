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
- :func:`distinctive_terms`: with no baseline, the week's terms most over-represented against
  general English (``wordfreq``'s packaged frequencies).
- :func:`is_generic`: generic words (common in general English by ``wordfreq``, or in the
  project's stop and generic lists) that are never shown.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from functools import cache

import numpy as np
import polars as pl

from paperwatch.analysis.terms import generic_terms, stop_words

#: A single word at or above this Zipf frequency in general English (wordfreq, ``en``) is
#: generic: 4.5 is about 30 times per million words ("approach" 4.9, "method" 4.8, "novel" 4.6,
#: "performance" 5.2, "structure" 4.8, "code" 5.1; kept: "privacy" 4.4, "graph" 4.1,
#: "transformer" 3.4, "mamba" 2.6). Speer et al., wordfreq 3.1 (2023),
#: doi:10.5281/zenodo.7199437.
GENERIC_ZIPF = 4.5

#: Exact beta-binomial tails are summed for every term with fewer papers than this this week,
#: and for the others when a normal approximation gives a two-sided p below SCREEN_P.
SCREEN_COUNT = 50
SCREEN_P = 0.25

_WORD_RE = re.compile(r"[\w][\w'’-]*")

#: Frequency given to a term wordfreq does not know (Zipf 1: once per 10^8 words).
UNKNOWN_FREQUENCY = 1e-8

#: N of Kilgarriff's keyness ratio (f + N)/(f_ref + N), per million words: 10 favours terms
#: that are both frequent this week and rare in English (1 would favour the rarest words).
KEYNESS_SMOOTHING = 10.0

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


@cache
def _zipf(word: str) -> float:
    from wordfreq import zipf_frequency

    return float(zipf_frequency(word, "en"))


@cache
def _listed_words() -> frozenset[str]:
    """The stop words and the generic research nouns, one set (built once: building it
    for every term cost more than the rest of :func:`is_generic`)."""
    return stop_words() | generic_terms()


def load_english_frequencies() -> None:
    """Import wordfreq and load its English list now (about a third of a second of CPU),
    so that a caller can do it in a thread while the database works; idempotent.

    The Zipf lookups of :func:`is_generic` and :func:`english_frequency` otherwise pay
    for it at their first word.
    """
    _zipf("the")


def is_generic(term: str) -> bool:
    """True when a term says nothing about a topic: it is shown in no list of the report.

    - A single word is generic when it is a stop word, a generic research noun of
      ``paperwatch/data/generic_terms.txt``, or a common word of general English: Zipf
      frequency ≥ :data:`GENERIC_ZIPF` in ``wordfreq``'s ``en`` list (a maintained background
      frequency list of web, subtitle, news and book text). "approach", "result", "novel",
      "performance", "language", "space" are generic; "mamba", "transformer", "privacy" not.
    - A phrase is generic when every word is a stop word or a generic research noun ("proposed
      method"). A phrase of common English words names a topic ("state space", "large
      language model"): wordfreq's estimate for a phrase is that of its words, so it cannot
      tell them apart and is not used for phrases.
    - An acronym or name (two capitals in one part: "LLM", "LoRA") is never generic.

    Args:
        term: a canonical term as :func:`paperwatch.analysis.terms.extract_terms` writes it.

    Returns:
        Whether the term is generic.
    """
    words = term.split(" ")
    # (A term with no capital letter, most of them, cannot be an acronym: skip the count.)
    if not term.islower() and any(
        sum(c.isupper() for c in part) >= 2 for w in words for part in w.split("-")
    ):
        return False
    listed = _listed_words()
    lowered = [w.lower() for w in words]
    if all(w in listed for w in lowered):
        return True
    return len(words) == 1 and _zipf(lowered[0]) >= GENERIC_ZIPF


def _not_generic(terms: pl.Series) -> list[bool]:
    """``not is_generic(term)`` for each term of a String Series, in order."""
    return [not is_generic(term) for term in terms.to_list()]


def _common_phrase(term: str) -> bool:
    """A phrase whose every word is a stop word, a generic noun or common in English."""
    words = term.split(" ")
    listed = _listed_words()
    return len(words) > 1 and all(
        w.lower() in listed or _zipf(w.lower()) >= GENERIC_ZIPF for w in words
    )


def english_frequency(term: str) -> float:
    """Frequency of a term in general English, per word (wordfreq's ``en`` list), at least
    :data:`UNKNOWN_FREQUENCY`.

    wordfreq counts words, not phrases (its estimate for a phrase is close to that of its
    rarest word), so a phrase gets the product of its words' frequencies: how often the
    words would follow each other by chance. "large language model" is then as rare in
    English as it is common in abstracts.
    """
    product = 1.0
    for word in term.lower().split(" "):
        product *= 10 ** (_zipf(word) - 9)
    return max(product, UNKNOWN_FREQUENCY)


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
    if n_week <= 0 or n_baseline <= 0:
        raise ValueError(f"n_week and the baseline must be positive, got {n_week}, {n_baseline}")
    if min_support < 1:
        raise ValueError(f"min_support must be at least 1, got {min_support}")
    if not 0 < fdr < 1:
        raise ValueError(f"fdr must be between 0 and 1, got {fdr}")
    if dispersion is None:
        dispersion = estimate_dispersion(baseline_weekly, baseline_sizes)
    week = week_df.group_by("term").agg(papers_week=pl.col("papers").sum().cast(pl.Int64))
    base = baseline_weekly.group_by("term").agg(
        papers_baseline=pl.col("papers").sum().cast(pl.Int64)
    )
    both = week.join(base, on="term", how="full", coalesce=True).with_columns(
        pl.col("papers_week", "papers_baseline").fill_null(0)
    )
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


def drop_covered(
    rows: pl.DataFrame,
    min_support: int,
    n_week: int,
    n_baseline: int | None = None,
    by: str | None = None,
) -> pl.DataFrame:
    """Drop a term when a longer term of ``rows`` containing it leaves it fewer than
    ``min_support`` papers of its own.

    A sub-term (a word or two-word phrase inside a longer term, "large language" in "large
    language model") is kept only when it adds papers: its papers this week minus the
    longer term's, and (with ``n_baseline``) its baseline papers minus the longer term's
    scaled to this week (× n_week / n_baseline), are not both below ``min_support``.
    Nested-term filtering in the spirit of the C-value of Frantzi, Ananiadou & Mima (2000),
    Int. J. Digit. Libr. 3:115-130.

    Args:
        rows: columns ``term``, ``papers_week`` and (with ``n_baseline``) ``papers_baseline``;
            with ``by``, only a longer term with the same value of that column counts.
        min_support, n_week, n_baseline: as in :func:`score_trending_terms`.
        by: a column grouping the rows (the kind), or None.

    Returns:
        ``rows`` without the covered sub-terms, in their order.
    """
    if rows.height == 0:
        return rows
    keys = [by] if by else []
    cols = ["papers_week"] + (["papers_baseline"] if n_baseline else [])
    words = pl.col("term").str.split(" ")
    longer = rows.filter(pl.col("term").str.contains(" ")).select(
        *keys, *[pl.col(c).alias(f"long_{c}") for c in cols], w=words
    )
    if longer.height == 0:
        return rows
    subs = []
    for start, size in ((0, 1), (1, 1), (2, 1), (0, 2), (1, 2)):
        subs.append(
            longer.filter(
                (pl.col("w").list.len() >= start + size) & (pl.col("w").list.len() > size)
            ).select(
                *keys,
                *[f"long_{c}" for c in cols],
                term=pl.col("w").list.slice(start, size).list.join(" "),
            )
        )
    pairs = pl.concat(subs).join(rows.select("term", *keys, *cols), on=["term", *keys])
    covered = pl.col("papers_week") - pl.col("long_papers_week") < min_support
    if n_baseline:
        covered = covered & (
            (pl.col("papers_baseline") - pl.col("long_papers_baseline")) * n_week
            < min_support * n_baseline
        )
    dropped = pairs.filter(covered).select("term", *keys).unique()
    return rows.join(dropped, on=["term", *keys], how="anti", maintain_order="left")


def distinctive_terms(
    week_df: pl.DataFrame,
    n_week: int,
    words_week: int,
    min_support: int,
    top_n: int = 10,
    defined: frozenset[str] = frozenset(),
) -> pl.DataFrame:
    """A week's terms most over-represented against general English (no baseline yet).

    Kilgarriff's "simple maths" keyness (Kilgarriff 2009, "Simple maths for keywords",
    Proc. Corpus Linguistics 2009): the ratio (f_week + N) / (f_english + N) of per-million
    frequencies, with N = :data:`KEYNESS_SMOOTHING` so that a term needs both to be frequent
    this week and rare in English. f_week is the term's papers per million words of the
    week's abstracts (papers_week / words_week · 10⁶: each paper counted once), f_english
    the term's frequency in general English per million words (:func:`english_frequency`,
    wordfreq's packaged ``en`` list). Terms in at least ``max(min_support, 2)`` papers that
    are not generic (:func:`is_generic`); covered sub-terms are dropped (:func:`drop_covered`).
    A phrase made only of common English words ("release code", "lower cost") is kept only
    when the corpus abbreviates it (``defined``: "large language model" for "LLM"), since
    its English frequency can only be guessed from its words.

    The word lists and wordfreq are consulted only for the terms that can reach the list
    (the most frequent first, until the list's last term beats :func:`keyness_bound` of
    the terms left, and the longer terms that could cover them): the same rows as ranking
    every term, for a few hundred lookups instead of thousands in a large week.

    Args:
        week_df: columns ``term`` (str), ``papers`` (int).
        n_week: papers of the week, > 0.
        words_week: words of the week's abstracts (sum of ``papers.word_count``); when 0,
            150 words per paper are assumed.
        min_support: ≥ 1.
        top_n: at most this many rows.
        defined: canonical terms of the acronyms the corpus defines
            (:func:`paperwatch.analysis.terms.acronym_aliases`).

    Returns:
        Columns term (str), papers_week (Int64), rate_week (Float64, share of papers 0-1),
        log2_ratio (Float64, log2 of the keyness ratio), rank (Int64, 1-based): by keyness
        descending, then papers descending, then term.

    Raises:
        ValueError: n_week is not positive.
    """
    if n_week <= 0:
        raise ValueError(f"n_week must be positive, got {n_week}")
    words = words_week if words_week > 0 else 150 * n_week
    support = max(min_support, 2)
    rows = week_df.select("term", papers_week=pl.col("papers").cast(pl.Int64)).filter(
        pl.col("papers_week") >= support
    )
    # Exact pruning: a term's keyness is at most keyness_bound(its papers), reached by a
    # term unknown to English, so once the top_n-th term among those with at least `level`
    # papers beats the bound of `level - 1` papers, no term with fewer papers can enter the
    # list, and the word lists and wordfreq are consulted only for the terms above (about
    # 300 of a 10,000-paper week's 23,000). drop_covered needs, for a term of p papers, the
    # longer terms of more than p - min_support papers: those of level - min_support + 1
    # papers or more are kept.
    counts = sorted(set(rows["papers_week"].to_list()), reverse=True)
    at = 4 * max(top_n, 1)
    while True:
        level = counts[at - 1] if at <= len(counts) else support
        lowest = level - min_support + 1
        if lowest <= support:
            return (
                _ranked_keyness(rows, n_week, words, min_support, defined)
                .head(top_n)
                .pipe(_with_rank)
            )
        part = rows.filter(pl.col("papers_week") >= lowest)
        ranked = _ranked_keyness(part, n_week, words, min_support, defined).filter(
            pl.col("papers_week") >= level
        )
        if ranked.height >= top_n and (
            top_n == 0 or ranked["log2_ratio"][top_n - 1] > keyness_bound(level - 1, words) + 1e-6
        ):
            return ranked.head(top_n).pipe(_with_rank)
        at *= 4


def keyness_bound(papers: int, words_week: int) -> float:
    """The largest log2 keyness ratio (:func:`distinctive_terms`, after Kilgarriff 2009) a
    term of ``papers`` papers can have in a week of ``words_week`` words: that of a term
    wordfreq does not know, log2((f_week + N) / (f_English + N)) with f_week = papers per
    million words and f_English = :data:`UNKNOWN_FREQUENCY` per word (the smallest
    :func:`english_frequency` gives) times 10⁶, N = :data:`KEYNESS_SMOOTHING`.

    Args:
        papers: papers of the week with the term (≥ 0).
        words_week: words of the week's abstracts (> 0).

    Returns:
        The bound (float, log2 units); it increases with ``papers``.

    Raises:
        ZeroDivisionError: ``words_week`` is 0.
    """
    focus = papers * 1e6 / words_week
    return math.log2((focus + KEYNESS_SMOOTHING) / (UNKNOWN_FREQUENCY * 1e6 + KEYNESS_SMOOTHING))


def _ranked_keyness(
    rows: pl.DataFrame, n_week: int, words: int, min_support: int, defined: frozenset[str]
) -> pl.DataFrame:
    """Rows (term, papers_week) without generic words, common phrases and covered sub-terms,
    with rate_week and log2_ratio, sorted as :func:`distinctive_terms` ranks them."""
    shown = [
        not is_generic(term) and (term in defined or not _common_phrase(term))
        for term in rows["term"].to_list()
    ]
    rows = drop_covered(rows.filter(pl.Series(shown, dtype=pl.Boolean)), min_support, n_week)
    frequencies = [english_frequency(term) for term in rows["term"].to_list()]
    english = pl.col("_english") * 1e6
    focus = pl.col("papers_week") * 1e6 / words
    n = KEYNESS_SMOOTHING
    return (
        rows.with_columns(_english=pl.Series(frequencies, dtype=pl.Float64))
        .with_columns(
            rate_week=pl.col("papers_week") / n_week,
            log2_ratio=((focus + n) / (english + n)).log(2),
        )
        .sort(
            pl.col("log2_ratio").round(9),
            "papers_week",
            "term",
            descending=[True, True, False],
        )
        .select("term", "papers_week", "rate_week", "log2_ratio")
    )


def _with_rank(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int64)).select(
        "term", "papers_week", "rate_week", "log2_ratio", "rank"
    )


def weekly_shares(
    weekly: pl.DataFrame, week_sizes: Mapping[str, int], weeks: list[str]
) -> dict[str, list[float | None]]:
    """Each term's share of papers in each of ``weeks`` (for the report's small charts).

    Args:
        weekly: columns ``term``, ``week``, ``papers``.
        week_sizes: papers per ISO week.
        weeks: the weeks, oldest first.

    Returns:
        {term: [share 0-1, or None for a week without papers, per week of ``weeks``]}.
    """
    counts: dict[str, dict[str, int]] = {}
    for term, week, papers in weekly.select("term", "week", "papers").iter_rows():
        counts.setdefault(term, {})[week] = int(papers)
    out: dict[str, list[float | None]] = {}
    for term, per_week in counts.items():
        out[term] = [
            (per_week.get(w, 0) / week_sizes[w]) if week_sizes.get(w, 0) > 0 else None
            for w in weeks
        ]
    return out


def bar_heights(shares: list[float | None], max_px: int = 24) -> list[int]:
    """Bar heights in pixels (0-``max_px``) of shares against the largest of the list; a week
    with a share > 0 gets at least 1 px, a week without papers 0."""
    top = max((s for s in shares if s is not None), default=0.0)
    if top <= 0:
        return [0 for _ in shares]
    return [0 if not s else max(1, round(max_px * s / top)) for s in shares]


def log2_label(log2_ratio: float) -> str:
    """The effect size as a reader reads it: "×3.2" (rise) or "÷4.0" (fall)."""
    factor = 2 ** abs(log2_ratio)
    sign = "×" if log2_ratio >= 0 else "÷"
    return f"{sign}{factor:.1f}" if factor < 100 else f"{sign}{math.floor(factor)}"


def _set_key(papers: str | tuple[str, ...]) -> str:
    return papers if isinstance(papers, str) else "\x1f".join(papers)


def merge_same_papers(
    rows: pl.DataFrame, paper_sets: Mapping[str, str | tuple[str, ...]], by: str = "kind"
) -> pl.DataFrame:
    """One row for the terms found in exactly the same papers this week.

    Terms of the same kind (``by``) with the same papers this week and the same number of
    baseline papers (when the column is there) say one thing ("mamba", "selective state
    space", "state space layer" and "long sequence" when the seven papers with one have all):
    the row kept is the shortest term (fewest words, then fewest characters, then
    alphabetical), the others are listed in its ``also`` column. Ranks are renumbered.

    Args:
        rows: ranked rows with columns ``term``, ``rank`` and ``by`` (and optionally
            ``papers_baseline``), e.g. from :func:`score_trending_terms` or
            :func:`distinctive_terms`.
        paper_sets: this week's papers per term (a term missing: its own set): the
            sorted paper ids, or a string key of the set, equal exactly when the sets are
            (``sql/queries/term_week_papers.sql`` gives one of fixed size).

    Returns:
        ``rows`` without the merged terms, in their order, ``rank`` renumbered per ``by``,
        and a column ``also`` (list of str, alphabetical; empty when none).
    """
    if rows.height == 0:
        return rows.with_columns(also=pl.lit([], dtype=pl.List(pl.String)))
    keys = [by] + (["papers_baseline"] if "papers_baseline" in rows.columns else [])
    group = pl.Series(
        "_set",
        [_set_key(paper_sets.get(t, (f"\x00{t}",))) for t in rows["term"]],
        dtype=pl.String,
    )
    words = pl.col("term").str.count_matches(" ")
    ranked = rows.with_columns(group, _i=pl.int_range(pl.len()))
    heads = (
        ranked.sort(words, pl.col("term").str.len_chars(), "term")
        .group_by(*keys, "_set", maintain_order=True)
        .agg(
            _head=pl.col("term").first(),
            also=pl.col("term").slice(1).sort(),
            _first=pl.col("_i").min(),
        )
    )
    kept = (
        heads.join(
            ranked.drop("term"), left_on=[*keys, "_set", "_first"], right_on=[*keys, "_set", "_i"]
        )
        .rename({"_head": "term"})
        .sort("_first")
        .with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(by))
    )
    return kept.select(*rows.columns, "also")


def sentence_with_term(abstract: str, terms: Sequence[str]) -> str | None:
    """The first sentence of ``abstract`` that uses one of ``terms`` (a term, the terms shown
    with it, the acronyms standing for it), so that an example says why it is listed.

    A sentence uses a term when each of its words is in the sentence, ignoring case, as a
    word or the start of one at most three letters longer ("model" in "models", "LLM" in
    "LLMs"); a term without spaces in CJK script when it is a substring. Sentences are split
    by :func:`paperwatch.ingest.clean.split_sentences`.

    Returns:
        The sentence, or None when no sentence uses any of them.
    """
    from paperwatch.ingest.clean import split_sentences

    wanted = [t for t in terms if t]
    for sentence in split_sentences(abstract):
        lowered = sentence.lower()
        tokens = _WORD_RE.findall(lowered)
        for term in wanted:
            words = term.lower().split(" ")
            if len(words) == 1 and not words[0].isascii() and words[0] in lowered:
                return sentence
            if all(
                any(t == w or (t.startswith(w) and len(t) - len(w) <= 3) for t in tokens)
                for w in words
            ):
                return sentence
    return None
