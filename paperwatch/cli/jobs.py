"""What the commands run: checks before a flow starts, the flow runs with their error exits,
and the work some commands do in this process (a report render, a release, Data Docs).

Imports of Prefect, Great Expectations and the database stay inside the functions: ``paperwatch
--help`` and the settings errors answer without loading them.
"""

from __future__ import annotations

import os
import shutil
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from paperwatch.cli.failures import database_failures, run_exits
from paperwatch.exits import EXIT_DAMAGED, EXIT_LOCKED, EXIT_REFUSED, fail
from paperwatch.flow_runtime import flow_run

if TYPE_CHECKING:
    from paperwatch.db.quarantine import Release
    from paperwatch.db.report_data import WrittenReport
    from paperwatch.db.runs import IngestSummary
    from paperwatch.flows.rebuild import RebuildOutcome
    from paperwatch.flows.report import ReportOutcome
    from paperwatch.settings import Settings


def preflight(
    settings: Settings,
    *,
    as_of: str | None = None,
    week: str | None = None,
    folder: bool = False,
    database_exists: bool = False,
    future: bool = True,
) -> None:
    """Check the inputs before any flow starts (and before Prefect starts its server).

    ``future=False`` refuses an ``as_of`` on a day after tomorrow (in the configured time
    zone): papers would be dated, and filed under a week, that has not come.
    Raises :class:`typer.Exit` (2 for a bad date or week, 1 otherwise) after one ``error:`` line.
    """
    from paperwatch.clock import after_tomorrow, iso_week, now_utc, parse_as_of, parse_week
    from paperwatch.db import writer_lock

    try:
        moment = parse_as_of(as_of, settings.tz)
        if week is not None:
            parse_week(week)
    except ValueError as exc:
        raise fail(str(exc), code=EXIT_REFUSED) from None
    tomorrow = after_tomorrow(moment, now_utc(), settings.tz)
    if not future and tomorrow is not None:
        raise fail(
            f"--as-of {as_of} is in the future: its papers would belong to "
            f"{iso_week(moment, settings.tz)} and be first seen on "
            f"{moment.astimezone(settings.tz).date()}, after tomorrow ({tomorrow}); "
            "pass --allow-future if that is what you want",
            code=2,
        )
    if folder and not settings.watch_dir.is_dir():
        state = "is not a folder" if settings.watch_dir.exists() else "does not exist"
        raise fail(f"watched folder {settings.watch_dir} {state}")
    database = settings.database
    if database.is_dir():
        raise fail(f"database {database} is a folder; give the path of a .duckdb file")
    if database_exists and not database.is_file() and not writer_lock.is_held(database):
        # (While the very first ingestion runs, the report waits for it instead.)
        raise fail(
            f"database {database} does not exist: nothing was ingested there "
            "(run `paperwatch ingest`, or check --database)"
        )


def up_to_date(settings: Settings, as_of: str | None) -> IngestSummary | None:
    """The summary of an ingestion that would change nothing, decided from a stat-only
    scan and a read-only look at the database, without starting Prefect; None when
    there is work (or when that cannot be told at once: no database yet, another run
    writing it), and the flow runs."""
    from paperwatch import db
    from paperwatch.clock import iso_week, parse_as_of
    from paperwatch.db import writer_lock
    from paperwatch.db.load import nothing_to_ingest
    from paperwatch.db.runs import IngestSummary
    from paperwatch.ingest.files import scan_folder

    database = settings.database
    if not database.is_file() or writer_lock.is_held(database):
        return None
    snapshot = settings.snapshot_path
    if snapshot is not None and not snapshot.is_file():
        return None  # the flow publishes the analysts' snapshot
    scan = scan_folder(settings.watch_dir, settings.formats)
    try:
        with db.reader(database, timeout_s=0) as con:
            if not nothing_to_ingest(con, scan):
                return None
    except db.DatabaseDamagedError as exc:
        raise fail(str(exc), code=EXIT_DAMAGED) from None
    except Exception:  # locked, older: the flow decides and reports properly
        return None
    moment = parse_as_of(as_of, settings.tz)
    summary = IngestSummary(run_id="", week=iso_week(moment, settings.tz))
    summary.files_seen = summary.files_unchanged = len(scan.files)
    return summary


