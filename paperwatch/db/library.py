"""A reader's picks of a week from the database: papers close to their library, by
followed authors, and the papers they exclude. The maths is
:mod:`paperwatch.analysis.library`; this module reads the week's terms, titles and
authors (``sql/queries/week_paper_*.sql``) and, for an id-list library, the listed papers
(``library_papers_by_ids.sql``, ``paper_terms_of_ids.sql``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import duckdb
import polars as pl

from paperwatch import db
from paperwatch.analysis.library import (
    ReaderPicks,
    excluded_papers,
    followed_in,
    item_terms,
    library_matches,
    recency_weights,
)
from paperwatch.db import read_sql
from paperwatch.ingest.library import LibraryItem
from paperwatch.settings import Reader

_TERMS = {"paper_id": pl.String, "term": pl.String, "n": pl.Int32}


@dataclass(frozen=True, slots=True)
class WeekPapers:
    """What readers' picks need of a week, read once for every reader (:func:`week_papers`).

    Attributes:
        week: ISO week ``YYYY-Www``.
        terms: rows (paper_id, term, n) of the week's new papers.
        titles: paper_id → title (None where the format has none).
        authors: paper_id → parsed authors (empty where the format has none).
    """

    week: str
    terms: pl.DataFrame
    titles: dict[str, str | None]
    authors: dict[str, list[str]]


def _frame(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> pl.DataFrame:
    """``sql/queries/<name>.sql`` as a Polars frame of columns paper_id, term, n (a week's
    terms are millions of rows: never a dict per row)."""
    found = con.sql(read_sql("queries", name), params=params).pl()
    return found.cast(_TERMS) if found.height else pl.DataFrame(schema=_TERMS)


def week_papers(con: duckdb.DuckDBPyConnection, week: str) -> WeekPapers:
    """The terms, titles and authors of the papers first seen in ``week``
    (``sql/queries/week_paper_terms.sql``, ``week_paper_people.sql``)."""
    people = con.sql(read_sql("queries", "week_paper_people"), params={"week": week}).pl()
    ids = people["paper_id"].to_list()
    return WeekPapers(
        week,
        _frame(con, "week_paper_terms", week=week),
        dict(zip(ids, people["title"].to_list(), strict=True)),
        dict(zip(ids, people["authors"].to_list(), strict=True)),
    )


def _resolve_ids(
    con: duckdb.DuckDBPyConnection, items: list[LibraryItem]
) -> tuple[list[LibraryItem], pl.DataFrame, int]:
    """An id-list library's items found in the database (first paper of each id), their
    terms as rows (item, term, n), and how many ids were not found."""
    wanted = list(dict.fromkeys(i.external_id for i in items if i.external_id))
    found: dict[str, dict[str, Any]] = {}
    for row in db.query(con, "library_papers_by_ids", ids=wanted):
        found.setdefault(row["external_id"], row)
    resolved = [found[i] for i in wanted if i in found]
    terms = _frame(con, "paper_terms_of_ids", ids=[r["paper_id"] for r in resolved])
    index = pl.DataFrame(
        {"paper_id": [r["paper_id"] for r in resolved], "item": list(range(len(resolved)))},
        schema={"paper_id": pl.String, "item": pl.Int64},
    )
    rows = terms.join(index, on="paper_id").select("item", "term", "n")
    kept = [LibraryItem(r["title"], (), r["year"], "", r["external_id"]) for r in resolved]
    return kept, rows, len(wanted) - len(resolved)


def reader_picks(
    con: duckdb.DuckDBPyConnection,
    week: WeekPapers,
    reader: Reader,
    library: list[LibraryItem] | None,
    this_year: int,
) -> ReaderPicks:
    """The picks of ``reader`` among the papers of ``week``.

    Args:
        con: a connection (read-only is enough; read for an id-list library only).
        week: the week's papers (:func:`week_papers`).
        reader: the reader (``authors``, ``exclude``, ``library_picks``).
        library: the items of the reader's library file
            (:func:`paperwatch.ingest.library.read_library`), or None.
        this_year: the year ages are counted from (the report week's).

    Returns:
        A :class:`ReaderPicks`; papers excluded are in no other field.
    """
    if not (library or reader.authors or reader.exclude):
        return ReaderPicks()
    excluded = excluded_papers(week.terms, week.titles, reader.exclude)
    followed = {}
    if reader.authors:
        for paper_id, authors in week.authors.items():
            names = followed_in(reader.authors, authors)
            if names and paper_id not in excluded:
                followed[paper_id] = names
    picks = ReaderPicks(followed=followed, excluded=frozenset(excluded))
    if not library:
        return picks
    missing = 0
    if all(not item.text and item.external_id for item in library):  # an id list
        library, terms, missing = _resolve_ids(con, library)
    else:
        terms = item_terms([item.text for item in library])
    weights = recency_weights([item.year for item in library], this_year)
    matches = library_matches(week.terms, terms, weights, skip=excluded, limit=reader.library_picks)
    rows = [
        {
            "paper_id": m.paper_id,
            "score": m.score,
            "similarity": m.similarity,
            "title": library[m.item].title,
            "year": library[m.item].year,
            "shared": list(m.shared),
        }
        for m in matches
    ]
    return replace(picks, library=rows, library_items=len(library), library_missing=missing)
