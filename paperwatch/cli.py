"""The ``paperwatch`` command line (typer): a thin layer over the flows and the library."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

# Prefect reads these at import: no telemetry (no network here), quiet unless asked.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

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
)

FolderOption = Annotated[
    Path | None,
    typer.Option(
        "--folder",
        "-f",
        help="Folder of listing files (*.txt). [default: seeds]",
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
        help="ISO 8601 date or date-time used as 'now' (e.g. 2026-11-23T09:00; without an offset "
        "it is read in the configured time zone). Decides the ISO week new papers belong to. "
        "[default: the current time]",
        show_default=False,
    ),
]
WeekOption = Annotated[
    str | None,
    typer.Option(
        "--week",
        "-w",
        help="ISO week to report, e.g. 2026-W48. [default: the week of --as-of]",
        show_default=False,
    ),
]


def _fail(message: str) -> typer.Exit:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(code=1)


def _print_ingest(summary: object, database: Path) -> None:
    from paperwatch.store import IngestSummary

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
        raise _fail(f"invalid settings: {exc}") from None
    except ValueError as exc:
        raise _fail(str(exc)) from None


@app.command()
def ingest(
    folder: FolderOption = None,
    database: DatabaseOption = None,
    as_of: AsOfOption = None,
) -> None:
    """Load every new or changed listing file of the folder into the database.

    Files already loaded cost a stat only. A copy of a loaded file under another
    name is recorded as a duplicate; a file that is not UTF-8 text is quarantined
    whole; entries failing a critical check are quarantined with the reason.
    """
    from paperwatch.settings import Settings

    settings = _settings(watch_dir=folder, database=database)
    assert isinstance(settings, Settings)
    summary = _run_ingest(settings, as_of)
    _print_ingest(summary, settings.database)


def _run_ingest(settings: object, as_of: str | None) -> object:
    from paperwatch.db import DatabaseLockedError
    from paperwatch.settings import Settings

    assert isinstance(settings, Settings)
    from flows.ingest import ingest_listings

    try:
        return ingest_listings(str(settings.watch_dir), str(settings.database), as_of)
    except (FileNotFoundError, NotADirectoryError, DatabaseLockedError, ValueError) as exc:
        raise _fail(str(exc)) from None


class _WithoutTraceback(logging.Filter):
    """Drop the traceback from Prefect's log record of an expected failure (the CLI prints
    the error in one line); every other record passes unchanged."""

    def __init__(self, expected: tuple[type[BaseException], ...]) -> None:
        super().__init__()
        self.expected = expected

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], self.expected):
            record.exc_info = None
            record.exc_text = None
        return True


@contextmanager
def _short_run_errors(*expected: type[BaseException]) -> Iterator[None]:
    loggers = [logging.getLogger(n) for n in ("prefect.task_runs", "prefect.flow_runs")]
    quiet = _WithoutTraceback(expected)
    for logger in loggers:
        logger.addFilter(quiet)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(quiet)


def _run_report(
    settings: object,
    week: str | None,
    as_of: str | None,
    *,
    send: bool = False,
    dry_run: bool = False,
    resend: bool = False,
) -> object:
    from paperwatch.db import DatabaseLockedError
    from paperwatch.mailer import AlreadySentError, MailDeliveryError
    from paperwatch.settings import Settings

    assert isinstance(settings, Settings)
    from flows.report import weekly_report

    try:
        with _short_run_errors(AlreadySentError, MailDeliveryError, ValueError):
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
        raise _fail(str(exc)) from None
    except (FileNotFoundError, DatabaseLockedError, ValueError, RuntimeError) as exc:
        raise _fail(str(exc)) from None


def _print_email(outcome: object) -> None:
    from flows.report import ReportOutcome

    assert isinstance(outcome, ReportOutcome)
    for earlier in outcome.pending_sent:
        typer.echo(
            f"sent the report of {earlier.week}, whose earlier send had failed, to "
            f"{', '.join(earlier.recipients)}"
        )
    for week in outcome.pending_failed:
        typer.echo(f"the report of {week} is still not sent (its send failed again)")
    email = outcome.email
    if email is None:
        return
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
            help="E-mail the report to smtp.recipients (PAPERWATCH_SMTP__RECIPIENTS). A week "
            "is sent once; earlier weeks whose send failed are sent first.",
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Write the message to <report-dir>/<week>.eml instead of sending it.",
        ),
    ] = False,
    resend: Annotated[
        bool,
        typer.Option("--resend", help="Send the week again even if it was sent (implies --send)."),
    ] = False,
) -> None:
    """Render the weekly report (HTML, plain text, CSV of new papers) into the report folder.

    The report covers one ISO week in the configured time zone: by default the
    week containing --as-of (the current week). Rendering a week twice from the
    same database gives the same bytes. With --send it is e-mailed; exit status 2
    when the week was already sent (use --resend), 1 when delivery failed.
    """
    if dry_run and (send or resend):
        raise _fail("--dry-run writes the message instead of sending it: drop --send/--resend")
    settings = _settings(database=database, report_dir=report_dir)
    outcome = _run_report(
        settings, week, as_of, send=send or resend, dry_run=dry_run, resend=resend
    )
    from flows.report import ReportOutcome

    assert isinstance(outcome, ReportOutcome)
    typer.echo(f"report of {outcome.week}: {outcome.html_path} (plain text: {outcome.text_path})")
    _print_email(outcome)


@app.command()
def run(
    folder: FolderOption = None,
    database: DatabaseOption = None,
    report_dir: ReportDirOption = None,
    as_of: AsOfOption = None,
) -> None:
    """Ingest the folder, then render the report of the current ISO week (the main job).

    With no options: seeds/ into data/paperwatch.duckdb, report into reports/out/.
    Running it again loads nothing new and says so.
    """
    from flows.report import ReportOutcome

    settings = _settings(watch_dir=folder, database=database, report_dir=report_dir)
    started = time.monotonic()
    summary = _run_ingest(settings, as_of)
    ingested = time.monotonic()
    from paperwatch.settings import Settings

    assert isinstance(settings, Settings)
    _print_ingest(summary, settings.database)
    outcome = _run_report(settings, None, as_of)
    assert isinstance(outcome, ReportOutcome)
    done = time.monotonic()
    typer.echo(f"report of {outcome.week}: {outcome.html_path}")
    typer.echo(f"database: {settings.database}")
    typer.echo(
        f"took {done - started:.1f} s (ingest {ingested - started:.1f} s, report {done - ingested:.1f} s)"
    )


def main() -> None:
    """Entry point for ``python -m paperwatch``."""
    app(prog_name="paperwatch")


if __name__ == "__main__":
    main()