def run_ingest(
    settings: Settings, as_of: str | None, *, allow_future: bool = False
) -> IngestSummary:
    """The ``ingest-listings`` flow run on ``settings.watch_dir`` (none when
    :func:`up_to_date` tells at once that nothing changed); failures exit with one line."""
    preflight(settings, as_of=as_of, folder=True, future=allow_future)
    quick = up_to_date(settings, as_of)
    if quick is not None:
        return quick
    expected = (*database_failures(), FileNotFoundError, NotADirectoryError, ValueError, OSError)
    warm = ("paperwatch.flows.ingest", "great_expectations")
    with (
        run_exits(settings, FileNotFoundError, NotADirectoryError, ValueError),
        flow_run(settings, *expected, warm=warm),
    ):
        from paperwatch.flows.ingest import ingest_listings

        return ingest_listings(str(settings.watch_dir), str(settings.database), as_of)


def run_report(
    settings: Settings,
    week: str | None,
    as_of: str | None,
    *,
    send: bool = False,
    dry_run: bool = False,
    resend: bool = False,
) -> ReportOutcome:
    """The ``weekly-report`` flow run (mail settings checked first when it sends); exit 2
    when the week was sent before, 1 when delivery or rendering failed."""
    from paperwatch.db.sends import AlreadySentError
    from paperwatch.report.smtp import MailDeliveryError

    preflight(settings, as_of=as_of, week=week, database_exists=True)
    if send or dry_run or resend:
        check_mail_settings(settings)
    expected = (
        AlreadySentError,
        MailDeliveryError,
        ValueError,
        *database_failures(),
        FileNotFoundError,
        RuntimeError,
        OSError,
    )
    # MailDeliveryError is a RuntimeError: its message, exit 1.
    with run_exits(settings, FileNotFoundError, ValueError, RuntimeError):
        try:
            with flow_run(settings, *expected, warm=("paperwatch.flows.report",)):
                from paperwatch.flows.report import weekly_report

                return weekly_report(
                    week=week,
                    as_of=as_of,
                    database=str(settings.database),
                    report_dir=str(settings.report_dir),
                    last_completed_week=False,
                    send=send,
                    dry_run=dry_run,
                    resend=resend,
                )
        except AlreadySentError as exc:
            typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
            raise typer.Exit(code=2) from None


def check_mail_settings(settings: Settings) -> None:
    """Check the addresses and every reader's library file before a report flow that mails
    starts (nothing is rendered or sent when one is wrong); exit 2 naming the setting."""
    from paperwatch.ingest.library import reader_library
    from paperwatch.report.message import (
        MailSettingsError,
        configured_addresses,
        configured_readers,
    )

    try:
        configured_addresses(settings.smtp)
        for reader in configured_readers(settings.smtp):
            reader_library(reader)
    except (MailSettingsError, ValueError) as exc:  # LibraryError is a ValueError
        raise fail(str(exc), code=EXIT_REFUSED) from None


def report_here(settings: Settings, week: str | None, as_of: str | None) -> WrittenReport:
    """Render the report of ``week`` (default: the week of ``as_of``) in this process, as
    the ``weekly-report`` flow does but without orchestration: the writer lock for the
    whole of it, then the snapshot republished. For ``paperwatch report`` without
    ``--send``/``--dry-run`` (``paperwatch run`` and scheduled runs stay flow runs)."""
    from paperwatch.clock import iso_week, now_utc, parse_as_of
    from paperwatch.db.report_data import write_week_report
    from paperwatch.db.writer_lock import writer_lock

    preflight(settings, as_of=as_of, week=week, database_exists=True)
    moment = parse_as_of(as_of, settings.tz)
    with (
        run_exits(settings, FileNotFoundError, ValueError, RuntimeError),
        writer_lock(settings.database, settings.schedule.writer_lock_timeout_s),
    ):
        written = write_week_report(settings, week or iso_week(moment, settings.tz), now_utc())
        republish_snapshot(settings)
    return written


