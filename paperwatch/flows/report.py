"""The ``weekly-report`` flow: render the report of an ISO week into the report folder.

Tasks wire :mod:`paperwatch.db.report_data` and :mod:`paperwatch.report.render`; the rendering itself is a pure function.
With ``send=True`` the flow also e-mails the report (task ``send-report``, after
retrying earlier weeks whose send failed); with ``dry_run=True`` it writes the
message to ``<report_dir>/<week>.eml`` instead (docs/email.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.runtime import task_run as prefect_task_run

from paperwatch import db
from paperwatch.clock import iso_week, now_utc, parse_as_of, previous_week, week_days
from paperwatch.db.library import reader_picks, week_papers
from paperwatch.db.report_data import collect_week, topic_matches, write_and_record
from paperwatch.db.sends import AlreadySentError, SendOutcome, pending_unsent_weeks, send_report
from paperwatch.db.writer_lock import holds_writer_lock
from paperwatch.flows.snapshot import publish_after_run
from paperwatch.ingest.library import reader_library
from paperwatch.report.artifacts import REPORT_ARTIFACT_KEY, report_markdown
from paperwatch.report.message import configured_addresses, configured_readers, report_message
from paperwatch.report.render import RenderedReport, ReportData, for_reader, render_report
from paperwatch.report.smtp import EmlFolderMailer, MailDeliveryError, Mailer, SmtpMailer
from paperwatch.secrets import resolve_smtp_password
from paperwatch.settings import Settings, load_settings


@dataclass(frozen=True, slots=True)
class ReportOutcome:
    """Where the week's report went."""

    week: str
    html_path: Path
    text_path: Path
    new_papers: int
    exact_duplicates: int
    email: SendOutcome | None = None
    pending_sent: tuple[SendOutcome, ...] = ()
    pending_failed: tuple[str, ...] = ()
    #: The messages of readers with topics (``smtp.readers``), one per reader.
    reader_emails: tuple[SendOutcome, ...] = ()
    #: Readers (or ``None``: the plain recipients) whose message of the week was sent before.
    already_sent: tuple[str | None, ...] = ()


@task(name="render-report", cache_policy=NO_CACHE)
def render_week(settings: Settings, week: str) -> tuple[RenderedReport, dict[str, int], ReportData]:
    """Collect the week's data and render it (stores the week's trending terms and related
    papers)."""
    data = collect_week(settings, week)
    figures = {
        k: int(data.figures[k]) for k in ("new_papers", "exact_duplicates", "near_duplicates")
    }
    return render_report(data), figures, data


@task(name="render-reader-reports", cache_policy=NO_CACHE)
def render_reader_reports(settings: Settings, data: ReportData) -> list[tuple[str, RenderedReport]]:
    """One render per reader of ``smtp.readers``: the week's report starting with the
    papers picked for the reader (library, authors, topics, less exclusions). Returns
    ``(address, report)`` in settings order.

    Raises:
        paperwatch.ingest.library.LibraryError: a reader's library file cannot be used
            (the message names the reader and the file); nothing is sent.
    """
    readers = configured_readers(settings.smtp)
    if not readers:
        return []
    libraries = [reader_library(reader) for reader in readers]
    this_year = week_days(data.week)[0].year
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        matches = [topic_matches(con, data.week, reader.topics) for reader in readers]
        own = any(r.library or r.authors or r.exclude for r in readers)
        week = week_papers(con, data.week) if own else None
        picks = [
            None if week is None else reader_picks(con, week, reader, library, this_year)
            for reader, library in zip(readers, libraries, strict=True)
        ]
    return [
        (reader.address, render_report(for_reader(data, reader, found, mine)))
        for reader, found, mine in zip(readers, matches, picks, strict=True)
    ]


@task(name="write-report", retries=2, retry_delay_seconds=[1, 5], cache_policy=NO_CACHE)
def write_week(settings: Settings, report: RenderedReport) -> tuple[Path, Path]:
    """Write the report files, record them in ``reports`` and rewrite the archive page
    (``<report_dir>/index.html``)."""
    return write_and_record(settings, report, now_utc())


