"""Which test of change finds planted trends with few false discoveries? Prints a table.

For each week size and each candidate method, over ``--histories`` seeded histories of
:func:`tests.trend_sim.simulate_history` (4 baseline weeks + this week, 6,000 background
terms wobbling from week to week):

- recall of the planted new, rising and falling terms (reported, in the right direction);
- false discoveries per week: terms reported in histories with nothing planted (the steady
  and singleton terms are there, never anything that changed).

Candidates (all with the same support rule: a rising term needs ``min_support`` papers this
week, a falling one that many expected at its baseline rate):

- ``fw-100``: Fightin' Words z (Monroe et al. 2008) with α0 = 100 papers, |z| ≥ 1.96 (the
  method paperwatch used before);
- ``fw-scaled``: Fightin' Words with α0 = this week's papers, |z| ≥ 1.96;
- ``fw-scaled+bh``: the same z turned into two-sided normal p-values, Benjamini-Hochberg;
- ``fisher+bh``: Fisher's exact test (hypergeometric, two-sided as twice the smaller tail),
  Benjamini-Hochberg;
- ``betabin+bh``: beta-binomial predictive with τ² = 0 (binomial sampling only), BH;
- ``betabin-wobble+bh``: beta-binomial with the wobble τ² estimated from the baseline weeks
  (:func:`paperwatch.analysis.trend_stats.estimate_dispersion`), BH — what paperwatch uses
  (:func:`paperwatch.analysis.trend_stats.score_trending_terms`, called as is: falls tested
  in their own family of the terms with the power to fall).

Run: ``.venv/bin/python bench/trend_sim.py`` (about a minute; ``--histories 50`` for more;
``--method betabin-wobble+bh`` for paperwatch's only).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paperwatch.analysis.trend_stats import (  # noqa: E402
    benjamini_hochberg,
    beta_binomial_p_values,
    score_trending_terms,
)
from tests.trend_sim import History, fightin_words_z, simulate_history  # noqa: E402

SIZES = (20, 50, 200, 1000, 5000)
MIN_SUPPORT = 3

#: A method maps a history and the FDR to the terms it reports: {term: 'rising' | 'falling'}.
Method = Callable[[History, float], dict[str, str]]


def _table(h: History) -> tuple[pl.DataFrame, int, int]:
    n_week = h.sizes[h.week]
    n_base = sum(h.baseline_sizes.values())
    week = h.week_frame().rename({"papers": "papers_week"})
    base = h.baseline_frame().group_by("term").agg(papers_baseline=pl.col("papers").sum())
    both = (
        week.join(base, on="term", how="full", coalesce=True)
        .with_columns(pl.col("papers_week", "papers_baseline").fill_null(0))
        .filter(
            (pl.col("papers_week") >= MIN_SUPPORT)
            | (pl.col("papers_baseline") * n_week >= MIN_SUPPORT * n_base)
        )
        .sort("term")
    )
    return both, n_week, n_base


def _report(both: pl.DataFrame, significant: np.ndarray, up: np.ndarray) -> dict[str, str]:
    yi = both["papers_week"].to_numpy()
    out = {}
    for term, sig, rising, y in zip(both["term"], significant, up, yi, strict=True):
        if sig and (not rising or y >= MIN_SUPPORT):
            out[term] = "rising" if rising else "falling"
    return out


def fw(prior: str, bh: bool) -> Method:
    def run(h: History, fdr: float) -> dict[str, str]:
        both, n_week, n_base = _table(h)
        a0 = 100.0 if prior == "100" else float(n_week)
        z = fightin_words_z(
            both["papers_week"].to_numpy(), both["papers_baseline"].to_numpy(), n_week, n_base, a0
        )
        if bh:
            significant = benjamini_hochberg(2 * stats.norm.sf(np.abs(z))) <= fdr
        else:
            significant = np.abs(z) >= 1.96
        return _report(both, significant, z > 0)

    return run


def fisher(h: History, fdr: float) -> dict[str, str]:
    both, n_week, n_base = _table(h)
    yi = both["papers_week"].to_numpy()
    total = yi + both["papers_baseline"].to_numpy()
    population = n_week + n_base
    p_up = stats.hypergeom.sf(yi - 1, population, total, n_week)
    p_down = stats.hypergeom.cdf(yi, population, total, n_week)
    q = benjamini_hochberg(np.minimum(1.0, 2 * np.minimum(p_up, p_down)))
    return _report(both, q <= fdr, p_up < p_down)


def betabin_binomial(h: History, fdr: float) -> dict[str, str]:
    both, n_week, n_base = _table(h)
    p_up, p_down = beta_binomial_p_values(
        both["papers_week"].to_numpy(), both["papers_baseline"].to_numpy(), n_week, n_base, 0.0
    )
    q = benjamini_hochberg(np.minimum(1.0, 2 * np.minimum(p_up, p_down)))
    return _report(both, q <= fdr, p_up < p_down)


def betabin_wobble(h: History, fdr: float) -> dict[str, str]:
    scored = score_trending_terms(
        h.week_frame(), h.baseline_frame(), h.sizes[h.week], h.baseline_sizes, MIN_SUPPORT,
        fdr=fdr,
    )  # fmt: skip
    return {
        t: ("rising" if k in ("new", "rising") else "falling")
        for t, k in scored.select("term", "kind").iter_rows()
    }


METHODS: dict[str, Method] = {
    "fw-100": fw("100", bh=False),
    "fw-scaled": fw("scaled", bh=False),
    "fw-scaled+bh": fw("scaled", bh=True),
    "fisher+bh": fisher,
    "betabin+bh": betabin_binomial,
    "betabin-wobble+bh": betabin_wobble,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--histories", type=int, default=20, help="seeded histories per cell")
    parser.add_argument("--fdr", type=float, default=0.05, help="false discovery rate")
    parser.add_argument("--wobble", type=float, default=0.15, help="σ of weekly rate wobble")
    parser.add_argument(
        "--method", action="append", choices=sorted(METHODS), help="only these (repeatable)"
    )
    args = parser.parse_args()
    methods = {k: v for k, v in METHODS.items() if not args.method or k in args.method}
    started = time.perf_counter()
    print(
        f"histories per cell: {args.histories}; wobble σ = {args.wobble}; "
        f"min_support {MIN_SUPPORT}; FDR {args.fdr}; load average {os.getloadavg()[0]:.2f}"
    )
    print(
        "| papers/week | method | new found | rising found | falling found "
        "| false discoveries/week, nothing planted (max) | same, planted weeks |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for size in SIZES:
        planted = [
            simulate_history(1000 + s, size, wobble=args.wobble) for s in range(args.histories)
        ]
        null = [
            simulate_history(5000 + s, size, planted=False, wobble=args.wobble)
            for s in range(args.histories)
        ]
        for name, method in methods.items():
            found = {"new": 0, "rising": 0, "falling": 0}
            fd_planted = 0
            for h in planted:
                shown = method(h, args.fdr)
                for term, kind in h.planted.items():
                    want = "falling" if kind == "falling" else "rising"
                    found[kind] += shown.get(term) == want
                fd_planted += sum(1 for t in shown if t not in h.planted)
            fd_null = [len(method(h, args.fdr)) for h in null]
            n = args.histories
            print(
                f"| {size:,} | {name} | {found['new']}/{n} | {found['rising']}/{n} "
                f"| {found['falling']}/{n} | {np.mean(fd_null):.2f} ({max(fd_null)}) "
                f"| {fd_planted / n:.2f} |"
            )
    print(f"took {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
