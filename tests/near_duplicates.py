"""Near-duplicates of papers held in memory, without a database: the reference the tests
(and bench/bench_near_duplicates.py) compare the stored pipeline with."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from paperwatch.analysis.duplicates import (
    NearDuplicate,
    PaperText,
    candidate_pairs,
    sketch_papers,
    verify_candidates,
)
from paperwatch.settings import DedupSettings


def find_near_duplicates(
    new: Sequence[PaperText],
    earlier: Sequence[PaperText] = (),
    dedup: DedupSettings | None = None,
    earlier_bands: pl.DataFrame | None = None,
) -> list[NearDuplicate]:
    """Near-duplicate pairs among ``new`` and between ``new`` and ``earlier`` papers.

    Args:
        new: the batch (distinct paper ids).
        earlier: papers already indexed; they are only compared with ``new``.
        dedup: ``Settings.dedup`` (defaults when None).
        earlier_bands: band keys of ``earlier`` (:func:`band_frame`), when stored;
            computed from ``earlier`` otherwise.

    Returns:
        Each pair of distinct papers with exact Jaccard >= threshold once, sorted,
        the older paper (earlier ``first_seen``, ties by paper_id) as ``duplicate_of``.
        Two batches give the same pairs as one batch of both (the LSH keys of a
        paper do not depend on its batch).
    """
    dedup = dedup or DedupSettings()
    if not new:
        return []
    batch = sketch_papers(new, dedup)
    if earlier_bands is None and earlier:
        earlier_bands = sketch_papers(earlier, dedup).bands()
    pairs = list(candidate_pairs(batch.bands(), earlier_bands).iter_rows())
    papers = {p.paper_id: p for p in (*earlier, *new)}
    return verify_candidates(pairs, papers, dedup, batch.shingle_sets(pairs))
