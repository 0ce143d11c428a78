"""The ``paperwatch`` command line (typer): a thin layer over the flows and the library."""

from __future__ import annotations

import atexit
import contextlib
import getpass
import logging
import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from paperwatch import flow_runtime
from paperwatch.allocator import keep_freed_memory
from paperwatch.exits import EXIT_DAMAGED, EXIT_LOCKED, EXIT_REFUSED, fail
from paperwatch.flow_runtime import (
    SERVER_STARTUP_TIMEOUT_S,
    prefect_home,
    server_guard,
    short_run_errors,
)

if TYPE_CHECKING:
    from paperwatch.db.report_data import WrittenReport

# Prefect reads these at import: no telemetry (no network here), quiet unless asked.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
# ...but show each run's progress (flow-level lines); PREFECT_LOGGING_LEVEL=INFO shows every file.
os.environ.setdefault("PREFECT_LOGGING_LOGGERS_PREFECT_FLOW_RUNS_LEVEL", "INFO")
# paperwatch's own loggers (writer lock, watcher) go to the run logs too.
os.environ.setdefault("PREFECT_LOGGING_EXTRA_LOGGERS", "paperwatch")
# Prefect's temporary server waits 20 s by default for its API to answer: too short on a
# loaded machine ("Timed out while attempting to connect to ephemeral Prefect API server").
os.environ.setdefault(
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", str(SERVER_STARTUP_TIMEOUT_S)
)
# Before Polars is imported: freed memory is kept for reuse a while (paperwatch.allocator;
# flows/__init__.py does the same for flow runs a Prefect worker starts).
keep_freed_memory()

app = typer.Typer(
    name="paperwatch",
    help=(
        "Ingest conference paper listings into DuckDB, check their quality, and write "
        "the weekly report of new papers, duplicates and trending terms.\n\n"
        "Settings come from options, PAPERWATCH_* environment variables, .env, and "
        "paperwatch.toml (see paperwatch.example.toml)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain click help: paragraphs are re-wrapped to the terminal (80 columns reads well),
    # and flags show no "<bool>" metavar, as rich's panels did.
    rich_markup_mode=None,
)

FolderOption = Annotated[
    Path | None,
    typer.Option(
        "--folder",
        "-f",
        help="Folder of listing files (.txt, .md, .json, .jsonl, .bib, .xml, .atom, .rss). [default: seeds]",
        show_default=False,
    ),
]
DatabaseOption = Annotated[
    Path | None,
    typer.Option(
        "--database",
        "-d",
        help="DuckDB file. [default: data/paperwatch.duckdb]",
        show_default=False,
    ),
]
ReportDirOption = Annotated[
    Path | None,
    typer.Option(
        "--report-dir", "-o", help="Report folder. [default: reports/out]", show_default=False
    ),
]
AsOfOption = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        metavar="<date>",
        help="ISO 8601 date or date-time used as 'now' (e.g. 2026-11-23T09:00; without an offset "
        "it is read in the configured time zone). Decides the ISO week new papers belong to. "
        "[default: the current time]",
        show_default=False,
    ),
]
AllowFutureOption = Annotated[
    bool,
    typer.Option(
        "--allow-future",
        help="Accept an --as-of later than tomorrow (papers land in that future week).",
    ),
]
WeekOption = Annotated[
    str | None,
    typer.Option(
        "--week",
        "-w",
        metavar="<week>",
        help="ISO week to report, e.g. 2026-W48. [default: the week of --as-of]",
        show_default=False,
    ),
]


@app.callback()
def _options(
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            help="Show Prefect's error lines and tracebacks on the terminal as they come "
            "(without it a failure is one `error:` line; the details are always in the log "
            "file, setting log_file, default <database name>.log beside the database).",
        ),
    ] = False,
) -> None:
    """Options for every command."""
    flow_runtime.show_debug = debug


def _print_ingest(summary: object, database: Path) -> None:
    from paperwatch.db.load import IngestSummary

    assert isinstance(summary, IngestSummary)
    s = summary
    typer.echo(
        f"files: {s.files_seen} seen, {s.files_loaded} loaded, {s.files_unchanged} unchanged, "
        f"{s.files_duplicate} duplicate copies, {s.files_quarantined} quarantined"
        + (f", {s.files_vanished} vanished" if s.files_vanished else "")
    )
    typer.echo(
        f"entries: {s.entries} read, {s.entries_loaded} loaded, {s.entries_quarantined} quarantined; "
        f"new papers: {s.new_papers}; exact duplicates: {s.exact_duplicates}"
    )
    if s.ignored:
        typer.echo(
            f"passed over: {len(s.ignored)} path(s), e.g. {s.ignored[0][0]} ({s.ignored[0][1]})"
        )
    for outcome in s.files:
        if outcome.status in ("quarantined", "vanished"):
            typer.echo(f"  {outcome.rel}: {outcome.status}: {outcome.reason}")
    if not s.changed_anything:
        typer.echo(f"nothing new: {database} is up to date")


