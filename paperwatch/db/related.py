"""Related earlier papers: for each new paper of a week, the earlier papers most similar
in content, by TF-IDF cosine over the terms paperwatch already extracts (``paper_terms``).

The computation is one DuckDB query (``sql/queries/related_papers_of_week.sql``): tf
``1 + ln(n)``, idf ``ln(N / df)``, cosine of the length-normalised vectors (Manning,
Raghavan & Schütze 2008, "Introduction to Information Retrieval", ch. 6.4, "ltc").
Candidates are found as Lucene's MoreLikeThis does, by each new paper's
:data:`QUERY_TERMS` strongest terms; the :data:`CANDIDATES` best are scored exactly.
"Earlier" means first seen in an earlier ISO week; near-duplicate pairs are left out
(the report shows them as duplicates). The rows are kept in table ``related_papers``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb
import polars as pl

from paperwatch import db

#: Related papers kept per new paper.
RELATED_PER_PAPER = 3

#: Terms of a new paper that find its candidates: its highest-weighted ones (Lucene's
#: MoreLikeThis uses 25 by default, ``maxQueryTerms``).
QUERY_TERMS = 25

#: Earlier papers per new paper whose cosine is computed exactly (the best on the
#: query terms). The exact cosines are most of the cost (bench/related.py).
CANDIDATES = 20

#: Pairs less similar than this (cosine) are not shown: below it the shared terms are a
#: few common words. Chosen on the seeds plus a synthetic second week (tests/test_related.py).
MIN_SIMILARITY = 0.05


def related_earlier_papers(
    con: duckdb.DuckDBPyConnection,
    week: str,
    *,
    limit: int = RELATED_PER_PAPER,
    min_similarity: float = MIN_SIMILARITY,
    query_terms: int = QUERY_TERMS,
    candidates: int = CANDIDATES,
) -> list[dict[str, Any]]:
    """The related earlier papers of every paper first seen in ``week``.

    Args:
        con: a connection (read-only is enough).
        week: ISO week ``YYYY-Www``.
        limit: related papers per new paper at most (>= 1).
        min_similarity: the least cosine kept, in [0, 1].
        query_terms: highest-weighted terms of a new paper that find its candidates.
        candidates: earlier papers per new paper whose cosine is computed exactly; every
            returned similarity is exact, a pair outside the candidates is not returned.

    Returns:
        Rows ``{"paper_id", "related_id", "rank" (1 = most similar), "similarity"
        (cosine, float in (0, 1])}``, by paper then rank; ties by ``related_id``, so the
        result is deterministic. Empty when no earlier week has papers with terms (then
        the similarity query is not run: ``sql/queries/earlier_terms_exist.sql``).

    Raises:
        ValueError: ``limit`` < 1 or ``min_similarity`` outside [0, 1].
    """
    if limit < 1 or query_terms < 1 or candidates < limit:
        raise ValueError("limit and query_terms must be >= 1, candidates >= limit")
    if not 0.0 <= min_similarity <= 1.0:
        raise ValueError("min_similarity must be in [0, 1]")
    # A first week (or a first load of many weeks at once, reported for its oldest week)
    # has no earlier paper: the TF-IDF weights of its papers would be computed for nothing.
    if not db.query(con, "earlier_terms_exist", week=week)[0]["found"]:
        return []
    return db.query(
        con,
        "related_papers_of_week",
        week=week,
        limit=limit,
        min_similarity=min_similarity,
        query_terms=query_terms,
        candidates=candidates,
    )


def store_related_papers(
    con: duckdb.DuckDBPyConnection, week: str, rows: list[dict[str, Any]], at: datetime
) -> None:
    """Replace the ``related_papers`` rows of ``week`` with ``rows`` (one transaction).

    Args:
        con: a read-write connection.
        week: ISO week the rows belong to.
        rows: from :func:`related_earlier_papers`.
        at: the run's clock (time-zone aware), stored as ``computed_at``.
    """
    frame = pl.DataFrame(
        rows,
        schema={"paper_id": pl.String, "related_id": pl.String, "rank": pl.Int32,
                "similarity": pl.Float64},
    )  # fmt: skip
    with db.transaction(con):
        db.query(con, "delete_related_papers_of_week", week=week)
        # Bulk insert from the frame, never executemany (PITFALLS.md, DuckDB).
        con.register("_related_rows", frame)
        try:
            db.query(con, "insert_related_papers", week=week, at=at)
        finally:
            con.unregister("_related_rows")