# --- server runs: report artifact (see paperwatch/flows/deployments.py) ---


@task(name="publish-report-artifact", retries=2, retry_delay_seconds=[1, 5], cache_policy=NO_CACHE)
def publish_report_artifact(outcome: ReportOutcome) -> None:
    """Publish a Markdown artifact linking the report files (key ``weekly-report``)."""
    create_markdown_artifact(
        markdown=report_markdown(
            outcome.week,
            outcome.html_path,
            outcome.text_path,
            outcome.new_papers,
            outcome.exact_duplicates,
        ),
        key=REPORT_ARTIFACT_KEY,
        description=f"report of {outcome.week}",
    )


# --- end server runs ---


def _scheduled_or_now() -> datetime:
    """The run's clock: its scheduled start for a deployment run (so a run that starts
    late still reports the week it was scheduled for), else the current time."""
    from prefect.runtime import deployment, flow_run

    if deployment.id:
        scheduled = flow_run.scheduled_start_time
        if scheduled is not None:
            return datetime.fromisoformat(scheduled.isoformat()).astimezone(UTC)
    return now_utc()


@flow(name="weekly-report", log_prints=True)
@holds_writer_lock
def weekly_report(
    week: str | None = None,
    as_of: str | None = None,
    database: str | None = None,
    report_dir: str | None = None,
    last_completed_week: bool = True,
    send: bool = False,
    dry_run: bool = False,
    resend: bool = False,
) -> ReportOutcome:
    """Render the report of ``week`` to ``<report_dir>/<week>.html`` and ``.txt``.

    Args:
        week: ISO week ``YYYY-Www``; default from ``as_of``.
        as_of: ISO 8601 date-time used as "now" (default: the current time).
        database: the DuckDB file (default: setting ``database``).
        report_dir: where to write (default: setting ``report_dir``).
        last_completed_week: with no ``week``, report the week that ended before
            ``as_of`` (what a Monday-morning schedule wants); when false, the week
            containing ``as_of``.
        send: e-mail the report to ``smtp.recipients`` (one message) and to each reader
            of ``smtp.readers`` (a message of their own, starting with "For you");
            default false, so ``make run`` never sends. Earlier weeks whose send failed
            are sent first.
        dry_run: write the message to ``<report_dir>/<week>.eml`` instead of sending it
            (wins over ``send``; recorded as ``dry_run``, never counts as sent).
        resend: send even if the week was already sent.

    Returns:
        Where the report went; ``email`` is the send (or dry run) of the week.

    Raises:
        paperwatch.report.message.MailSettingsError: ``send``/``dry_run`` without recipients or
            with a bad sender, before anything is rendered.
        paperwatch.db.sends.AlreadySentError: the week was sent to everyone (every reader
            and the plain recipients) and ``resend`` is false; when only some were sent
            before, the others are sent and those listed in ``already_sent``.
        paperwatch.report.smtp.MailDeliveryError: the week's send failed after the retries
            (recorded as ``failed``; the next run with ``send`` tries it again).
    """
    settings = load_settings(database=database, report_dir=report_dir)
    if send or dry_run:
        configured_addresses(settings.smtp)
    moment = parse_as_of(as_of, settings.tz) if as_of else _scheduled_or_now()
    if week is None:
        week = (
            previous_week(moment, settings.tz)
            if last_completed_week
            else iso_week(moment, settings.tz)
        )
    report, figures, data = render_week(settings, week)
    html_path, text_path = write_week(settings, report)
    get_run_logger().info("report of %s written to %s", week, html_path)
    email: EmailOutcomes = (None, (), (), (), ())
    try:
        if send or dry_run:
            readers = render_reader_reports(settings, data)
            email = email_report(
                settings, report, moment, dry_run=dry_run, resend=resend, readers=readers
            )
    finally:  # the report (and any send) is recorded in `reports`: analysts see it too
        publish_after_run(settings)
    outcome = ReportOutcome(
        week, html_path, text_path, figures["new_papers"], figures["exact_duplicates"], *email
    )
    publish_report_artifact(outcome)
    return outcome