def unchanged_report(settings: Settings, summary: IngestSummary) -> tuple[str, Path] | None:
    """``(week, html path)`` when the ingest loaded nothing and the week's report files
    already hold what rendering now gives (no flow run needed); else None, after saying
    why the report flow runs when files of the week exist."""
    from paperwatch.db.report_data import unchanged_report as unchanged

    if summary.run_id or summary.files_loaded:  # the ingest flow ran: render as it does
        return None
    written = unchanged(settings, summary.week)
    if written is not None:
        typer.echo(f"report of {summary.week} unchanged: its files hold what it renders now")
        return written.week, written.html_path
    if (settings.report_dir / f"{summary.week}.html").is_file():
        typer.echo(f"report of {summary.week} differs from its files: rendering it again")
    return None


def run_rebuild(settings: Settings, as_of: str | None) -> RebuildOutcome:
    """The ``rebuild-database`` flow run; exit 3 while another run writes the database,
    1 when the rebuild did not complete (the database is then as it was)."""
    from paperwatch.db import DatabaseDamagedError, DatabaseError, DatabaseLockedError, writer_lock
    from paperwatch.db.writer_lock import WriterLockTimeout
    from paperwatch.flows.rebuild import rebuild_database

    path = settings.database
    if writer_lock.is_held(path):
        raise fail(
            f"{writer_lock.holder(path)} is writing {path} (lock file "
            f"{writer_lock.lock_path(path)}); a rebuild does not wait: run it again when "
            "that run has finished",
            code=EXIT_LOCKED,
        )
    try:
        with flow_run(settings, *database_failures(), OSError, own_home=False):
            return rebuild_database(str(settings.watch_dir), str(path), as_of)
    except (DatabaseLockedError, WriterLockTimeout) as exc:
        raise fail(str(exc), code=EXIT_LOCKED) from None
    except (DatabaseDamagedError, DatabaseError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise fail(
            f"the rebuild of {path} did not complete ({first}); {path} is as it was. "
            "Fix the cause and run `paperwatch rebuild` again"
        ) from None


def release_quarantined(
    settings: Settings, quarantine_id: int, approver: str, note: str | None, moment: datetime
) -> Release:
    """Release a quarantined entry (:func:`paperwatch.db.quarantine.release_entry`), then
    bring near duplicates and paper terms up to date, in one writer session."""
    from paperwatch import db
    from paperwatch.clock import iso_week
    from paperwatch.db.duplicates import update_near_duplicates
    from paperwatch.db.quarantine import release_entry
    from paperwatch.db.trends import update_paper_terms

    with db.writer(settings.database, settings.lock_timeout_s) as con:
        release = release_entry(
            con,
            quarantine_id,
            by=approver,
            note=note,
            at=moment,
            week=iso_week(moment, settings.tz),
        )
        update_near_duplicates(con, settings, moment)
        update_paper_terms(con)
    return release


def build_data_docs(settings: Settings) -> tuple[int, int, Path]:
    """Great Expectations Data Docs of the folder's files, validated as ingestion does
    without loading anything: ``(files, entries, index.html path)``."""
    from paperwatch.ingest.files import prepare_file, read_listing_file, scan_folder
    from paperwatch.ingest.frames import entries_frame, files_frame
    from paperwatch.ingest.validate import build_data_docs as build
    from paperwatch.ingest.validate import validate_frame

    try:
        scan = scan_folder(settings.watch_dir, settings.formats)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise fail(str(exc)) from None
    prepared = []
    limit = settings.max_file_bytes
    for stat in scan.files:
        try:
            prepared.append(prepare_file(stat, read_listing_file(stat, limit), limit))
        except OSError as exc:
            typer.echo(f"skipped {stat.rel}: {exc}", err=True)
    files = files_frame(prepared, [])
    rejected = set(validate_frame(files, "listing_files").critical_failures())
    entries = entries_frame(f for i, f in enumerate(prepared) if i not in rejected)
    index = build({"listing_files": files, "papers": entries}, settings.report_dir / "data_docs")
    return len(prepared), entries.height, index


def republish_snapshot(settings: Settings) -> None:
    """Publish the snapshot after a command that wrote outside the flows (a warning when
    it fails: the command's own change is committed)."""
    from paperwatch.db.snapshot import publish_snapshot

    target = settings.snapshot_path
    if target is None:
        return
    try:
        publish_snapshot(settings.database, target, settings.lock_timeout_s)
    except Exception as exc:  # reported; the release itself is committed
        typer.secho(
            f"warning: the snapshot for SQL ({target}) was not republished: {exc}",
            fg=typer.colors.YELLOW,
            err=True,
        )


def duckdb_cli() -> str | None:
    """The DuckDB command line: the one installed beside this Python (the ``duckdb-cli``
    package in paperwatch's environment), else ``duckdb`` on PATH; None when neither."""
    beside = Path(sys.executable).parent / "duckdb"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("duckdb")


def need_server(command: str) -> str:
    """Prefect's API URL (PREFECT_API_URL); exit 1 naming how to start a server when unset."""
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    if not url:
        raise fail(
            f"`paperwatch {command}` needs a Prefect server: start one with `prefect server start` "
            "and set PREFECT_API_URL=http://127.0.0.1:4200/api"
            + (" (or use --local to ingest in this process)" if command == "watch" else "")
        )
    return url


def watch_listings(settings: Settings, quiet_s: float, max_wait_s: float, *, local: bool) -> None:
    """Watch ``settings.watch_dir`` until Ctrl-C or SIGTERM; each batch of settled files is
    ingested here (``local``) or announced as a ``paperwatch.listing.arrived`` event."""
    import signal
    import threading

    from paperwatch.cli.output import print_ingest
    from paperwatch.ingest.watch import (
        EVENT_NAME,
        describe_batch,
        event_files,
        folder_resource_id,
        watch_folder,
    )

    watched = settings.watch_dir.resolve()
    if not watched.is_dir():
        raise fail(f"watched folder {watched} does not exist or is not a folder")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    if local:

        def on_batch(batch: list[str]) -> None:
            typer.echo(describe_batch(batch, "ingesting"))
            try:
                summary = run_ingest(settings, None)
            except typer.Exit:
                return  # the error was printed; keep watching
            print_ingest(summary, settings.database)

    else:
        url = need_server("watch")
        from prefect.events import emit_event

        resource = {
            "prefect.resource.id": folder_resource_id(watched),
            "prefect.resource.name": watched.name,
        }

        def on_batch(batch: list[str]) -> None:
            emit_event(
                event=EVENT_NAME,
                resource=resource,
                payload={"count": len(batch), "files": event_files(batch)},
            )
            typer.echo(describe_batch(batch, f"emitted {EVENT_NAME}"))

        typer.echo(f"emitting {EVENT_NAME} for {watched} to {url}")

    typer.echo(f"watching {watched} (quiet period {quiet_s:g} s); Ctrl-C stops")
    try:
        # --local runs have no server-side guard against files still being written,
        # so they wait until nothing is (max_wait None).
        watch_folder(
            watched, on_batch, quiet_s, max_wait_s=None if local else max_wait_s, stop=stop
        )
    except KeyboardInterrupt:
        pass
    finally:
        if not local:
            from prefect.events.worker import EventsWorker

            EventsWorker.drain_all(timeout=10)
