"""The weekly report e-mailed for real: the seeds ingested by the real flow, the
``weekly-report`` flow and the ``paperwatch report`` command sending to an aiosmtpd
server on a free port of 127.0.0.1 (offline, one Prefect harness per session)."""

from __future__ import annotations

import csv
import email
import html as htmllib
import io
import re
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import duckdb
import pytest
from prefect.states import Failed
from typer.testing import CliRunner

from paperwatch.cli import app
from paperwatch.db.sends import AlreadySentError
from paperwatch.flows.report import _retry_transient as retry_transient
from paperwatch.flows.report import is_transient_failure, weekly_report
from paperwatch.report.message import HeaderInjectionError, MailSettingsError
from paperwatch.report.smtp import MailDeliveryError

from .conftest import SEEDS_WEEK, Server, free_port, tree

pytestmark = pytest.mark.usefixtures("prefect_harness")

WEEK = SEEDS_WEEK
SENT_AT = "2026-11-30T08:00:00+00:00"  # the Monday after the week, when the schedule sends it
SUBJECT = "paperwatch — NeurIPS 2026 week 2026-W48: 54 new papers, 3 duplicates"
RECIPIENTS = ["reader@example.org", "ann@example.org"]
runner = CliRunner()


def configure_smtp(monkeypatch: pytest.MonkeyPatch, port: int, **extra: str) -> None:
    """Point the settings at 127.0.0.1:<port> through PAPERWATCH_SMTP__* variables."""
    values = {
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "SECURITY": "none",
        "TIMEOUT_S": "5",
        "SENDER": "paperwatch <paperwatch@example.org>",
        "RECIPIENTS": '["reader@example.org", "Ann Lee <ann@example.org>"]',
        "RETRIES": "0",
        **extra,
    }
    for key, value in values.items():
        monkeypatch.setenv(f"PAPERWATCH_SMTP__{key}", value)


def report_rows(database: Path) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(
            "select week, kind, recipients, attempts, resend from reports "
            "where kind <> 'rendered' order by report_id"
        ).fetchall()


def bodies(message: EmailMessage) -> tuple[str, str]:
    """(text, html) of a message, with LF line ends."""
    text = message.get_body(("plain",))
    html = message.get_body(("html",))
    assert text is not None and html is not None
    return (
        str(text.get_content()).replace("\r\n", "\n"),
        str(html.get_content()).replace("\r\n", "\n"),
    )


def html_names(html: str) -> list[str]:
    """The paper labels of the HTML part, in order (new papers, then repeated papers)."""
    found = re.findall(r'<b class="name"[^>]*>(.*?)</b>', html, flags=re.S)
    return [htmllib.unescape(name) for name in found]


def text_names(text: str) -> list[str]:
    """The paper labels of the plain-text part, in order (new papers, then repeated)."""
    new = re.findall(r"^\* (.+) \((?:[^()]+ · )?#\d+\)$", text, flags=re.M)
    repeated = re.findall(r"^\* (.+) — listed \d+ times$", text, flags=re.M)
    return new + repeated


def method_names(database: Path) -> tuple[list[str], list[str]]:
    """Method names of the week's new papers (report order) and of the repeated papers."""
    with duckdb.connect(str(database), read_only=True) as con:
        new = con.execute(
            "select method_name from papers p join listing_files f on f.file_id = p.first_file_id "
            "where p.first_seen_week = ? order by f.first_seen, f.path, p.first_position",
            [WEEK],
        ).fetchall()
        repeated = con.execute(
            "select p.method_name from paper_occurrences o join papers p using (paper_id) "
            "group by p.paper_id, p.method_name having count(*) > 1 order by 1"
        ).fetchall()
    return [r[0] for r in new], [r[0] for r in repeated]


# ---------------------------------------------------------------- the flow


