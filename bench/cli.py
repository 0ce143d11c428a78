"""Time what users run: the ``paperwatch`` commands as processes, beside a reference pipeline.

For each ``--size`` (10k, 100k, 1M abstracts) a corpus is generated once under ``--work``
with the brief's ``../shared/bench/make_corpus.py`` (``--corpus shared``, the default:
seeds-derived, 1,000 abstracts a file) or ``bench/corpus.py`` (``--corpus own``),
then, ``--repeat`` times and interleaved in this order, each case runs as a process:

- ``help``: ``paperwatch --help``;
- ``reference``: ``bench/reference.py`` (pandas + datasketch + DuckDB, see its docstring);
- ``lean``: the lean script a user would write instead (``--lean``, by default
  ``../shared/bench/lean_reference.py`` beside the project: simpler cleaning, no
  validation), on the same corpus;
- ``ingest``: ``paperwatch ingest`` into a database that does not exist yet (first load;
  Prefect's migrated-database template is in the user's cache, made by ``make install``
  or the first such run,
  see :mod:`paperwatch.prefect_server`);
- ``ingest-cold``: the same with an empty cache (``XDG_CACHE_HOME`` a new folder): the
  first run on a machine, which migrates Prefect's database itself;
- ``ingest-again``: ``paperwatch ingest`` of the same folder, nothing new;
- ``report``: ``paperwatch report`` of the corpus's week (every paper is new in it);
- ``watch``: ``paperwatch watch --local`` on the folder into another new database, until
  it prints the run's summary (the 2 s quiet period included), then Ctrl-C (SIGINT);
- ``run-first``: ``paperwatch run`` (what ``make run`` runs: the bundled seeds, the
  embedded defaults) in a new folder holding a copy of ``seeds/`` only, as a newcomer's
  first ``make run`` after ``make install`` (which makes Prefect's template); the corpus
  plays no part;
- ``run-again``: ``paperwatch run`` in that folder again, nothing new.

For each run it prints the wall seconds, the CPU seconds of the process tree (user +
system of every descendant that was waited for, from ``getrusage(RUSAGE_CHILDREN)``
before and after), the peak RSS of the process tree (the sum over the process and its
descendants, polled every 50 ms with psutil: a short peak between two polls is missed),
and the 1/5/15-minute load average before and after. ``--markdown`` prints the same as a
table for ``bench/RESULTS.md``, each line with its exact command.

Usage::

    python bench/cli.py --size 10k --repeat 3 --markdown
    python bench/cli.py --size 100k --cases ingest,ingest-again,report,reference

The processes run with the environment of this script (so ``PREFECT_API_URL``, if set,
is used by paperwatch) and ``--work`` as their working directory; each database gets a
fresh folder, so nothing is shared with an earlier run but the corpus.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
CASES = (
    "help",
    "reference",
    "lean",
    "ingest",
    "ingest-cold",
    "ingest-again",
    "report",
    "watch",
    "run-first",
    "run-again",
)
#: The lean script of the brief, beside the project folder.
LEAN = ROOT.parent / "shared" / "bench" / "lean_reference.py"
#: The brief's corpus generator, beside it.
MAKE_CORPUS = LEAN.parent / "make_corpus.py"
SIZES = {"10k": 10, "100k": 100, "1m": 1000}  # files of 1,000 abstracts


@dataclass
class Measured:
    """One run of one case."""

    size: str
    case: str
    command: list[str]
    wall_s: float
    cpu_s: float
    peak_rss: int
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    status: int
    tail: list[str] = field(default_factory=list)


def tree_rss(root: psutil.Process) -> int:
    """Resident set size in bytes of ``root`` and all its descendants (0 once it is gone)."""
    total = 0
    try:
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    for p in processes:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total


def measure(
    size: str,
    case: str,
    command: list[str],
    cwd: Path,
    *,
    until: str | None = None,
    env: dict[str, str] | None = None,
) -> Measured:
    """Run ``command`` as a process and measure it; with ``until``, send SIGINT once a line of
    its output starts with ``until`` (the wall time is taken at that line)."""
    load_before = os.getloadavg()
    usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    lines: list[str] = []
    reached = threading.Event()
    reached_at: list[float] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if until is not None and not reached.is_set() and line.startswith(until):
                reached_at.append(time.perf_counter())
                reached.set()
                process.send_signal(signal.SIGINT)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    peak = 0
    root = psutil.Process(process.pid)
    while process.poll() is None:
        peak = max(peak, tree_rss(root))
        time.sleep(0.05)
    ended = time.perf_counter()
    reader.join(timeout=30)
    usage_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (usage_after.ru_utime - usage_before.ru_utime) + (
        usage_after.ru_stime - usage_before.ru_stime
    )
    wall = (reached_at[0] if reached_at else ended) - started
    status = process.returncode
    if until is not None and reached_at and status in (0, -signal.SIGINT, 130):
        status = 0
    return Measured(
        size, case, command, wall, cpu, peak, load_before, os.getloadavg(), status, lines[-3:]
    )


def corpus_for(size: str, work: Path, kind: str = "shared") -> tuple[Path, str, str]:
    """The corpus of ``size`` under ``work`` (generated when missing): its folder of listing
    files, the ``--as-of`` of its week and that ISO week.

    ``kind`` ``shared`` (the default): ``../shared/bench/make_corpus.py`` over the project's
    ``seeds/`` (the brief's corpus: 1,000 entries a file, its seed 7), in one folder, its
    week the one it was generated in (recorded in ``corpus.json`` beside the folder, so the
    folder holds listing files only). ``own``: ``bench/corpus.py`` (one ISO week, seed 2026).
    """
    if kind == "shared":
        base = work / f"shared-corpus-{size}"
        folder, manifest = base / "listings", base / "corpus.json"
        if not manifest.is_file():
            shutil.rmtree(base, ignore_errors=True)
            subprocess.run(
                [
                    *(sys.executable, str(MAKE_CORPUS), str(ROOT / "seeds"), str(folder)),
                    *(str(SIZES[size]), "1000"),
                ],
                check=True,
            )
            moment = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
            manifest.write_text(json.dumps({"as_of": moment}), encoding="utf-8")
        as_of = json.loads(manifest.read_text(encoding="utf-8"))["as_of"]
    else:
        folder = work / f"corpus-{size}"
        manifest = folder / "corpus.json"
        if not manifest.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            subprocess.run(
                [
                    *(sys.executable, str(ROOT / "bench" / "corpus.py"), "--out", str(folder)),
                    *("--files", str(SIZES[size]), "--entries", "1000", "--weeks", "1"),
                ],
                check=True,
            )
        as_of = json.loads(manifest.read_text(encoding="utf-8"))["weeks"][0]["as_of"]
    from datetime import datetime

    year, week, _ = datetime.fromisoformat(as_of).isocalendar()
    return folder, as_of, f"{year}-W{week:02d}"


def paperwatch_command() -> str:
    """The ``paperwatch`` script of this Python's environment."""
    beside = Path(sys.executable).parent / "paperwatch"
    return str(beside) if beside.is_file() else "paperwatch"


def run_size(
    size: str,
    work: Path,
    repeat: int,
    cases: list[str],
    lean: Path = LEAN,
    corpus_kind: str = "shared",
) -> list[Measured]:
    """Every case of one size, ``repeat`` times, interleaved; prints each run as it ends."""
    corpus, as_of, week = corpus_for(size, work, corpus_kind)
    pw = paperwatch_command()
    results: list[Measured] = []
    for r in range(repeat):
        db_dir = work / f"db-{size}"
        watch_dir = work / f"watch-{size}"
        database = str(db_dir / "paperwatch.duckdb")
        ingest = [pw, "ingest", "--folder", str(corpus), "--database", database, "--as-of", as_of]
        for case in cases:
            until = None
            env: dict[str, str] | None = None
            cwd = work
            if case == "help":
                command = [pw, "--help"]
            elif case == "reference":
                command = [
                    sys.executable,
                    str(ROOT / "bench" / "reference.py"),
                    "--corpus",
                    str(corpus),
                    "--database",
                    str(work / f"ref-{size}" / "reference.duckdb"),
                    "--out",
                    str(work / f"ref-{size}" / "out"),
                    "--as-of",
                    as_of,
                ]
            elif case == "lean":
                lean_db = work / f"lean-{size}" / "lean.duckdb"
                shutil.rmtree(lean_db.parent, ignore_errors=True)
                lean_db.parent.mkdir(parents=True)
                # The lean script reads the *.txt files of one folder: the week's folder.
                folder = next(corpus.glob("**/*.txt")).parent
                command = [sys.executable, str(lean), str(folder), str(lean_db)]
            elif case == "ingest":
                shutil.rmtree(db_dir, ignore_errors=True)
                command = ingest
            elif case == "ingest-cold":
                shutil.rmtree(db_dir, ignore_errors=True)
                cold = work / f"cold-cache-{size}"
                shutil.rmtree(cold, ignore_errors=True)
                env = {**os.environ, "XDG_CACHE_HOME": str(cold)}
                command = ingest
            elif case == "ingest-again":
                command = ingest
            elif case == "report":
                command = [
                    pw,
                    "report",
                    "--database",
                    str(db_dir / "paperwatch.duckdb"),
                    "--report-dir",
                    str(db_dir / "out"),
                    "--week",
                    week,
                    "--as-of",
                    as_of,
                ]
            elif case in ("run-first", "run-again"):
                cwd = work / "newcomer"
                if case == "run-first" or not cwd.is_dir():
                    shutil.rmtree(cwd, ignore_errors=True)
                    shutil.copytree(ROOT / "seeds", cwd / "seeds")
                command = [pw, "run"]
            elif case == "watch":
                shutil.rmtree(watch_dir, ignore_errors=True)
                command = [
                    pw,
                    "watch",
                    "--local",
                    "--folder",
                    str(corpus),
                    "--database",
                    str(watch_dir / "paperwatch.duckdb"),
                ]
                until = "entries:"
            else:
                raise ValueError(f"unknown case {case!r}; known: {', '.join(CASES)}")
            m = measure(size, case, command, cwd, until=until, env=env)
            results.append(m)
            print(line(m, r + 1), flush=True)
            if m.status != 0:
                print("   " + "\n   ".join(m.tail), flush=True)
    return results


def _load(load: tuple[float, float, float]) -> str:
    return "/".join(f"{x:.2f}" for x in load)


def line(m: Measured, run: int) -> str:
    """One run as a line of text."""
    failed = "" if m.status == 0 else f"  FAILED (exit {m.status})"
    return (
        f"{m.size:>5} {m.case:<13} #{run}  wall {m.wall_s:7.2f} s  cpu {m.cpu_s:7.2f} s  "
        f"peak {m.peak_rss / 2**20:7.0f} MiB  load {_load(m.load_before)} → "
        f"{_load(m.load_after)}{failed}"
    )


def shown(command: list[str], work: Path) -> str:
    """The command as typed from ``--work`` (paths under it relative, the interpreter and
    the ``paperwatch`` script by name)."""
    words = []
    for word in command:
        if word == sys.executable:
            word = "python"
        elif word == paperwatch_command():
            word = "paperwatch"
        elif word.startswith(str(ROOT) + "/"):
            word = os.path.relpath(word, ROOT)
        elif word.startswith(str(work) + "/"):
            word = os.path.relpath(word, work)
        words.append(word)
    return " ".join(words)


def markdown(results: list[Measured], work: Path) -> str:
    """The runs as a Markdown table, each line with its command (run in ``--work``)."""
    rows = [
        "| size | case | wall s | CPU-s (tree) | peak RSS MiB (tree) | load before | load after "
        "| command |",
        "| --- | --- | ---: | ---: | ---: | --- | --- | --- |",
    ]
    for m in results:
        status = "" if m.status == 0 else f" (failed, exit {m.status})"
        rows.append(
            f"| {m.size} | {m.case}{status} | {m.wall_s:.2f} | {m.cpu_s:.2f} | "
            f"{m.peak_rss / 2**20:,.0f} | {_load(m.load_before)} | {_load(m.load_after)} | "
            f"`{shown(m.command, work)}` |"
        )
    return "\n".join(rows)


def ratios(results: list[Measured]) -> list[str]:
    """How many times faster paperwatch is than each reference, from the median wall
    seconds of the runs of one size: ``ingest`` + ``report`` against ``lean``, and
    ``ingest`` against ``reference`` (a ratio above 1: paperwatch is faster)."""
    import statistics

    lines = []
    for size in dict.fromkeys(m.size for m in results):
        wall = {
            case: statistics.median(
                m.wall_s for m in results if m.size == size and m.case == case and m.status == 0
            )
            for case in {m.case for m in results if m.size == size and m.status == 0}
        }
        if {"ingest", "report", "lean"} <= wall.keys():
            ours = wall["ingest"] + wall["report"]
            lines.append(
                f"{size}: ingest + report {ours:.1f} s against the lean script "
                f"{wall['lean']:.1f} s: {wall['lean'] / ours:.2f}x"
            )
        if {"ingest", "reference"} <= wall.keys():
            lines.append(
                f"{size}: ingest {wall['ingest']:.1f} s against bench/reference.py "
                f"{wall['reference']:.1f} s: {wall['reference'] / wall['ingest']:.2f}x"
            )
    return lines


#: Issue 46's targets: wall seconds (median of the runs) a case must stay under.
TARGETS = {"report": 3.0, "ingest-again": 2.0, "run-first": 10.0, "run-again": 3.0}


def targets(results: list[Measured]) -> list[str]:
    """Each measured case of :data:`TARGETS` against its target: median wall seconds of
    its runs of one size, ``met`` or ``missed``."""
    import statistics

    lines = []
    for size in dict.fromkeys(m.size for m in results):
        for case, limit in TARGETS.items():
            walls = [m.wall_s for m in results if (m.size, m.case) == (size, case) and not m.status]
            if walls:
                median = statistics.median(walls)
                verdict = "met" if median <= limit else "missed"
                lines.append(
                    f"{size}: {case} {median:.2f} s (median of {len(walls)}), "
                    f"target {limit:g} s: {verdict}"
                )
    return lines


def machine() -> str:
    """One line about the machine and the versions measured."""
    import duckdb
    import polars

    cores = os.cpu_count()
    memory = psutil.virtual_memory().total / 2**30
    return (
        f"{platform.node()}, {cores} cores, {memory:.0f} GiB, Linux {platform.release()}, "
        f"Python {platform.python_version()}, DuckDB {duckdb.__version__}, "
        f"Polars {polars.__version__}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--size",
        action="append",
        choices=sorted(SIZES),
        type=str.lower,
        help="10k, 100k or 1m (repeatable) [default: 10k]",
    )
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--cases",
        default=",".join(CASES),
        help=f"comma-separated, run in this order (default: {','.join(CASES)})",
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/paperwatch-bench"))
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    parser.add_argument(
        "--lean", type=Path, default=LEAN, help=f"the lean script (default: {LEAN})"
    )
    parser.add_argument(
        "--corpus",
        choices=("shared", "own"),
        default="shared",
        help="shared: ../shared/bench/make_corpus.py (default); own: bench/corpus.py",
    )
    args = parser.parse_args(argv)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    print(machine(), flush=True)
    results: list[Measured] = []
    for size in args.size or ["10k"]:
        results += run_size(size, work, args.repeat, cases, args.lean, args.corpus)
    for line in ratios(results) + targets(results):
        print(line, flush=True)
    if args.markdown:
        print()
        print(f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}.")
        print(f"Commands run in `{work}`; `python bench/cli.py {' '.join(argv or sys.argv[1:])}`")
        print()
        print(markdown(results, work))
    if any(m.status != 0 for m in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
