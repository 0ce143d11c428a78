"""The ``ingest-listings`` flow: load every new or changed listing file of the watched folder.

Tasks only wire the functions of :mod:`paperwatch.ingest`, :mod:`paperwatch.validate`
and :mod:`paperwatch.store`. Every run processes every pending file (the manifest is
``listing_files``, keyed by path and sha256, with a stat-first skip), so a run that
was skipped or merged loses nothing. Files go through in batches
(``Settings.batch_files``) so memory stays bounded on a backfill.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import polars as pl
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE

from paperwatch import db
from paperwatch.artifacts import INGEST_ARTIFACT_KEY, ingest_description, ingest_table
from paperwatch.clock import iso_week, now_utc, parse_as_of
from paperwatch.ingest import (
    ListingFileStat,
    PreparedFile,
    ScanResult,
    entries_frame,
    prepare_file,
    read_listing_file,
    scan_folder,
    select_changed,
)
from paperwatch.settings import Settings, load_settings
from paperwatch.store import (
    FileOutcome,
    IngestSummary,
    RunContext,
    finish_run,
    known_stats,
    load_file,
    start_run,
)
from paperwatch.validate import SuiteResult, validate_frame
from paperwatch.watch import hold_back_recent
from paperwatch.writer_lock import holds_writer_lock

# --- server runs: settle guard and run artifact (see flows/deployments.py) ---


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
class _Read:
    prepared: list[PreparedFile]
    vanished: list[tuple[str, str]]


def _batches(items: Sequence[ListingFileStat], size: int) -> Iterator[Sequence[ListingFileStat]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


@task(name="scan-listing-files", retries=2, retry_delay_seconds=[1, 5], cache_policy=NO_CACHE)
def scan_listing_files(settings: Settings) -> tuple[ScanResult, list[ListingFileStat]]:
    """Scan the folder and keep the files whose path, size or mtime is not recorded yet."""
    scan = scan_folder(settings.watch_dir)
    scan = hold_back_recent(scan, time.time_ns(), _settle_seconds(settings))
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        known = known_stats(con)
    return scan, select_changed(scan.files, known)


@task(name="read-listing-files", retries=2, retry_delay_seconds=[1, 5], cache_policy=NO_CACHE)
def read_listing_files(batch: Sequence[ListingFileStat], max_bytes: int) -> _Read:
    """Read, hash, parse and clean a batch of files (a file that vanished is reported, not fatal)."""
    prepared: list[PreparedFile] = []
    vanished: list[tuple[str, str]] = []
    for stat in batch:
        try:
            data = read_listing_file(stat)
        except FileNotFoundError:
            vanished.append(
                (stat.rel, "disappeared between scan and read; it will be read when it returns")
            )
            continue
        except IsADirectoryError:
            vanished.append((stat.rel, "became a folder between scan and read"))
            continue
        prepared.append(prepare_file(stat, data, max_bytes))
    return _Read(prepared, vanished)


@task(name="validate-entries", cache_policy=NO_CACHE)
def validate_entries(entries: pl.DataFrame) -> SuiteResult:
    """Run the ``papers`` expectation suite over a batch's entries (never retried)."""
    return validate_frame(entries, "papers")


@task(name="load-listing-files", cache_policy=NO_CACHE)
def load_listing_files(
    settings: Settings,
    prepared: list[PreparedFile],
    entries: pl.DataFrame,
    validation: SuiteResult,
    run: RunContext,
) -> list[FileOutcome]:
    """Load each file of the batch in its own transaction."""
    logger = get_run_logger()
    outcomes = []
    indexed = entries.with_row_index("_row")
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        for file in prepared:
            rows = indexed.filter(pl.col("file") == file.stat.rel)
            row_ids = rows["_row"].to_list()
            outcome = load_file(con, file, rows.drop("_row"), validation.for_rows(row_ids), run)
            outcomes.append(outcome)
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


@flow(name="ingest-listings", log_prints=True)
@holds_writer_lock
def ingest_listings(
    folder: str | None = None, database: str | None = None, as_of: str | None = None
) -> IngestSummary:
    """Load every new or changed listing file of ``folder`` into ``database``.

    Args:
        folder: the watched folder (default: setting ``watch_dir``).
        database: the DuckDB file (default: setting ``database``).
        as_of: ISO 8601 date-time used as "now" (default: the current time); it
            decides the ISO week new papers belong to.

    Returns:
        The run's :class:`~paperwatch.store.IngestSummary`.
    """
    settings = load_settings(watch_dir=folder, database=database)
    logger = get_run_logger()
    moment = parse_as_of(as_of, settings.tz)
    run = RunContext(run_id=str(uuid.uuid4()), as_of=moment, week=iso_week(moment, settings.tz))
    summary = IngestSummary(run_id=run.run_id, week=run.week)
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        start_run(con, run, str(settings.watch_dir), now_utc())
    try:
        scan, changed = scan_listing_files(settings)
        summary.files_seen = len(scan.files)
        summary.files_unchanged = len(scan.files) - len(changed)
        summary.ignored = list(scan.ignored)
        for rel, reason in scan.ignored:
            logger.info("passed over %s: %s", rel, reason)
        logger.info(
            "%d listing files in %s, %d new or changed",
            len(scan.files),
            settings.watch_dir,
            len(changed),
        )
        done = 0
        for batch in _batches(changed, settings.batch_files):
            read = read_listing_files(batch, settings.max_file_bytes)
            for rel, reason in read.vanished:
                logger.warning("%s: %s", rel, reason)
                summary.add(FileOutcome(rel=rel, status="vanished", reason=reason))
            entries = entries_frame(read.prepared)
            validation = validate_entries(entries)
            for outcome in load_listing_files(settings, read.prepared, entries, validation, run):
                summary.add(outcome)
            done += len(batch)
            logger.info("progress: %d/%d files", done, len(changed))
    except BaseException as exc:
        with db.writer(settings.database, settings.lock_timeout_s) as con:
            finish_run(con, run.run_id, summary.run_counts(), now_utc(), "failed", repr(exc))
        raise
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        finish_run(con, run.run_id, summary.run_counts(), now_utc())
    publish_ingest_artifact(summary)
    return summary
