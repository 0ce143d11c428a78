"""The send ledger: each week's report is delivered at most once, and failed weeks retried.

:func:`send_report` records every send in the table ``reports`` (rows ``sending`` →
``sent``/``failed``, or ``dry_run``) around :func:`paperwatch.report.smtp.deliver`;
:func:`pending_unsent_weeks` lists the weeks the next scheduled run sends again.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path
from typing import Any, Literal

import duckdb

from paperwatch.db import query
from paperwatch.report.message import html_sha256, message_bytes, recipients_of, require_iso_week
from paperwatch.report.smtp import Delivery, MailDeliveryError, Mailer, deliver

log = logging.getLogger(__name__)


class AlreadySentError(RuntimeError):
    """The week was already sent (or a send of it was interrupted) and no resend was asked for.

    The message reads ``week 2026-W48 was already sent on 2026-11-30 08:00 UTC to
    reader@example.org (Message-ID <...>); use --resend to send it again``. It is never
    worth retrying: the flow's ``send-report`` task does not, and the CLI exits with 2.
    """


# ---------------------------------------------------------------- bookkeeping


@dataclass(frozen=True)
class SendOutcome:
    """What :func:`send_report` did.

    Attributes:
        week: the ISO week.
        status: ``"sent"``, ``"failed"`` or ``"dry_run"``.
        message_id: the ``Message-ID`` delivered (a resend gets a new one, see
            :func:`send_report`).
        recipients: envelope recipients (addresses only).
        sha256: SHA-256 of the HTML part; ``message_sha256``: of the whole message.
        attempts: delivery attempts made.
        error: the last error (``status == "failed"``), or the refused recipients.
        refused: recipients the server refused while accepting the others.
        transport: the mailer's transport description.
        report_id: the row in ``reports``.
        path: the ``.eml`` written by an :class:`EmlFolderMailer`, else ``None``.
        previously_sent_at: when the week was last sent before this call (for a resend or
            a dry run of a sent week), else ``None``.
        transient: for ``status == "failed"``, whether the last failure was transient
            (:attr:`MailDeliveryError.transient`): trying again later may succeed.
    """

    week: str
    status: Literal["sent", "failed", "dry_run"]
    message_id: str
    recipients: list[str]
    sha256: str
    message_sha256: str
    attempts: int
    error: str | None
    refused: dict[str, str]
    transport: str
    report_id: int
    path: Path | None = None
    previously_sent_at: datetime | None = None
    transient: bool = False

    def raise_for_failure(self) -> None:
        """Raise :class:`MailDeliveryError` when the send failed (for flows and the CLI).

        The exception's ``transient`` is that of the last failure, so a caller can decide
        whether to try again later (the flow's ``send-report`` task retries only those).
        """
        if self.status == "failed":
            raise MailDeliveryError(
                f"weekly report {self.week} not sent after {self.attempts} attempt(s): "
                f"{self.error}",
                transient=self.transient,
            )


def _utcnow() -> datetime:
    return datetime.now(UTC)


def send_report(
    con: duckdb.DuckDBPyConnection,
    mailer: Mailer,
    week: str,
    message: EmailMessage,
    *,
    resend: bool = False,
    retries: int = 3,
    backoff_s: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], datetime] = _utcnow,
    reader: str | None = None,
) -> SendOutcome:
    """Send the report of ``week`` at most once per reader, retrying transient failures;
    record every step in ``reports``.

    A ``sending`` row is inserted before the first attempt and becomes ``sent`` or
    ``failed``; a ``sending`` row left by a process that died mid-send blocks the week
    (it may have been delivered). A dry-run mailer records a ``dry_run`` row and never
    marks the week as sent. A resend of a delivered week gets a fresh Message-ID
    (``<...r<n>@domain>``, n = deliveries so far). Design: docs/design.md, "Where the report and the mail live".

    Args:
        con: the read-write (writer) connection, schema applied; held for the whole send.
        mailer: an :class:`~paperwatch.report.smtp.SmtpMailer` or
            :class:`~paperwatch.report.smtp.EmlFolderMailer`.
        week: the ISO week, e.g. ``2026-W48``.
        message: from :func:`paperwatch.report.message.build_message`.
        resend: send even if the week was sent (or a send was interrupted).
        retries, backoff_s, sleep: as :func:`paperwatch.report.smtp.deliver` (seconds).
        clock: returns the aware UTC time recorded (injectable for tests).
        reader: the reader's canonical address (``reports.reader``), or None for the
            message to the plain recipients.

    Returns:
        A :class:`SendOutcome`; ``status == "failed"`` when every attempt failed
        (:meth:`SendOutcome.raise_for_failure` raises then).

    Raises:
        AlreadySentError: the week was sent or a send was interrupted, and not ``resend``.
        ValueError: ``week`` is not an ISO week or ``retries < 0``.
    """
    require_iso_week(week)
    if retries < 0:
        raise ValueError("retries must be >= 0")
    history = query(con, "report_sends", week=week, reader=reader)
    sent = [row for row in history if row["kind"] == "sent"]
    previously_sent_at = sent[-1]["happened_at"] if sent else None
    if not mailer.dry_run and not resend:
        _refuse_repeat(week, history, sent)
    if resend and sent and not mailer.dry_run:
        message = _with_resend_message_id(message, len(sent))
    if mailer.dry_run:
        return _dry_run(con, mailer, week, message, clock, reader, previously_sent_at)
    return _deliver_and_record(
        con, mailer, week, message, resend, clock, reader, previously_sent_at,
        lambda m: deliver(
            mailer, m, week=week, reader=reader, retries=retries, backoff_s=backoff_s,
            sleep=sleep,
        ),
    )  # fmt: skip


def _deliver_and_record(
    con: duckdb.DuckDBPyConnection,
    mailer: Mailer,
    week: str,
    message: EmailMessage,
    resend: bool,
    clock: Callable[[], datetime],
    reader: str | None,
    previously_sent_at: datetime | None,
    send: Callable[[EmailMessage], Delivery],
) -> SendOutcome:
    """Insert the ``sending`` row, ``send`` the message, and record ``sent`` or ``failed``."""
    recipients, body_sha, message_sha, message_id = _fingerprint(message)
    report_id = query(
        con,
        "insert_report_sending",
        week=week,
        sha256=body_sha,
        message_sha256=message_sha,
        recipients=recipients,
        message_id=message_id,
        transport=mailer.transport,
        resend=resend,
        started_at=clock(),
        reader=reader,
    )[0]["report_id"]
    done = send(message)
    status: Literal["sent", "failed"] = "failed" if done.error else "sent"
    note = done.error
    if status == "sent" and done.refused:
        note = "refused: " + "; ".join(f"{a}: {r}" for a, r in sorted(done.refused.items()))
    query(
        con,
        "finish_report_send",
        report_id=report_id,
        kind=status,
        attempts=done.attempts,
        error=note,
        at=clock(),
    )
    if status == "sent":
        log.info("report %s sent via %s (%s)", week, mailer.transport, message_id)
    return SendOutcome(
        week, status, message_id, recipients, body_sha, message_sha, done.attempts, note,
        done.refused, mailer.transport, report_id, getattr(mailer, "last_path", None),
        previously_sent_at, transient=status == "failed" and done.transient,
    )  # fmt: skip


def _refuse_repeat(week: str, history: list[dict[str, Any]], sent: list[dict[str, Any]]) -> None:
    """Raise :class:`AlreadySentError` when the week was sent or its last send never
    finished (``history``: rows of ``report_sends.sql``, oldest first)."""
    if sent:
        last = sent[-1]
        when = f"{last['happened_at']:%Y-%m-%d %H:%M %Z}"
        raise AlreadySentError(
            f"week {week} was already sent on {when} to "
            f"{', '.join(last['recipients'] or [])} (Message-ID {last['message_id']}); "
            "use --resend to send it again"
        )
    interrupted = history[-1] if history and history[-1]["kind"] == "sending" else None
    if interrupted is not None:
        raise AlreadySentError(
            f"a send of the report of {week} started at "
            f"{interrupted['started_at']:%Y-%m-%d %H:%M %Z} via {interrupted['transport']} "
            "never finished: it may have been delivered. Check the mailbox; use --resend "
            "to send it anyway"
        )


def _fingerprint(message: EmailMessage) -> tuple[list[str], str, str, str]:
    """``(envelope recipients, SHA-256 of the HTML part, SHA-256 of the message,
    Message-ID)`` of ``message``, as recorded in ``reports``."""
    message_sha = hashlib.sha256(message_bytes(message)).hexdigest()
    return recipients_of(message), html_sha256(message), message_sha, str(message["Message-ID"])


def _dry_run(
    con: duckdb.DuckDBPyConnection,
    mailer: Mailer,
    week: str,
    message: EmailMessage,
    clock: Callable[[], datetime],
    reader: str | None,
    previously_sent_at: datetime | None,
) -> SendOutcome:
    """Write ``message`` with the dry-run ``mailer`` and record a ``dry_run`` row."""
    recipients, body_sha, message_sha, message_id = _fingerprint(message)
    dry_refused = mailer.send(message, week=week, reader=reader)
    path = getattr(mailer, "last_path", None)
    row = query(
        con,
        "insert_report_dry_run",
        week=week,
        path=str(path) if path else None,
        sha256=body_sha,
        message_sha256=message_sha,
        recipients=recipients,
        message_id=message_id,
        transport=mailer.transport,
        at=clock(),
        reader=reader,
    )
    log.info("dry run of the report of %s written via %s", week, mailer.transport)
    return SendOutcome(
        week, "dry_run", message_id, recipients, body_sha, message_sha, 1, None, dry_refused,
        mailer.transport, row[0]["report_id"], path, previously_sent_at,
    )  # fmt: skip


def _with_resend_message_id(message: EmailMessage, deliveries: int) -> EmailMessage:
    resent = copy.deepcopy(message)
    old = str(resent["Message-ID"])
    local, _, domain = old.strip("<>").partition("@")
    resent.replace_header("Message-ID", f"<{local}.r{deliveries}@{domain}>")
    return resent


def pending_unsent_weeks(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Weeks whose last send failed and that were never sent, oldest first.

    The next scheduled weekly-report run re-renders and sends each of them (without
    ``resend``). A week whose send was interrupted (last row ``sending``) is not listed:
    it may have been delivered and needs a person to decide (``--resend``).

    Returns:
        ISO weeks, e.g. ``["2026-W46", "2026-W47"]``.
    """
    return [row["week"] for row in query(con, "pending_unsent_weeks")]
