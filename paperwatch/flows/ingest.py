"""The ``ingest-listings`` flow: load every new or changed listing file of the watched folder.

Tasks only wire the functions of :mod:`paperwatch.ingest.files`, :mod:`paperwatch.ingest.validate`
and :mod:`paperwatch.db.load`. Every run processes every pending file (the manifest is
``listing_files``, keyed by path and sha256, with a stat-first skip), so a run that
was skipped or merged loses nothing. Files go through in batches
(``Settings.batch_files``) so memory stays bounded on a backfill.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from concurrent.futures import Executor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture
from prefect.utilities.annotations import quote

from paperwatch import db
from paperwatch.clock import iso_week, now_utc, parse_as_of
from paperwatch.db.batches import (
    BatchGarbage,
    CheckedBatch,
    PreparedBatch,
    bulk_session,
    check_batch,
    default_workers,
    load_batch,
    merge_batches,
    new_paper_signatures,
    plan_batches,
    prepare_batch,
    prepare_isolated,
    prepare_pool,
    split_evenly,
    store_batch_terms,
)
from paperwatch.db.duplicates import update_near_duplicates
from paperwatch.db.load import (
    known_content_sizes,
    known_sequence_numbers,
    known_stats,
    recognise_known_content,
    record_ignored,
    recorded_sequence_numbers,
)
from paperwatch.db.runs import FileOutcome, IngestSummary, RunContext, finish_run, start_run
from paperwatch.db.trends import update_paper_terms
from paperwatch.db.writer_lock import holds_writer_lock
from paperwatch.flows.snapshot import publish_after_run
from paperwatch.ingest.files import (
    ListingFileStat,
    ScanResult,
    hash_listing_files,
    scan_folder,
    select_changed,
)
from paperwatch.ingest.watch import hold_back_recent
from paperwatch.report.artifacts import INGEST_ARTIFACT_KEY, ingest_description, ingest_table
from paperwatch.settings import DedupSettings, Settings, load_settings

_T = TypeVar("_T")


def _whole(value: _T) -> _T:
    """Pass ``value`` to a task as one opaque parameter (Prefect's ``quote``).

    The task gets the value itself, unchanged, and Prefect does not walk it looking for
    futures (the values passed here hold none). Why: docs/design.md, "Task parameters
    passed whole".
    """
    return cast(_T, quote(value))


# --- server runs: settle guard and run artifact (see paperwatch/flows/deployments.py) ---


def _settle_seconds(settings: Settings) -> float:
    """Quiet period for this run's scan: the setting in deployment runs, 0 when run by hand.

    Scheduled and triggered runs may start while a file is still being written, so
    they leave files modified within ``schedule.watch_quiet_period_s`` for a later
    run; ``paperwatch ingest`` reads whatever is there (the user just put it there).
    """
    from prefect.runtime import deployment

    return settings.schedule.watch_quiet_period_s if deployment.id else 0.0


@task(name="publish-ingest-artifact", retries=2, retry_delay_seconds=[1, 5], cache_policy=NO_CACHE)
def publish_ingest_artifact(summary: IngestSummary) -> None:
    """Publish the run's files and counts as a table artifact (key ``ingest-listings-files``)."""
    create_table_artifact(
        table=ingest_table(summary),
        key=INGEST_ARTIFACT_KEY,
        description=ingest_description(summary),
    )


# --- end server runs ---


@dataclass(frozen=True, slots=True)
class _Pending:
    scan: ScanResult
    changed: list[ListingFileStat]
    sequence_numbers: set[int]
    newly_ignored: list[tuple[str, str]]
    known_sizes: set[int]


@task(name="scan-listing-files", retries=2, retry_delay_seconds=[1, 5], cache_policy=NO_CACHE)
def scan_listing_files(settings: Settings, run: RunContext) -> _Pending:
    """Scan the folder; keep the files whose path, size or mtime is not recorded yet."""
    scan = scan_folder(settings.watch_dir, settings.formats)
    scan = hold_back_recent(scan, time.time_ns(), _settle_seconds(settings))
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        known = known_stats(con)
        numbers = known_sequence_numbers(con)
        fresh = record_ignored(con, list(scan.ignored), run)
        sizes = known_content_sizes(con)
    return _Pending(scan, select_changed(scan.files, known), numbers, fresh, sizes)


@task(name="recognise-known-files", retries=2, retry_delay_seconds=[1, 5], cache_policy=NO_CACHE)
def recognise_known_files(
    settings: Settings, run: RunContext, pending: _Pending
) -> tuple[list[FileOutcome], list[ListingFileStat]]:
    """Hash the changed files that could hold recorded bytes (their size is recorded) and
    record those whose bytes are known without parsing them
    (:func:`paperwatch.db.load.recognise_known_content`); return their outcomes and the
    files still to prepare."""
    candidates = [f for f in pending.changed if f.size in pending.known_sizes]
    hashed = hash_listing_files(candidates, settings.max_file_bytes)
    if not hashed:
        return [], pending.changed
    present = {f.rel for f in pending.scan.files}
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        outcomes = recognise_known_content(con, hashed, present, run)
    known = {o.rel for o in outcomes}
    return outcomes, [f for f in pending.changed if f.rel not in known]


@task(name="read-listing-files", retries=2, retry_delay_seconds=[1, 5], cache_policy=NO_CACHE)
def read_listing_files(
    batch: Sequence[ListingFileStat],
    max_bytes: int,
    pool: Executor | None = None,
    dedup: DedupSettings | None = None,
) -> PreparedBatch:
    """Read, hash, parse and clean a batch of files, and MinHash their abstracts, in
    ``pool``'s processes when given (a file that vanished is reported, not fatal)."""
    return prepare_batch(batch, max_bytes, pool, dedup)


@task(name="validate-listing-files", cache_policy=NO_CACHE)
def validate_listing_files(
    batch: PreparedBatch, sequence_numbers: set[int], contents: set[str] | None = None
) -> CheckedBatch:
    """Run the ``listing_files`` suite over the batch's files, then the ``papers`` suite over
    the entries of the files that passed it (never retried: a failure is a finding).
    ``contents``: sha256 of the files the run recorded before this batch."""
    return check_batch(batch, sequence_numbers, contents or ())


@task(name="load-listing-files", cache_policy=NO_CACHE)
def load_listing_files(
    settings: Settings, batch: PreparedBatch, checked: CheckedBatch, run: RunContext
) -> list[FileOutcome]:
    """Load each file of the batch in its own transaction, then the new papers' terms
    (extracted with the batch)."""
    logger = get_run_logger()
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        outcomes = load_batch(con, batch, checked, run, settings.max_file_bytes)
        store_batch_terms(con, batch, outcomes, run.week)
    for outcome in outcomes:
        if outcome.status == "quarantined":
            logger.warning("%s: quarantined: %s", outcome.rel, outcome.reason)
        elif outcome.status == "duplicate":
            logger.info("%s: duplicate file (%s)", outcome.rel, outcome.reason)
        elif outcome.status == "loaded":
            logger.info(
                "%s: %d entries, %d loaded, %d quarantined, %d new papers",
                outcome.rel,
                outcome.entries,
                outcome.entries_loaded,
                outcome.entries_quarantined,
                outcome.new_papers,
            )
    return outcomes


_Reading = tuple[list[ListingFileStat], PrefectFuture[PreparedBatch]]


class _Stage:
    """Where the parse/clean/validate stage runs: this process (with a process pool for
    parsing and cleaning) or the workers of a Dask cluster (``task_runner = "dask"``)."""

    def __init__(self, settings: Settings, pending_bytes: int) -> None:
        self.settings = settings
        self.pending_bytes = pending_bytes
        self.workers = default_workers(settings.prepare_workers)
        self.pool: Executor | None = None
        self.dask: Any = None
        self._stack = ExitStack()

    def __enter__(self) -> _Stage:
        if self.settings.task_runner == "dask":
            from prefect_dask import DaskTaskRunner

            if self.settings.dask_address:
                runner = DaskTaskRunner(address=self.settings.dask_address)
            else:
                cluster: dict[str, Any] = {
                    "n_workers": self.workers,
                    "threads_per_worker": 1,
                    "processes": self.settings.dask_processes,
                    "dashboard_address": None,
                }
                if self.settings.dask_processes and self.settings.prepare_memory_limit_bytes:
                    # The nanny restarts a worker over it; the files go to prepare_isolated.
                    cluster["memory_limit"] = self.settings.prepare_memory_limit_bytes
                runner = DaskTaskRunner(cluster_kwargs=cluster)
            self.dask = self._stack.enter_context(runner)
        else:
            self.pool = self._stack.enter_context(
                prepare_pool(
                    self.workers,
                    self.pending_bytes,
                    self.settings.prepare_memory_limit_bytes,
                    self.settings.prepare_timeout_s,
                )
            )
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    @property
    def overlaps(self) -> bool:
        """Batches are prepared in other processes while this one loads the one before."""
        return self.dask is not None or self.pool is not None

    def read(self, batch: Sequence[ListingFileStat]) -> list[_Reading]:
        """Start reading a batch; :meth:`collect` merges the parts into its
        :class:`PreparedBatch`."""
        max_bytes, dedup = self.settings.max_file_bytes, self.settings.dedup
        if self.dask is not None:
            return [
                (
                    chunk,
                    self.dask.submit(
                        read_listing_files,
                        {"batch": chunk, "max_bytes": max_bytes, "dedup": dedup},
                    ),
                )
                for chunk in split_evenly(batch, self.workers)
            ]
        return [
            (
                list(batch),
                read_listing_files.submit(
                    _whole(list(batch)), max_bytes, _whole(self.pool), _whole(dedup)
                ),
            )
        ]

    def collect(self, reading: list[_Reading]) -> PreparedBatch:
        """The batch read by :meth:`read`. A Dask part that failed (its worker died, e.g.
        restarted by the nanny over the memory ceiling) is prepared again here, one file at
        a time in a process of its own (:func:`paperwatch.db.batches.prepare_isolated`)."""
        parts = []
        for chunk, future in reading:
            try:
                parts.append(future.result())
            except Exception:
                if self.dask is None:
                    raise
                parts.append(
                    prepare_isolated(
                        chunk,
                        self.settings.max_file_bytes,
                        self.settings.prepare_memory_limit_bytes,
                        self.settings.prepare_timeout_s,
                        self.settings.dedup,
                    )
                )
        return merge_batches(parts)

    def validate(self, batch: PreparedBatch, numbers: set[int], contents: set[str]) -> CheckedBatch:
        """Run the two suites over the batch (on a Dask worker when configured)."""
        if self.dask is not None:
            future = self.dask.submit(
                validate_listing_files,
                {"batch": batch, "sequence_numbers": numbers, "contents": contents},
            )
            return cast(CheckedBatch, future.result())
        return validate_listing_files(_whole(batch), _whole(numbers), _whole(contents))


@task(name="extract-paper-terms", cache_policy=NO_CACHE)
def extract_paper_terms(settings: Settings) -> int:
    """Extract the terms of every paper that has none yet (``paper_terms``)."""
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        return update_paper_terms(con)


@task(name="sketch-new-papers", cache_policy=NO_CACHE)
def sketch_new_papers(
    settings: Settings,
    run: RunContext,
    signatures: dict[str, Any] | None = None,
    paper_ids: list[str] | None = None,
) -> int:
    """Sketch the new papers (MinHash and LSH band keys; ``signatures`` computed by the
    preparation workers, by paper id), the papers of ``paper_ids`` (a batch's), or every
    paper without a signature when None; they wait in ``paper_lsh_pending`` for
    :func:`compare_near_duplicates`. Returns the pairs recorded: 0, unless the dedup
    settings changed and every paper was sketched and compared again."""
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        return update_near_duplicates(
            con, settings, run.as_of, signatures, paper_ids, compare=False
        )


@task(name="compare-near-duplicates", cache_policy=NO_CACHE)
def compare_near_duplicates(settings: Settings, run: RunContext) -> int:
    """Compare every sketched paper not compared yet (``paper_lsh_pending``) with all
    papers, in one pass, and record the near-duplicate pairs; returns the pairs recorded.
    Sketches nothing (``paper_ids=()``): the run sketched its batches and what an earlier
    run left, and looking for unsketched papers again is an anti join of every paper."""
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        return update_near_duplicates(con, settings, run.as_of, paper_ids=())


@task(name="publish-quality-artifacts", cache_policy=NO_CACHE)
def publish_quality_artifacts(settings: Settings, run: RunContext) -> None:
    """A table artifact with the run's validation summary; a markdown one when anything was
    quarantined (keys ``ingest-validation`` and ``ingest-quarantine``)."""
    with db.reader(settings.database, settings.lock_timeout_s) as con:
        summary = db.query(con, "run_validation_summary", run_id=run.run_id)
        quarantined = db.query(con, "run_quarantine", run_id=run.run_id)
    if summary:
        create_table_artifact(
            key="ingest-validation",
            table=summary,
            description=f"Expectation results of ingestion run {run.run_id} ({run.week})",
        )
    if quarantined:
        lines = [f"# Quarantined in run {run.run_id} ({run.week})", ""]
        lines += ["| # | what | where | reasons |", "| --- | --- | --- | --- |"]
        for q in quarantined:
            where = q["path"] + (f":{q['line']}" if q["line"] else "")
            what = "file" if q["kind"] == "file" else f"entry {q['position']}"
            reasons = "; ".join(q["reasons"]).replace("|", "\\|")
            lines.append(f"| {q['quarantine_id']} | {what} | {where} | {reasons} |")
        lines += [
            "",
            "Inspect with `paperwatch quarantine list`; release with `paperwatch quarantine release ID`.",
        ]
        create_markdown_artifact(key="ingest-quarantine", markdown="\n".join(lines))


@flow(name="ingest-listings", log_prints=True)
@holds_writer_lock
def ingest_listings(
    folder: str | None = None,
    database: str | None = None,
    as_of: str | None = None,
    publish_snapshot: bool = True,
) -> IngestSummary:
    """Load every new or changed listing file of ``folder`` into ``database``.

    Args:
        folder: the watched folder (default: setting ``watch_dir``).
        database: the DuckDB file (default: setting ``database``).
        as_of: ISO 8601 date-time used as "now" (default: the current time); it
            decides the ISO week new papers belong to.
        publish_snapshot: republish the analysts' snapshot when the run wrote (False for
            a database that is not in place yet: ``paperwatch rebuild`` publishes after
            its swap).

    Returns:
        The run's :class:`~paperwatch.db.runs.IngestSummary`.
    """
    settings = load_settings(watch_dir=folder, database=database)
    logger = get_run_logger()
    moment = parse_as_of(as_of, settings.tz)
    run = RunContext(run_id=str(uuid.uuid4()), as_of=moment, week=iso_week(moment, settings.tz))
    summary = IngestSummary(run_id=run.run_id, week=run.week)
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        for interrupted in start_run(con, run, str(settings.watch_dir), now_utc()):
            logger.warning(
                "run %s had not finished (killed or crashed): marked interrupted", interrupted
            )
        # Left by a run killed half-way, or by a migration that re-keyed papers.
        leftover = db.query(con, "pending_derived_work")[0]
    try:
        pending = scan_listing_files(settings, run)
        scan, numbers = pending.scan, set(pending.sequence_numbers)
        summary.files_seen = len(scan.files)
        summary.files_unchanged = len(scan.files) - len(pending.changed)
        summary.ignored = pending.newly_ignored
        for rel, reason in pending.newly_ignored:
            logger.warning("passed over %s: %s (mentioned once)", rel, reason)
        logger.info(
            "%d listing files in %s, %d new or changed",
            len(scan.files),
            settings.watch_dir,
            len(pending.changed),
        )
        recognised, changed = recognise_known_files(settings, run, _whole(pending))
        if recognised:
            for outcome in recognised:
                summary.add(outcome)
            logger.info(
                "%s files already known by content; %s new",
                f"{len(recognised):,}",
                f"{len(changed):,}",
            )
        if leftover["unsketched"]:
            summary.near_duplicates += sketch_new_papers(settings, run)
        _load_changed_files(settings, run, changed, numbers, leftover, summary)
        if summary.new_papers or leftover["unextracted"]:
            # Terms came with the batches; this catches any paper left.
            extract_paper_terms(settings)
    except BaseException as exc:
        with db.writer(settings.database, settings.lock_timeout_s) as con:
            finish_run(con, run.run_id, summary.run_counts(), now_utc(), "failed", repr(exc))
        if isinstance(exc, Exception) and summary.changed_anything and publish_snapshot:
            publish_after_run(settings)  # the files loaded before the failure
        raise
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        finish_run(con, run.run_id, summary.run_counts(), now_utc())
    completed_leftovers = any(
        leftover[kind] for kind in ("unsketched", "uncompared", "unextracted")
    )
    _publish_run(settings, run, summary, completed_leftovers, publish_snapshot)
    return summary


def _load_changed_files(
    settings: Settings,
    run: RunContext,
    changed: list[ListingFileStat],
    numbers: set[int],
    leftover: dict[str, Any],
    summary: IngestSummary,
) -> None:
    """Read, validate and load ``changed`` in batches (the next batch read while one is
    loaded), counting into ``summary``; then compare the new papers' near duplicates once."""
    logger = get_run_logger()
    contents: set[str] = set()  # sha256 of the files this run recorded
    done = 0
    started = time.monotonic()
    pending_bytes = sum(f.size for f in changed)
    with bulk_session(
        settings.database, settings.lock_timeout_s, pending_bytes, settings.bulk_memory_limit_mb
    ):
        with _Stage(settings, pending_bytes) as stage, BatchGarbage() as garbage:
            batches = plan_batches(
                changed, settings.batch_files, settings.batch_bytes, ramp=stage.overlaps
            )
            pending_read = stage.read(batches[0]) if batches else []
            for number, batch in enumerate(batches):
                read = stage.collect(pending_read)
                # Read the next batch while this one is validated and loaded.
                pending_read = stage.read(batches[number + 1]) if number + 1 < len(batches) else []
                new = _load_batch(settings, run, stage, read, numbers, contents, summary)
                del read
                if new is not None:  # sketched per batch, compared once after the last batch
                    summary.near_duplicates += sketch_new_papers(
                        settings, run, _whole(new[0]), _whole(new[1])
                    )
                del new
                garbage.collect()  # the batch's future sits in a reference cycle
                done += len(batch)
                logger.info(
                    "progress: %d/%d files, %d entries, %d new papers (%.0f s)",
                    done,
                    len(changed),
                    summary.entries,
                    summary.new_papers,
                    time.monotonic() - started,
                )
        # After the workers stopped (their memory is free): one comparison of all the
        # papers sketched, not one per batch over a database that grows.
        if summary.new_papers or leftover["unsketched"] or leftover["uncompared"]:
            compared = time.monotonic()
            pairs = compare_near_duplicates(settings, run)
            summary.near_duplicates += pairs
            logger.info(
                "near-duplicates: %d new %s (%.1f s)",
                pairs,
                "pair" if pairs == 1 else "pairs",
                time.monotonic() - compared,
            )


def _load_batch(
    settings: Settings,
    run: RunContext,
    stage: _Stage,
    read: PreparedBatch,
    numbers: set[int],
    contents: set[str],
    summary: IngestSummary,
) -> tuple[Any, list[str]] | None:
    """Validate and load one read batch, counting into ``summary``; ``numbers`` and
    ``contents`` gain the batch's sequence numbers and sha256 (a later copy is a duplicate).
    Returns the new papers' signatures and ids to sketch, or None when there are none."""
    logger = get_run_logger()
    for rel, reason in read.vanished:
        logger.warning("%s: %s", rel, reason)
        summary.add(FileOutcome(rel=rel, status="vanished", reason=reason))
    checked = stage.validate(read, numbers, contents)
    outcomes = load_listing_files(settings, _whole(read), _whole(checked), run)
    new_papers = 0
    for outcome in outcomes:
        summary.add(outcome)
        new_papers += outcome.new_papers
    numbers |= recorded_sequence_numbers(outcomes)
    contents |= {f.sha256 for f in read.prepared}
    if not new_papers:
        return None
    added = [pid for outcome in outcomes for pid in outcome.new_paper_ids]
    return new_paper_signatures(read, outcomes), added


def _publish_run(
    settings: Settings,
    run: RunContext,
    summary: IngestSummary,
    completed_leftovers: bool,
    publish_snapshot: bool,
) -> None:
    """After a completed run: the analysts' snapshot (when the run wrote, finished work
    left by an earlier one, or there is no snapshot yet) and the run's artifacts."""
    snapshot = settings.snapshot_path
    if publish_snapshot and (
        summary.changed_anything
        or completed_leftovers
        or (snapshot is not None and not snapshot.is_file())
    ):
        publish_after_run(settings)
    publish_ingest_artifact(_whole(summary))
    if summary.changed_anything:
        publish_quality_artifacts(settings, run)
