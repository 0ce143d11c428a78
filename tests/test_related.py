"""Related earlier papers: TF-IDF cosine over paper_terms, stored in related_papers, shown
under each new paper; near-duplicates are never related."""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from paperwatch import db
from paperwatch.db.related import MIN_SIMILARITY, related_earlier_papers
from paperwatch.db.report_data import collect_report
from paperwatch.report.render import render_report
from paperwatch.settings import Settings

from .report_weeks import EARLIER_ABSTRACTS, build

WEEK = "2026-W48"

#: (new paper, its most similar earlier paper, cosine rounded to 4 places), by new paper.
EXPECTED = [
    ("SPA-Q", "QuantEdge", 0.0537),
    ("Graph Cascades", "HopMix", 0.1695),
    ("HERO", "DriftGuard", 0.1366),
    ("SPHQuant", "QuantEdge", 0.0696),
    ("MSA", "HopMix", 0.0527),
    ("Ha-FCL", "DriftGuard", 0.2079),
    ("SpectralKV", "QuantEdge", 0.0533),
    ("DACS", "HopMix", 0.0749),
    ("StyleRoute", "StyleFlow", 0.1713),
    ("ScaleBITS", "QuantEdge", 0.0691),
    ("SP-CACW", "DriftGuard", 0.0638),
    ("SPIRIT", "DraftTune", 0.1198),
    ("SP²ec", "DraftTune", 0.0907),
    ("SP³", "StyleFlow", 0.0513),
]


@pytest.fixture
def weeks_database(tmp_path: Path) -> Path:
    return build(
        tmp_path / "weeks.duckdb",
        {"2026-W44": EARLIER_ABSTRACTS[:3], "2026-W45": EARLIER_ABSTRACTS[3:]},
        seeds_week=WEEK,
    )


def _stored(database: Path) -> list[tuple[str, str, int, float]]:
    with db.reader(database) as con:
        return [
            (a, b, rank, round(sim, 4))
            for a, b, rank, sim in con.execute(
                "select p.method_name, q.method_name, r.rank, r.similarity from related_papers r "
                "join papers p using (paper_id) join papers q on q.paper_id = r.related_id "
                "where r.week = ? order by r.paper_id, r.rank",
                [WEEK],
            ).fetchall()
        ]


def test_related_papers_are_stored_and_shown(weeks_database: Path) -> None:
    with db.writer(weeks_database) as con:
        data = collect_report(con, WEEK, Settings())
    assert _stored(weeks_database) == [(a, b, 1, s) for a, b, s in EXPECTED]
    # The medieval-manuscripts abstract shares no topic: related to nothing, and no new
    # paper of the week is related to a paper of the same week.
    assert sum(len(rows) for rows in data.related.values()) == 14
    assert all(
        r["week"] in ("2026-W44", "2026-W45") for rows in data.related.values() for r in rows
    )
    html = render_report(data).html
    assert "Related earlier papers: <b" in html
    assert ">StyleFlow</b> (2026-W45, similarity 0.17)" in html
    text = render_report(data).text
    assert "  related earlier: StyleFlow (2026-W45, similarity 0.17)\n" in text
    # A second report run of the week replaces its rows.
    with db.writer(weeks_database) as con:
        collect_report(con, WEEK, Settings())
        assert con.execute("select count(*) from related_papers").fetchone() == (14,)


def test_a_read_only_report_computes_the_same_without_storing(weeks_database: Path) -> None:
    with db.reader(weeks_database) as con:
        data = collect_report(con, WEEK, Settings(), persist=False)
        assert con.execute("select count(*) from related_papers").fetchone() == (0,)
    found = sorted(
        (row["method_name"], round(row["similarity"], 4))
        for rows in data.related.values()
        for row in rows
    )
    assert found == sorted((b, s) for _, b, s in EXPECTED)


