"""A poison file is contained: a file whose preparation raises, kills its worker or goes over
the memory ceiling is quarantined whole with the reason and its bytes, the rest of the batch
loads, no worker process is left behind, and the next run does not try it again until its
bytes or paperwatch's version change.

The faults are injected with ``PAPERWATCH_TEST_PREPARE_FAULT`` (read by the process that
prepares the file, see :mod:`paperwatch.ingest.workers`); everything after the fault — the broken
pool, the retry in isolation, the quarantine — is the real path.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import psutil
import pytest

from paperwatch.db import batches
from paperwatch.ingest.workers import FAULT_ENV

from .conftest import SEEDS

AS_OF = "2026-11-25T10:00:00+00:00"
VERSION = "0.1.0"
SEED_TEXT = (SEEDS / "002_bf103a832150c832.txt").read_text(encoding="utf-8")
ABSTRACTS = SEED_TEXT.rstrip("\n").split("\n\n")[1:]

pytestmark = pytest.mark.usefixtures("prefect_harness")


def rows(database: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(sql).fetchall()


def poison_listing(tag: str) -> bytes:
    """A valid listing of two abstracts of its own (not in the seeds)."""
    entries = [f"{a} Variant {tag}." for a in ABSTRACTS[:2]]
    return ("ICLR 2025 accepted papers\n\n" + "\n\n".join(entries) + "\n").encode()


def spawned_workers() -> list[psutil.Process]:
    """This test process's multiprocessing children (pool and isolated workers)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "spawn_main" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    listings = tmp_path / "listings"
    shutil.copytree(SEEDS, listings)
    (listings / "poison_exit.txt").write_bytes(poison_listing("exit"))
    (listings / "poison_memory.txt").write_bytes(poison_listing("memory"))
    return listings


