"""Batches of listing files: read and prepare (in parallel), validate, load.

The ingestion flow (``flows/ingest.py``) and the benchmark (``bench/pipeline.py``)
call these functions; they only combine :mod:`paperwatch.ingest.files`,
:mod:`paperwatch.ingest.validate` and :mod:`paperwatch.db.load`, so the results are the
same whichever way a batch was prepared (one process, a process pool, or Dask
workers).

- :func:`plan_batches` cuts the pending files into batches of at most
  ``Settings.batch_files`` files and ``Settings.batch_bytes`` bytes (memory bound);
- :func:`prepare_batch` reads, hashes, parses and cleans a batch's files
  (:func:`paperwatch.ingest.prepare.prepare_files`), in a process pool when given one
  (:func:`prepare_pool`: workers under a memory ceiling that exit with the run), and
  builds each file's rows for the ``papers`` suite in the same worker. A file whose
  preparation raises, or kills its worker, is not prepared but listed in
  :attr:`PreparedBatch.failed` (the rest of the batch is), to be quarantined whole
  (:func:`paperwatch.db.load.quarantine_unprepared`);
- :func:`check_batch` runs the two Great Expectations suites over the batch;
- :func:`load_batch` loads the files of the batch in one transaction (one insert per
  table), or each file in its own when that fails.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import polars as pl
from filelock import BaseFileLock, FileLock, Timeout

from paperwatch import db
from paperwatch.db.load import CheckedFile, load_file, quarantine_unprepared
from paperwatch.db.runs import FileOutcome, RunContext
from paperwatch.db.trends import store_new_paper_terms
from paperwatch.db.writes import BatchWrites, existing_paper_ids
from paperwatch.ingest.files import ListingFileStat
from paperwatch.ingest.frames import files_frame
from paperwatch.ingest.prepare import (
    TERMS_SCHEMA,
    PreparedBatch,
    PrepareFailure,
    SpooledBatch,
    batch_terms,
    key_numbers,
    merge_batches,
    prepare_files,
    prepare_files_spooled,
    unspooled,
)
from paperwatch.ingest.validate import (
    ExpectationResult,
    SuiteResult,
    unexpected_examples,
    validate_frame,
)
from paperwatch.ingest.workers import (
    OVERDUE_POLL_S,
    Heartbeats,
    IsolatedWorker,
    WorkerDied,
    init_worker,
    internal_error_reason,
    timeout_summary,
)

if TYPE_CHECKING:
    from paperwatch.settings import DedupSettings

__all__ = [
    "TERMS_SCHEMA",
    "CheckedBatch",
    "PrepareFailure",
    "PreparePool",
    "PreparedBatch",
    "batch_terms",
    "check_batch",
    "load_batch",
    "merge_batches",
    "new_paper_signatures",
    "plan_batches",
    "prepare_batch",
    "prepare_files",
    "prepare_isolated",
    "prepare_pool",
    "split_evenly",
    "split_results",
    "store_batch_terms",
]

_log = logging.getLogger(__name__)

#: Below this many pending bytes a run starts at most one preparation process
#: (:func:`prepare_pool`; docs/design.md, "Batch sizes").
POOL_MIN_BYTES = 8 * 1024 * 1024
#: From this many pending bytes on, a run keeps the database open for all its batches
#: (:func:`paperwatch.db.session`): one checkpoint at the end instead of one per batch.
SESSION_MIN_BYTES = 8 * 1024 * 1024


class CheckedBatch:
    """The batch's two suite frames and results (rows of the files that passed the file suite).

    Not a dataclass, as :class:`~paperwatch.ingest.prepare.PreparedBatch`: Prefect walks the
    dataclasses among a task's parameters to their leaves, here every expectation result
    and its failing rows; a plain object is one leaf.

    Attributes:
        files: :func:`~paperwatch.ingest.frames.files_frame` of the batch's prepared files.
        file_checks: the ``listing_files`` suite over :attr:`files`.
        entries: the entries of the files that passed it (file then position order).
        entry_checks: the ``papers`` suite over :attr:`entries`.
    """

    __slots__ = ("entries", "entry_checks", "file_checks", "files")

    def __init__(
        self,
        files: pl.DataFrame,
        file_checks: SuiteResult,
        entries: pl.DataFrame,
        entry_checks: SuiteResult,
    ) -> None:
        self.files = files
        self.file_checks = file_checks
        self.entries = entries
        self.entry_checks = entry_checks

    def __repr__(self) -> str:
        return f"CheckedBatch({self.files.height} files, {self.entries.height} entries)"

    def entry_rows(self) -> dict[str, range]:
        """The rows of :attr:`entries` of each file (by ``rel``): the files' rows are
        consecutive, in batch order (one pass over the ``file`` column)."""
        spans: dict[str, range] = {}
        start = 0
        for rel, length in (
            self.entries["file"].rle().struct.unnest().select("value", "len").iter_rows()
        ):
            spans[rel] = range(start, start + length)
            start += length
        return spans

    def per_file(self, rels: Sequence[str]) -> list[CheckedFile]:
        """:meth:`of` for every file of the batch in one pass: ``rels`` are the paths of
        :attr:`files`' rows (the batch's prepared files, in order). Each expectation's
        failing rows are dealt out to their files once (:func:`split_results`), not
        searched once per file; the result is equal to ``[self.of(i, rel) for i, rel in
        enumerate(rels)]``.

        Raises:
            ValueError: ``rels`` does not have one path per row of :attr:`files`.
        """
        if len(rels) != self.files.height:
            raise ValueError(f"{len(rels)} paths for {self.files.height} file rows")
        spans = self.entry_rows()
        empty = range(0)
        entry_spans = [spans.get(rel, empty) for rel in rels]
        file_checks = split_results(
            self.file_checks, [range(i, i + 1) for i in range(len(rels))], self.files
        )
        entry_checks = split_results(self.entry_checks, entry_spans, self.entries)
        return [
            CheckedFile(
                file_row=self.files.slice(index, 1),
                file_checks=file_checks[index],
                entries=self.entries.slice(rows.start, len(rows)),
                entry_checks=entry_checks[index],
            )
            for index, rows in enumerate(entry_spans)
        ]

    def of(self, index: int, rel: str, rows: range | None = None) -> CheckedFile:
        """File ``index`` of the batch (path ``rel``): its rows and the results restricted to
        them. ``rows``: its rows of :attr:`entries` (from :meth:`entry_rows`, for a batch of
        many files); None to find them here."""
        if rows is None:
            found = self.entries.with_row_index("_row").filter(pl.col("file") == rel)
            rows = range(0) if found.is_empty() else range(found["_row"][0], found["_row"][-1] + 1)
        return CheckedFile(
            file_row=self.files[index : index + 1],
            file_checks=self.file_checks.for_rows([index], self.files),
            entries=self.entries.slice(rows.start, len(rows)),
            entry_checks=self.entry_checks.for_rows(list(rows), self.entries),
        )


def split_results(
    suite: SuiteResult, spans: Sequence[range], frame: pl.DataFrame
) -> list[SuiteResult]:
    """``[suite.for_rows(list(span), frame) for span in spans]`` in one pass over each
    expectation's failing rows (:meth:`paperwatch.ingest.validate.SuiteResult.for_rows` scans all
    of them for every span: quadratic for a batch of many one-entry files).

    Args:
        suite: the results of one suite over ``frame`` (the validated batch).
        spans: row ranges of ``frame`` that do not overlap (e.g. each file's rows).
        frame: the validated batch, for the unexpected examples of each span's rows.

    Returns:
        One :class:`~paperwatch.ingest.validate.SuiteResult` per span, rows renumbered from 0.
    """
    owner: dict[int, int] = {}
    for part, span in enumerate(spans):
        for row in span:
            owner[row] = part
    split: list[list[ExpectationResult]] = [[] for _ in spans]
    for r in suite.results:
        failing: dict[int, list[int]] = {}
        for row in r.failed_rows:
            owning = owner.get(row)
            if owning is not None:
                failing.setdefault(owning, []).append(row)
        # A span without failing rows gets a result that depends only on its length: one
        # (immutable) object per length, not one per file.
        clean: dict[int, ExpectationResult] = {}
        for part, span in enumerate(spans):
            original = failing.get(part, [])
            if not original and len(span) in clean:
                split[part].append(clean[len(span)])
                continue
            failed = tuple(row - span.start for row in original)
            examples = unexpected_examples(frame, r.columns, original) if failed else ()
            result = r.restricted(len(span), failed, examples)
            if not original:
                clean[len(span)] = result
            split[part].append(result)
    return [SuiteResult(suite.suite, tuple(results)) for results in split]


#: With ``ramp`` (:func:`plan_batches`), the first batches get at most ``max_bytes`` over
#: these divisors, in order, and the last two at most ``max_bytes`` over :data:`RAMP_TAIL`
#: (last batch first): small end batches shorten the parts of a run nothing overlaps
#: (docs/design.md, "Batch ramp").
RAMP_HEAD = (8, 4, 2)
RAMP_TAIL = (8, 4)


def plan_batches(
    files: Sequence[ListingFileStat], max_files: int, max_bytes: int, ramp: bool = False
) -> list[list[ListingFileStat]]:
    """Cut ``files`` (in order) into batches of at most ``max_files`` files and ``max_bytes``
    bytes (by ``stat.size``); a single file larger than ``max_bytes`` is a batch of its own.

    With ``ramp`` (a run whose batches are prepared in other processes while this one
    loads), the first batches are smaller (:data:`RAMP_HEAD`), and so are the last two
    when the files hold more than two full batches (:data:`RAMP_TAIL`). Every batch
    still holds at least one file; the files keep their order.

    Raises:
        ValueError: ``max_files`` or ``max_bytes`` is below 1.
    """
    if max_files < 1 or max_bytes < 1:
        raise ValueError("max_files and max_bytes must be at least 1")
    files = list(files)
    tail: list[list[ListingFileStat]] = []
    if ramp and sum(stat.size for stat in files) > 2 * max_bytes:
        end = len(files)
        for divisor in RAMP_TAIL:
            limit, start, size = max(1, max_bytes // divisor), end, 0
            while (
                start > 1
                and end - start < max_files
                and (start == end or size + files[start - 1].size <= limit)
            ):
                start -= 1
                size += files[start].size
            if start == end:  # only the first file is left: it is the head's
                break
            tail.insert(0, files[start:end])
            end = start
        files = files[:end]
    head = [max(1, max_bytes // divisor) for divisor in RAMP_HEAD] if ramp else []
    batches: list[list[ListingFileStat]] = []
    current: list[ListingFileStat] = []
    size = 0
    for stat in files:
        limit = head[len(batches)] if len(batches) < len(head) else max_bytes
        if current and (len(current) >= max_files or size + stat.size > limit):
            batches.append(current)
            current, size = [], 0
        current.append(stat)
        size += stat.size
    if current:
        batches.append(current)
    return batches + tail


def split_evenly(items: Sequence[ListingFileStat], parts: int) -> list[list[ListingFileStat]]:
    """``items`` in at most ``parts`` consecutive chunks of near-equal total size (bytes)."""
    if parts <= 1 or len(items) <= 1:
        return [list(items)] if items else []
    total = sum(max(s.size, 1) for s in items)
    chunks: list[list[ListingFileStat]] = [[]]
    done = 0
    for stat in items:
        if chunks[-1] and done >= total * len(chunks) / parts and len(chunks) < parts:
            chunks.append([])
        chunks[-1].append(stat)
        done += max(stat.size, 1)
    return chunks


def prepare_isolated(
    stats: Sequence[ListingFileStat],
    max_bytes: int,
    memory_limit: int = 0,
    timeout_s: float = 0.0,
    dedup: DedupSettings | None = None,
) -> PreparedBatch:
    """Prepare ``stats`` one file at a time in a process of their own
    (:class:`~paperwatch.ingest.workers.IsolatedWorker`, under the memory ceiling): a file during
    which the process dies is the one that killed it, and goes to ``failed`` with how it
    died; the next file gets a new process. Used for the files of a pool that broke.

    Args:
        stats: the files, in order.
        max_bytes: ``Settings.max_file_bytes``.
        memory_limit: ``Settings.prepare_memory_limit_bytes`` (0: no ceiling).
        timeout_s: ``Settings.prepare_timeout_s``: a file still being prepared after this
            many seconds has its process killed and goes to ``failed`` (0: no limit).
        dedup: ``Settings.dedup`` to compute the abstracts' MinHash signatures too
            (:func:`prepare_files`), or None.

    Returns:
        The files prepared, in order, as :func:`prepare_files` would.
    """
    parts: list[PreparedBatch] = []
    worker: IsolatedWorker | None = None
    try:
        for stat in stats:
            if worker is None:
                worker = IsolatedWorker(prepare_files, (max_bytes, dedup), memory_limit, timeout_s)
            try:
                parts.append(worker.run(stat))
            except WorkerDied as died:
                parts.append(
                    PreparedBatch(
                        failed=[PrepareFailure(stat, internal_error_reason(died.summary))]
                    )
                )
                worker.close()
                worker = None
    finally:
        if worker is not None:
            worker.close()
    return merge_batches(parts)


#: Prefix of :attr:`PreparePool.spool` folders; the owning process id follows it.
SPOOL_PREFIX = "paperwatch-prepare-"
#: The file in a spool folder that its pool holds locked while it runs.
SPOOL_LOCK = ".owner.lock"


def _new_spool() -> tuple[Path, BaseFileLock] | None:
    """A new spool folder and the lock its pool holds on it; first deletes the spool
    folders whose lock nobody holds (their run was killed). None when no temporary folder
    is writable (results are then pickled).

    The owner is told by a lock (``filelock``: ``flock`` on POSIX), not by its process id:
    a run in another PID namespace (a container sharing ``TMPDIR``) has ids this process
    cannot see, and ids are reused. A folder made by a run starting at the same moment may
    be deleted before it is locked; that run's workers then pickle their results.
    """
    try:
        root = Path(tempfile.gettempdir())
        for old in root.glob(f"{SPOOL_PREFIX}*"):
            stale = FileLock(old / SPOOL_LOCK)
            try:
                stale.acquire(timeout=0)
            except (Timeout, OSError):
                continue
            try:
                shutil.rmtree(old, ignore_errors=True)
            finally:
                stale.release()
        folder = Path(tempfile.mkdtemp(prefix=f"{SPOOL_PREFIX}{os.getpid()}-", dir=root))
        lock = FileLock(folder / SPOOL_LOCK)
        lock.acquire(timeout=0)
    except (OSError, Timeout):
        return None
    return folder, lock


class PreparePool(Executor):
    """A ``spawn`` process pool of preparation workers (:func:`~paperwatch.ingest.workers.init_worker`:
    memory ceiling, exit with the run) that replaces itself when a worker died.

    A worker that dies breaks a :class:`~concurrent.futures.ProcessPoolExecutor` for good
    (every pending future fails with ``BrokenProcessPool``); the next :meth:`submit` starts
    a new pool.

    Attributes:
        workers: processes.
        memory_limit: the ceiling of each (bytes, 0: none).
        timeout_s: the most seconds a worker may spend on one file (0: no limit); see
            :meth:`overdue` and :meth:`restart`.
        spool: a new folder in the system's temporary folder (``TMPDIR``) where the
            workers leave the frames of the chunks they prepared for :func:`prepare_batch`
            to read (:func:`paperwatch.ingest.prepare.spool_batch`); locked while the pool runs,
            deleted by :meth:`shutdown`. Folders that a killed run left behind (nobody
            holds their lock) are deleted when a pool starts. None when it could not be
            made: results are then pickled.
    """

    def __init__(self, workers: int, memory_limit: int = 0, timeout_s: float = 0.0) -> None:
        self.workers = workers
        self.memory_limit = memory_limit
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self.heartbeats: Heartbeats | None = None
        made = _new_spool()
        self.spool: Path | None = made[0] if made is not None else None
        self._spool_lock: BaseFileLock | None = made[1] if made is not None else None
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        self.heartbeats = Heartbeats(self.workers) if self.timeout_s > 0 else None
        return ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=init_worker,
            initargs=(self.memory_limit, os.getpid(), self.heartbeats),
        )

    def overdue(self) -> bool:
        """True when a worker has been preparing one file for over ``timeout_s`` seconds."""
        heartbeats = self.heartbeats
        return heartbeats is not None and heartbeats.overdue(self.timeout_s)

    def restart(self) -> None:
        """Kill the workers (the chunks they held fail with ``BrokenProcessPool``, the
        queued ones are cancelled) and start a new pool for later submissions."""
        self.terminate()
        with self._lock:
            self._pool = self._new_pool()

    def submit(self, fn: Callable[..., object], /, *args: object, **kwargs: object) -> Future:
        """Submit to the pool, starting a new pool first when the current one broke."""
        with self._lock:
            try:
                return self._pool.submit(fn, *args, **kwargs)
            except BrokenProcessPool:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = self._new_pool()
                return self._pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Shut the current pool down (see :meth:`ProcessPoolExecutor.shutdown`) and
        delete :attr:`spool` with anything left in it."""
        with self._lock:
            self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)
            if self.spool is not None:
                shutil.rmtree(self.spool, ignore_errors=True)
            if self._spool_lock is not None:
                self._spool_lock.release()

    def terminate(self) -> None:
        """Kill the workers now (an interrupted run: do not wait for the files they hold)."""
        with self._lock:
            processes = list((getattr(self._pool, "_processes", None) or {}).values())
            self._pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.kill()
        for process in processes:
            process.join()


