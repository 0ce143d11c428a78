"""Benchmark: the whole ingestion pipeline over a synthetic corpus, against a floor and a reference.

One command, on a corpus written by ``bench/corpus.py`` (generated first when
``--generate FILES ENTRIES WEEKS`` is given), into a fresh DuckDB file:

1. **floor**: read every byte of the corpus and sha256 it (one process);
2. **paperwatch**, stage by stage, calling the library the way
   ``flows/ingest.py`` does (one ``--as-of`` per week folder of the corpus):
   scan → prepare (read, hash, parse, clean; a process pool over all cores, the
   next batch prepared while the current one is validated and loaded) →
   validate (Great Expectations, two suites per batch) → load (one transaction
   per file) → near-duplicates (MinHash LSH, per batch) → terms (per batch) →
   report (the last week);
3. **reference**: a straightforward pipeline with the same rules where they
   exist in the library, one process, over the same files into the same DuckDB
   tables: Python reading and parsing, a pandas frame per file with
   ``clean_abstract`` applied row by row, pandas checks instead of Great
   Expectations, exact duplicates by a pandas anti-join on ``paper_id``,
   datasketch ``MinHash`` + ``MinHashLSH`` (same bands) with exact Jaccard
   verification, plain-Python word 1-3-gram terms, inserts from pandas;
4. **flow**: one real ``ingest-listings`` flow run over the first week folder
   into another fresh database (Prefect's temporary server unless
   ``PREFECT_API_URL`` is set), to compare with the stage total;
5. **scan** of 10,000 already-recorded files (``--scan-files``), **report** of a
   week with 20,000 new papers (the last week of a corpus generated with that
   many papers per week), and **Prefect overhead** (flow start, a task call,
   a submitted task).

Per stage: wall seconds, papers per second, peak RSS of this process and its
children ("peak RSS MB") and of this process alone ("main MB"; the difference is
the worker processes), sampled every 50 ms. Usage::

    python bench/pipeline.py --corpus /tmp/pw-100k --generate 100 1000 5
    python bench/pipeline.py --corpus /tmp/pw-1m --generate 1000 1000 10 --skip-reference
    python bench/pipeline.py --corpus /tmp/pw-100k --profile /tmp/pw-100k.prof
"""

# ruff: noqa: SIM117  (stage timers wrap the database context on purpose)
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paperwatch import db  # noqa: E402
from paperwatch.clock import iso_week, parse_as_of  # noqa: E402
from paperwatch.db.batches import (  # noqa: E402
    bulk_session,
    check_batch,
    default_workers,
    load_batch,
    new_paper_signatures,
    plan_batches,
    prepare_batch,
    prepare_pool,
    store_batch_terms,
)
from paperwatch.db.duplicates import update_near_duplicates  # noqa: E402
from paperwatch.db.load import known_sequence_numbers, known_stats, record_ignored  # noqa: E402
from paperwatch.db.report_data import collect_report  # noqa: E402
from paperwatch.db.runs import IngestSummary, RunContext, finish_run, start_run  # noqa: E402
from paperwatch.db.trends import update_paper_terms  # noqa: E402
from paperwatch.ingest.files import scan_folder, select_changed  # noqa: E402
from paperwatch.report.render import render_report  # noqa: E402
from paperwatch.settings import Settings, load_settings  # noqa: E402

# --- measuring -----------------------------------------------------------------


