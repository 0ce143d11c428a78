"""Shaping the rows of the trending section: covered sub-terms, terms in the same papers, the
small charts, effect labels and example sentences. Pure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import polars as pl

_WORD_RE = re.compile(r"[\w][\w'’-]*")


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
    by :func:`paperwatch.ingest.sentences.split_sentences`.

    Returns:
        The sentence, or None when no sentence uses any of them.
    """
    from paperwatch.ingest.sentences import split_sentences

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