def prepare_batch(
    stats: Sequence[ListingFileStat],
    max_bytes: int,
    pool: Executor | None = None,
    dedup: DedupSettings | None = None,
) -> PreparedBatch:
    """Read, hash, parse and clean a batch of files, in parallel when ``pool`` is given.

    A :class:`PreparePool` with a time limit (``timeout_s``) is watched while the batch
    is prepared: when a worker has been on one file for longer, the pool's workers are
    killed (:meth:`PreparePool.restart`) and the chunks not yet back are prepared in
    isolation, where the file that hangs is found, stopped at the same limit and put in
    ``failed`` ("preparation took longer than N s").

    Args:
        stats: the batch's files, as scanned.
        max_bytes: files larger than this are not read (``Settings.max_file_bytes``).
        pool: a :class:`PreparePool` from :func:`prepare_pool` (or any executor), or None
            for this process. The files go to the workers in about four chunks per
            worker, in order. The files of a chunk whose worker died (or whose pool
            broke because another worker died) are prepared again one by one in a
            process of their own (:func:`prepare_isolated`), which finds the file that
            killed it. A :class:`PreparePool`'s workers send a chunk's frames back
            through files in its :attr:`~PreparePool.spool` folder
            (:func:`paperwatch.ingest.prepare.spool_batch`); other executors pickle them.
        dedup: ``Settings.dedup`` to compute the abstracts' MinHash signatures where
            they are cleaned (:attr:`PreparedBatch.signatures`), or None.

    Returns:
        A :class:`PreparedBatch` in the order of ``stats`` (minus vanished and failed
        files); identical with or without a pool.
    """
    if pool is None:
        return prepare_files(stats, max_bytes, dedup)
    workers: int = getattr(pool, "workers", 0) or getattr(pool, "_max_workers", 2)
    memory_limit = getattr(pool, "memory_limit", 0)
    timeout_s = float(getattr(pool, "timeout_s", 0.0))
    spool: Path | None = getattr(pool, "spool", None)
    chunks = split_evenly(stats, min(len(stats), 4 * workers))
    futures: list[Future[SpooledBatch | PreparedBatch] | None] = []
    for chunk in chunks:
        try:
            if spool is not None:
                futures.append(pool.submit(prepare_files_spooled, chunk, max_bytes, dedup, spool))
            else:
                futures.append(pool.submit(prepare_files, chunk, max_bytes, dedup))
        except BrokenProcessPool:
            futures.append(None)
    parts = []
    for chunk, future in zip(chunks, futures, strict=True):
        try:
            if future is None:
                raise BrokenProcessPool("the pool broke before the chunk was submitted")
            parts.append(unspooled(_result_in_time(pool, future)))
        except Exception:  # BrokenProcessPool, too slow, or a result that could not be sent back
            parts.append(prepare_isolated(chunk, max_bytes, memory_limit, timeout_s, dedup))
    return merge_batches(parts)