class RssSampler:
    """Samples the RSS of this process plus its children every ``interval`` seconds and
    keeps the peak per named stage (bytes): ``peaks`` of the whole tree, ``main_peaks``
    of this process alone (the worker processes preparing files are the difference)."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.stage = "setup"
        self.peaks: dict[str, int] = {}
        self.main_peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._me = psutil.Process()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        return self.sample()[0]

    def sample(self) -> tuple[int, int]:
        """(RSS of this process and its children, RSS of this process) in bytes."""
        main = self._me.memory_info().rss
        total = main
        for child in self._me.children(recursive=True):
            with suppress(psutil.Error):
                total += child.memory_info().rss
        return total, main

    def record(self, stage: str) -> None:
        total, main = self.sample()
        self.peaks[stage] = max(self.peaks.get(stage, 0), total)
        self.main_peaks[stage] = max(self.main_peaks.get(stage, 0), main)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.record(self.stage)
            self._stop.wait(self.interval)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Timings:
    """Wall seconds and peak RSS per stage, in the order stages first ran."""

    sampler: RssSampler
    prefix: str
    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        key = f"{self.prefix}{name}"
        previous = self.sampler.stage
        self.sampler.stage = key
        self.sampler.record(key)
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - started
            self.sampler.stage = previous

    def rows(self, papers: int) -> list[tuple[str, float, float, float, float]]:
        return [
            (
                k,
                s,
                papers / s if s else float("inf"),
                self.sampler.peaks.get(k, 0) / 2**20,
                self.sampler.main_peaks.get(k, 0) / 2**20,
            )
            for k, s in self.seconds.items()
        ]


def print_table(title: str, rows: list[tuple[str, float, float, float, float]]) -> None:
    print(f"\n{title}")
    print(f"  {'stage':28s} {'seconds':>9s} {'papers/s':>10s} {'peak RSS MB':>12s} {'main MB':>9s}")
    for name, seconds, rate, rss, main in rows:
        print(f"  {name:28s} {seconds:9.2f} {rate:10,.0f} {rss:12,.0f} {main:9,.0f}")


# --- the corpus ------------------------------------------------------------------


def load_manifest(corpus: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((corpus / "corpus.json").read_text(encoding="utf-8"))
    return manifest


def corpus_files(corpus: Path) -> list[Path]:
    return sorted(corpus.glob("w*/*.txt"))


def floor(corpus: Path, timings: Timings) -> int:
    """Read and sha256 every byte: the least any ingestion must do. Returns the byte count."""
    total = 0
    with timings.stage("read + sha256"):
        for path in corpus_files(corpus):
            data = path.read_bytes()
            hashlib.sha256(data).hexdigest()
            total += len(data)
    return total


# --- paperwatch, stage by stage ------------------------------------------------------


def run_paperwatch(
    corpus: Path, database: Path, settings: Settings, timings: Timings
) -> IngestSummary:
    """The flow's work, calling the library directly; returns the summed counts."""
    manifest = load_manifest(corpus)
    total = IngestSummary(run_id="bench", week="")
    workers = default_workers(settings.prepare_workers)
    last_week = ""
    reader = ThreadPoolExecutor(max_workers=1)
    with timings.stage("import Great Expectations"):
        from paperwatch.ingest.validate import _runner

        _runner()  # about 3 s once per process; kept out of "validate"
    for week in manifest["weeks"]:
        folder = corpus / week["folder"]
        moment = parse_as_of(week["as_of"], settings.tz)
        run = RunContext(str(uuid.uuid4()), moment, iso_week(moment, settings.tz))
        last_week = run.week
        summary = IngestSummary(run_id=run.run_id, week=run.week)
        with timings.stage("scan"):
            scan = scan_folder(folder)
            with db.writer(database, settings.lock_timeout_s) as con:
                start_run(con, run, str(folder), moment)
                known = known_stats(con)
                numbers = known_sequence_numbers(con)
                record_ignored(con, list(scan.ignored), run)
            changed = select_changed(scan.files, known)
        summary.files_seen = len(scan.files)
        pending = sum(f.size for f in changed)
        session = bulk_session(
            database, settings.lock_timeout_s, pending, settings.bulk_memory_limit_mb
        )
        session.__enter__()
        dedup = settings.dedup
        try:
            with prepare_pool(workers, pending, settings.prepare_memory_limit_bytes) as pool:
                batches = plan_batches(
                    changed, settings.batch_files, settings.batch_bytes, ramp=pool is not None
                )
                future = reader.submit(
                    prepare_batch, batches[0], settings.max_file_bytes, pool, dedup
                )
                for index in range(len(batches)):
                    with timings.stage("prepare (wait)"):
                        read = future.result()
                    if index + 1 < len(batches):
                        future = reader.submit(
                            prepare_batch, batches[index + 1], settings.max_file_bytes, pool, dedup
                        )
                    with timings.stage("validate"):
                        checked = check_batch(read, numbers)
                    with timings.stage("load"):
                        with db.writer(database, settings.lock_timeout_s) as con:
                            outcomes = load_batch(con, read, checked, run, settings.max_file_bytes)
                    with timings.stage("terms (store)"):
                        with db.writer(database, settings.lock_timeout_s) as con:
                            store_batch_terms(con, read, outcomes, run.week)
                    new = 0
                    for outcome in outcomes:
                        summary.add(outcome)
                        new += outcome.new_papers
                    numbers |= {
                        f.sequence_number for f in read.prepared if f.sequence_number is not None
                    }
                    signatures = new_paper_signatures(read, outcomes)
                    del read, checked
                    if new:
                        with timings.stage("near-duplicates"):
                            with db.writer(database, settings.lock_timeout_s) as con:
                                summary.near_duplicates += update_near_duplicates(
                                    con, settings, moment, signatures
                                )

            if summary.new_papers:
                with timings.stage("terms (left over)"):
                    with db.writer(database, settings.lock_timeout_s) as con:
                        update_paper_terms(con)
        finally:
            with timings.stage("checkpoint"):
                session.__exit__(None, None, None)
        with db.writer(database, settings.lock_timeout_s) as con:
            finish_run(con, run.run_id, summary.run_counts(), moment)
        for name in ("files_loaded", "entries", "entries_loaded", "new_papers"):
            setattr(total, name, getattr(total, name) + getattr(summary, name))
        total.exact_duplicates += summary.exact_duplicates
        total.near_duplicates += summary.near_duplicates
        total.entries_quarantined += summary.entries_quarantined
    reader.shutdown()
    with timings.stage("report"):
        render_week(database, last_week, settings)
    return total


