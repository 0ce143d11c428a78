"""Simulated weekly histories of term document frequencies, with planted changes.

Used by ``bench/trend_sim.py`` (which method finds planted changes with few false
discoveries) and by ``tests/test_trends.py`` (the chosen method, end to end). Pure: the same
seed gives the same history.

A history is ``baseline_weeks`` earlier weeks and the current week (the last one). Every week
has ``n`` papers (or the sizes given). The background vocabulary is ``vocabulary`` terms whose
document rates (shares of papers) follow a Pareto law of exponent 1.5 from 0.5 %, capped at
25 %: 6,000 such terms give a 54-paper week about as many terms in ≥ 2, 3, 5 papers as the
seeds' 54 abstracts have (measured: 862, 353, 124 against 722, 366, 115). Each week a term's rate
wobbles by a log-normal factor (σ = ``wobble``), the extra-binomial variation real topics show
from one week to the next. Planted terms (one pseudo-word each, named for what they are):

- ``newterm``: in no baseline paper, then in 15 % of this week's papers (≥ 3);
- ``riserterm``: 2 % of papers, then 20 %;
- ``fallterm``: 20 % of papers, then 2 %;
- ``steadyterm``: 10 % every week (wobbling like the background);
- ``singletonterm``: one paper this week, none before.

With ``planted=False`` only the steady and singleton terms are added: nothing changed.

:func:`fightin_words_z` is the method paperwatch used before, compared with the current one
in ``bench/trend_sim.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from paperwatch.clock import previous_weeks

#: Syllables of the background terms' pseudo-words (unknown to English word lists).
SYLLABLES = ("ka", "lo", "mi", "ru", "te", "vo", "zan", "pel", "dor", "qui", "sen", "bra")

#: The planted terms: rate in the baseline weeks, rate this week.
PLANTS: dict[str, tuple[float, float]] = {
    "newterm": (0.0, 0.15),
    "riserterm": (0.02, 0.20),
    "fallterm": (0.20, 0.02),
}
#: Terms planted in every history (nothing changes about them).
ALWAYS: dict[str, tuple[float, float]] = {"steadyterm": (0.10, 0.10)}
SINGLETON = "singletonterm"


@dataclass(frozen=True)
class History:
    """One simulated history.

    Attributes:
        week: the current ISO week; ``baseline`` the earlier ones, oldest first.
        sizes: papers per ISO week.
        counts: columns ``term`` (str), ``week`` (str), ``papers`` (Int64): papers of each
            week with each term (rows with 0 papers left out).
        planted: the planted changes {term: 'new' | 'rising' | 'falling'} (empty when none).
    """

    week: str
    baseline: list[str]
    sizes: dict[str, int]
    counts: pl.DataFrame
    planted: dict[str, str]

    def week_frame(self) -> pl.DataFrame:
        """This week's ``term``, ``papers`` rows."""
        return self.counts.filter(pl.col("week") == self.week).select("term", "papers")

    def baseline_frame(self) -> pl.DataFrame:
        """The baseline weeks' ``term``, ``week``, ``papers`` rows."""
        return self.counts.filter(pl.col("week") != self.week)

    @property
    def baseline_sizes(self) -> dict[str, int]:
        """Papers of each baseline week."""
        return {w: self.sizes[w] for w in self.baseline}


def background_terms(vocabulary: int) -> list[str]:
    """``vocabulary`` distinct pseudo-words made of :data:`SYLLABLES` (three or four
    syllables), in a fixed order."""
    words = [a + b + c for a in SYLLABLES for b in SYLLABLES for c in SYLLABLES]
    words += [w + d for w in words for d in SYLLABLES]
    if vocabulary > len(words):
        raise ValueError(f"at most {len(words)} background terms, got {vocabulary}")
    return words[:vocabulary]


def simulate_history(
    seed: int,
    n: int | list[int],
    *,
    planted: bool = True,
    baseline_weeks: int = 4,
    vocabulary: int = 6000,
    wobble: float = 0.15,
    week: str = "2027-W10",
    plants: Mapping[str, tuple[float, float]] | None = None,
) -> History:
    """A history of ``baseline_weeks`` + 1 weeks (see the module docstring).

    Args:
        seed: the random seed (numpy ``default_rng``).
        n: papers per week, or a list of ``baseline_weeks + 1`` sizes (the last: this week).
        planted: plant the new, rising and falling terms.
        baseline_weeks: earlier weeks.
        vocabulary: background terms.
        wobble: σ of the log-normal week-to-week factor of each term's rate.
        week: the current ISO week.
        plants: rates (baseline, this week) replacing those of :data:`PLANTS` for some
            planted terms, e.g. ``{"fallterm": (0.30, 0.0)}``.

    Returns:
        A :class:`History`.

    Raises:
        ValueError: ``n`` has the wrong length or a size < 1.
    """
    sizes_list = [n] * (baseline_weeks + 1) if isinstance(n, int) else list(n)
    if len(sizes_list) != baseline_weeks + 1 or min(sizes_list) < 1:
        raise ValueError(f"need {baseline_weeks + 1} positive week sizes, got {sizes_list}")
    rng = np.random.default_rng(seed)
    weeks = [*previous_weeks(week, baseline_weeks), week]
    names = background_terms(vocabulary)
    rates = np.minimum(0.005 * rng.uniform(size=vocabulary) ** (-1 / 1.5), 0.25)
    chosen = {**PLANTS, **(plants or {})}
    plants_now = {**(chosen if planted else {}), **ALWAYS}
    rows: list[tuple[str, str, int]] = []
    for i, (w, size) in enumerate(zip(weeks, sizes_list, strict=True)):
        last = i == len(weeks) - 1
        factor = np.exp(rng.normal(0.0, wobble, size=vocabulary))
        counts = rng.binomial(size, np.clip(rates * factor, 0.0, 0.95))
        rows += [(t, w, int(c)) for t, c in zip(names, counts, strict=True) if c > 0]
        for term, (before, now) in plants_now.items():
            rate = now if last else before
            if term in ALWAYS:
                rate *= float(np.exp(rng.normal(0.0, wobble)))
            count = int(rng.binomial(size, rate))
            if term == "newterm" and last:
                count = max(count, 3)
            if count:
                rows.append((term, w, count))
        if last:
            rows.append((SINGLETON, w, 1))
    counts_df = pl.DataFrame(
        rows, schema={"term": pl.String, "week": pl.String, "papers": pl.Int64}, orient="row"
    )
    kinds = {"newterm": "new", "riserterm": "rising", "fallterm": "falling"}
    return History(
        week=week,
        baseline=weeks[:-1],
        sizes=dict(zip(weeks, sizes_list, strict=True)),
        counts=counts_df,
        planted={t: kinds[t] for t in PLANTS} if planted else {},
    )