def _result_in_time(
    pool: Executor, future: Future[SpooledBatch | PreparedBatch]
) -> SpooledBatch | PreparedBatch:
    """``future.result()``; when ``pool`` is a :class:`PreparePool` with a time limit and
    a worker stays on one file for longer, the pool is restarted and TimeoutError raised."""
    if not isinstance(pool, PreparePool) or pool.timeout_s <= 0:
        return future.result()
    while True:
        done, _ = wait([future], timeout=OVERDUE_POLL_S)
        if done:
            return future.result()
        if pool.overdue():
            pool.restart()
            raise TimeoutError(timeout_summary(pool.timeout_s))


def default_workers(setting: int) -> int:
    """Worker processes for a setting of ``prepare_workers``: 0 means one per CPU core."""
    return setting if setting > 0 else max(1, os.cpu_count() or 1)


@contextmanager
def prepare_pool(
    workers: int, pending_bytes: int, memory_limit: int = 0, timeout_s: float = 0.0
) -> Iterator[PreparePool | None]:
    """A :class:`PreparePool` of ``workers`` processes (``spawn`` start method: Polars'
    threads do not survive ``fork``) with a ceiling of ``memory_limit`` bytes each.

    When ``workers`` is 1 or fewer than :data:`POOL_MIN_BYTES` are pending: with a
    ceiling, the pool has one process (a file that aborts or exhausts memory must not
    take the run down, nor make every later run crash on it); with a time limit per file
    (``timeout_s``, setting ``prepare_timeout_s``) too, since only a process of its own
    can be stopped; with neither (both 0), None: the files are prepared in this process,
    where exceptions are contained but an abort or a hang is not.

    The pool is shut down on exit; on an exception (``KeyboardInterrupt`` included) its
    workers are killed at once. Workers also exit by themselves when this process dies.
    """
    if workers <= 1 or pending_bytes < POOL_MIN_BYTES:
        workers = 1
    if workers == 1 and memory_limit == 0 and timeout_s <= 0:
        yield None
        return
    pool = PreparePool(workers, memory_limit, timeout_s)
    try:
        yield pool
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def bulk_session(
    database: Path, timeout_s: float, pending_bytes: int, memory_mb: int = 0
) -> AbstractContextManager[None]:
    """:func:`paperwatch.db.session` (DuckDB held to ``memory_mb`` MB, 0: the default of
    :func:`paperwatch.db.memory_limit` for a bulk load) when at least
    :data:`SESSION_MIN_BYTES` are pending (a backfill), else a no-op: small runs keep the
    database closed between writes."""
    if pending_bytes >= SESSION_MIN_BYTES:
        return db.session(database, timeout_s, memory_mb)
    return nullcontext()


