"""Many small files: time ``paperwatch ingest`` of N one-abstract listing files as a process,
beside the same abstracts in 200 files, and a copy of the folder at a new path.

The corpus comes from :mod:`bench.corpus` (``generate``: 200 files of N/200 abstracts,
seed 2026); the one-abstract files are cut from it, one file per entry with the
original header line, named ``NNNNN_<16 hex>.txt`` in entry order, so both sides hold
exactly the same abstracts. Each side is ingested into a fresh database by
``paperwatch ingest`` run as a child process (the real command, Prefect and all);
then, unless ``--skip-copy``, the one-abstract folder is copied to a new path with
``--added`` new one-abstract files and ingested again into the same database (what a
moved or copied folder costs once its files are known by content).

For each run it prints the wall time (s), the CPU seconds of the process tree
(user + system of the command and every descendant it waited for, from
``resource.getrusage(RUSAGE_CHILDREN)``), the peak RSS of the process tree (the sum
over the command and its descendants, sampled every 50 ms with psutil; MiB), the
files and papers/s, and the machine's load average when it started. Usage::

    python bench/many_files.py --files 20000
    python bench/many_files.py --files 2000 --keep /tmp/many   # keep the corpora

Exit status 1 when a command failed (its stderr is printed).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import suppress
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from corpus import generate  # noqa: E402

AS_OF = "2026-10-05T09:00:00Z"
LATER = "2026-10-12T09:00:00Z"


@dataclass(frozen=True, slots=True)
class Measured:
    """One command: wall seconds, CPU seconds of the tree, peak RSS of the tree (bytes)."""

    label: str
    files: int
    abstracts: int
    wall_s: float
    cpu_s: float
    peak_rss: int
    load: float
    tail: str


def split_into_single_files(source: Path, out: Path) -> int:
    """Write every entry of the listing files under ``source`` (sorted by path) as a file of
    its own under ``out`` (header line, blank line, the entry), named
    ``NNNNN_<16 hex>.txt`` (NNNNN: the entry's number, the hex: the source file's id and
    the entry's position). Returns the number of files written."""
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for path in sorted(source.rglob("*.txt")):
        text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
        header, _, body = text.partition("\n\n")
        token = path.stem.split("_", 1)[1][:10]
        for position, entry in enumerate(body.strip("\n").split("\n\n")):
            name = f"{count:05d}_{token}{position:06x}.txt"
            (out / name).write_text(f"{header}\n\n{entry}\n", encoding="utf-8")
            count += 1
    return count


def _tree_rss(process: psutil.Process) -> int:
    total = 0
    with suppress(psutil.Error):
        total += process.memory_info().rss
        for child in process.children(recursive=True):
            with suppress(psutil.Error):
                total += child.memory_info().rss
    return total


def run_ingest(label: str, folder: Path, database: Path, as_of: str, abstracts: int) -> Measured:
    """Run ``paperwatch ingest`` on ``folder`` into ``database`` as a child process and
    measure it (see the module's docstring)."""
    env = dict(os.environ)
    env.update(
        {
            "PAPERWATCH_SNAPSHOT": str(database.with_suffix(".read.duckdb")),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        }
    )
    # On a busy shared machine Prefect's temporary server may need longer than its 20 s.
    env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    binary = Path(sys.executable).parent / "paperwatch"
    command = [str(binary), "ingest", "--folder", str(folder), "--database", str(database)]
    command += ["--as-of", as_of]
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = psutil.Popen(
        command,
        cwd=database.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss(process))
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = process.communicate()
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if process.returncode != 0:
        print(stderr, file=sys.stderr)
        raise SystemExit(f"{label}: paperwatch ingest exited with {process.returncode}")
    files = sum(1 for _ in folder.rglob("*.txt"))
    lines = [line for line in (stderr + stdout).splitlines() if line.strip()]
    wanted = [
        line for line in lines if "files:" in line or "already known" in line or "entries:" in line
    ]
    return Measured(label, files, abstracts, wall, cpu, peak, load, " | ".join(wanted[-3:]))


def _print(results: list[Measured]) -> None:
    print()
    print("| run | files | abstracts | wall s | CPU-s | peak RSS MiB | files/s | load avg |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        print(
            f"| {r.label} | {r.files:,} | {r.abstracts:,} | {r.wall_s:.1f} | {r.cpu_s:.1f} "
            f"| {r.peak_rss / 2**20:,.0f} | {r.files / r.wall_s:,.0f} | {r.load:.2f} |"
        )
    print()
    for r in results:
        print(f"{r.label}: {r.tail}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000, help="one-abstract files")
    parser.add_argument("--big-files", type=int, default=200, help="files of the other side")
    parser.add_argument("--added", type=int, default=20, help="new files in the copied folder")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    parser.add_argument("--skip-big", action="store_true", help="do not ingest the 200 files")
    parser.add_argument("--skip-copy", action="store_true", help="do not ingest a copied folder")
    args = parser.parse_args(argv)
    if args.files % args.big_files:
        parser.error("--files must be a multiple of --big-files")
    work = args.keep or Path(tempfile.mkdtemp(prefix="pw-many-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        big = work / "big"
        if not big.is_dir():
            generate(
                big,
                args.big_files,
                args.files // args.big_files,
                1,
                args.seed,
                0.02,
                0.05,
                _start(),
            )
        small = work / "small"
        if not small.is_dir():
            written = split_into_single_files(big / "w01", small)
            print(f"{written:,} one-abstract files in {small}")
        results = []
        if not args.skip_big:
            db_big = work / "big.duckdb"
            _remove_database(db_big)
            results.append(
                run_ingest(f"{args.big_files} files", big / "w01", db_big, AS_OF, args.files)
            )
        db_small = work / "small.duckdb"
        _remove_database(db_small)
        results.append(
            run_ingest(f"{args.files:,} one-abstract files", small, db_small, AS_OF, args.files)
        )
        if not args.skip_copy:
            copied = work / "copied"
            shutil.rmtree(copied, ignore_errors=True)
            shutil.copytree(small, copied)  # new mtimes: the stat-first scan cannot skip them
            extra = work / "extra"
            if not extra.is_dir():
                generate(extra, 1, args.added, 1, args.seed + 1, 0.0, 0.0, _start())
            for n, path in enumerate(sorted((extra / "w01").glob("*.txt"))):
                split_into_single_files(path.parent, copied / f"added-{n}")
            results.append(
                run_ingest(
                    f"copied folder + {args.added} new",
                    copied,
                    db_small,
                    LATER,
                    args.added,
                )
            )
        _print(results)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


def _start() -> date:
    return date(2026, 10, 5)


def _remove_database(path: Path) -> None:
    for candidate in (path, path.with_suffix(".duckdb.wal"), path.with_suffix(".read.duckdb")):
        candidate.unlink(missing_ok=True)
    Path(str(path) + ".wal").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