def history_abstracts(history: History, seed: int = 0) -> list[dict[str, object]]:
    """Abstracts whose terms have exactly the history's document frequencies.

    Each week's papers get the term in ``papers`` of them (chosen at random); an abstract is
    its terms as sentences ("Kalomi. Riserterm. ..."), so that
    :func:`paperwatch.analysis.terms.extract_terms` finds each term and nothing else.

    Returns:
        Rows {paper_id, abstract, week} (paper ids ``s<week index>p<paper>``), in week order.
    """
    rng = np.random.default_rng(seed)
    weeks = [*history.baseline, history.week]
    by_week: dict[str, list[list[str]]] = {w: [[] for _ in range(history.sizes[w])] for w in weeks}
    for term, w, papers in history.counts.iter_rows():
        chosen = rng.choice(history.sizes[w], size=papers, replace=False)
        for i in sorted(chosen.tolist()):
            by_week[w][i].append(term)
    rows: list[dict[str, object]] = []
    for k, w in enumerate(weeks):
        for i, terms in enumerate(by_week[w]):
            text = " ".join(f"{t.capitalize()}." for t in terms) or "Nothing."
            rows.append({"paper_id": f"s{k}p{i:05d}", "abstract": text, "week": w})
    return rows


def fightin_words_z(
    papers_week: np.ndarray,
    papers_baseline: np.ndarray,
    n_week: int,
    n_baseline: int,
    prior_papers: float,
) -> np.ndarray:
    """z-scores of the log-odds ratio with an informative Dirichlet prior, on document
    frequencies (Monroe, Colaresi & Quinn 2008, "Fightin' Words", Political Analysis
    16(4):372-403, section 3.5), prior α_0 = ``prior_papers`` papers at the pooled rate,
    full delta-method variance. The method paperwatch used before the simulator's
    measurement, compared in ``bench/trend_sim.py``.

    Returns:
        z per term (float array; > 0: more frequent this week).
    """
    yi = np.asarray(papers_week, dtype=float)
    yj = np.asarray(papers_baseline, dtype=float)
    a0 = float(prior_papers)
    alpha = a0 * (yi + yj) / (n_week + n_baseline)
    delta = np.log((yi + alpha) / (n_week + a0 - yi - alpha)) - np.log(
        (yj + alpha) / (n_baseline + a0 - yj - alpha)
    )
    var = (
        1 / (yi + alpha)
        + 1 / (n_week + a0 - yi - alpha)
        + 1 / (yj + alpha)
        + 1 / (n_baseline + a0 - yj - alpha)
    )
    return np.asarray(delta / np.sqrt(var))


#: The six-week planted history's planted counts, one per week of 50 papers (the last is
#: the week reported): a term in 15 % of papers for five weeks, then in 2 % (1 paper); a
#: riser in 2 % (1 paper), then 20 %.
SIX_WEEKS: dict[str, tuple[int, ...]] = {
    "fallterm": (8, 7, 8, 7, 8, 1),
    "riserterm": (1, 1, 1, 1, 1, 10),
}


def six_week_history(seed: int, vocabulary: int = 800) -> History:
    """Six weeks of 50 papers: the background, ``newterm``, ``steadyterm`` and the singleton
    of :func:`simulate_history` (``baseline_weeks=5``), with the counts of
    :data:`SIX_WEEKS` planted exactly instead of drawn."""
    h = simulate_history(seed, 50, baseline_weeks=5, vocabulary=vocabulary)
    weeks = [*h.baseline, h.week]
    fixed = pl.DataFrame(
        [(t, w, c) for t, cs in SIX_WEEKS.items() for w, c in zip(weeks, cs, strict=True)],
        schema={"term": pl.String, "week": pl.String, "papers": pl.Int64},
        orient="row",
    )
    counts = pl.concat([h.counts.filter(~pl.col("term").is_in(list(SIX_WEEKS))), fixed])
    return History(h.week, h.baseline, h.sizes, counts, h.planted)


def history_until(h: History, weeks: int) -> History:
    """The first ``weeks`` weeks of ``h`` (≥ 2), the last of them as this week; planted
    changes only when it is ``h``'s own week."""
    all_weeks = [*h.baseline, h.week]
    kept = all_weeks[:weeks]
    return History(
        week=kept[-1],
        baseline=kept[:-1],
        sizes={w: h.sizes[w] for w in kept},
        counts=h.counts.filter(pl.col("week").is_in(kept)),
        planted=h.planted if kept[-1] == h.week else {},
    )
