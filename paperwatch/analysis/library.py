"""A reader's library against the week's new papers: TF-IDF cosine, recency weights,
followed authors, exclusions. Pure functions (Polars, NumPy, SciPy; no DuckDB).

The rule (docs/email.md, "From your library"): each document is a vector of its terms
(:func:`paperwatch.analysis.terms.extract_terms`, the terms of ``paper_terms``) weighted
"ltc" (Salton & Buckley 1988, "Term-weighting approaches in automatic text retrieval",
IP&M 24(5); Manning, Raghavan & Schütze 2008, "Introduction to Information Retrieval",
ch. 6.4): tf ``1 + ln(n)``, idf ``ln(N / df)``, length-normalised. The collection whose
document frequencies give the idf is the week's new papers plus the library's items: a
term common this week or throughout the library tells the papers apart little. A new
paper's score is its best recency-weighted cosine with one library item,
``max_i w_i · cos(paper, item_i)`` over the items with ``cos >= MIN_SIMILARITY``; ``w_i``
halves every :data:`HALF_LIFE_YEARS` years of the item's age (exponential decay). The
best item is the reason shown, with the terms contributing most to that cosine.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from scipy import sparse

from paperwatch.analysis.terms import extract_terms

#: Years in which a library item's weight halves (an item 3 years old counts half, 6 years
#: a quarter). An item without a year counts as one this old.
HALF_LIFE_YEARS = 3.0

#: The least cosine between a new paper and a library item that makes the item its
#: reason. Below it the shared terms are a few common words: in the test week
#: (tests/library_week.py) the papers on no library topic reach 0.051 and 0.059 (one
#: shared word: "real", "predict"), the weakest paper on a library topic 0.28.
MIN_SIMILARITY = 0.1

#: Shared terms named in a reason.
SHARED_TERMS = 4

#: Week papers whose cosines with every item are computed at once (bounds memory to
#: about ``_CHUNK_CELLS`` floats).
_CHUNK_CELLS = 4_000_000

_SUFFIXES = frozenset(["jr", "sr", "ii", "iii", "iv"])


@dataclass(frozen=True, slots=True)
class LibraryMatch:
    """A new paper close to the library.

    Attributes:
        paper_id: the new paper.
        item: index of the closest library item (its reason).
        score: ``weight · cosine`` of that item, in (0, 1].
        similarity: the cosine, in [:data:`MIN_SIMILARITY`, 1].
        shared: the shared terms contributing most to the cosine, most first.
    """

    paper_id: str
    item: int
    score: float
    similarity: float
    shared: tuple[str, ...]


def recency_weights(
    years: Sequence[int | None], this_year: int, half_life: float = HALF_LIFE_YEARS
) -> list[float]:
    """``0.5 ** (age / half_life)`` per item, age ``this_year - year`` in years (0 for a
    year ahead); an item without a year is ``half_life`` old (weight 0.5)."""
    return [
        0.5 ** ((max(0, this_year - year) if year is not None else half_life) / half_life)
        for year in years
    ]


def item_terms(texts: Sequence[str]) -> pl.DataFrame:
    """Terms of library items' clean texts: rows (item: Int64 index into ``texts``,
    term, n), by :func:`extract_terms` (an empty text has no row)."""
    frame = pl.DataFrame(
        {"paper_id": list(range(len(texts))), "abstract": list(texts)},
        schema={"paper_id": pl.Int64, "abstract": pl.String},
    )
    return extract_terms(frame).select(item="paper_id", term="term", n="n")


def _weighted(rows: pl.DataFrame, idf: pl.DataFrame) -> pl.DataFrame:
    """``rows`` (doc, term, n) with ``w``: ltc weight, length-normalised per doc."""
    out = rows.join(idf, on="term").with_columns(
        w=(1.0 + pl.col("n").cast(pl.Float64).log()) * pl.col("idf")
    )
    out = out.with_columns(norm=(pl.col("w") ** 2).sum().over("doc").sqrt())
    return out.filter(pl.col("norm") > 0).select("doc", "term", w=pl.col("w") / pl.col("norm"))


def library_matches(
    week_terms: pl.DataFrame,
    library_terms: pl.DataFrame,
    weights: Sequence[float],
    *,
    skip: Collection[str] = (),
    limit: int | None = None,
    min_similarity: float = MIN_SIMILARITY,
    shared_terms: int = SHARED_TERMS,
) -> list[LibraryMatch]:
    """The week's papers closest to the library, best first (the rule of the module).

    Args:
        week_terms: rows (paper_id: str, term, n) of the week's new papers (``paper_terms``).
        library_terms: rows (item: int, term, n) of the library (:func:`item_terms`).
        weights: recency weight of each item (:func:`recency_weights`), by item index.
        skip: paper ids never returned (the reader's exclusions); they still count in
            the document frequencies (they are of the week).
        limit: at most this many matches (None: all).
        min_similarity: the least cosine of a paper and its reason item.
        shared_terms: shared terms kept per match.

    Returns:
        :class:`LibraryMatch` rows by score, highest first, ties by paper_id; among items
        of equal weighted cosine the first item is the reason. Empty without terms.
    """
    if week_terms.height == 0 or library_terms.height == 0:
        return []
    week = week_terms.select(doc=pl.lit("p:") + pl.col("paper_id"), term="term", n="n")
    items = library_terms.select(
        doc=pl.lit("l:") + pl.col("item").cast(pl.String), term="term", n="n"
    )
    rows = pl.concat([week, items])
    total = rows["doc"].n_unique()
    idf = (
        rows.group_by("term")
        .agg(df=pl.col("doc").n_unique())
        .select("term", idf=(total / pl.col("df").cast(pl.Float64)).log())
    )
    vocab = library_terms.select("term").unique().sort("term").with_row_index("t", offset=0)
    lib = (
        _weighted(items, idf)
        .join(vocab, on="term")
        .with_columns(item=pl.col("doc").str.slice(2).cast(pl.Int64))
    )
    papers = _weighted(week, idf)
    ids = papers.select("doc").unique().sort("doc")["doc"]
    papers = papers.join(vocab, on="term").join(ids.to_frame().with_row_index("row"), on="doc")
    if lib.height == 0 or papers.height == 0:
        return []
    count = len(weights)
    item_matrix = sparse.csr_matrix(
        (lib["w"].to_numpy(), (lib["item"].to_numpy(), lib["t"].to_numpy())),
        shape=(count, vocab.height),
    ).T.tocsr()
    paper_matrix = sparse.csr_matrix(
        (papers["w"].to_numpy(), (papers["row"].to_numpy(), papers["t"].to_numpy())),
        shape=(len(ids), vocab.height),
    )
    weight = np.asarray(weights, dtype=np.float64)
    skipped = {f"p:{paper_id}" for paper_id in skip}
    found: list[tuple[float, str, int, float]] = []
    step = max(1, _CHUNK_CELLS // max(1, count))
    for start in range(0, len(ids), step):
        cosines = (paper_matrix[start : start + step] @ item_matrix).toarray()
        cosines[cosines < min_similarity - 1e-12] = 0.0
        scored = cosines * weight
        best = scored.argmax(axis=1)
        for offset, item in enumerate(best):
            score = float(scored[offset, item])
            doc = ids[start + offset]
            if score > 0 and doc not in skipped:
                found.append((score, doc[2:], int(item), float(cosines[offset, item])))
    found.sort(key=lambda x: (-x[0], x[1]))
    kept = found if limit is None else found[:limit]
    shared = _shared(papers, lib, [(f"p:{p}", item) for _, p, item, _ in kept], shared_terms)
    return [
        LibraryMatch(paper_id, item, score, min(1.0, cosine), shared[(f"p:{paper_id}", item)])
        for score, paper_id, item, cosine in kept
    ]


def _shared(
    papers: pl.DataFrame, lib: pl.DataFrame, pairs: list[tuple[str, int]], limit: int
) -> dict[tuple[str, int], tuple[str, ...]]:
    """Per (paper doc, item): the shared terms by their part of the cosine, most first
    (ties by term), leaving out a term that shares a word with one already kept."""
    if not pairs:
        return {}
    wanted = pl.DataFrame(
        {"doc": [d for d, _ in pairs], "item": [i for _, i in pairs]},
        schema={"doc": pl.String, "item": pl.Int64},
    )
    joined = (
        wanted.join(papers.select("doc", "term", pw="w"), on="doc")
        .join(lib.select("item", "term", lw="w"), on=["item", "term"])
        .with_columns(part=pl.col("pw") * pl.col("lw"))
        .sort(["doc", "item", "part", "term"], descending=[False, False, True, False])
    )
    out: dict[tuple[str, int], tuple[str, ...]] = {pair: () for pair in pairs}
    for (doc, item), group in joined.group_by(["doc", "item"], maintain_order=True):
        kept: list[str] = []
        words: set[str] = set()
        for term in group["term"]:
            own = set(term.lower().split())
            if own & words:
                continue  # "equivariant graph" after "equivariant" says nothing new
            kept.append(term)
            words |= own
            if len(kept) == limit:
                break
        out[(str(doc), int(str(item)))] = tuple(kept)
    return out


def _folded(text: str) -> str:
    """Lower case without accents (NFKD, combining marks dropped), ``ß`` → ``ss``, dots
    and other punctuation but ``-`` and ``'`` turned into spaces."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return " ".join(re.sub(r"[^\w\s'\-]|_", " ", bare).split())


