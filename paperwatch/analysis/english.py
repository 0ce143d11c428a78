"""Terms against general English: generic words and a first week's distinctive terms. Pure.

- :func:`is_generic`: generic words (common in general English by ``wordfreq``, or in the
  project's stop and generic lists) that are never shown.
- :func:`english_frequency`: a term's frequency in general English.
- :func:`distinctive_terms`: with no baseline, the week's terms most over-represented against
  general English (``wordfreq``'s packaged frequencies, Kilgarriff's keyness).
"""

from __future__ import annotations

import math
from functools import cache

import polars as pl

from paperwatch.analysis.term_rows import drop_covered
from paperwatch.analysis.terms import generic_terms, stop_words

#: A single word at or above this Zipf frequency in general English (wordfreq, ``en``) is
#: generic: 4.5 is about 30 times per million words ("approach" 4.9, "method" 4.8, "novel" 4.6,
#: "performance" 5.2, "structure" 4.8, "code" 5.1; kept: "privacy" 4.4, "graph" 4.1,
#: "transformer" 3.4, "mamba" 2.6). Speer et al., wordfreq 3.1 (2023),
#: doi:10.5281/zenodo.7199437.
GENERIC_ZIPF = 4.5


#: Frequency given to a term wordfreq does not know (Zipf 1: once per 10^8 words).
UNKNOWN_FREQUENCY = 1e-8


#: N of Kilgarriff's keyness ratio (f + N)/(f_ref + N), per million words: 10 favours terms
#: that are both frequent this week and rare in English (1 would favour the rarest words).
KEYNESS_SMOOTHING = 10.0


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
