"""Benchmark: term extraction of N synthetic abstracts, and one week's trending-terms scoring.

Abstracts are built from the seed abstracts' sentences (6 to 10 sentences drawn at random,
seeded), so the vocabulary and markup-free text look like real input. Prints wall times.

    PYTHONPATH=. python bench/bench_terms.py [--papers 100000] [--weeks 5]

Targets (issue 5): extraction of 100,000 abstracts under 30 s on 2 cores; the weekly
scoring (queries + scores + examples) under 1 s.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from paperwatch.analysis.terms import extract_terms
from paperwatch.clock import previous_weeks, week_monday
from paperwatch.db import writer
from paperwatch.db.trends import (
    trending_terms_for_week,
    update_paper_terms,
)
from paperwatch.ingest.clean import clean_abstract
from paperwatch.ingest.parse import decode_listing, parse_listing
from paperwatch.ingest.sentences import split_sentences
from paperwatch.settings import Settings

SEEDS = Path(__file__).resolve().parent.parent / "seeds"


def seed_sentences() -> list[str]:
    sentences: list[str] = []
    for path in sorted(SEEDS.glob("*.txt")):
        for entry in parse_listing(decode_listing(path.read_bytes())).entries:
            sentences.extend(split_sentences(clean_abstract(entry.text).abstract))
    return sorted(set(sentences))


def synthetic_papers(n: int, weeks: list[str], seed: int = 7) -> pl.DataFrame:
    rng = random.Random(seed)
    sentences = seed_sentences()
    abstracts = [" ".join(rng.sample(sentences, rng.randint(6, 10))) for _ in range(n)]
    return pl.DataFrame(
        {
            "paper_id": [f"{i:016x}" for i in range(n)],
            "abstract": abstracts,
            "first_seen_week": [weeks[i * len(weeks) // n] for i in range(n)],
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--weeks", type=int, default=5, help="ISO weeks the papers are spread over")
    args = parser.parse_args()

    week = "2027-W02"
    weeks = [*previous_weeks(week, args.weeks - 1), week]
    papers = synthetic_papers(args.papers, weeks)
    words = papers["abstract"].str.split(" ").list.len().sum()
    print(
        f"{args.papers:,} synthetic abstracts, {words:,} words, "
        f"{pl.thread_pool_size()} Polars threads"
    )

    start = time.perf_counter()
    terms = extract_terms(papers)
    elapsed = time.perf_counter() - start
    print(
        f"extract_terms: {elapsed:.2f} s, {args.papers / elapsed:,.0f} papers/s, "
        f"{terms.height:,} (paper, term) rows, {terms['term'].n_unique():,} distinct terms"
    )

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(database=Path(tmp) / "bench.duckdb")
        with writer(settings.database) as con:
            rows = papers.with_columns(
                abstract_raw=pl.col("abstract"),
                method_name=pl.lit(None, dtype=pl.String),
                first_sentence=pl.col("abstract").str.extract(r"^(.*?\.)\s", 1).fill_null(""),
                word_count=pl.col("abstract").str.split(" ").list.len().cast(pl.Int32),
                code_urls=pl.lit([], dtype=pl.List(pl.String)),
                venue=pl.lit("NeurIPS"),
                year=pl.lit(2026),
                first_file_id=pl.lit(1),
                first_position=pl.int_range(1, pl.len() + 1),
                first_seen=pl.col("first_seen_week").map_elements(
                    lambda w: datetime.combine(week_monday(w), datetime.min.time(), UTC),
                    return_dtype=pl.Datetime("us", "UTC"),
                ),
            )
            con.register("_bench_papers", rows.to_arrow())
            con.execute("insert into papers by name select * from _bench_papers")
            con.unregister("_bench_papers")

            start = time.perf_counter()
            done = update_paper_terms(con)
            elapsed = time.perf_counter() - start
            print(
                f"update_paper_terms: {done:,} papers in {elapsed:.2f} s "
                f"({done / elapsed:,.0f} papers/s, extraction + Arrow insert into DuckDB)"
            )

            for persist in (False, True):
                start = time.perf_counter()
                result = trending_terms_for_week(con, week, settings, persist=persist)
                elapsed = time.perf_counter() - start
                print(
                    f"trending_terms_for_week(persist={persist}): {elapsed:.3f} s "
                    f"({result.papers_week:,} papers vs {result.papers_baseline:,} baseline; "
                    f"{len(result.new)} new, {len(result.rising)} rising, {len(result.falling)} falling shown)"
                )


if __name__ == "__main__":
    main()
