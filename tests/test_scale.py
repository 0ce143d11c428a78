"""Batching and parallel preparation never change what is stored.

The same folder (the seeds, two synthetic listings from ``bench/corpus.py`` with
markup and planted duplicates, a file that is not UTF-8 and one with an entry the
papers suite rejects) is ingested by the real flow several ways; every table must
hold the same rows (run ids and wall-clock columns aside).
"""

from __future__ import annotations

import gc
import importlib.util
import multiprocessing
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import duckdb
import pytest

import paperwatch.flows.ingest
from paperwatch.db.batches import plan_batches, prepare_batch, prepare_files, split_evenly
from paperwatch.flows.ingest import ingest_listings
from paperwatch.ingest.files import ListingFileStat, scan_folder
from paperwatch.ingest.prepare import PreparedBatch, merge_batches

ROOT = Path(__file__).resolve().parent.parent
AS_OF = "2026-11-25T10:00:00+00:00"
#: Columns that differ between two runs by design (uuids and wall-clock times).
VOLATILE = {"run_id", "extracted_at", "started_at", "finished_at"}
TABLES = (
    "listing_files",
    "papers",
    "paper_occurrences",
    "quarantine",
    "validation_results",
    "near_duplicates",
    "paper_minhash",
    "paper_lsh_bands",
    "paper_lsh_pending",
    "paper_terms",
    "paper_terms_extracted",
)


