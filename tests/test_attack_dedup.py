"""A family of hundreds of near-identical abstracts: LSH candidates stay linear.

Found by feeding paperwatch a Markdown table of 10,000 templated rows: every row fell in
the same LSH buckets, the candidate join made n·(n-1)/2 pairs per band, DuckDB ran out
of memory in near-duplicate detection, and every later run failed the same way.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from paperwatch import db
from paperwatch.analysis.duplicates import BUCKET_ANCHORS, PaperText, candidate_pairs, sketch_papers
from paperwatch.db.duplicates import update_near_duplicates
from paperwatch.settings import Settings
from tests.near_duplicates import find_near_duplicates
from tests.test_dedup import insert_papers, near_rows

T0 = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
BASE = (
    "Field notes from a coastal survey describe how volunteers counted nesting terns "
    "on three islands over six summers, compared their tallies with drone photographs, "
    "and found that counts made from boats missed about a fifth of the nests hidden "
    "under driftwood while counts from the air missed chicks sheltering in the grass, "
    "so we recommend combining both methods with a short training session for every "
    "new volunteer and a shared sheet of reference photographs, as described in"
)


def family(n: int, seen: datetime = T0, start: int = 0) -> list[PaperText]:
    """``n`` abstracts that differ in their last words only (Jaccard about 0.95)."""
    papers = []
    for i in range(start, start + n):
        text = f"{BASE} appendix {i} of the survey."
        pid = hashlib.sha256(text.encode()).hexdigest()[:16]
        papers.append(PaperText(pid, text, seen))
    return papers


def reference_pairs(bands: pl.DataFrame, new: set[str], anchors: int) -> set[tuple[str, str]]:
    """The candidate rule written out plainly: two papers of one bucket, one of them new,
    and one of them among the bucket's ``anchors`` smallest paper ids."""
    pairs: set[tuple[str, str]] = set()
    for (_, _), group in bands.group_by("band", "band_key"):
        members = sorted(set(group["paper_id"].to_list()))
        top = set(members[:anchors])
        for x in members:
            for y in members:
                if x < y and (x in new or y in new) and (x in top or y in top):
                    pairs.add((x, y))
    return pairs


def test_candidates_of_a_large_family_follow_the_anchor_rule() -> None:
    papers = family(300)
    settings = Settings()
    bands = sketch_papers(papers, settings.dedup).bands()
    sizes = bands.group_by("band", "band_key").len()
    # Every band has one bucket of more than 16 variants, the largest of 277.
    assert (sizes["len"].max(), sizes.filter(pl.col("len") > BUCKET_ANCHORS).height) == (277, 21)
    found = candidate_pairs(bands)
    pairs = set(found.iter_rows())
    ids = {p.paper_id for p in papers}
    assert pairs == reference_pairs(bands, ids, BUCKET_ANCHORS)
    # Without the cap: 44,850 pairs (300·299/2); with it, each band's big bucket pairs its
    # members with its 16 anchors only, and the anchors differ from band to band.
    assert len(pairs) == 8_033


def test_candidates_against_earlier_papers_use_the_whole_bucket() -> None:
    settings = Settings()
    earlier = family(200)
    new = family(100, T0 + timedelta(days=7), start=200)
    e_bands = sketch_papers(earlier, settings.dedup).bands()
    n_bands = sketch_papers(new, settings.dedup).bands()
    pairs = set(candidate_pairs(n_bands, e_bands).iter_rows())
    expected = reference_pairs(
        pl.concat([n_bands, e_bands]), {p.paper_id for p in new}, BUCKET_ANCHORS
    )
    assert pairs == expected
    assert all(x in {p.paper_id for p in new} or y in {p.paper_id for p in new} for x, y in pairs)


def test_update_near_duplicates_of_a_large_family(tmp_path: Path) -> None:
    papers = family(1_000)
    settings = Settings()
    with db.writer(tmp_path / "family.duckdb") as con:
        insert_papers(con, papers)
        inserted = update_near_duplicates(con, settings, T0)
        rows = near_rows(con)
        per_paper = con.execute(
            "select max(n), count(*) from "
            "(select paper_id, count(*) as n from near_duplicates group by paper_id)"
        ).fetchone()
    expected = find_near_duplicates(papers, dedup=settings.dedup)
    assert [(p.paper_id, p.duplicate_of, p.similarity) for p in expected] == [r[:3] for r in rows]
    # Every paper but the oldest (smallest id: same first_seen) has an older near-duplicate,
    # and keeps its 10 closest.
    assert per_paper == (10, 999)
    assert inserted == len(rows) == 9_945