def render_week(database: Path, week: str, settings: Settings) -> int:
    """Collect and render one week's report (as the ``render-report`` task); returns HTML bytes."""
    with db.writer(database, settings.lock_timeout_s) as con:
        data = collect_report(con, week, settings)
    return len(render_report(data).html)


# --- the reference ---------------------------------------------------------------

_REF_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9\-]+")
_REF_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "for",
        "on",
        "with",
        "and",
        "or",
        "by",
        "we",
        "our",
        "this",
        "that",
        "is",
        "are",
        "be",
        "as",
        "from",
        "at",
        "it",
        "its",
        "which",
        "these",
        "can",
        "than",
        "via",
        "into",
    ]
)


def _ref_terms(text: str) -> Counter[str]:
    words = [w.lower() for w in _REF_TOKEN.findall(text)]
    counts: Counter[str] = Counter()
    for n in (1, 2, 3):
        for i in range(len(words) - n + 1):
            gram = words[i : i + n]
            if gram[0] in _REF_STOP or gram[-1] in _REF_STOP:
                continue
            counts[" ".join(gram)] += 1
    return counts


def run_reference(corpus: Path, database: Path, settings: Settings, timings: Timings) -> int:
    """The straightforward pipeline (see the module docstring). Returns near-duplicate pairs."""
    import pandas as pd
    from datasketch import MinHash, MinHashLSH

    from paperwatch.analysis.duplicates import jaccard, lsh_params, shingles
    from paperwatch.ingest.clean import clean_abstract
    from paperwatch.ingest.parse import parse_listing

    manifest = load_manifest(corpus)
    params = lsh_params(settings.dedup.num_perm, settings.dedup.threshold)
    lsh = MinHashLSH(
        threshold=settings.dedup.threshold,
        num_perm=settings.dedup.num_perm,
        params=(params.bands, params.rows),
    )
    shingle_sets: dict[str, frozenset[str]] = {}
    pairs = 0
    file_id = 0
    with db.writer(database, settings.lock_timeout_s) as con:
        for week in manifest["weeks"]:
            moment = parse_as_of(week["as_of"], settings.tz)
            week_name = iso_week(moment, settings.tz)
            for path in sorted((corpus / week["folder"]).glob("*.txt")):
                file_id += 1
                with timings.stage("parse + clean"):
                    data = path.read_bytes()
                    listing = parse_listing(data.decode("utf-8"))
                    df = pd.DataFrame(
                        [(e.position, e.line, e.text) for e in listing.entries],
                        columns=["position", "line", "abstract_raw"],
                    )
                    cleaned = df["abstract_raw"].apply(clean_abstract)
                    df["abstract"] = cleaned.map(lambda c: c.abstract)
                    df["paper_id"] = cleaned.map(lambda c: c.paper_id)
                    df["method_name"] = cleaned.map(lambda c: c.method_name)
                    df["first_sentence"] = cleaned.map(lambda c: c.first_sentence)
                    df["word_count"] = cleaned.map(lambda c: c.word_count)
                    df["code_urls"] = cleaned.map(lambda c: list(c.code_urls))
                with timings.stage("validate"):
                    ok = df["abstract"].str.len().gt(0) & df["paper_id"].notna()
                    df = df[ok]
                with timings.stage("load"):
                    con.execute(
                        "insert into listing_files (file_id, sha256, path, name, size_bytes, "
                        "mtime_ns, status, entry_count, first_seen, first_seen_week, run_id) "
                        "values (?, ?, ?, ?, ?, 0, 'loaded', ?, ?, ?, 'reference')",
                        [
                            file_id,
                            hashlib.sha256(data).hexdigest(),
                            path.name,
                            path.name,
                            len(data),
                            len(df),
                            moment,
                            week_name,
                        ],
                    )
                    occ = df[["position", "line", "paper_id", "abstract_raw"]].rename(
                        columns={"abstract_raw": "raw_text"}
                    )
                    occ.insert(0, "file_id", file_id)
                    occ["run_id"] = "reference"
                    con.execute("insert into paper_occurrences by name select * from occ")
                    known = con.execute(
                        "select paper_id from papers where paper_id in (select paper_id from df)"
                    ).df()
                    new = df[~df["paper_id"].isin(known["paper_id"])].drop_duplicates("paper_id")
                    new = new.assign(
                        venue=None,
                        year=None,
                        first_file_id=file_id,
                        first_position=new["position"],
                        first_seen=moment,
                        first_seen_week=week_name,
                    )[
                        [
                            "paper_id",
                            "abstract",
                            "abstract_raw",
                            "method_name",
                            "first_sentence",
                            "word_count",
                            "code_urls",
                            "venue",
                            "year",
                            "first_file_id",
                            "first_position",
                            "first_seen",
                            "first_seen_week",
                        ]
                    ]
                    con.execute("insert into papers select * from new")
                with timings.stage("near-duplicates"):
                    found = []
                    for pid, text in zip(new["paper_id"], new["abstract"], strict=True):
                        sh = shingles(
                            text, settings.dedup.word_shingle, settings.dedup.char_shingle
                        )
                        m = MinHash(num_perm=settings.dedup.num_perm, seed=1)
                        m.update_batch([s.encode("utf-8") for s in sh])
                        for other in lsh.query(m):
                            if jaccard(sh, shingle_sets[other]) >= settings.dedup.threshold:
                                found.append((pid, other, jaccard(sh, shingle_sets[other])))
                        lsh.insert(pid, m)
                        shingle_sets[pid] = sh
                    if found:
                        nd = pd.DataFrame(found, columns=["paper_id", "duplicate_of", "similarity"])
                        nd["method"] = "datasketch"
                        nd["detected_at"] = moment
                        con.execute(
                            "insert into near_duplicates select * from nd on conflict do nothing"
                        )
                    pairs += len(found)
                with timings.stage("terms"):
                    rows = [
                        (pid, term, n)
                        for pid, text in zip(new["paper_id"], new["abstract"], strict=True)
                        for term, n in _ref_terms(text).items()
                    ]
                    con.register("terms", pd.DataFrame(rows, columns=["paper_id", "term", "n"]))
                    con.execute(
                        "insert into paper_terms (paper_id, term, n, first_seen_week) "
                        "select paper_id, term, n, ? from terms",
                        [week_name],
                    )
                    con.unregister("terms")
    with timings.stage("report"):
        render_week(database, week_name, settings)
    return pairs


