"""The ``weekly-report`` flow: render the report of an ISO week into the report folder.

Tasks wire :mod:`paperwatch.report`; the rendering itself is a pure function.
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

from flows.snapshot import publish_after_run
from paperwatch import db
from paperwatch.artifacts import REPORT_ARTIFACT_KEY, report_markdown
from paperwatch.clock import iso_week, now_utc, parse_as_of, previous_week
from paperwatch.mailer import (
    AlreadySentError,
    EmlFolderMailer,
    MailDeliveryError,
    Mailer,
    SendOutcome,
    SmtpMailer,
    configured_addresses,
    pending_unsent_weeks,
    resolve_smtp_password,
    send_report,
)
from paperwatch.report import (
    RenderedReport,
    collect_report,
    record_rendered,
    render_report,
    report_message,
    write_report,
)
from paperwatch.settings import Settings, load_settings
from paperwatch.writer_lock import holds_writer_lock


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


@task(name="render-report", cache_policy=NO_CACHE)
def render_week(settings: Settings, week: str) -> tuple[RenderedReport, dict[str, int]]:
    """Collect the week's data and render it (read-only on the database)."""
    if not settings.database.is_file():
        raise FileNotFoundError(
            f"{settings.database} does not exist: nothing was ingested there "
            "(run `paperwatch ingest`, or check --database)"
        )
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        data = collect_report(con, week, settings)
    figures = {
        k: int(data.figures[k]) for k in ("new_papers", "exact_duplicates", "near_duplicates")
    }
    return render_report(data), figures


@task(name="write-report", retries=2, retry_delay_seconds=[1, 5], cache_policy=NO_CACHE)
def write_week(settings: Settings, report: RenderedReport) -> tuple[Path, Path]:
    """Write the report files and record them in ``reports``."""
    html_path, text_path = write_report(report, settings.report_dir)
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        record_rendered(con, report, html_path, now_utc())
    return html_path, text_path


# --- server runs: report artifact (see flows/deployments.py) ---


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
        send: e-mail the report to ``smtp.recipients`` (default false, so ``make run``
            never sends). Earlier weeks whose send failed are sent first.
        dry_run: write the message to ``<report_dir>/<week>.eml`` instead of sending it
            (wins over ``send``; recorded as ``dry_run``, never counts as sent).
        resend: send even if the week was already sent.

    Returns:
        Where the report went; ``email`` is the send (or dry run) of the week.

    Raises:
        paperwatch.mailer.MailSettingsError: ``send``/``dry_run`` without recipients or
            with a bad sender, before anything is rendered.
        paperwatch.mailer.AlreadySentError: the week was sent and ``resend`` is false.
        paperwatch.mailer.MailDeliveryError: the week's send failed after the retries
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
    report, figures = render_week(settings, week)
    html_path, text_path = write_week(settings, report)
    get_run_logger().info("report of %s written to %s", week, html_path)
    email: tuple[SendOutcome | None, tuple[SendOutcome, ...], tuple[str, ...]] = (None, (), ())
    try:
        if send or dry_run:
            email = email_report(settings, report, moment, dry_run=dry_run, resend=resend)
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
) -> SendOutcome:
    """Build the week's message and send it once (or write the ``.eml`` for a dry run).

    One delivery attempt per task run (``send_report(..., retries=0)``): the task's own
    retries (``smtp.retries``, ``smtp.retry_backoff_s`` doubling) repeat transient
    failures, each recorded in ``reports``, and the database is not held while waiting.

    Raises:
        AlreadySentError: the week was sent and ``resend`` is false (never retried).
        MailDeliveryError: the attempt failed (retried only when transient).
    """
    sender, recipients = configured_addresses(settings.smtp)
    message = report_message(report, sender=sender, recipients=recipients, date=date)
    mailer = mailer_for(settings, dry_run=dry_run)
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        outcome = send_report(con, mailer, report.week, message, resend=resend, retries=0)
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


def email_report(
    settings: Settings,
    report: RenderedReport,
    date: datetime,
    *,
    dry_run: bool = False,
    resend: bool = False,
) -> tuple[SendOutcome, tuple[SendOutcome, ...], tuple[str, ...]]:
    """Send earlier failed weeks, then ``report`` (called inside ``weekly-report``).

    Args:
        settings: the run's settings (``smtp``, ``database``, ``report_dir``).
        report: the week's rendered report.
        date: the ``Date`` header of the messages (the run's clock).
        dry_run: write ``<week>.eml`` only; earlier failed weeks are left alone.
        resend: send the week even if it was sent (earlier weeks are never resent).

    Returns:
        ``(outcome of the week, outcomes of earlier weeks sent now, earlier weeks that
        failed again)``. An earlier week failing again is logged, not raised: the next
        run tries it again.

    Raises:
        AlreadySentError, MailDeliveryError: from the week's own send.
    """
    logger = get_run_logger()
    retries = settings.smtp.retries
    delays = [settings.smtp.retry_backoff_s * 2**k for k in range(retries)]
    sender = send_week.with_options(retries=retries, retry_delay_seconds=delays or 0)
    sent: list[SendOutcome] = []
    failed: list[str] = []
    if not dry_run:
        for earlier in list_pending_weeks(settings):
            if earlier == report.week:
                continue
            logger.info("retrying the report of %s, whose last send failed", earlier)
            earlier_report, _ = render_week(settings, earlier)
            try:
                sent.append(sender(settings, earlier_report, date))
            except (MailDeliveryError, AlreadySentError) as exc:
                logger.warning("report of %s still not sent: %s", earlier, exc)
                failed.append(earlier)
    outcome = sender(settings, report, date, dry_run=dry_run, resend=resend)
    if outcome.status == "dry_run":
        logger.info("dry run: report of %s written to %s", report.week, outcome.path)
    else:
        logger.info(
            "report of %s sent to %s (%s)",
            report.week,
            ", ".join(outcome.recipients),
            outcome.message_id,
        )
    return outcome, tuple(sent), tuple(failed)