def _corpus_module():  # bench/ is not a package
    spec = importlib.util.spec_from_file_location("bench_corpus", ROOT / "bench" / "corpus.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_corpus"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def listings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("scale") / "listings"
    shutil.copytree(ROOT / "seeds", folder)
    generated = folder.parent / "generated"
    manifest = _corpus_module().generate(
        generated,
        files=2,
        entries=40,
        weeks=1,
        seed=11,
        exact_rate=0.1,
        near_rate=0.2,
        start=__import__("datetime").date(2026, 11, 23),
    )
    assert manifest["planted"] == {"exact": 10, "near": 18}
    for path in sorted(generated.glob("w01/*.txt")):
        shutil.copy(path, folder / ("9" + path.name))  # sequence numbers 9000, 9001
    (folder / "004_00000000000000aa.txt").write_bytes("Un modèle é".encode("cp1252"))
    (folder / "005_00000000000000bb.txt").write_text(
        "ICML 2026\n\nA $broken abstract with an odd dollar sign that is long enough.\n\n"
        "We propose Graph Cascades, a method for ranking.\n",
        encoding="utf-8",
    )
    return folder


def table_rows(
    database: Path, ignore: frozenset[str] = frozenset()
) -> dict[str, list[tuple[object, ...]]]:
    """Every table's rows without the volatile columns (and ``ignore``), sorted."""
    out = {}
    with duckdb.connect(str(database), read_only=True) as con:
        for table in TABLES:
            columns = [
                r[0]
                for r in con.execute(
                    "select column_name from information_schema.columns where table_name = ? "
                    "order by ordinal_position",
                    [table],
                ).fetchall()
                if r[0] not in VOLATILE | ignore
            ]
            out[table] = con.execute(
                f"select {', '.join(columns)} from {table} order by all"
            ).fetchall()
    return out


@pytest.fixture(scope="module")
def reference_database(
    listings: Path, prefect_harness: None, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The folder ingested by the default runner in one batch, in this process."""
    database = tmp_path_factory.mktemp("ref") / "paperwatch.duckdb"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PAPERWATCH_PREPARE_WORKERS", "1")
        summary = ingest_listings(str(listings), str(database), AS_OF)
    assert (summary.files_loaded, summary.files_quarantined) == (6, 1)
    assert (summary.entries, summary.entries_loaded, summary.entries_quarantined) == (139, 137, 2)
    assert (summary.new_papers, summary.exact_duplicates, summary.near_duplicates) == (124, 13, 26)
    return database


@pytest.mark.usefixtures("prefect_harness")
def test_one_file_per_batch_stores_the_same_tables(
    listings: Path,
    database: Path,
    reference_database: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Near-duplicates and terms found batch by batch are those of one batch. (A failed
    expectation's examples are drawn from its whole batch, so they are left out here.)"""
    monkeypatch.setenv("PAPERWATCH_BATCH_FILES", "1")
    monkeypatch.setenv("PAPERWATCH_PREPARE_WORKERS", "1")
    ingest_listings(str(listings), str(database), AS_OF)
    tables = table_rows(database, ignore=frozenset({"unexpected_examples"}))
    expected = table_rows(reference_database, frozenset({"unexpected_examples"}))
    for table in TABLES:
        assert tables[table] == expected[table], table


@pytest.mark.usefixtures("prefect_harness")
def test_each_batch_is_freed_before_the_next_is_merged(
    listings: Path, database: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch comes from a Prefect future, which sits in a reference cycle: the run
    collects it after loading the batch instead of leaving it (and every batch after it)
    to Python's next full collection, and hands back what it froze. (Files that log no
    warning: with Prefect's loggers at WARNING, as here, a task's first warning starts
    Prefect's log service, whose asyncio task keeps that task run's context, parameters
    included, for the life of the service. The command line logs the run's first line
    at INFO, which starts it in the flow run's context.)"""
    folder = tmp_path / "listings"
    folder.mkdir()
    for path in sorted(listings.glob("*.txt")):
        if path.name.startswith(("004_", "005_")):
            continue
        shutil.copy(path, folder / path.name)
    monkeypatch.setenv("PAPERWATCH_BATCH_FILES", "1")
    monkeypatch.setenv("PAPERWATCH_PREPARE_WORKERS", "1")
    alive: list[int] = []

    def counting_merge(parts: list[PreparedBatch]) -> PreparedBatch:
        parts = list(parts)
        alive.append(sum(isinstance(o, PreparedBatch) for o in gc.get_objects()) - len(parts))
        return merge_batches(parts)

    monkeypatch.setattr(paperwatch.flows.ingest, "merge_batches", counting_merge)
    summary = ingest_listings(str(folder), str(database), AS_OF)
    assert (summary.files_seen, summary.files_loaded, summary.new_papers) == (5, 5, 124)
    assert alive == [0] * 5
    assert gc.get_freeze_count() == 0


@pytest.mark.usefixtures("prefect_harness")
def test_dask_task_runner_stores_the_same_tables(
    listings: Path,
    database: Path,
    reference_database: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """parse/clean/validate on a local Dask cluster (2 workers, threads; each batch split
    between them)."""
    monkeypatch.setenv("PAPERWATCH_TASK_RUNNER", "dask")
    monkeypatch.setenv("PAPERWATCH_DASK_PROCESSES", "false")
    monkeypatch.setenv("PAPERWATCH_PREPARE_WORKERS", "2")
    summary = ingest_listings(str(listings), str(database), AS_OF)
    assert (summary.new_papers, summary.near_duplicates) == (124, 26)
    tables, expected = table_rows(database), table_rows(reference_database)
    for table in TABLES:
        assert tables[table] == expected[table], table


def test_a_process_pool_prepares_the_same_files(listings: Path) -> None:
    files = list(scan_folder(listings).files)
    alone = prepare_files(files, 1 << 20)
    with ProcessPoolExecutor(
        max_workers=2, mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        pooled = prepare_batch(files, 1 << 20, pool)
    assert [f.stat.rel for f in pooled.prepared] == [f.stat.rel for f in alone.prepared]
    assert pooled.prepared == alone.prepared
    assert all(a.equals(b) for a, b in zip(pooled.frames, alone.frames, strict=True))
    assert [f.height for f in pooled.frames] == [19, 19, 19, 0, 2, 40, 40][: len(files)]


def _stat(name: str, size: int) -> ListingFileStat:
    return ListingFileStat(path=Path(name), rel=name, size=size, mtime_ns=0)


def test_batches_bound_files_and_bytes() -> None:
    files = [_stat(f"{i}.txt", size) for i, size in enumerate([10, 10, 50, 200, 10, 10, 10])]
    batches = plan_batches(files, max_files=3, max_bytes=60)
    assert [[f.rel for f in b] for b in batches] == [
        ["0.txt", "1.txt"],
        ["2.txt"],
        ["3.txt"],
        ["4.txt", "5.txt", "6.txt"],
    ]
    with pytest.raises(ValueError):
        plan_batches(files, max_files=0, max_bytes=10)
    chunks = split_evenly(files, 2)
    assert [[f.rel for f in c] for c in chunks] == [
        ["0.txt", "1.txt", "2.txt", "3.txt"],
        ["4.txt", "5.txt", "6.txt"],
    ]
    assert split_evenly([], 2) == []


def test_ramped_batches_are_small_at_both_ends() -> None:
    files = [_stat(f"{i}.txt", 10) for i in range(40)]
    plain = plan_batches(files, max_files=100, max_bytes=80)
    assert [len(b) for b in plain] == [8, 8, 8, 8, 8]
    ramped = plan_batches(files, max_files=100, max_bytes=80, ramp=True)
    # head: 80 // 8, 80 // 4, 80 // 2 bytes; tail (last first): 80 // 8, 80 // 4
    assert [len(b) for b in ramped] == [1, 2, 4, 8, 8, 8, 6, 2, 1]
    assert [f.rel for b in ramped for f in b] == [f.rel for f in files]
    # two full batches or less: no small tail, the head still ramps
    assert [len(b) for b in plan_batches(files[:16], 100, 80, ramp=True)] == [1, 2, 4, 8, 1]
    # every batch holds a file, even one larger than its limit
    big = [_stat(f"{i}.big", 500) for i in range(5)]
    assert [len(b) for b in plan_batches(big, 100, 80, ramp=True)] == [1, 1, 1, 1, 1]
    # the file limit holds in the tail too
    assert [len(b) for b in plan_batches(files, 2, 80, ramp=True)] == [1, 2, 2] + [2] * 16 + [2, 1]


def test_ramped_batches_are_never_empty() -> None:
    """A file over twice the batch size with one or two small files (a large export among
    notes, or a file over max_file_bytes, quarantined unread): no empty batch in between."""
    huge, small, tiny = _stat("0.huge", 300), _stat("1.txt", 5), _stat("2.txt", 5)

    def plan(files: list[ListingFileStat]) -> list[list[str]]:
        return [[f.rel for f in b] for b in plan_batches(files, 100, 100, ramp=True)]

    assert plan([huge, small]) == [["0.huge"], ["1.txt"]]
    assert plan([huge]) == [["0.huge"]]
    assert plan([small, huge]) == [["1.txt"], ["0.huge"]]
    assert plan([huge, small, tiny]) == [["0.huge"], ["1.txt", "2.txt"]]
    assert plan([huge, huge, small]) == [["0.huge"], ["0.huge"], ["1.txt"]]