class BatchGarbage:
    """Frees each batch's memory as soon as the batch is loaded, not at Python's next full
    garbage collection; use as ``with BatchGarbage() as garbage: ... garbage.collect()``.

    A batch reaches the run through a Prefect future, which is part of a reference cycle,
    so its frames wait for CPython's cyclic collector. On entry the objects alive then are
    frozen (:func:`gc.freeze`), so :meth:`collect` looks only at what the run made since; on
    exit they are unfrozen (:func:`gc.unfreeze`). Why, with figures: docs/design.md,
    "Collecting each batch's garbage".
    """

    def __enter__(self) -> BatchGarbage:
        gc.freeze()
        return self

    def collect(self) -> None:
        """Collect the reference cycles made since entry (call after each batch)."""
        gc.collect()

    def __exit__(self, *exc: object) -> None:
        gc.unfreeze()


def check_batch(
    batch: PreparedBatch, sequence_numbers: Iterable[int], contents: Collection[str] = ()
) -> CheckedBatch:
    """Run the ``listing_files`` suite over the batch's files, then the ``papers`` suite over
    the entries of the files that passed it (one Great Expectations run per suite and batch).

    Args:
        batch: from :func:`prepare_batch`.
        sequence_numbers: sequence numbers recorded before this batch (for gaps).
        contents: sha256 of the files recorded before this batch in the same run (a copy
            of one fills no gap: :func:`~paperwatch.ingest.frames.files_frame`).
    """
    files = files_frame(batch.prepared, sequence_numbers, contents)
    file_checks = validate_frame(files, "listing_files")
    rejected = {batch.prepared[i].stat.rel for i in file_checks.critical_failures()}
    entries = batch.entries
    if rejected:
        entries = entries.filter(~pl.col("file").is_in(list(rejected)))
    return CheckedBatch(files, file_checks, entries, validate_frame(entries, "papers"))