def test_weekly_report_is_emailed_once(
    seeded_database: Path, smtp_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure_smtp(monkeypatch, smtp_server.port)
    out = tmp_path / "out"
    args: dict[str, Any] = {
        "week": WEEK,
        "as_of": SENT_AT,
        "database": str(seeded_database),
        "report_dir": str(out),
    }
    outcome = weekly_report(**args, send=True)

    assert outcome.email is not None and outcome.email.status == "sent"
    assert (outcome.pending_sent, outcome.pending_failed) == ((), ())
    (received,) = smtp_server.handler.received
    assert received.mail_from == "paperwatch@example.org"
    assert received.rcpt_tos == RECIPIENTS
    message = received.message
    assert tree(message) == (
        "multipart/mixed",
        [("multipart/alternative", ["text/plain", "text/html"]), "text/csv"],
    )
    assert message["Subject"] == SUBJECT
    assert message["Date"] == "Mon, 30 Nov 2026 08:00:00 +0000"
    assert message["X-Paperwatch-Week"] == WEEK
    assert message["Message-ID"] == outcome.email.message_id

    # Both bodies name the same 54 new and 3 repeated papers, those of the database.
    text, html = bodies(message)
    new, repeated = method_names(seeded_database)
    assert len(new) == 54 and len(repeated) == 3
    labels = html_names(html)
    assert labels == text_names(text)
    assert len(labels) == 57
    assert [name for name in labels[:54] if name in new] == [n for n in new if n]
    assert sorted(labels[54:]) == repeated == ["SOL-ExecBench", "SOLAR", "SP-CACW"]
    assert (
        "54 new papers, 3 duplicates (3 exact, 0 near), 3 listing files, 0 entries quarantined."
        in text
    )
    assert "and 0 more" not in html and " more." not in text
    # What was sent is what was archived.
    assert html == outcome.html_path.read_text(encoding="utf-8")
    assert text == outcome.text_path.read_text(encoding="utf-8")

    attachment = next(message.iter_attachments())
    assert attachment.get_filename() == "2026-W48-new-papers.csv"
    assert attachment.get_content_type() == "text/csv"
    assert attachment.get_param("charset") == "utf-8"
    data = attachment.get_payload(decode=True)
    assert data == (out / "2026-W48-new-papers.csv").read_bytes()
    table = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    assert table[0] == [
        "paper_id",
        "method_name",
        "first_sentence",
        "code_urls",
        "source_file",
        "position",
        "title",
        "authors",
        "url",
        "external_id",
    ]
    assert [row[1] for row in table[1:]] == [n or "" for n in new]

    assert report_rows(seeded_database) == [(WEEK, "sent", RECIPIENTS, 1, False)]

    # A second send of the week is refused; nothing more arrives.
    with pytest.raises(AlreadySentError, match=r"week 2026-W48 was already sent on 2026-"):
        weekly_report(**args, send=True)
    assert len(smtp_server.handler.received) == 1

    # --resend sends it again, with a new Message-ID.
    again = weekly_report(**args, send=True, resend=True)
    assert again.email is not None and again.email.previously_sent_at is not None
    assert len(smtp_server.handler.received) == 2
    second = smtp_server.handler.received[1].message
    assert second["Message-ID"] == outcome.email.message_id.replace("@", ".r1@")
    assert bodies(second) == (text, html)

    # A dry run writes the .eml beside the report and sends nothing.
    dry = weekly_report(**args, dry_run=True)
    assert dry.email is not None and dry.email.status == "dry_run"
    eml = out / "2026-W48.eml"
    assert dry.email.path == eml
    parsed = email.message_from_bytes(eml.read_bytes(), policy=policy.default)
    assert isinstance(parsed, EmailMessage)
    assert parsed["Subject"] == SUBJECT and bodies(parsed) == (text, html)
    assert len(smtp_server.handler.received) == 2
    assert [r[1] for r in report_rows(seeded_database)] == ["sent", "sent", "dry_run"]


def test_report_is_not_sent_unless_asked(
    seeded_database: Path, smtp_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure_smtp(monkeypatch, smtp_server.port)
    outcome = weekly_report(week=WEEK, database=str(seeded_database), report_dir=str(tmp_path))
    assert outcome.email is None
    assert smtp_server.handler.received == [] and report_rows(seeded_database) == []


def test_failed_week_is_retried_by_the_next_run(
    seeded_database: Path, smtp_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    down = free_port()  # nothing listens there
    configure_smtp(monkeypatch, down, RETRIES="1", RETRY_BACKOFF_S="0")
    args: dict[str, Any] = {
        "as_of": SENT_AT,
        "database": str(seeded_database),
        "report_dir": str(tmp_path),
    }
    with pytest.raises(MailDeliveryError) as failed:
        weekly_report(week=WEEK, send=True, **args)
    assert f"cannot connect to SMTP server 127.0.0.1:{down}: connection refused" in str(
        failed.value
    )
    # One task retry of the transient failure: two attempts, both recorded.
    assert [r[:2] for r in report_rows(seeded_database)] == [(WEEK, "failed"), (WEEK, "failed")]

    # The next week's run, with the server up, sends the failed week first.
    configure_smtp(monkeypatch, smtp_server.port)
    outcome = weekly_report(week="2026-W49", send=True, **args)
    assert [o.week for o in outcome.pending_sent] == [WEEK]
    assert outcome.email is not None and outcome.email.week == "2026-W49"
    weeks = [r.message["X-Paperwatch-Week"] for r in smtp_server.handler.received]
    assert weeks == [WEEK, "2026-W49"]
    assert smtp_server.handler.received[0].message["Subject"] == SUBJECT
    assert smtp_server.handler.received[1].message["Subject"] == (
        "paperwatch — week 2026-W49: 0 new papers, 0 duplicates"
    )
    assert [r[:2] for r in report_rows(seeded_database)] == [
        (WEEK, "failed"),
        (WEEK, "failed"),
        (WEEK, "sent"),
        ("2026-W49", "sent"),
    ]


def test_sending_needs_recipients(
    seeded_database: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(MailSettingsError, match="PAPERWATCH_SMTP__RECIPIENTS"):
        weekly_report(week=WEEK, database=str(seeded_database), report_dir=str(tmp_path), send=True)
    assert report_rows(seeded_database) == []


def test_only_transient_failures_are_retried() -> None:
    transient = MailDeliveryError("connection refused", transient=True)
    permanent = MailDeliveryError("535 authentication failed", transient=False)
    already = AlreadySentError("week 2026-W48 was already sent")
    assert [is_transient_failure(e) for e in (transient, permanent, already)] == [
        True,
        False,
        False,
    ]
    assert retry_transient(None, None, Failed(data=transient)) is True
    assert retry_transient(None, None, Failed(data=permanent)) is False
    assert retry_transient(None, None, Failed(data=already)) is False


# ---------------------------------------------------------------- the command


def cli_report(database: Path, out: Path, *flags: str) -> Any:
    return runner.invoke(
        app,
        [
            "report",
            "--week",
            WEEK,
            "--as-of",
            SENT_AT,
            "--database",
            str(database),
            "--report-dir",
            str(out),
            *flags,
        ],
    )


def test_cli_send_resend_and_dry_run(
    seeded_database: Path, smtp_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure_smtp(monkeypatch, smtp_server.port)
    out = tmp_path / "out"

    first = cli_report(seeded_database, out, "--send")
    assert first.exit_code == 0, first.output
    assert (
        f"sent the report of {WEEK} to reader@example.org, ann@example.org via "
        f"smtp://127.0.0.1:{smtp_server.port} (none) (Message-ID <paperwatch.2026-W48."
    ) in first.output

    second = cli_report(seeded_database, out, "--send")
    assert second.exit_code == 2
    assert re.search(
        r"error: week 2026-W48 was already sent on 2026-\d\d-\d\d \d\d:\d\d UTC to "
        r"reader@example.org, ann@example.org \(Message-ID <[^>]+>\); "
        r"use --resend to send it again",
        second.output,
    ), second.output
    assert len(smtp_server.handler.received) == 1

    resent = cli_report(seeded_database, out, "--resend")
    assert resent.exit_code == 0, resent.output
    assert f"sent again the report of {WEEK}" in resent.output
    assert len(smtp_server.handler.received) == 2

    dry = cli_report(seeded_database, out, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert f"written to {out / '2026-W48.eml'}" in dry.output
    assert "nothing was sent" in dry.output
    assert (out / "2026-W48.eml").is_file()
    assert len(smtp_server.handler.received) == 2

    both = cli_report(seeded_database, out, "--dry-run", "--send")
    assert both.exit_code == 2 and "drop --send" in both.output


def test_cli_delivery_failure_names_the_server_and_the_step(
    seeded_database: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    down = free_port()
    configure_smtp(monkeypatch, down)
    result = cli_report(seeded_database, tmp_path, "--send")
    assert result.exit_code == 1
    assert (
        f"error: weekly report {WEEK} not sent (attempt 1 of 1): cannot connect to SMTP "
        f"server 127.0.0.1:{down}: connection refused"
    ) in result.output
    assert [r[1] for r in report_rows(seeded_database)] == ["failed"]


def test_cli_without_recipients_names_the_setting(seeded_database: Path, tmp_path: Path) -> None:
    result = cli_report(seeded_database, tmp_path, "--send")
    assert result.exit_code == 2  # refused before any flow starts
    assert "Flow run" not in result.output
    assert "error: no recipients configured: set smtp.recipients in paperwatch.toml" in (
        result.output
    )
    assert "PAPERWATCH_SMTP__RECIPIENTS" in result.output


def test_cli_refuses_a_recipient_with_a_line_break(
    seeded_database: Path, smtp_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure_smtp(
        monkeypatch,
        smtp_server.port,
        RECIPIENTS='["reader@example.org\\r\\nBcc: thief@example.net"]',
    )
    result = cli_report(seeded_database, tmp_path, "--send")
    assert result.exit_code == 2
    assert "recipient 1 contains a line break or control character ('\\r' at position 18)" in (
        result.output
    )
    assert smtp_server.handler.received == []
    with pytest.raises(HeaderInjectionError):
        weekly_report(
            week=WEEK, database=str(seeded_database), report_dir=str(tmp_path), dry_run=True
        )


def test_cli_permanent_failure_is_not_counted_as_an_attempt_of_several(
    seeded_database: Path, smtp_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The test server offers no STARTTLS: refused, and not retried (retries are 3).
    configure_smtp(monkeypatch, smtp_server.port, SECURITY="starttls", RETRIES="3")
    result = cli_report(seeded_database, tmp_path, "--send")
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: weekly report {WEEK} not sent (not retried): SMTP server "
        f"127.0.0.1:{smtp_server.port} does not offer STARTTLS; refusing to send in clear "
        "(set smtp.security to 'ssl' or 'none' if that is intended)"
    ]
    assert smtp_server.handler.received == []