def test_a_small_run_prepares_in_one_worker_process_under_the_ceiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under 8 MiB pending, the files go to one worker: an abort there is contained too."""
    from paperwatch.flows.ingest import ingest_listings

    listings = tmp_path / "listings"
    shutil.copytree(SEEDS, listings)
    (listings / "poison_abort.txt").write_bytes(poison_listing("abort"))
    monkeypatch.setenv(FAULT_ENV, "poison_abort.txt:abort")
    summary = ingest_listings(str(listings), str(tmp_path / "pw.duckdb"), AS_OF)
    assert (summary.files_loaded, summary.files_quarantined, summary.new_papers) == (3, 1, 54)
    assert [(o.rel, o.reason) for o in summary.files if o.status == "quarantined"] == [
        (
            "poison_abort.txt",
            "internal error while preparing: the worker process aborted (SIGABRT; e.g. an "
            "allocation over the memory ceiling of 4,096 MiB (setting "
            f"prepare_memory_limit_bytes)) (paperwatch {VERSION})",
        )
    ]
    assert spawned_workers() == []


@pytest.mark.slow
def test_a_file_that_kills_its_worker_is_quarantined_and_the_batch_loads(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from paperwatch.flows.ingest import ingest_listings

    database = tmp_path / "pw.duckdb"
    monkeypatch.setattr(batches, "POOL_MIN_BYTES", 0)  # the process pool even for 5 files
    monkeypatch.setenv("PAPERWATCH_PREPARE_WORKERS", "2")
    monkeypatch.setenv("PAPERWATCH_PREPARE_MEMORY_LIMIT_BYTES", str(1 << 30))
    monkeypatch.setenv(FAULT_ENV, "poison_exit.txt:exit,poison_memory.txt:memory")

    summary = ingest_listings(str(folder), str(database), AS_OF)

    assert (summary.files_seen, summary.files_loaded, summary.files_quarantined) == (5, 3, 2)
    assert (summary.entries, summary.entries_loaded, summary.entries_quarantined) == (57, 57, 0)
    assert (summary.new_papers, summary.exact_duplicates) == (54, 3)
    assert rows(
        database,
        "select path, status, internal_error, paperwatch_version, reason, entry_count "
        "from listing_files where internal_error order by path",
    ) == [
        (
            "poison_exit.txt",
            "quarantined",
            True,
            VERSION,
            "internal error while preparing: the worker process exited with status 3 "
            f"(paperwatch {VERSION})",
            None,
        ),
        (
            "poison_memory.txt",
            "quarantined",
            True,
            VERSION,
            "internal error while preparing: MemoryError: over the memory ceiling of "
            f"1,024 MiB (setting prepare_memory_limit_bytes) (paperwatch {VERSION})",
            None,
        ),
    ]
    # Quarantined whole: the file's bytes are kept, nothing of it is loaded.
    assert rows(
        database,
        "select path, raw_bytes, expectations from quarantine where kind = 'file' order by path",
    ) == [
        ("poison_exit.txt", poison_listing("exit"), ["paperwatch.prepare_file"]),
        ("poison_memory.txt", poison_listing("memory"), ["paperwatch.prepare_file"]),
    ]
    assert rows(database, "select count(*) from papers where abstract like '%Variant%'") == [(0,)]
    assert rows(database, "select count(*) from paper_occurrences") == [(57,)]
    assert spawned_workers() == []

    # The next run does not try them again: same bytes, same version.
    again = ingest_listings(str(folder), str(database), AS_OF)
    assert (again.files_unchanged, again.files_quarantined, again.entries) == (5, 0, 0)
    # Touched (new mtime, same bytes): read, but recorded as unchanged, not tried again.
    os.utime(folder / "poison_exit.txt", ns=(1, 1))
    touched = ingest_listings(str(folder), str(database), AS_OF)
    assert (touched.files_unchanged, touched.files_quarantined) == (5, 0)
    assert rows(database, "select count(*) from listing_files") == [(5,)]
    assert spawned_workers() == []


def test_another_version_tries_a_quarantined_file_again(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from paperwatch.db import load as store
    from paperwatch.db import writes
    from paperwatch.flows.ingest import ingest_listings

    database = tmp_path / "pw.duckdb"
    monkeypatch.setenv(FAULT_ENV, "poison_exit.txt:raise,poison_memory.txt:raise")
    # No ceiling: a small run prepares in the run's own process; exceptions are contained.
    monkeypatch.setenv("PAPERWATCH_PREPARE_MEMORY_LIMIT_BYTES", "0")
    monkeypatch.setenv("PAPERWATCH_PREPARE_TIMEOUT_S", "0")
    first = ingest_listings(str(folder), str(database), AS_OF)
    assert (first.files_loaded, first.files_quarantined, first.new_papers) == (3, 2, 54)
    assert rows(database, "select reason from listing_files where path = 'poison_exit.txt'") == [
        (
            "internal error while preparing: RuntimeError: fault injected while preparing "
            f"poison_exit.txt (paperwatch {VERSION})",
        )
    ]

    monkeypatch.delenv(FAULT_ENV)
    monkeypatch.delenv("PAPERWATCH_PREPARE_MEMORY_LIMIT_BYTES")  # one worker process
    for module in (store, writes):  # the fixed paperwatch
        monkeypatch.setattr(module, "__version__", "9.9.9")
    fixed = ingest_listings(str(folder), str(database), AS_OF)
    assert (fixed.files_unchanged, fixed.files_loaded, fixed.files_quarantined) == (3, 2, 0)
    assert (fixed.entries, fixed.entries_loaded, fixed.new_papers) == (4, 4, 4)
    assert rows(
        database,
        "select path, status, internal_error, paperwatch_version from listing_files "
        "where path like 'poison%' order by path, file_id",
    ) == [
        ("poison_exit.txt", "quarantined", True, VERSION),
        ("poison_exit.txt", "loaded", False, "9.9.9"),
        ("poison_memory.txt", "quarantined", True, VERSION),
        ("poison_memory.txt", "loaded", False, "9.9.9"),
    ]


def test_an_aborting_file_is_found_among_innocent_ones(tmp_path: Path) -> None:
    """A worker that aborts breaks the pool: every pending chunk is prepared again one file
    at a time, and only the file that aborted fails."""
    from paperwatch.ingest.files import scan_folder

    listings = tmp_path / "listings"
    shutil.copytree(SEEDS, listings)
    (listings / "poison_abort.txt").write_bytes(poison_listing("abort"))
    files = list(scan_folder(listings).files)
    alone = batches.prepare_files(files[:3], 1 << 26)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(FAULT_ENV, "poison_abort.txt:abort")
        with batches.prepare_pool(2, 1 << 30, memory_limit=1 << 30) as pool:
            assert pool is not None
            prepared = batches.prepare_batch(files, 1 << 26, pool)
            # The pool replaced itself: the next batch goes to new workers.
            again = batches.prepare_batch(files[:3], 1 << 26, pool)
    assert [f.stat.rel for f in prepared.prepared] == [f.rel for f in files[:3]]
    assert prepared.prepared == alone.prepared == again.prepared
    assert [(f.stat.rel, f.reason) for f in prepared.failed] == [
        (
            "poison_abort.txt",
            "internal error while preparing: the worker process aborted (SIGABRT; e.g. an "
            "allocation over the memory ceiling of 1,024 MiB (setting "
            f"prepare_memory_limit_bytes)) (paperwatch {VERSION})",
        )
    ]
    assert prepared.terms.sort("key", "term").equals(alone.terms.sort("key", "term"))
    assert spawned_workers() == []


_ORPHAN_SCRIPT = """
import sys, time
from paperwatch.db.batches import PreparePool
pool = PreparePool(2)
futures = [pool.submit(time.sleep, 600) for _ in range(2)]
while len(getattr(pool._pool, "_processes", {}) or {}) < 2:
    time.sleep(0.05)
