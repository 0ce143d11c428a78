"""A reader's picks of a week from the database: papers close to their library, by
followed authors, and the papers they exclude. The maths is
:mod:`paperwatch.analysis.library`; this module reads the week's terms, titles and
authors (``sql/queries/week_paper_*.sql``) and, for an id-list library, the listed papers
(``library_papers_by_ids.sql``, ``paper_terms_of_ids.sql``).
"""

from __future__ import annotations

from dataclasses import replace
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
from paperwatch.ingest.library import LibraryItem
from paperwatch.settings import Reader

_TERMS = {"paper_id": pl.String, "term": pl.String, "n": pl.Int32}


def _frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=_TERMS) if rows else pl.DataFrame(schema=_TERMS)


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
    terms = _frame(db.query(con, "paper_terms_of_ids", ids=[r["paper_id"] for r in resolved]))
    index = pl.DataFrame(
        {"paper_id": [r["paper_id"] for r in resolved], "item": list(range(len(resolved)))},
        schema={"paper_id": pl.String, "item": pl.Int64},
    )
    rows = terms.join(index, on="paper_id").select("item", "term", "n")
    kept = [LibraryItem(r["title"], (), r["year"], "", r["external_id"]) for r in resolved]
    return kept, rows, len(wanted) - len(resolved)


def reader_picks(
    con: duckdb.DuckDBPyConnection,
    week: str,
    reader: Reader,
    library: list[LibraryItem] | None,
    this_year: int,
) -> ReaderPicks:
    """The picks of ``reader`` among the papers first seen in ``week``.

    Args:
        con: a connection (read-only is enough).
        week: ISO week ``YYYY-Www``.
        reader: the reader (``authors``, ``exclude``, ``library_picks``).
        library: the items of the reader's library file
            (:func:`paperwatch.ingest.library.read_library`), or None.
        this_year: the year ages are counted from (the report week's).

    Returns:
        A :class:`ReaderPicks`; papers excluded are in no other field.
    """
    if not (library or reader.authors or reader.exclude):
        return ReaderPicks()
    week_terms = _frame(db.query(con, "week_paper_terms", week=week))
    people = db.query(con, "week_paper_people", week=week)
    excluded = excluded_papers(
        week_terms, {r["paper_id"]: r["title"] for r in people}, reader.exclude
    )
    followed = {}
    if reader.authors:
        for row in people:
            names = followed_in(reader.authors, row["authors"])
            if names and row["paper_id"] not in excluded:
                followed[row["paper_id"]] = names
    picks = ReaderPicks(followed=followed, excluded=frozenset(excluded))
    if not library:
        return picks
    missing = 0
    if all(not item.text and item.external_id for item in library):  # an id list
        library, terms, missing = _resolve_ids(con, library)
    else:
        terms = item_terms([item.text for item in library])
    weights = recency_weights([item.year for item in library], this_year)
    matches = library_matches(week_terms, terms, weights, skip=excluded, limit=reader.library_picks)
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