# ------------------------------------------------------------------ e-mail (issue 7)


def is_transient_failure(error: object) -> bool:
    """Whether a failed send is worth retrying: a transient :class:`MailDeliveryError`.

    Connection refused or timed out and 4xx replies are; authentication, TLS and 5xx
    failures are not, and neither is :class:`AlreadySentError` (retrying it would be
    refused again, or worse, send twice).
    """
    return isinstance(error, MailDeliveryError) and error.transient


def _retry_transient(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect ``retry_condition_fn`` of ``send-report``: retry transient failures only."""
    error = state.data if isinstance(state.data, BaseException) else None
    if error is None:
        try:
            error = state.result(raise_on_failure=False)
        except Exception:
            return False
    return is_transient_failure(error)


def mailer_for(settings: Settings, *, dry_run: bool) -> Mailer:
    """The mailer of a run: ``.eml`` files in the report folder, or SMTP with the password
    from the environment or the Prefect Secret block (:func:`resolve_smtp_password`)."""
    if dry_run:
        return EmlFolderMailer(settings.report_dir)
    return SmtpMailer(settings.smtp, resolve_smtp_password(settings))


@task(name="send-report", retry_condition_fn=_retry_transient, cache_policy=NO_CACHE)
def send_week(
    settings: Settings,
    report: RenderedReport,
    date: datetime,
    dry_run: bool = False,
    resend: bool = False,
    reader: str | None = None,
) -> SendOutcome:
    """Build the week's message and send it once (or write the ``.eml`` for a dry run):
    to the plain recipients, or with ``reader`` (an address of ``smtp.readers``) to that
    reader only, once per week and reader.

    One delivery attempt per task run (``send_report(..., retries=0)``): the task's own
    retries (``smtp.retries``, ``smtp.retry_backoff_s`` doubling) repeat transient
    failures, each recorded in ``reports``, and the database is not held while waiting.

    Raises:
        AlreadySentError: the week was sent and ``resend`` is false (never retried).
        MailDeliveryError: the attempt failed (retried only when transient).
    """
    sender, recipients = configured_addresses(settings.smtp)
    if reader is not None:
        recipients = [reader]
    message = report_message(report, sender=sender, recipients=recipients, date=date)
    mailer = mailer_for(settings, dry_run=dry_run)
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        outcome = send_report(
            con, mailer, report.week, message, resend=resend, retries=0, reader=reader
        )
    if outcome.status == "failed":
        attempt, attempts = max(1, prefect_task_run.run_count), settings.smtp.retries + 1
        # Only a transient failure is retried: a permanent one never says "1 of 4".
        tried = f"attempt {attempt} of {attempts}" if outcome.transient else "not retried"
        raise MailDeliveryError(
            f"weekly report {report.week} not sent ({tried}): {outcome.error}",
            transient=outcome.transient,
        )
    return outcome


@task(name="list-pending-weeks", cache_policy=NO_CACHE)
def list_pending_weeks(settings: Settings) -> list[str]:
    """Weeks whose last send failed and that were never sent (oldest first)."""
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        return pending_unsent_weeks(con)


#: What :func:`email_report` did: the plain recipients' message of the week, earlier weeks sent now,
#: earlier weeks that failed again, the readers' messages, and who had it already.
EmailOutcomes = tuple[
    SendOutcome | None,
    tuple[SendOutcome, ...],
    tuple[str, ...],
    tuple[SendOutcome, ...],
    tuple[str | None, ...],
]


def _deliveries(
    settings: Settings, report: RenderedReport, readers: list[tuple[str, RenderedReport]]
) -> list[tuple[str | None, RenderedReport]]:
    """The week's messages: the plain recipients' (when there are any), then one per reader."""
    _, recipients = configured_addresses(settings.smtp)
    shared: list[tuple[str | None, RenderedReport]] = [(None, report)] if recipients else []
    return shared + [(address, own) for address, own in readers]


def email_report(
    settings: Settings,
    report: RenderedReport,
    date: datetime,
    *,
    dry_run: bool = False,
    resend: bool = False,
    readers: list[tuple[str, RenderedReport]] | None = None,
) -> EmailOutcomes:
    """Send earlier failed weeks, then the week's messages (called inside ``weekly-report``).

    Args:
        settings: the run's settings (``smtp``, ``database``, ``report_dir``).
        report: the week's rendered report (the plain recipients' message).
        date: the ``Date`` header of the messages (the run's clock).
        dry_run: write ``.eml`` files only; earlier failed weeks are left alone.
        resend: send the week even if it was sent (earlier weeks are never resent).
        readers: ``(address, report)`` of each reader of ``smtp.readers``
            (:func:`render_reader_reports`); each is sent once per week.

    Returns:
        ``(the plain recipients' message's outcome or None, outcomes of earlier weeks sent now, earlier weeks that
        failed again, the readers' outcomes, who had the week already)``. An earlier week
        failing again is logged, not raised: the next run tries it again.

    Raises:
        AlreadySentError: every message of the week was sent before (and not ``resend``).
        MailDeliveryError: a message of the week failed (the others were still sent).
    """
    logger = get_run_logger()
    retries = settings.smtp.retries
    delays = [settings.smtp.retry_backoff_s * 2**k for k in range(retries)]
    sender = send_week.with_options(retries=retries, retry_delay_seconds=delays or 0)
    sent, failed = ([], []) if dry_run else _send_pending_weeks(settings, report.week, date, sender)
    outcomes: list[tuple[str | None, SendOutcome]] = []
    already: list[tuple[str | None, AlreadySentError]] = []
    delivery_errors: list[MailDeliveryError] = []
    for reader, message in _deliveries(settings, report, readers or []):
        try:
            outcome = sender(settings, message, date, dry_run=dry_run, resend=resend, reader=reader)
        except AlreadySentError as exc:
            already.append((reader, exc))
            continue
        except MailDeliveryError as exc:
            delivery_errors.append(exc)
            continue
        outcomes.append((reader, outcome))
        if outcome.status == "dry_run":
            logger.info("dry run: report of %s written to %s", report.week, outcome.path)
        else:
            logger.info(
                "report of %s sent to %s (%s)",
                report.week,
                ", ".join(outcome.recipients),
                outcome.message_id,
            )
    if delivery_errors:
        raise delivery_errors[0]
    if not outcomes and already:
        raise already[0][1]
    for reader, _ in already:
        logger.info(
            "report of %s was sent to %s before: not sent again",
            report.week,
            reader or "the recipients",
        )
    first = next((outcome for reader, outcome in outcomes if reader is None), None)
    return (
        first,
        tuple(sent),
        tuple(failed),
        tuple(o for reader, o in outcomes if reader is not None),
        tuple(reader for reader, _ in already),
    )


def _send_pending_weeks(
    settings: Settings, week: str, date: datetime, sender: Any
) -> tuple[list[SendOutcome], list[str]]:
    """Send again the earlier weeks whose send failed (not ``week``): ``(outcomes of the
    messages sent now, the weeks that failed again)``; a failure is logged, not raised."""
    logger = get_run_logger()
    sent: list[SendOutcome] = []
    failed: list[str] = []
    for earlier in list_pending_weeks(settings):
        if earlier == week:
            continue
        logger.info("retrying the report of %s, whose last send failed", earlier)
        earlier_report, _, earlier_data = render_week(settings, earlier)
        earlier_readers = render_reader_reports(settings, earlier_data)
        for reader, message in _deliveries(settings, earlier_report, earlier_readers):
            try:
                sent.append(sender(settings, message, date, reader=reader))
            except AlreadySentError:
                continue  # this reader had it; the failed one is retried
            except MailDeliveryError as exc:
                logger.warning("report of %s still not sent: %s", earlier, exc)
                if earlier not in failed:
                    failed.append(earlier)
    return sent, failed
