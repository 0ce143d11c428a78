"""Benchmark: what a preparation worker spends on each entry, in this process.

Generates ``--files`` listing files of ``--entries`` abstracts with ``bench/corpus.py``
(seed 2026, the corpus ``bench/cli.py`` times), then, ``--repeat`` times:

- ``prepare_files``: what a worker runs for a chunk (read, hash, parse, clean, the
  ``papers`` suite's rows, terms, MinHash signatures), CPU seconds of this process
  (``time.process_time``: Polars' threads included) per 1,000 entries;
- each cleaning step alone over the same entries (µs of CPU an entry): the steps of
  :func:`paperwatch.ingest.clean.clean_abstract`, :func:`paperwatch.ingest.shapes.entry_shape` and
  :func:`paperwatch.ingest.parse.parse_listing` per file.

The figures are for comparing two versions on one machine (run both in the same
session, interleaved, e.g. with ``PYTHONPATH`` at a worktree of the other commit):
a worker's CPU is about half of an ingest's (``bench/cli.py`` prints the whole).

    python bench/prepare.py [--files 6] [--entries 1000] [--repeat 3] [--work /tmp/pw-prepare]
    python bench/prepare.py --listings /tmp/paperwatch-bench/shared-corpus-100k/listings
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _corpus(work: Path, files: int, entries: int) -> Path:
    """The corpus folder under ``work`` (generated when missing)."""
    folder = work / f"corpus-{files}x{entries}"
    if not (folder / "corpus.json").exists():
        spec = importlib.util.spec_from_file_location("bench_corpus", ROOT / "bench" / "corpus.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["bench_corpus"] = module
        spec.loader.exec_module(module)
        module.generate(folder, files, entries, 1, 2026, 0.02, 0.05, date(2026, 10, 5))
    return folder / "w01"


def _cpu_us(function: Callable[[Any], object], items: Sequence[Any]) -> float:
    """CPU µs an item of ``function`` over ``items``."""
    started = time.process_time()
    for item in items:
        function(item)
    return (time.process_time() - started) * 1e6 / max(1, len(items))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=6)
    parser.add_argument("--entries", type=int, default=1000, help="abstracts per file")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/pw-prepare"))
    parser.add_argument(
        "--listings",
        type=Path,
        help="time these listing files instead (e.g. a corpus bench/cli.py made)",
    )
    args = parser.parse_args(argv)

    from paperwatch.ingest import clean, parse, sentences
    from paperwatch.ingest import names as method_names
    from paperwatch.ingest.files import prepare_file, read_listing_file, scan_folder
    from paperwatch.ingest.prepare import prepare_files
    from paperwatch.ingest.shapes import entry_shape
    from paperwatch.settings import DedupSettings

    folder = args.listings or _corpus(args.work, args.files, args.entries)
    stats = list(scan_folder(folder).files)[: args.files]
    dedup = DedupSettings()
    print(
        f"{platform.node() or 'machine'}: {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load {os.getloadavg()[0]:.2f}; "
        f"{len(stats)} files × {args.entries} entries from {folder}"
    )
    prepare_files(stats[:1], 1 << 30, dedup)  # imports and first calls
    for run in range(1, args.repeat + 1):
        started = time.process_time()
        batch = prepare_files(stats, 1 << 30, dedup)
        spent = time.process_time() - started
        per_k = spent * 1000 / max(1, batch.entries.height)
        print(f"prepare_files #{run}: {spent:6.2f} CPU-s, {per_k:5.3f} CPU-s per 1,000 entries")

    texts = [s.path.read_text(encoding="utf-8") for s in stats]
    raws: list[str] = []
    shaped: list[tuple[str, tuple[int, ...]]] = []
    for stat in stats:
        prepared = prepare_file(stat, read_listing_file(stat, 1 << 30))
        for entry in prepared.entries:
            raws.append(entry.body if entry.body is not None else entry.raw_text)
            shaped.append((entry.raw_text, tuple(entry.line_breaks)))
    marked = [clean.repair_ligatures(clean.split_listed_number(r)[1])[0] for r in raws]
    stripped = [clean.strip_markup(t, set()) for t in marked]
    split = [sentences.split_sentences(t) for t in stripped]
    steps: list[tuple[str, Callable[[Any], object], Sequence[Any]]] = [
        ("clean_abstract", clean.clean_abstract, raws),
        ("  strip_markup", lambda t: clean.strip_markup(t, set()), marked),
        ("  split_sentences", sentences.split_sentences, stripped),
        ("  paper_id_of", clean.paper_id_of, stripped),
        (
            "  find_method_name",
            lambda i: method_names.find_method_name(stripped[i], set(), split[i]),
            range(len(stripped)),
        ),
        ("  count_words", clean.count_words, stripped),
        ("latin_or_cjk_share", clean.latin_or_cjk_share, stripped),
        ("entry_shape", lambda e: entry_shape(*e), shaped),
    ]
    for name, function, items in steps:
        print(f"{name:20s} {_cpu_us(function, items):7.1f} µs an entry")
    per_file = _cpu_us(parse.parse_listing, texts)
    print(f"{'parse_listing':20s} {per_file / 1000:7.1f} ms a file of {args.entries} entries")


if __name__ == "__main__":
    main()