print(" ".join(str(pid) for pid in pool._pool._processes), flush=True)
time.sleep(600)
"""


@pytest.mark.timeout(120)
def test_workers_exit_when_the_run_is_killed(tmp_path: Path) -> None:
    run = subprocess.Popen(
        [sys.executable, "-c", _ORPHAN_SCRIPT], stdout=subprocess.PIPE, text=True
    )
    try:
        assert run.stdout is not None
        pids = [int(p) for p in run.stdout.readline().split()]
        assert len(pids) == 2
        workers = [psutil.Process(pid) for pid in pids]
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
        # Each worker notices its parent is gone (it polls every 0.5 s) and exits.
        gone, alive = psutil.wait_procs(workers, timeout=60)
        assert alive == []
        assert len(gone) == 2
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        if run.stdout is not None:
            run.stdout.close()
        for pid in pids if "pids" in locals() else []:
            if psutil.pid_exists(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_a_file_that_hangs_is_stopped_at_the_time_limit_and_the_batch_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose preparation never ends (no crash): its worker is killed once it has been
    on that file for ``prepare_timeout_s``, the file is quarantined whole, the rest loads."""
    from paperwatch.flows.ingest import ingest_listings

    listings = tmp_path / "listings"
    shutil.copytree(SEEDS, listings)
    (listings / "poison_hang.txt").write_bytes(poison_listing("hang"))
    monkeypatch.setenv(FAULT_ENV, "poison_hang.txt:hang")
    monkeypatch.setenv("PAPERWATCH_PREPARE_TIMEOUT_S", "10")
    database = tmp_path / "pw.duckdb"
    summary = ingest_listings(str(listings), str(database), AS_OF)
    assert (summary.files_loaded, summary.files_quarantined, summary.new_papers) == (3, 1, 54)
    assert (summary.entries, summary.entries_loaded) == (57, 57)
    reason = (
        "internal error while preparing: preparation took longer than 10 s, the worker was "
        f"stopped (setting prepare_timeout_s) (paperwatch {VERSION})"
    )
    assert [(o.rel, o.reason) for o in summary.files if o.status == "quarantined"] == [
        ("poison_hang.txt", reason)
    ]
    assert rows(database, "select path, raw_bytes from quarantine where kind = 'file'") == [
        ("poison_hang.txt", poison_listing("hang"))
    ]
    assert spawned_workers() == []