def store_batch_terms(
    con: duckdb.DuckDBPyConnection,
    batch: PreparedBatch,
    outcomes: Iterable[FileOutcome],
    week: str,
) -> int:
    """Store the terms of the papers the batch added (``paper_terms``, ``paper_terms_extracted``)
    from :attr:`PreparedBatch.terms`: exactly what :func:`paperwatch.db.trends.update_paper_terms`
    would extract for them, without extracting again (nor reading the abstracts back).

    Args:
        outcomes: from :func:`load_batch`; their ``new_paper_ids`` and ``new_paper_keys``.
        week: the run's ISO week (the new papers' ``first_seen_week``).

    Returns:
        The number of papers."""
    ids = [pid for outcome in outcomes for pid in outcome.new_paper_ids]
    if not ids:
        return 0
    keys = key_numbers([key for outcome in outcomes for key in outcome.new_paper_keys])
    papers = pl.DataFrame({"paper_id": ids, "key": keys, "first_seen_week": [week] * len(ids)})
    terms = papers.join(batch.terms, on="key", how="inner").select(
        "paper_id", "term", "n", "first_seen_week"
    )
    return store_new_paper_terms(con, papers.select("paper_id", "first_seen_week"), terms)


def new_paper_signatures(
    batch: PreparedBatch, outcomes: Iterable[FileOutcome]
) -> dict[str, np.ndarray]:
    """The MinHash signatures the batch's workers computed for the papers it added.

    Args:
        batch: with :attr:`PreparedBatch.signatures` (by abstract key; empty when they
            were not computed).
        outcomes: from :func:`load_batch`; their ``new_paper_ids`` and ``new_paper_keys``
            (the key of the abstract each new paper was stored with).

    Returns:
        ``{paper id: uint32 signature of shape (num_perm,)}`` for the new papers whose
        abstract has a signature (the ``signatures`` argument of
        :func:`paperwatch.db.duplicates.update_near_duplicates`).
    """
    ids = [pid for outcome in outcomes for pid in outcome.new_paper_ids]
    if not ids or not batch.signatures.height:
        return {}
    keys = [key for outcome in outcomes for key in outcome.new_paper_keys]
    papers = pl.DataFrame({"paper_id": ids, "key": keys})
    found = papers.join(batch.signatures, on="key", how="inner")
    if not found.height:
        return {}
    matrix = found["signature"].to_numpy()
    return dict(zip(found["paper_id"].to_list(), matrix, strict=True))