def test_cosine_equals_an_independent_tf_idf(weeks_database: Path) -> None:
    """The SQL against the textbook formula computed here in Python for every pair: tf
    1 + ln(n), idf ln(N / df), cosine of the whole vectors."""
    with db.reader(weeks_database) as con:
        terms = con.execute("select paper_id, term, n, first_seen_week from paper_terms").fetchall()
        rows = related_earlier_papers(con, WEEK, min_similarity=0.0)
    papers = {p for p, *_ in terms}
    df: dict[str, int] = defaultdict(int)
    for _, term, _, _ in terms:
        df[term] += 1
    vectors: dict[str, dict[str, float]] = defaultdict(dict)
    weeks: dict[str, str] = {}
    for paper, term, n, week in terms:
        weeks[paper] = week
        vectors[paper][term] = (1 + math.log(n)) * math.log(len(papers) / df[term])

    def cosine(a: str, b: str) -> float:
        dot = sum(w * vectors[b].get(t, 0.0) for t, w in vectors[a].items())
        norms = math.sqrt(sum(w * w for w in vectors[a].values())) * math.sqrt(
            sum(w * w for w in vectors[b].values())
        )
        return dot / norms

    expected = {
        (a, b): cosine(a, b)
        for a in papers
        if weeks[a] == WEEK
        for b in papers
        if weeks[b] < WEEK and cosine(a, b) > 0
    }
    got = {(r["paper_id"], r["related_id"]): r["similarity"] for r in rows}
    # Every similarity returned is the exact cosine of the whole vectors ...
    assert len(got) > 50
    assert all(math.isclose(got[k], expected[k], rel_tol=1e-9) for k in got)
    # ... and each new paper's most similar earlier paper, where it is similar enough to be
    # shown, is found (MoreLikeThis candidates by the 25 strongest terms lose none of them
    # on this corpus; below MIN_SIMILARITY the ranking of near-zero cosines may differ).
    best: dict[str, tuple[float, str]] = {}
    for (a, b), value in expected.items():
        best[a] = max(best.get(a, (0.0, "")), (value, b))
    first = {
        r["paper_id"]: r["related_id"]
        for r in rows
        if r["rank"] == 1 and r["similarity"] >= MIN_SIMILARITY
    }
    assert first == {a: b for a, (value, b) in best.items() if value >= MIN_SIMILARITY}
    assert len(first) == 14


def test_near_duplicates_are_not_related(weeks_database: Path) -> None:
    with db.writer(weeks_database) as con:
        ids = dict(con.execute("select method_name, paper_id from papers").fetchall())
        con.execute(
            "insert into near_duplicates values (?, ?, 0.85, 'test', ?)",
            [ids["Ha-FCL"], ids["DriftGuard"], datetime(2026, 11, 25, tzinfo=UTC)],
        )
        data = collect_report(con, WEEK, Settings())
    assert data.related.get(ids["Ha-FCL"], []) == []
    assert ("Ha-FCL", "DriftGuard", 1, 0.2079) not in _stored(weeks_database)
    assert len(_stored(weeks_database)) == 13


def test_arguments_are_checked(weeks_database: Path) -> None:
    with db.reader(weeks_database) as con:
        with pytest.raises(ValueError, match="limit and query_terms"):
            related_earlier_papers(con, WEEK, limit=0)
        with pytest.raises(ValueError, match="min_similarity"):
            related_earlier_papers(con, WEEK, min_similarity=1.5)
        assert related_earlier_papers(con, "2026-W44") == []  # no earlier week
    assert 0 < MIN_SIMILARITY < 0.1


def test_a_week_without_earlier_terms_is_not_scored(
    weeks_database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first week has no earlier paper: no row, and the TF-IDF query is not run."""
    ran: list[str] = []
    query = db.query

    def recording(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> list[dict[str, Any]]:
        ran.append(name)
        return query(con, name, **params)

    monkeypatch.setattr(db, "query", recording)
    with db.reader(weeks_database) as con:
        assert related_earlier_papers(con, "2026-W44") == []
        assert ran == ["earlier_terms_exist"]
        # The second week has earlier papers: scored (none of its papers is similar enough).
        assert related_earlier_papers(con, "2026-W45") == []
        assert ran == ["earlier_terms_exist", "earlier_terms_exist", "related_papers_of_week"]
    with db.writer(weeks_database) as con:
        con.execute("delete from paper_terms where first_seen_week < ?", [WEEK])
        ran.clear()
        assert related_earlier_papers(con, WEEK) == []
        assert ran == ["earlier_terms_exist"]