def name_key(name: str) -> tuple[str, str] | None:
    """(family name, first given name) of ``name``, folded (no case, no accents), or None
    for an empty name. ``Last, First`` is read as ``First Last``; a trailing Jr./Sr./II is
    dropped; a single word is a family name with an empty given name."""
    last, comma, first = name.partition(",")
    if comma:
        name = f"{first} {last}"
    words = _folded(name).split()
    while len(words) > 1 and words[-1] in _SUFFIXES:
        words.pop()
    if not words:
        return None
    return words[-1], (words[0] if len(words) > 1 else "")


def _given_match(wanted: str, given: str) -> bool:
    if not wanted or wanted == given:
        return True
    if not given:
        return False
    initial = len(wanted) == 1 or len(given) == 1  # "a" (from "A.") matches "ann"
    return initial and wanted[0] == given[0]


def followed_in(followed: Sequence[str], authors: Iterable[str]) -> list[str]:
    """The names of ``authors`` that one of ``followed`` matches, in ``authors``' order.

    A followed name matches an author with the same family name (:func:`name_key`) and the
    same first given name, or an initial of it on either side ("A. Lee" and "Ann Lee"); a
    followed family name alone ("Lee") matches every Lee. Middle names are not compared.
    """
    keys = [k for k in (name_key(n) for n in followed) if k is not None]
    found = []
    for author in authors:
        key = name_key(author)
        if key is not None and any(
            key[0] == family and _given_match(given, key[1]) for family, given in keys
        ):
            found.append(author)
    return found


