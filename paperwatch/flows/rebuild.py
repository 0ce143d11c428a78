"""The ``rebuild-database`` flow: re-ingest the whole folder into a new database file and
swap it in when it completed (``paperwatch rebuild``).

The work is :mod:`paperwatch.db.rebuild` and the ``ingest-listings`` flow (run as a subflow
on the new file); this flow holds the writer lock of the database for its whole run and
does not wait for it: a rebuild while another run writes is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefect import flow, get_run_logger

from paperwatch import db
from paperwatch.clock import now_utc
from paperwatch.db.rebuild import (
    CARRIED,
    CarryoverResult,
    apply_carryover,
    read_carryover,
    rebuild_path,
    remove_partial,
    swap_into_place,
)
from paperwatch.db.runs import IngestSummary
from paperwatch.db.writer_lock import holder_path, lock_path, writer_lock
from paperwatch.flows.ingest import ingest_listings
from paperwatch.flows.snapshot import publish_after_run
from paperwatch.settings import load_settings


@dataclass(frozen=True, slots=True)
class RebuildOutcome:
    """What a rebuild did.

    Attributes:
        summary: the re-ingestion of the folder into the new file.
        carried: rows carried over from the old file, and what could not be.
        aside: where the old file is kept (None when there was none).
        damage: what was found damaged in the old file (empty: it read whole).
    """

    summary: IngestSummary
    carried: CarryoverResult
    aside: Path | None
    damage: list[str]


@flow(name="rebuild-database", log_prints=True)
def rebuild_database(
    folder: str | None = None, database: str | None = None, as_of: str | None = None
) -> RebuildOutcome:
    """Re-ingest every listing file of ``folder`` into a new file, carry over what the folder
    cannot give back, and swap the new file in place of ``database``.

    Args:
        folder: the watched folder (default: setting ``watch_dir``).
        database: the DuckDB file to rebuild (default: setting ``database``); it may be
            damaged, or missing.
        as_of: ISO 8601 date-time used as "now" for the re-ingestion.

    Raises:
        paperwatch.db.writer_lock.WriterLockTimeout: another run holds the writer lock.
        paperwatch.db.DatabaseLockedError: another program holds the old file open.
        duckdb.Error, OSError: the re-ingestion or the swap failed; the database is as
            it was (a partial ``<database>.rebuilding`` is removed by the next rebuild).
    """
    settings = load_settings(watch_dir=folder, database=database)
    logger = get_run_logger()
    path = settings.database
    with writer_lock(path, timeout_s=0):
        logger.info("reading what the folder cannot give back from %s", path)
        found = read_carryover(path)
        if not found.existed:
            logger.info("%s does not exist: it is built from the folder", path)
        for what in found.damage:
            logger.warning("%s is damaged: %s", path, what)
        for item in CARRIED:
            if item in found.rows:
                logger.info("read %d row(s) of %s", len(found.rows[item]), item)
        new = rebuild_path(path)
        remove_partial(new)
        logger.info("re-ingesting every listing file of %s into %s", settings.watch_dir, new)
        summary = ingest_listings(str(settings.watch_dir), str(new), as_of, publish_snapshot=False)
        with db.writer(new, settings.lock_timeout_s) as con:
            carried = apply_carryover(con, found, settings.tz)
        lock_path(new).unlink(missing_ok=True)
        holder_path(new).unlink(missing_ok=True)
        for line in carried.not_carried:
            logger.warning("not carried over: %s", line)
        aside = swap_into_place(new, path, now_utc(), found.damaged)
        if aside is not None:
            logger.info("the old database is kept as %s", aside)
        if settings.snapshot_path is not None:
            publish_after_run(settings)
    return RebuildOutcome(summary, carried, aside, list(found.damage))
