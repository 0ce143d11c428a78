"""The ``paperwatch`` command line (typer): a thin layer over the flows and the library."""

from __future__ import annotations

import atexit
import getpass
import os
import signal
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from paperwatch import flow_runtime
from paperwatch.allocator import keep_freed_memory
from paperwatch.cli import jobs
from paperwatch.cli.failures import load_settings_or_exit as _settings
from paperwatch.cli.output import print_email, print_ingest, print_quarantine, print_rebuild
from paperwatch.cli.process import ExitStatus, exit_without_teardown, status_of
from paperwatch.exits import EXIT_REFUSED, Terminated, fail, interrupted, terminated
from paperwatch.flow_runtime import SERVER_STARTUP_TIMEOUT_S, prefect_home

__all__ = ["app", "main", "prefect_home"]

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
        help="Folder of listing files (.txt, .md, .json, .jsonl, .yaml, .bib, .xml, .atom, .rss). [default: seeds]",
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
    settings = _settings(watch_dir=folder, database=database)
    summary = jobs.run_ingest(settings, as_of, allow_future=allow_future)
    print_ingest(summary, settings.database)


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
        raise fail(
            "--dry-run writes the message instead of sending it: drop --send/--resend",
            code=EXIT_REFUSED,
        )
    settings = _settings(database=database, report_dir=report_dir)
    if not (send or resend or dry_run):  # rendering only: no flow run, no Prefect server
        written = jobs.report_here(settings, week, as_of)
        typer.echo(
            f"report of {written.week}: {written.html_path} (plain text: {written.text_path})"
        )
        return
    outcome = jobs.run_report(
        settings, week, as_of, send=send or resend, dry_run=dry_run, resend=resend
    )
    typer.echo(f"report of {outcome.week}: {outcome.html_path} (plain text: {outcome.text_path})")
    print_email(outcome)


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
    summary = jobs.run_ingest(settings, as_of, allow_future=allow_future)
    ingested = time.monotonic()
    print_ingest(summary, settings.database)
    shown = jobs.unchanged_report(settings, summary)
    if shown is None:
        outcome = jobs.run_report(settings, None, as_of)
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
    settings = _settings(watch_dir=folder, database=database)
    jobs.preflight(settings, as_of=as_of, folder=True, future=allow_future)
    outcome = jobs.run_rebuild(settings, as_of)
    print_rebuild(outcome, settings.database, settings.watch_dir)


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

    settings = _settings(database=database)
    try:
        with db.reader(settings.database, settings.lock_timeout_s) as con:
            items = list_quarantine(con, include_released)
    except (FileNotFoundError, db.DatabaseLockedError) as exc:
        raise fail(str(exc)) from None
    print_quarantine(items, include_released)


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
    from paperwatch.clock import parse_as_of
    from paperwatch.db.quarantine import QuarantineError

    settings = _settings(database=database)
    approver = by or getpass.getuser()
    try:
        moment = parse_as_of(as_of, settings.tz)
        release = jobs.release_quarantined(settings, quarantine_id, approver, note, moment)
    except QuarantineError as exc:  # no such entry, a whole file, released before
        raise fail(str(exc), code=EXIT_REFUSED) from None
    except (ValueError, db.DatabaseLockedError) as exc:
        raise fail(str(exc)) from None
    state = "a new paper" if release.new_paper else "an occurrence of a known paper"
    typer.echo(
        f"released #{release.quarantine_id} ({release.path}, entry {release.position}) as {state} "
        f"{release.paper_id}, approved by {approver}"
    )
    jobs.republish_snapshot(settings)


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
    settings = _settings(watch_dir=folder, report_dir=report_dir)
    files, entries, index = jobs.build_data_docs(settings)
    typer.echo(f"Data Docs for {files} files, {entries} entries: {index}")


# --- the analysts' snapshot: `paperwatch sql` ---


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
    settings = _settings(database=database, snapshot=snapshot)
    target = settings.snapshot_path
    if target is None:
        raise fail("the snapshot is disabled (setting snapshot is empty): set it to a path")
    if not target.is_file():
        raise fail(
            f"the snapshot {target} does not exist yet: run `paperwatch ingest` first "
            "(every run that writes the database publishes it)"
        )
    program = jobs.duckdb_cli()
    if program is None:
        raise fail(
            "the DuckDB CLI is not installed: `pip install duckdb-cli` (in paperwatch's "
            "environment) or put `duckdb` on PATH"
        )
    args = [program, "-readonly", str(target), *ctx.args]
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execv(program, args)  # the CLI takes over this process (Ctrl-C goes to it alone)
    import subprocess

    raise typer.Exit(code=subprocess.run(args, check=False).returncode)


# --- server runs: `paperwatch serve` and `paperwatch watch` ---


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
    url = jobs.need_server("serve")
    settings = _settings(watch_dir=folder, database=database, report_dir=report_dir)
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
    settings = _settings(watch_dir=folder, database=database)
    quiet = settings.schedule.watch_quiet_period_s if quiet_period is None else quiet_period
    jobs.watch_listings(settings, quiet, max_wait, local=local)


def main() -> None:
    """Entry point of the ``paperwatch`` command and of ``python -m paperwatch``: runs
    :data:`app`, then exits without the interpreter's teardown
    (:func:`~paperwatch.cli.process.exit_without_teardown`, registered first so that it runs
    after every exit handler registered while the command ran). Ctrl-C (status 130) and
    SIGTERM (143) end the command through its ``finally`` blocks with one ``error:`` line.
    ``app`` itself, as tests invoke it in their own process, exits as any program does."""
    atexit.register(exit_without_teardown)
    signal.signal(signal.SIGTERM, terminated)
    try:
        app(prog_name="paperwatch")
    except Terminated:
        interrupted("SIGTERM")
        ExitStatus.code = 128 + signal.SIGTERM
        raise
    except SystemExit as exc:
        ExitStatus.code = status_of(exc.code)
        if ExitStatus.code == 130:  # typer's exit for a KeyboardInterrupt
            interrupted("Ctrl-C")
        raise
    except KeyboardInterrupt:
        interrupted("Ctrl-C")
        ExitStatus.code = 130
        raise
    ExitStatus.code = 0


if __name__ == "__main__":
    main()