def phrase_pattern(phrase: str) -> re.Pattern[str]:
    """``phrase`` as whole words in any case, any white space between its words."""
    words = [re.escape(w) for w in phrase.split()]
    start = r"\b" if re.match(r"\w", phrase) else ""
    end = r"\b" if re.search(r"\w$", phrase) else ""
    return re.compile(start + r"\s+".join(words) + end, re.IGNORECASE)


def excluded_papers(
    week_terms: pl.DataFrame, titles: Mapping[str, str | None], exclude: Sequence[str]
) -> set[str]:
    """Papers of ``week_terms`` (rows paper_id, term) or ``titles`` (paper_id → title) with
    an ``exclude`` phrase (lower case) among their terms (any case) or in their title
    (:func:`phrase_pattern`)."""
    if not exclude:
        return set()
    wanted = [" ".join(p.lower().split()) for p in exclude]
    by_term = week_terms.filter(pl.col("term").str.to_lowercase().is_in(wanted))
    found = set(by_term["paper_id"].to_list())
    patterns = [phrase_pattern(p) for p in wanted]
    for paper_id, title in titles.items():
        if title and any(p.search(title) for p in patterns):
            found.add(paper_id)
    return found


@dataclass(frozen=True, slots=True)
class ReaderPicks:
    """What a reader's own interests pick from a week.

    Attributes:
        library: papers close to the library, best first (at most ``reader.library_picks``),
            each ``{"paper_id", "score", "similarity", "title" (of the library item, or
            None), "year", "shared": [terms]}``.
        followed: paper_id → the paper's authors a followed name matches.
        excluded: papers never shown to the reader.
        library_items: items of the library used (an id-list library: those found).
        library_missing: ids of an id-list library not in the database.
    """

    library: list[dict[str, Any]] = field(default_factory=list)
    followed: dict[str, list[str]] = field(default_factory=dict)
    excluded: frozenset[str] = frozenset()
    library_items: int = 0
    library_missing: int = 0