def load_batch(
    con: duckdb.DuckDBPyConnection,
    batch: PreparedBatch,
    checked: CheckedBatch,
    run: RunContext,
    max_bytes: int,
) -> list[FileOutcome]:
    """Load the files of the batch (:func:`paperwatch.db.load.load_file`) in one transaction,
    then quarantine whole each file whose preparation failed
    (:func:`paperwatch.db.load.quarantine_unprepared`; ``max_bytes`` is
    ``Settings.max_file_bytes``, the most of its bytes read again to be kept).

    The batch's files share one transaction and one insert per table
    (:class:`paperwatch.db.writes.BatchWrites`): a batch of 1,000 one-abstract files costs a
    few statements, not a dozen per file. Which of the batch's paper ids are already
    recorded is read once for the batch (one scan of ``papers``) and kept up to date in
    memory as the files load. When the batch's transaction fails, it is rolled back and
    the files are loaded again each in its own transaction, so the file that fails is
    found and the files before it stay loaded.

    Raises:
        duckdb.Error: a load failed (that file's transaction was rolled back; earlier files
            of the batch stay loaded).
    """
    per_file = checked.per_file([f.stat.rel for f in batch.prepared])
    try:
        with db.transaction(con):
            known = existing_paper_ids(con, checked.entries["paper_id"])
            writes = BatchWrites(con, [(f.stat.rel, f.sha256) for f in batch.prepared])
            outcomes = []
            for file, checked_file in zip(batch.prepared, per_file, strict=True):
                outcome = load_file(con, file, checked_file, run, known, writes)
                known.update(outcome.new_paper_ids)
                outcomes.append(outcome)
            writes.flush()
    except duckdb.Error as exc:
        _log.warning("loading the batch in one transaction failed (%s): file by file", exc)
        known = existing_paper_ids(con, checked.entries["paper_id"])
        outcomes = []
        for file, checked_file in zip(batch.prepared, per_file, strict=True):
            outcome = load_file(con, file, checked_file, run, known)
            known.update(outcome.new_paper_ids)
            outcomes.append(outcome)
    for failure in batch.failed:
        outcomes.append(quarantine_unprepared(con, failure.stat, failure.reason, run, max_bytes))
    return outcomes
