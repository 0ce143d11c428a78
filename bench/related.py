"""Cost of "related earlier papers" (paperwatch/related.py) at 100,000 papers.

Builds a database of ``--papers`` synthetic abstracts (bench/corpus.py's model of the
seeds: their vocabulary, bigrams and sentence shapes) spread over ``--weeks`` ISO
weeks, the last week holding ``--new`` papers; extracts their terms as ingestion does
(``update_paper_terms``), then times what a report run adds: the TF-IDF cosine query
of the last week against every earlier paper and storing the rows in
``related_papers``. Prints the figures; asserts nothing. Usage::

    python bench/related.py --papers 100000 --new 1000 --weeks 10 [--database /tmp/rel.duckdb]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import _MAX_WORDS, _abstract, _chain, learn  # noqa: E402
from paperwatch import db  # noqa: E402
from paperwatch.clock import iso_week  # noqa: E402
from paperwatch.db.related import related_earlier_papers, store_related_papers  # noqa: E402
from paperwatch.db.trends import update_paper_terms  # noqa: E402
from paperwatch.ingest.clean import clean_abstract  # noqa: E402


def build(database: Path, papers: int, new: int, weeks: int, seed: int) -> str:
    """Fill ``database``; returns the last (reported) week."""
    model = learn(ROOT / "seeds")
    rng = np.random.default_rng(seed)
    start = datetime(2026, 11, 23, 10, tzinfo=UTC) - timedelta(weeks=weeks - 1)
    earlier = papers - new
    sizes = [earlier // (weeks - 1)] * (weeks - 1)
    sizes[-1] += earlier - sum(sizes)
    sizes.append(new)
    serial = 0
    with db.writer(database) as con:
        for k, size in enumerate(sizes):
            seen = start + timedelta(weeks=k)
            week = iso_week(seen, ZoneUTC)
            file_id = con.execute(
                "insert into listing_files (sha256, path, name, sequence_number, size_bytes, "
                "mtime_ns, venue, year, status, first_seen, first_seen_week, run_id) values "
                "(?, ?, ?, ?, 0, 0, 'NeurIPS', 2026, 'loaded', ?, ?, 'bench') returning file_id",
                [f"{k:064x}", f"{k:03d}.txt", f"{k:03d}.txt", k, seen, week],
            ).fetchone()[0]
            rows = []
            for offset in range(0, size, 5_000):
                count = min(5_000, size - offset)
                codes = _chain(model, rng, count, _MAX_WORDS)
                for i in range(count):
                    clean = clean_abstract(_abstract(model, rng, codes[i], serial))
                    serial += 1
                    rows.append(
                        {"paper_id": clean.paper_id, "abstract": clean.abstract,
                         "abstract_raw": clean.abstract, "method_name": clean.method_name,
                         "first_sentence": clean.first_sentence, "word_count": clean.word_count,
                         "code_urls": list(clean.code_urls), "venue": "NeurIPS", "year": 2026,
                         "first_file_id": file_id, "first_position": offset + i + 1,
                         "first_seen": seen, "first_seen_week": week}
                    )  # fmt: skip
            frame = pl.DataFrame(rows, schema_overrides={"code_urls": pl.List(pl.String)})
            frame = frame.unique("paper_id", keep="first", maintain_order=True)
            con.register("_rows", frame.to_arrow())
            con.execute(
                "insert into papers by name select * from _rows "
                "where paper_id not in (select paper_id from papers)"
            )
            con.unregister("_rows")
        update_paper_terms(con)
    return week


ZoneUTC = __import__("zoneinfo").ZoneInfo("UTC")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--new", type=int, default=1_000, help="papers of the reported week")
    parser.add_argument("--weeks", type=int, default=10)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument(
        "--database", type=Path, help="keep the database here (reused when it exists)"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="related-bench-") as tmp:
        database = args.database or Path(tmp) / "bench.duckdb"
        began = time.perf_counter()
        if database.exists():
            with db.reader(database) as con:
                week = con.execute("select max(first_seen_week) from papers").fetchone()[0]
        else:
            week = build(database, args.papers, args.new, args.weeks, args.seed)
        built = time.perf_counter() - began
        with db.writer(database) as con:
            n_papers, n_terms = con.execute(
                "select (select count(*) from papers), (select count(*) from paper_terms)"
            ).fetchone()
            timings = []
            for _ in range(2):  # the second run is what a re-rendered week costs
                began = time.perf_counter()
                rows = related_earlier_papers(con, week)
                computed = time.perf_counter() - began
                store_related_papers(con, week, rows, datetime.now(UTC))
                timings.append((computed, time.perf_counter() - began))
        with_related = len({r["paper_id"] for r in rows})
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"papers: {n_papers:,} ({args.new:,} in {week}, the rest in {args.weeks - 1} earlier weeks)"
    )
    print(
        f"paper_terms rows: {n_terms:,}; database built or opened in {built:.1f} s (not part of the cost)"
    )
    for i, (computed, total) in enumerate(timings, 1):
        print(
            f"run {i}: related papers of {week}: query {computed:.2f} s, with storing {total:.2f} s"
        )
    print(f"rows stored: {len(rows):,}; new papers with at least one related: {with_related:,}")
    print(f"peak RSS of this process: {peak:,.0f} MiB; cores: {os.cpu_count()}; "
          f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip


if __name__ == "__main__":
    main()