def _settings(**overrides: object) -> object:
    from pydantic import ValidationError

    from paperwatch.settings import load_settings

    try:
        return load_settings(**overrides)
    except ValidationError as exc:
        raise fail(_settings_errors(exc), code=EXIT_REFUSED) from None
    except ValueError as exc:
        raise fail(str(exc), code=EXIT_REFUSED) from None


def _settings_errors(exc: Any) -> str:
    """A pydantic ``ValidationError`` of the settings as one line naming each setting, its
    environment variable and what is wrong (``timezone (PAPERWATCH_TIMEZONE): unknown …``)."""
    parts = []
    for error in exc.errors():
        path = [str(p) for p in error.get("loc", ())]
        name = ".".join(path) or "settings"
        variable = "PAPERWATCH_" + "__".join(p.upper() for p in path)
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        given = error.get("input")
        shown = f" (given {given!r})" if isinstance(given, str | int | float) else ""
        parts.append(f"{name} ({variable} or paperwatch.toml): {message}{shown}")
    return "invalid settings: " + "; ".join(parts)


@app.command()
def ingest(
    folder: FolderOption = None,
    database: DatabaseOption = None,
    as_of: AsOfOption = None,
    allow_future: AllowFutureOption = False,
) -> None:
    """Load every new or changed listing file of the folder into the database.

    Files already loaded cost a stat only. A copy of a loaded file under another
    name is recorded as a duplicate; a file that is not UTF-8 text is quarantined
    whole; entries failing a critical check are quarantined with the reason.
    """
    from paperwatch.settings import Settings

    settings = _settings(watch_dir=folder, database=database)
    assert isinstance(settings, Settings)
    summary = _run_ingest(settings, as_of, allow_future=allow_future)
    _print_ingest(summary, settings.database)