# --- scan, flow and Prefect overhead ----------------------------------------------------


def scan_bench(folder: Path, files: int, timings: Timings) -> None:
    """Write ``files`` small listings, record them as loaded, and time a re-scan
    (stat first: nothing is read) the way the ``scan-listing-files`` task does."""
    folder.mkdir(parents=True, exist_ok=True)
    database = folder.parent / (folder.name + ".duckdb")
    database.unlink(missing_ok=True)
    for i in range(files):
        path = folder / f"{i:05d}_{i:016x}.txt"
        if not path.exists():
            path.write_text(f"ICML 2026\n\nAbstract number {i} of the scan test.\n")
    scan = scan_folder(folder)
    moment = parse_as_of("2026-10-05T09:00:00Z", load_settings().tz)
    import polars as pl

    rows = pl.DataFrame(
        {
            "sha256": [f"{i:064x}" for i in range(len(scan.files))],
            "path": [f.rel for f in scan.files],
            "name": [f.name for f in scan.files],
            "size_bytes": [f.size for f in scan.files],
            "mtime_ns": [f.mtime_ns for f in scan.files],
            "status": ["loaded"] * len(scan.files),
            "first_seen": [moment] * len(scan.files),
            "first_seen_week": ["2026-W41"] * len(scan.files),
            "run_id": ["scan-bench"] * len(scan.files),
        }
    )
    with db.writer(database) as con:
        con.register("rows", rows.to_arrow())
        con.execute(f"insert into listing_files ({', '.join(rows.columns)}) select * from rows")
    run = RunContext("scan-bench", moment, "2026-W41")
    with timings.stage(f"re-scan of {files:,} files"):
        scan = scan_folder(folder)
        with db.writer(database) as con:
            known = known_stats(con)
            known_sequence_numbers(con)
            record_ignored(con, list(scan.ignored), run)
        changed = select_changed(scan.files, known)
    assert not changed, f"{len(changed)} files would be read again"
    print(f"  re-scan: {len(scan.files):,} files, {len(changed)} to read")


