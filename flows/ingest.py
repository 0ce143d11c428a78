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
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from paperwatch import db
from paperwatch.artifacts import INGEST_ARTIFACT_KEY, ingest_description, ingest_table
from paperwatch.clock import iso_week, now_utc, parse_as_of
from paperwatch.dedup import update_near_duplicates
from paperwatch.ingest import (
    ListingFileStat,
    PreparedFile,
    ScanResult,
    entries_frame,
    files_frame,
    prepare_file,
    read_listing_file,
    scan_folder,
    select_changed,
)
from paperwatch.settings import Settings, load_settings
from paperwatch.store import (
    CheckedFile,
    FileOutcome,
    IngestSummary,
    RunContext,
    finish_run,
    known_sequence_numbers,
    known_stats,
    load_file,
    record_ignored,
    start_run,
)
from paperwatch.trending import update_paper_terms
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


@dataclass(frozen=True, slots=True)
class _Pending:
    scan: ScanResult
    changed: list[ListingFileStat]
    sequence_numbers: set[int]
    newly_ignored: list[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class _Checked:
    files: pl.DataFrame
    file_checks: SuiteResult
    entries: pl.DataFrame
    entry_checks: SuiteResult

    def of(self, index: int, rel: str) -> CheckedFile:
        rows = self.entries.with_row_index("_row").filter(pl.col("file") == rel)
        return CheckedFile(
            file_row=self.files[index : index + 1],
            file_checks=self.file_checks.for_rows([index], self.files),
            entries=rows.drop("_row"),
            entry_checks=self.entry_checks.for_rows(rows["_row"].to_list(), self.entries),
        )


def _batches(items: Sequence[ListingFileStat], size: int) -> Iterator[Sequence[ListingFileStat]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


@task(name="scan-listing-files", retries=2, retry_delay_seconds=[1, 5], cache_policy=NO_CACHE)
def scan_listing_files(settings: Settings, run: RunContext) -> _Pending:
    """Scan the folder; keep the files whose path, size or mtime is not recorded yet."""
    scan = scan_folder(settings.watch_dir)
    scan = hold_back_recent(scan, time.time_ns(), _settle_seconds(settings))
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        known = known_stats(con)
        numbers = known_sequence_numbers(con)
        fresh = record_ignored(con, list(scan.ignored), run)
    return _Pending(scan, select_changed(scan.files, known), numbers, fresh)


@task(name="read-listing-files", retries=2, retry_delay_seconds=[1, 5], cache_policy=NO_CACHE)
def read_listing_files(batch: Sequence[ListingFileStat], max_bytes: int) -> _Read:
    """Read, hash, parse and clean a batch of files (a file that vanished is reported, not fatal)."""
    prepared: list[PreparedFile] = []
    vanished: list[tuple[str, str]] = []
    for stat in batch:
        try:
            data = read_listing_file(stat, max_bytes)
        except FileNotFoundError:
            vanished.append(
                (stat.rel, "disappeared between scan and read; it is read when it comes back")
            )
            continue
        except IsADirectoryError:
            vanished.append((stat.rel, "became a folder between scan and read"))
            continue
        except PermissionError as exc:
            vanished.append(
                (stat.rel, f"cannot be read: {exc.strerror}; it is retried on the next run")
            )
            continue
        prepared.append(prepare_file(stat, data, max_bytes))
    return _Read(prepared, vanished)


@task(name="validate-listing-files", cache_policy=NO_CACHE)
def validate_listing_files(prepared: list[PreparedFile], sequence_numbers: set[int]) -> _Checked:
    """Run the ``listing_files`` suite over the batch's files, then the ``papers`` suite over
    the entries of the files that passed it (never retried: a failure is a finding)."""
    files = files_frame(prepared, sequence_numbers)
    file_checks = validate_frame(files, "listing_files")
    rejected = set(file_checks.critical_failures())
    entries = entries_frame(f for i, f in enumerate(prepared) if i not in rejected)
    return _Checked(files, file_checks, entries, validate_frame(entries, "papers"))


@task(name="load-listing-files", cache_policy=NO_CACHE)
def load_listing_files(
    settings: Settings, prepared: list[PreparedFile], checked: _Checked, run: RunContext
) -> list[FileOutcome]:
    """Load each file of the batch in its own transaction."""
    logger = get_run_logger()
    outcomes = []
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        for index, file in enumerate(prepared):
            outcome = load_file(con, file, checked.of(index, file.stat.rel), run)
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


@task(name="extract-paper-terms", cache_policy=NO_CACHE)
def extract_paper_terms(settings: Settings) -> int:
    """Extract the terms of every paper that has none yet (``paper_terms``)."""
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        return update_paper_terms(con)


@task(name="find-near-duplicates", cache_policy=NO_CACHE)
def find_near_duplicates(settings: Settings, run: RunContext) -> int:
    """Sketch the new papers (MinHash) and record their near-duplicates against all earlier ones."""
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        return update_near_duplicates(con, settings, run.as_of)


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
        pending = scan_listing_files(settings, run)
        scan, changed, numbers = pending.scan, pending.changed, set(pending.sequence_numbers)
        summary.files_seen = len(scan.files)
        summary.files_unchanged = len(scan.files) - len(changed)
        summary.ignored = pending.newly_ignored
        for rel, reason in pending.newly_ignored:
            logger.warning("passed over %s: %s (mentioned once)", rel, reason)
        logger.info(
            "%d listing files in %s, %d new or changed",
            len(scan.files),
            settings.watch_dir,
            len(changed),
        )
        done = 0
        started = time.monotonic()
        for batch in _batches(changed, settings.batch_files):
            read = read_listing_files(batch, settings.max_file_bytes)
            for rel, reason in read.vanished:
                logger.warning("%s: %s", rel, reason)
                summary.add(FileOutcome(rel=rel, status="vanished", reason=reason))
            checked = validate_listing_files(read.prepared, numbers)
            for outcome in load_listing_files(settings, read.prepared, checked, run):
                summary.add(outcome)
            numbers |= {f.sequence_number for f in read.prepared if f.sequence_number is not None}
            done += len(batch)
            logger.info(
                "progress: %d/%d files, %d entries, %d new papers (%.0f s)",
                done,
                len(changed),
                summary.entries,
                summary.new_papers,
                time.monotonic() - started,
            )
        if summary.new_papers:
            summary.near_duplicates = find_near_duplicates(settings, run)
            logger.info("near-duplicates: %d new pairs", summary.near_duplicates)
            extract_paper_terms(settings)
    except BaseException as exc:
        with db.writer(settings.database, settings.lock_timeout_s) as con:
            finish_run(con, run.run_id, summary.run_counts(), now_utc(), "failed", repr(exc))
        raise
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        finish_run(con, run.run_id, summary.run_counts(), now_utc())
    publish_ingest_artifact(summary)
    if summary.changed_anything:
        publish_quality_artifacts(settings, run)
    return summary
