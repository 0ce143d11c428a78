"""How long the expectation suites take: ``python bench/bench_validation.py [--n 100000]``.

Builds N entries from the seed abstracts (every entry distinct), then times, in
one process: the Great Expectations import and context set-up (paid once per
process), building the ``papers`` batch (cleaning included), and validating it
with the ``papers`` suite, as paperwatch does (two passes) and in one ``COMPLETE`` run
(:func:`paperwatch.ingest.validate.validate_frame_in_one_run`); and the ``listing_files``
suite over N/100 files.
Prints wall times and rows per second.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from paperwatch.ingest.files import ListingFileStat, prepare_file
from paperwatch.ingest.frames import entries_frame, files_frame
from paperwatch.ingest.validate import validate_frame, validate_frame_in_one_run

SEEDS = Path(__file__).resolve().parent.parent / "seeds"


def corpus(n: int, per_file: int) -> list[tuple[ListingFileStat, bytes]]:
    """N distinct entries (seed abstracts with a running number), ``per_file`` to a file."""
    abstracts = [
        paragraph
        for path in sorted(SEEDS.glob("*.txt"))
        for paragraph in path.read_text(encoding="utf-8").rstrip("\n").split("\n\n")[1:]
    ]
    files = []
    for start in range(0, n, per_file):
        entries = [
            f"{abstracts[i % len(abstracts)]} Variant {i}."
            for i in range(start, min(n, start + per_file))
        ]
        data = ("NeurIPS 2026 论文列表\n\n" + "\n\n".join(entries) + "\n").encode()
        name = f"{start // per_file:03d}_{start:016x}.txt"
        files.append((ListingFileStat(path=Path(name), rel=name, size=len(data), mtime_ns=0), data))
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="entries (default 100,000)")
    parser.add_argument("--per-file", type=int, default=100, help="entries per file (default 100)")
    args = parser.parse_args()

    files = corpus(args.n, args.per_file)
    started = time.perf_counter()
    validate_frame(entries_frame([prepare_file(*files[0])]), "papers")  # import GX, build context
    setup = time.perf_counter() - started

    started = time.perf_counter()
    prepared = [prepare_file(stat, data) for stat, data in files]
    entries = entries_frame(prepared)
    build = time.perf_counter() - started

    started = time.perf_counter()
    result = validate_frame(entries, "papers")
    papers = time.perf_counter() - started

    started = time.perf_counter()
    validate_frame_in_one_run(entries, "papers")
    one_run = time.perf_counter() - started

    started = time.perf_counter()
    listing = files_frame(prepared, [])
    file_result = validate_frame(listing, "listing_files")
    file_suite = time.perf_counter() - started

    failed = sum(r.unexpected_count for r in result.results if r.outcome == "failed")
    print(f"entries: {entries.height:,} in {len(files):,} files")
    print(f"GX import + context (once per process): {setup:6.2f} s")
    print(
        f"parse + clean + build batch:            {build:6.2f} s  ({entries.height / build:,.0f} entries/s)"
    )
    print(
        f"papers suite ({len(result.results)} expectations):      {papers:6.2f} s  ({entries.height / papers:,.0f} entries/s)"
    )
    print(
        f"  the same in one COMPLETE run:         {one_run:6.2f} s  (two passes: BOOLEAN_ONLY, then COMPLETE for what failed)"
    )
    print(
        f"listing_files suite ({len(file_result.results)} expectations): {file_suite:6.2f} s  ({listing.height:,} files)"
    )
    print(f"unexpected values found: {failed:,}")


if __name__ == "__main__":
    main()