def prefect_overhead(timings: Timings) -> None:
    """Time a trivial flow run, 20 task calls and 20 submitted tasks inside it."""
    from prefect import flow, task

    @task
    def nothing(x: int) -> int:
        return x

    @flow
    def empty() -> None:
        return None

    @flow
    def twenty_tasks() -> None:
        for i in range(20):
            nothing(i)

    @flow
    def twenty_submitted() -> None:
        futures = [nothing.submit(i) for i in range(20)]
        for f in futures:
            f.result()

    with timings.stage("prefect: first flow run"):
        empty()
    with timings.stage("prefect: empty flow run"):
        empty()
    with timings.stage("prefect: flow + 20 task calls"):
        twenty_tasks()
    with timings.stage("prefect: flow + 20 submitted"):
        twenty_submitted()


def flow_run(corpus: Path, database: Path, timings: Timings) -> Any:
    """One real ``ingest-listings`` run over the first week folder (fresh database)."""
    from paperwatch.flows.ingest import ingest_listings

    week = load_manifest(corpus)["weeks"][0]
    with timings.stage("flow: ingest-listings (week 1)"):
        return ingest_listings(str(corpus / week["folder"]), str(database), week["as_of"])


# --- main -----------------------------------------------------------------------------


def machine() -> str:
    memory = psutil.virtual_memory().total / 2**30
    return (
        f"{platform.node()}: {os.cpu_count()} cores ({platform.processor() or platform.machine()}), "
        f"{memory:.0f} GiB, Python {platform.python_version()}, {platform.system()} "
        f"{platform.release()}; {datetime.now().astimezone():%Y-%m-%d %H:%M %Z}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument(
        "--generate",
        nargs=3,
        type=int,
        metavar=("FILES", "ENTRIES", "WEEKS"),
        help="write the corpus first with bench/corpus.py",
    )
    parser.add_argument(
        "--work", type=Path, default=None, help="databases go here (default: corpus/..)"
    )
    parser.add_argument("--batch-files", type=int, default=None)
    parser.add_argument("--workers", type=int, default=None, help="prepare_workers")
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument("--skip-flow", action="store_true")
    parser.add_argument("--scan-files", type=int, default=0, help="also time a re-scan of N files")
    parser.add_argument("--prefect", action="store_true", help="also time Prefect's overhead")
    parser.add_argument("--profile", type=Path, default=None, help="cProfile the paperwatch run")
    args = parser.parse_args(argv)

    if args.generate:
        files, entries, weeks = args.generate
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "bench" / "corpus.py"),
                "--out",
                str(args.corpus),
                "--files",
                str(files),
                "--entries",
                str(entries),
                "--weeks",
                str(weeks),
            ],
            check=True,
        )
    work = args.work or args.corpus.parent
    overrides: dict[str, object] = {}
    if args.batch_files:
        overrides["batch_files"] = args.batch_files
    if args.workers is not None:
        overrides["prepare_workers"] = args.workers
    settings = load_settings(**overrides)
    manifest = load_manifest(args.corpus)
    papers = int(manifest["files"]) * int(manifest["entries_per_file"])
    print(machine())
    print(
        f"corpus {args.corpus}: {manifest['files']:,} files × {manifest['entries_per_file']:,} "
        f"entries = {papers:,} abstracts in {len(manifest['weeks'])} week(s), "
        f"{manifest['bytes'] / 1e6:,.0f} MB; planted {manifest['planted']}; "
        f"batch_files={settings.batch_files} prepare_workers="
        f"{default_workers(settings.prepare_workers)}"
    )
    with RssSampler() as sampler:
        base = Timings(sampler, "floor: ")
        floor(args.corpus, base)
        print_table("floor", base.rows(papers))

        ours = Timings(sampler, "")
        database = work / f"{args.corpus.name}-paperwatch.duckdb"
        database.unlink(missing_ok=True)
        started = time.perf_counter()
        if args.profile:
            import cProfile

            profiler = cProfile.Profile()
            summary = profiler.runcall(run_paperwatch, args.corpus, database, settings, ours)
            profiler.dump_stats(args.profile)
        else:
            summary = run_paperwatch(args.corpus, database, settings, ours)
        total = time.perf_counter() - started
        peak = max(v for k, v in sampler.peaks.items() if not k.startswith("floor"))
        print_table("paperwatch", ours.rows(papers))
        print(
            f"  {'TOTAL':28s} {total:9.2f} {papers / total:10,.0f} {peak / 2**20:12,.0f}\n"
            f"  entries {summary.entries:,}, loaded {summary.entries_loaded:,}, new papers "
            f"{summary.new_papers:,}, exact duplicates {summary.exact_duplicates:,}, "
            f"near-duplicates {summary.near_duplicates:,}, quarantined {summary.entries_quarantined:,}"
        )
        floor_s = base.seconds["floor: read + sha256"]
        print(f"  ratio to floor: {total / floor_s:.1f}× the time of reading and hashing")

        if not args.skip_reference:
            ref = Timings(sampler, "reference: ")
            ref_db = work / f"{args.corpus.name}-reference.duckdb"
            ref_db.unlink(missing_ok=True)
            started = time.perf_counter()
            pairs = run_reference(args.corpus, ref_db, settings, ref)
            ref_total = time.perf_counter() - started
            print_table("reference (pandas + datasketch, one process)", ref.rows(papers))
            print(f"  {'TOTAL':28s} {ref_total:9.2f} {papers / ref_total:10,.0f}")
            print(f"  near-duplicate pairs {pairs:,}")
            print(f"  paperwatch is {ref_total / total:.1f}× faster than the reference")

        extra = Timings(sampler, "")
        if not args.skip_flow:
            flow_db = work / f"{args.corpus.name}-flow.duckdb"
            flow_db.unlink(missing_ok=True)
            result = flow_run(args.corpus, flow_db, extra)
            print(f"  flow run: {result.entries:,} entries, {result.new_papers:,} new papers")
        if args.scan_files:
            scan_bench(work / f"scan-{args.scan_files}", args.scan_files, extra)
        if args.prefect:
            prefect_overhead(extra)
        if extra.seconds:
            print_table("flow, scan and Prefect", extra.rows(papers))


if __name__ == "__main__":
    main()