def _preflight(
    settings: object,
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
    """
    from paperwatch.clock import after_tomorrow, iso_week, now_utc, parse_as_of, parse_week
    from paperwatch.db import writer_lock
    from paperwatch.settings import Settings

    assert isinstance(settings, Settings)
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


def _database_failures() -> tuple[type[Exception], ...]:
    """The failures of the database itself, which :func:`_database_exit` maps to an exit."""
    from paperwatch.db import DatabaseDamagedError, DatabaseError, DatabaseLockedError
    from paperwatch.db.writer_lock import WriterLockTimeout

    return (DatabaseLockedError, WriterLockTimeout, DatabaseDamagedError, DatabaseError)


def _database_exit(settings: object, exc: Exception) -> typer.Exit:
    """One ``error:`` line and the exit status for a failure of the database itself:
    3 when another process held it too long, 4 when the file is damaged, 1 otherwise."""
    from paperwatch import db
    from paperwatch.db.writer_lock import WriterLockTimeout
    from paperwatch.settings import Settings

    assert isinstance(settings, Settings)
    if isinstance(exc, db.DatabaseLockedError | WriterLockTimeout):
        return fail(str(exc), code=EXIT_LOCKED)
    if isinstance(exc, db.DatabaseDamagedError):
        return fail(str(exc), code=EXIT_DAMAGED)
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if db.is_disk_full(exc):
        return fail(
            f"the disk holding {settings.database} is full ({first}); the write that failed "
            "was rolled back, so the database holds what it held before it (a run records "
            "the files it loaded before). Free some space and run again"
        )
    if re.search(r"read-only file system|permission denied", first, re.IGNORECASE):
        return fail(
            f"cannot write {settings.database} or its folder ({first}); paperwatch writes "
            "the database, its write-ahead log and its lock file there, and wrote nothing: "
            "make them writable for this user, or give --database in a writable folder"
        )
    if db.is_damage(exc):
        damaged = db.damaged_error(settings.database, first, before_write=False)
        return fail(str(damaged), code=EXIT_DAMAGED)
    return fail(f"cannot use {settings.database} as a paperwatch database: {first}")


def _os_error_exit(settings: object, exc: OSError) -> typer.Exit:
    """One ``error:`` line for a file-system failure of a run (exit status 1): a full disk,
    or a folder paperwatch cannot write (the database's: the database, its write-ahead
    log and lock files; the report folder), named with what to do."""
    from paperwatch import db
    from paperwatch.settings import Settings

    assert isinstance(settings, Settings)
    database = settings.database
    reason = exc.strerror or str(exc)
    name = str(exc.filename) if exc.filename else ""
    if db.is_disk_full(exc):
        return fail(
            f"the disk holding {name or database} is full ({reason}); the write that failed "
            "was rolled back, so the database holds what it held before it (a run records "
            "the files it loaded before). Free some space and run again"
        )
    if name and Path(name).resolve().parent == database.resolve().parent:
        return fail(
            f"cannot write in the database's folder {database.parent} ({reason}: {name}); "
            "paperwatch writes the database, its write-ahead log and its lock file there, "
            "and wrote nothing: make the folder writable for this user, or give --database "
            "in a writable one"
        )
    if name and Path(name).resolve().is_relative_to(settings.report_dir.resolve()):
        return fail(
            f"cannot write the report ({reason}: {name}); make the report folder "
            f"{settings.report_dir} writable for this user, or give --report-dir"
        )
    return fail(f"{reason}{': ' + name if name else ''}")


def _up_to_date(settings: object, as_of: str | None) -> object | None:
    """The summary of an ingestion that would change nothing, decided from a stat-only
    scan and a read-only look at the database, without starting Prefect; None when
    there is work (or when that cannot be told at once: no database yet, another run
    writing it), and the flow runs."""
    from paperwatch import db
    from paperwatch.clock import iso_week, parse_as_of
    from paperwatch.db import writer_lock
    from paperwatch.db.load import IngestSummary, nothing_to_ingest
    from paperwatch.ingest.files import scan_folder
    from paperwatch.settings import Settings

    assert isinstance(settings, Settings)
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


def _run_ingest(settings: object, as_of: str | None, *, allow_future: bool = False) -> object:
    from paperwatch.settings import Settings

    assert isinstance(settings, Settings)
    _preflight(settings, as_of=as_of, folder=True, future=allow_future)
    quick = _up_to_date(settings, as_of)
    if quick is not None:
        return quick
    home = prefect_home(settings.database)

    try:
        with (
            server_guard(home, warm=("paperwatch.flows.ingest", "great_expectations")),
            short_run_errors(
                *_database_failures(),
                FileNotFoundError,
                NotADirectoryError,
                ValueError,
                OSError,
                settings=settings,
            ),
        ):
            from paperwatch.flows.ingest import ingest_listings

            return ingest_listings(str(settings.watch_dir), str(settings.database), as_of)
    except _database_failures() as exc:
        raise _database_exit(settings, exc) from None
    except (
        FileNotFoundError,
        NotADirectoryError,
        ValueError,
    ) as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise _os_error_exit(settings, exc) from None


def _run_report(
    settings: object,
    week: str | None,
    as_of: str | None,
    *,
    send: bool = False,
    dry_run: bool = False,
    resend: bool = False,
) -> object:
    from paperwatch.db.sends import AlreadySentError
    from paperwatch.report.smtp import MailDeliveryError
    from paperwatch.settings import Settings

    assert isinstance(settings, Settings)
    _preflight(settings, as_of=as_of, week=week, database_exists=True)
    if send or dry_run or resend:  # mail settings are checked before any flow starts
        from paperwatch.report.message import MailSettingsError, configured_addresses

        try:
            configured_addresses(settings.smtp)
        except (MailSettingsError, ValueError) as exc:
            raise fail(str(exc), code=EXIT_REFUSED) from None
    home = prefect_home(settings.database)

    try:
        with (
            server_guard(home, warm=("paperwatch.flows.report",)),
            short_run_errors(
                AlreadySentError,
                MailDeliveryError,
                ValueError,
                *_database_failures(),
                FileNotFoundError,
                RuntimeError,
                OSError,
                settings=settings,
            ),
        ):
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
    except MailDeliveryError as exc:
        raise fail(str(exc)) from None
    except _database_failures() as exc:
        raise _database_exit(settings, exc) from None
    except (
        FileNotFoundError,
        ValueError,
        RuntimeError,
    ) as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise _os_error_exit(settings, exc) from None


def _report_here(settings: object, week: str | None, as_of: str | None) -> WrittenReport:
    """Render the report of ``week`` (default: the week of ``as_of``) in this process, as
    the ``weekly-report`` flow does but without orchestration: the writer lock for the
    whole of it, then the snapshot republished. For ``paperwatch report`` without
    ``--send``/``--dry-run``: a command a person runs and reads at once, which need not
    start Prefect (``paperwatch run`` and scheduled runs stay flow runs)."""
    from paperwatch.clock import iso_week, now_utc, parse_as_of
    from paperwatch.db.report_data import write_week_report
    from paperwatch.db.writer_lock import writer_lock
    from paperwatch.settings import Settings

    assert isinstance(settings, Settings)
    _preflight(settings, as_of=as_of, week=week, database_exists=True)
    moment = parse_as_of(as_of, settings.tz)
    try:
        with writer_lock(settings.database, settings.schedule.writer_lock_timeout_s):
            written = write_week_report(settings, week or iso_week(moment, settings.tz), now_utc())
            _republish_snapshot(settings)
    except _database_failures() as exc:
        raise _database_exit(settings, exc) from None
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise _os_error_exit(settings, exc) from None
    return written


def _print_email(outcome: object) -> None:
    from paperwatch.flows.report import ReportOutcome

    assert isinstance(outcome, ReportOutcome)
    for earlier in outcome.pending_sent:
        typer.echo(
            f"sent the report of {earlier.week}, whose earlier send had failed, to "
            f"{', '.join(earlier.recipients)}"
        )
    for week in outcome.pending_failed:
        typer.echo(f"the report of {week} is still not sent (its send failed again)")
    for reader in outcome.already_sent:
        who = reader or "the recipients"
        typer.echo(f"{who}: the report of {outcome.week} was sent before; not sent again")
    for email in (outcome.email, *outcome.reader_emails):
        if email is not None:
            _print_send(email)


def _print_send(email: Any) -> None:
    if email.status == "dry_run":
        size = email.path.stat().st_size if email.path else 0
        typer.echo(
            f"dry run: message for {', '.join(email.recipients)} written to {email.path} "
            f"({size:,} bytes); nothing was sent"
        )
        return
    again = " again" if email.previously_sent_at else ""
    typer.echo(
        f"sent{again} the report of {email.week} to {', '.join(email.recipients)} via "
        f"{email.transport} (Message-ID {email.message_id})"
    )
    for address, reply in email.refused.items():
        typer.echo(f"  refused by the server: {address}: {reply}")


@app.command()
def report(
    week: WeekOption = None,
    database: DatabaseOption = None,
    report_dir: ReportDirOption = None,
    as_of: AsOfOption = None,
    send: Annotated[
        bool,
        typer.Option(
            "--send",
            help="E-mail the report to smtp.recipients (one message) and to each reader of "
            "smtp.readers (a message of their own, starting with the papers on their topics). "
            "A week is sent once per reader; earlier weeks whose send failed are sent first.",
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Write the message to <report-dir>/<week>.eml (a reader's to "
            "<week>.for-<address>.eml) instead of sending it.",
        ),
    ] = False,
    resend: Annotated[
        bool,
        typer.Option("--resend", help="Send the week again even if it was sent (implies --send)."),
    ] = False,
) -> None:
    """Render the weekly report (HTML, plain text, CSV of new papers) into the report folder.

    Each run also rewrites the archive page, <report-dir>/index.html, listing every
    week with its figures and links.

    The report covers one ISO week in the configured time zone: by default the
    week containing --as-of (the current week). Rendering a week twice from the
    same database gives the same bytes. With --send it is e-mailed; exit status 2
    when the week was already sent (use --resend), 1 when delivery failed.
    """
    if dry_run and (send or resend):
        raise fail("--dry-run writes the message instead of sending it: drop --send/--resend")
    settings = _settings(database=database, report_dir=report_dir)
    if not (send or resend or dry_run):  # rendering only: no flow run, no Prefect server
        written = _report_here(settings, week, as_of)
        typer.echo(
            f"report of {written.week}: {written.html_path} (plain text: {written.text_path})"
        )
        return
    outcome = _run_report(
        settings, week, as_of, send=send or resend, dry_run=dry_run, resend=resend
    )
    from paperwatch.flows.report import ReportOutcome

    assert isinstance(outcome, ReportOutcome)
    typer.echo(f"report of {outcome.week}: {outcome.html_path} (plain text: {outcome.text_path})")
    _print_email(outcome)


@app.command()
def run(
    folder: FolderOption = None,
    database: DatabaseOption = None,
    report_dir: ReportDirOption = None,
    as_of: AsOfOption = None,
    allow_future: AllowFutureOption = False,
) -> None:
    """Ingest the folder, then render the report of the current ISO week (the main job).

    With no options: seeds/ into data/paperwatch.duckdb, report into reports/out/.
    Running it again loads nothing new and says so; when the week's report files already
    hold what it renders, they are left as they are and no flow runs.
    """
    settings = _settings(watch_dir=folder, database=database, report_dir=report_dir)
    started = time.monotonic()
    summary = _run_ingest(settings, as_of, allow_future=allow_future)
    ingested = time.monotonic()
    from paperwatch.settings import Settings

    assert isinstance(settings, Settings)
    _print_ingest(summary, settings.database)
    shown = _unchanged_report(settings, summary)
    if shown is None:
        outcome = _run_report(settings, None, as_of)
        from paperwatch.flows.report import ReportOutcome  # (imported by then: the flow ran)

        assert isinstance(outcome, ReportOutcome)
        shown = outcome.week, outcome.html_path
    done = time.monotonic()
    typer.echo(f"report of {shown[0]}: {shown[1]}")
    typer.echo(f"database: {settings.database}")
    target = settings.snapshot_path
    if target is not None and target.is_file():
        typer.echo(f"snapshot for SQL: {target} (paperwatch sql opens it)")
    typer.echo(
        f"took {done - started:.1f} s (ingest {ingested - started:.1f} s, report {done - ingested:.1f} s)"
    )


def _unchanged_report(settings: object, summary: object) -> tuple[str, Path] | None:
    """``(week, html path)`` when the ingest loaded nothing and the week's report files
    already hold what rendering now gives (no flow run needed); else None, after saying
    why the report flow runs when files of the week exist."""
    from paperwatch.db.load import IngestSummary
    from paperwatch.db.report_data import unchanged_report
    from paperwatch.settings import Settings

    assert isinstance(settings, Settings) and isinstance(summary, IngestSummary)
    if summary.run_id or summary.files_loaded:  # the ingest flow ran: render as it does
        return None
    written = unchanged_report(settings, summary.week)
    if written is not None:
        typer.echo(f"report of {summary.week} unchanged: its files hold what it renders now")
        return written.week, written.html_path
    if (settings.report_dir / f"{summary.week}.html").is_file():
        typer.echo(f"report of {summary.week} differs from its files: rendering it again")
    return None


@app.command()
def rebuild(
    folder: FolderOption = None,
    database: DatabaseOption = None,
    as_of: AsOfOption = None,
    allow_future: AllowFutureOption = False,
) -> None:
    """Rebuild the database from the listing folder: the way out of a damaged database.

    Every listing file of the folder is ingested again into a new file beside the
    database (<database>.rebuilding). Only when that completed is it swapped in, in one
    rename: the old file is kept as <database>.damaged-<UTC time> (or .previous-<UTC
    time> when it read without error), never deleted. What the folder cannot give back
    is copied from the old file when it can still be read, table by table: quarantine
    releases (who, when, why), passed-over paths, and the history of rendered and sent
    reports (a week sent before is not sent again); what could not be copied is listed.
    Papers are dated at --as-of (default now): the week each was first seen before is
    not in the folder. Refused (exit 3) while another paperwatch run writes the database.
    """
    from paperwatch.db import (
        DatabaseDamagedError,
        DatabaseError,
        DatabaseLockedError,
        writer_lock,
    )
    from paperwatch.db.writer_lock import WriterLockTimeout
    from paperwatch.settings import Settings

    settings = _settings(watch_dir=folder, database=database)
    assert isinstance(settings, Settings)
    _preflight(settings, as_of=as_of, folder=True, future=allow_future)
    path = settings.database
    if writer_lock.is_held(path):
        raise fail(
            f"{writer_lock.holder(path)} is writing {path} (lock file "
            f"{writer_lock.lock_path(path)}); a rebuild does not wait: run it again when "
            "that run has finished",
            code=EXIT_LOCKED,
        )
    from paperwatch.flows.rebuild import RebuildOutcome, rebuild_database

    expected = (
        DatabaseLockedError,
        WriterLockTimeout,
        DatabaseDamagedError,
        DatabaseError,
        OSError,
    )
    try:
        with server_guard(), short_run_errors(*expected, settings=settings):
            outcome = rebuild_database(str(settings.watch_dir), str(path), as_of)
    except (DatabaseLockedError, WriterLockTimeout) as exc:
        raise fail(str(exc), code=EXIT_LOCKED) from None
    except (DatabaseDamagedError, DatabaseError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise fail(
            f"the rebuild of {path} did not complete ({first}); {path} is as it was. "
            "Fix the cause and run `paperwatch rebuild` again"
        ) from None
    assert isinstance(outcome, RebuildOutcome)
    _print_ingest(outcome.summary, path)
    if outcome.aside is not None:
        state = "damaged" if outcome.damage else "readable"
        typer.echo(f"rebuilt {path}; the old database ({state}) is kept as {outcome.aside}")
    else:
        typer.echo(f"built {path} from {settings.watch_dir} (there was no database)")
    carried = "; ".join(
        f"{item}: {n:,} row{'' if n == 1 else 's'}" for item, n in outcome.carried.carried.items()
    )
    typer.echo(f"carried over from the old database ({carried})")
    for line in outcome.carried.not_carried:
        typer.secho(f"not carried over: {line}", fg=typer.colors.YELLOW, err=True)


quarantine_app = typer.Typer(
    help="Inspect the quarantine, and release an entry after a person has looked at it.",
    no_args_is_help=True,
)
app.add_typer(quarantine_app, name="quarantine")


@quarantine_app.command("list")
def quarantine_list(
    database: DatabaseOption = None,
    include_released: Annotated[
        bool, typer.Option("--all", help="Also show entries that were released.")
    ] = False,
) -> None:
    """List quarantined files and entries with their reasons (oldest first)."""
    from paperwatch import db
    from paperwatch.db.quarantine import list_quarantine
    from paperwatch.settings import Settings

    settings = _settings(database=database)
    assert isinstance(settings, Settings)
    try:
        with db.reader(settings.database, settings.lock_timeout_s) as con:
            items = list_quarantine(con, include_released)
    except (FileNotFoundError, db.DatabaseLockedError) as exc:
        raise fail(str(exc)) from None
    if not items:
        typer.echo(
            "the quarantine is empty"
            + ("" if include_released else " (or all released; see --all)")
        )
        return
    from paperwatch.report.render import printable

    for item in items:  # quarantined text may hold anything: shown inert (control chars → �)
        where = printable(item["path"]) + (f":{item['line']}" if item["line"] else "")
        what = "file" if item["kind"] == "file" else f"entry {item['position']}"
        typer.echo(f"#{item['quarantine_id']}  {where}  ({what}, {item['week']})")
        for reason in item["reasons"]:
            typer.echo(f"    reason: {printable(reason)}")
        if item["preview"]:
            typer.echo(f"    text:   {printable(' '.join(item['preview'].split())[:120])}")
        elif item["raw_bytes"]:
            typer.echo(f"    bytes:  {item['raw_bytes']:,} kept")
        if item["released_at"]:
            note = f": {item['release_note']}" if item["release_note"] else ""
            typer.echo(
                f"    released by {item['released_by']} on {item['released_at']:%Y-%m-%d %H:%M}{note}"
            )


@quarantine_app.command("release")
def quarantine_release(
    quarantine_id: Annotated[
        int,
        typer.Argument(metavar="ID", help="The #id shown by `paperwatch quarantine list`."),
    ],
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            metavar="<name>",
            help="Who approves the release. [default: the login name]",
            show_default=False,
        ),
    ] = None,
    note: Annotated[
        str | None,
        typer.Option("--note", metavar="<text>", help="Why the entry is fine after all."),
    ] = None,
    database: DatabaseOption = None,
    as_of: AsOfOption = None,
) -> None:
    """Load a quarantined entry after a person has looked at it (the check or bound was wrong).

    The entry becomes a paper and an occurrence at its original file and
    position; who released it, when and why is recorded on the quarantine row.
    A whole quarantined file cannot be released: fix it and drop it again.
    """
    from paperwatch import db
    from paperwatch.clock import iso_week, parse_as_of
    from paperwatch.db.duplicates import update_near_duplicates
    from paperwatch.db.quarantine import QuarantineError, release_entry
    from paperwatch.db.trends import update_paper_terms
    from paperwatch.settings import Settings

    settings = _settings(database=database)
    assert isinstance(settings, Settings)
    approver = by or getpass.getuser()
    try:
        moment = parse_as_of(as_of, settings.tz)
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
    except (QuarantineError, ValueError, db.DatabaseLockedError) as exc:
        raise fail(str(exc)) from None
    state = "a new paper" if release.new_paper else "an occurrence of a known paper"
    typer.echo(
        f"released #{release.quarantine_id} ({release.path}, entry {release.position}) as {state} "
        f"{release.paper_id}, approved by {approver}"
    )
    _republish_snapshot(settings)


@app.command()
def docs(
    folder: FolderOption = None,
    report_dir: ReportDirOption = None,
) -> None:
    """Build Great Expectations Data Docs for the listing files now in the folder.

    Runs both expectation suites (listing_files and papers) over the folder's
    files exactly as ingestion does, without loading anything, and writes the
    site to <report-dir>/data_docs/. Data Docs load CSS and JavaScript from the
    web: open them in a browser, not in mail.
    """
    from paperwatch.ingest.files import (
        entries_frame,
        files_frame,
        prepare_file,
        read_listing_file,
        scan_folder,
    )
    from paperwatch.ingest.validate import build_data_docs, validate_frame
    from paperwatch.settings import Settings

    settings = _settings(watch_dir=folder, report_dir=report_dir)
    assert isinstance(settings, Settings)
    try:
        scan = scan_folder(settings.watch_dir, settings.formats)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise fail(str(exc)) from None
    prepared = []
    for stat in scan.files:
        try:
            prepared.append(
                prepare_file(
                    stat, read_listing_file(stat, settings.max_file_bytes), settings.max_file_bytes
                )
            )
        except OSError as exc:
            typer.echo(f"skipped {stat.rel}: {exc}", err=True)
    files = files_frame(prepared, [])
    rejected = set(validate_frame(files, "listing_files").critical_failures())
    entries = entries_frame(f for i, f in enumerate(prepared) if i not in rejected)
    index = build_data_docs(
        {"listing_files": files, "papers": entries}, settings.report_dir / "data_docs"
    )
    typer.echo(f"Data Docs for {len(prepared)} files, {entries.height} entries: {index}")


# --- the analysts' snapshot: `paperwatch sql` ---


def _republish_snapshot(settings: object) -> None:
    """Publish the snapshot after a command that wrote outside the flows (a warning when
    it fails: the command's own change is committed)."""
    from paperwatch.db.snapshot import publish_snapshot
    from paperwatch.settings import Settings

    assert isinstance(settings, Settings)
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


def _duckdb_cli() -> str | None:
    """The DuckDB command line: the one installed beside this Python (the ``duckdb-cli``
    package in paperwatch's environment), else ``duckdb`` on PATH; None when neither."""
    import shutil
    import sys

    beside = Path(sys.executable).parent / "duckdb"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("duckdb")


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def sql(
    ctx: typer.Context,
    database: Annotated[
        Path | None,
        typer.Option(
            "--database",
            "-d",
            metavar="<path>",
            help="DuckDB file whose snapshot to open (default: data/paperwatch.duckdb).",
            show_default=False,
        ),
    ] = None,
    snapshot: Annotated[
        str | None,
        typer.Option(
            "--snapshot",
            metavar="<path>",
            help="The snapshot file (default: setting snapshot, <database name>.read.duckdb "
            "beside the database).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Open the read-only snapshot of the database in the DuckDB CLI (duckdb -readonly).

    paperwatch republishes the snapshot (data/paperwatch.read.duckdb) after every
    run that wrote, by replacing the file in one step: a session open here never
    delays a run, and keeps showing the data as it was when it opened (start it
    again to see a newer run). It holds the tables and views of the database
    (new_papers_by_week, duplicates_by_week, ...), not the internal MinHash
    tables. Other arguments go to the DuckDB CLI as they are, e.g.
    paperwatch sql -c "select count(*) from papers", or paperwatch sql -json -c "...".
    """
    from paperwatch.settings import Settings

    settings = _settings(database=database, snapshot=snapshot)
    assert isinstance(settings, Settings)
    target = settings.snapshot_path
    if target is None:
        raise fail("the snapshot is disabled (setting snapshot is empty): set it to a path")
    if not target.is_file():
        raise fail(
            f"the snapshot {target} does not exist yet: run `paperwatch ingest` first "
            "(every run that writes the database publishes it)"
        )
    program = _duckdb_cli()
    if program is None:
        raise fail(
            "the DuckDB CLI is not installed: `pip install duckdb-cli` (in paperwatch's "
            "environment) or put `duckdb` on PATH"
        )
    args = [program, "-readonly", str(target), *ctx.args]
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execv(program, args)  # the CLI takes over this process (Ctrl-C goes to it alone)
    import subprocess

    raise typer.Exit(code=subprocess.run(args, check=False).returncode)


# --- server runs: `paperwatch serve` and `paperwatch watch` ---


def _api_url() -> str | None:
    from prefect.settings import get_current_settings

    return get_current_settings().api.url


def _need_server(command: str) -> str:
    url = _api_url()
    if not url:
        raise fail(
            f"`paperwatch {command}` needs a Prefect server: start one with `prefect server start` "
            "and set PREFECT_API_URL=http://127.0.0.1:4200/api"
            + (" (or use --local to ingest in this process)" if command == "watch" else "")
        )
    return url


@app.command()
def serve(
    folder: FolderOption = None,
    database: DatabaseOption = None,
    report_dir: ReportDirOption = None,
    limit: Annotated[
        int | None,
        typer.Option(
            metavar="<n>", help="Most flow runs this process executes at once. [default: no limit]"
        ),
    ] = None,
    log_level: Annotated[
        str,
        typer.Option(
            metavar="<level>",
            help="Level of the runs' logs sent to the server (the UI): DEBUG, INFO, WARNING "
            "or ERROR.",
        ),
    ] = "INFO",
) -> None:
    """Serve the ingest-listings and weekly-report deployments from this process.

    Needs PREFECT_API_URL. ingest-listings runs every schedule.ingest_interval_minutes
    and on each event of `paperwatch watch` for the folder; weekly-report runs on
    schedule.report_cron in the configured time zone. Ingestion runs queue one at a
    time. Stopping this process (Ctrl-C) leaves the schedules active.
    """
    from paperwatch.settings import Settings

    url = _need_server("serve")
    settings = _settings(watch_dir=folder, database=database, report_dir=report_dir)
    assert isinstance(settings, Settings)
    # Flow runs are subprocesses: they read these from the environment.
    os.environ["PREFECT_LOGGING_LEVEL"] = log_level.upper()
    from paperwatch.flows.deployments import serve_deployments

    typer.echo(
        f"serving ingest-listings ({settings.watch_dir.resolve()}, every "
        f"{settings.schedule.ingest_interval_minutes} min and on arrival) and weekly-report "
        f"({settings.schedule.report_cron!r} {settings.timezone}) against {url}"
    )
    serve_deployments(settings, limit=limit)


@app.command()
def watch(
    folder: FolderOption = None,
    database: DatabaseOption = None,
    quiet_period: Annotated[
        float | None,
        typer.Option(
            metavar="<seconds>",
            help="Seconds a file's size and mtime must stay unchanged before it is read. "
            "[default: 2, setting schedule.watch_quiet_period_s]",
            show_default=False,
        ),
    ] = None,
    max_wait: Annotated[
        float,
        typer.Option(
            metavar="<seconds>", help="Seconds settled files wait for others still being written."
        ),
    ] = 30.0,
    local: Annotated[
        bool,
        typer.Option("--local", help="Run the ingestion flow in this process (no server needed)."),
    ] = False,
) -> None:
    """Watch the folder; when listing files land, start an ingestion run.

    A new or changed listing file counts once its size and mtime have been stable for
    the quiet period (dot files and editor temporary files are ignored); files
    settling together give one event. Each event
    (paperwatch.listing.arrived, resource paperwatch.folder.<absolute folder>)
    triggers the ingest-listings deployment of `paperwatch serve` or `prefect deploy`.
    With --local the ingestion flow runs here instead. Files already in the folder
    are handled once at start. Stop with Ctrl-C.
    """
    import signal
    import threading

    from paperwatch.ingest.watch import (
        EVENT_NAME,
        describe_batch,
        event_files,
        folder_resource_id,
        watch_folder,
    )
    from paperwatch.settings import Settings

    settings = _settings(watch_dir=folder, database=database)
    assert isinstance(settings, Settings)
    quiet = settings.schedule.watch_quiet_period_s if quiet_period is None else quiet_period
    watched = settings.watch_dir.resolve()
    if not watched.is_dir():
        raise fail(f"watched folder {watched} does not exist or is not a folder")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    if local:

        def on_batch(batch: list[str]) -> None:
            typer.echo(describe_batch(batch, "ingesting"))
            try:
                summary = _run_ingest(settings, None)
            except typer.Exit:
                return  # the error was printed; keep watching
            _print_ingest(summary, settings.database)

    else:
        url = _need_server("watch")
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

    typer.echo(f"watching {watched} (quiet period {quiet:g} s); Ctrl-C stops")
    try:
        # --local runs have no server-side guard against files still being written,
        # so they wait until nothing is (max_wait None).
        watch_folder(watched, on_batch, quiet, max_wait_s=None if local else max_wait, stop=stop)
    except KeyboardInterrupt:
        pass
    finally:
        if not local:
            from prefect.events.worker import EventsWorker

            EventsWorker.drain_all(timeout=10)


# --- end server runs ---


class _ExitStatus:
    """The status the ``paperwatch`` process exits with (set by :func:`main`)."""

    code = 1


def _status_of(code: object) -> int:
    """A ``SystemExit.code`` as the process's exit status, as Python maps it (None: 0; an
    integer: itself; anything else, which Python prints to stderr: 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 1


def _exit_without_teardown() -> None:
    """The last exit handler of the ``paperwatch`` process: flush what the handlers left
    (logging, the standard streams), then end the process with :data:`_ExitStatus.code`
    without Python's interpreter teardown.

    By then the command's work is done and closed (the DuckDB files, Prefect's temporary
    server, the preparation workers), threads have been joined (Prefect drains its log and
    event queues there) and every other exit handler has run (temporary folders removed,
    multiprocessing's helpers stopped): what teardown would still do is free every object
    of every imported module, one by one. After an ingest, which imports Great
    Expectations, Prefect, pandas and Polars, that took 1.8-1.9 s of the command's wall
    time (bench/RESULTS.md), for nothing the operating system does not do at once.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(_ExitStatus.code)


def main() -> None:
    """Entry point of the ``paperwatch`` command and of ``python -m paperwatch``: runs
    :data:`app`, then exits without the interpreter's teardown
    (:func:`_exit_without_teardown`, registered first so that it runs after every exit
    handler registered while the command ran). ``app`` itself, as tests invoke it in
    their own process, exits as any program does."""
    atexit.register(_exit_without_teardown)
    try:
        app(prog_name="paperwatch")
    except SystemExit as exc:
        _ExitStatus.code = _status_of(exc.code)
        raise
    except KeyboardInterrupt:
        _ExitStatus.code = 130
        raise
    _ExitStatus.code = 0


if __name__ == "__main__":
    main()
