"""The report email: MIME structure, headers, delivery over a real SMTP server, send-once.

Every test runs offline: aiosmtpd listens on a free port of 127.0.0.1, TLS uses a
self-signed certificate made here, and the database is an in-memory DuckDB.
"""

from __future__ import annotations

import datetime as dt
import email
import hashlib
import ipaddress
import ssl
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import duckdb
import pytest
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pydantic import SecretStr

from paperwatch.db import apply_schema, query
from paperwatch.db.sends import AlreadySentError, pending_unsent_weeks, send_report
from paperwatch.report.message import (
    Attachment,
    HeaderInjectionError,
    UnsafeHtmlError,
    build_message,
    html_sha256,
    inline_css,
    message_bytes,
    subject_for,
    validate_address,
    validate_header_value,
)
from paperwatch.report.smtp import EmlFolderMailer, MailDeliveryError, SmtpMailer
from paperwatch.secrets import resolve_smtp_password
from paperwatch.settings import Settings, SmtpSettings

from .conftest import Server, free_port, tree

WEEK = "2026-W48"
DATE = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.UTC)
PAPERS = ["SpectralKV", "HJA", "SPIRIT"]
HTML = (
    "<!DOCTYPE html><html><head><style>"
    "td { color: #222; font-family: Arial, sans-serif; }"
    "@media (max-width: 480px) { table { width: 100% !important; } }"
    '</style></head><body><table width="640">'
    + "".join(f"<tr><td>{name}: &lt;script&gt;alert(1)&lt;/script&gt;</td></tr>" for name in PAPERS)
    + "</table></body></html>"
)
TEXT = "paperwatch 2026-W48\n\n" + "".join(f"- {name}\n" for name in PAPERS)
PASSWORD = "s3cret-Pa55"


# ----------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 / localhost: (cert.pem, key.pem)."""
    folder = tmp_path_factory.mktemp("tls")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "paperwatch test SMTP")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture
def server_tls(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    return context


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect()
    apply_schema(connection)
    yield connection
    connection.close()


def smtp(port: int, **kwargs: Any) -> SmtpSettings:
    return SmtpSettings(
        **{"host": "127.0.0.1", "port": port, "security": "none", "timeout_s": 5, **kwargs}
    )


def message(**overrides: Any) -> EmailMessage:
    args: dict[str, Any] = {
        "subject": subject_for(["NeurIPS 2026"], WEEK, 3, 1),
        "sender": "paperwatch <paperwatch@example.org>",
        "recipients": ["reader@example.org", "Ann Lee <ann@example.org>"],
        "html": inline_css(HTML),
        "text": TEXT,
        "date": DATE,
        "message_id_domain": "example.org",
        "week": WEEK,
    }
    args.update(overrides)
    return build_message(**args)


def rows(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    cursor = con.execute("select * from reports order by report_id")
    names = [d[0] for d in cursor.description or []]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


# ------------------------------------------------------------ message shape


def test_message_arrives_as_multipart_alternative(
    smtp_server: Server, con: duckdb.DuckDBPyConnection
):
    sent = message()
    outcome = send_report(con, SmtpMailer(smtp(smtp_server.port)), WEEK, sent)

    assert outcome.status == "sent" and outcome.attempts == 1 and outcome.error is None
    assert len(smtp_server.handler.received) == 1
    got = smtp_server.handler.received[0]
    assert got.mail_from == "paperwatch@example.org"
    assert got.rcpt_tos == ["reader@example.org", "ann@example.org"]
    msg = got.message
    assert tree(msg) == ("multipart/alternative", ["text/plain", "text/html"])
    assert msg["Subject"] == "paperwatch — NeurIPS 2026 week 2026-W48: 3 new papers, 1 duplicate"
    assert msg["Message-ID"] == sent["Message-ID"]
    assert msg["Date"] == "Mon, 30 Nov 2026 08:00:00 +0000"
    # Bodies travel with CRLF line ends (RFC 5322); compare with LF.
    text = msg.get_body(("plain",)).get_content().replace("\r\n", "\n")  # type: ignore[union-attr]
    html = msg.get_body(("html",)).get_content().replace("\r\n", "\n")  # type: ignore[union-attr]
    for name in PAPERS:  # both bodies mention the same papers
        assert f"- {name}\n" in text
        assert f"{name}: &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>" not in html

    (row,) = rows(con)
    assert row["kind"] == "sent" and row["week"] == WEEK and row["attempts"] == 1
    assert row["recipients"] == ["reader@example.org", "ann@example.org"]
    assert row["message_id"] == sent["Message-ID"]
    assert row["sha256"] == hashlib.sha256(html.encode()).hexdigest() == outcome.sha256
    assert row["message_sha256"] == hashlib.sha256(message_bytes(sent)).hexdigest()
    assert row["transport"] == f"smtp://127.0.0.1:{smtp_server.port} (none)"
    assert row["error"] is None and row["resend"] is False


def test_attachments_wrap_the_alternative_in_multipart_mixed(smtp_server: Server, con):
    csv = b"paper_id,method\nab12,SpectralKV\ncd34,HJA\n"
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    html = inline_css(HTML.replace("</table>", '</table><img src="cid:chart" alt="trend chart">'))
    sent = message(
        html=html,
        attachments=[
            Attachment(csv, f"{WEEK}-new-papers.csv", "text/csv"),
            Attachment(png, "chart.png", "image/png", content_id="chart"),
        ],
    )
    send_report(con, SmtpMailer(smtp(smtp_server.port)), WEEK, sent)

    msg = smtp_server.handler.received[0].message
    assert tree(msg) == (
        "multipart/mixed",
        [
            (
                "multipart/alternative",
                ["text/plain", ("multipart/related", ["text/html", "image/png"])],
            ),
            "text/csv",
        ],
    )
    attachment = next(msg.iter_attachments())
    assert attachment.get_filename() == "2026-W48-new-papers.csv"
    assert attachment.get_content() == csv.decode()
    related = msg.get_body(("related",))
    assert related is not None
    image = list(related.iter_parts())[1]
    assert image["Content-ID"] == "<chart>" and image.get_content() == png


def test_csv_only_attachment_gives_mixed_of_alternative_and_csv():
    msg = message(attachments=[Attachment(b"a,b\n1,2\n", "new.csv", "text/csv")])
    assert tree(msg) == (
        "multipart/mixed",
        [("multipart/alternative", ["text/plain", "text/html"]), "text/csv"],
    )


def test_non_ascii_subject_and_display_names_are_encoded(smtp_server: Server, con):
    subject = subject_for(["NeurIPS 2026 论文列表"], WEEK, 1, 0)
    sent = message(
        subject=subject, sender="论文 Bot <bot@example.org>", recipients=["Zoë <zoe@example.org>"]
    )
    send_report(con, SmtpMailer(smtp(smtp_server.port)), WEEK, sent)

    raw = smtp_server.handler.received[0].content
    head = raw.split(b"\r\n\r\n", 1)[0]
    assert head.isascii()  # RFC 2047 encoded words, no raw UTF-8 in headers
    msg = smtp_server.handler.received[0].message
    assert (
        msg["Subject"]
        == "paperwatch — NeurIPS 2026 论文列表 week 2026-W48: 1 new paper, 0 duplicates"
    )
    assert msg["From"].addresses[0].display_name == "论文 Bot"
    assert msg["To"].addresses[0].display_name == "Zoë"


def test_same_inputs_give_the_same_bytes():
    first, second = message(), message()
    assert message_bytes(first) == message_bytes(second)
    assert first["Message-ID"].startswith(f"<paperwatch.{WEEK}.")
    other = message(text=TEXT + "- one more\n")
    assert other["Message-ID"] != first["Message-ID"]


# ------------------------------------------------------------- TLS and auth


def test_starttls_with_a_self_signed_certificate(start_server, server_tls, certificate, con):
    server = start_server(tls_context=server_tls, require_starttls=True)
    settings = smtp(server.port, security="starttls", ca_file=certificate[0])
    outcome = send_report(con, SmtpMailer(settings), WEEK, message())
    assert outcome.status == "sent"
    assert len(server.handler.received) == 1


def test_starttls_refuses_an_untrusted_certificate(start_server, server_tls, con):
    server = start_server(tls_context=server_tls, require_starttls=True)
    sleeps = Sleeps()
    outcome = send_report(
        con, SmtpMailer(smtp(server.port, security="starttls")), WEEK, message(), sleep=sleeps
    )
    assert outcome.status == "failed" and outcome.attempts == 1 and sleeps == []
    assert outcome.error is not None
    assert outcome.error.startswith(
        f"TLS certificate of SMTP server 127.0.0.1:{server.port} not trusted"
    )
    assert "smtp.ca_file" in outcome.error
    assert server.handler.received == []
    assert [r["kind"] for r in rows(con)] == ["failed"]


def test_starttls_not_offered_is_an_error_not_a_downgrade(smtp_server: Server, con):
    outcome = send_report(
        con, SmtpMailer(smtp(smtp_server.port, security="starttls")), WEEK, message()
    )
    assert outcome.status == "failed"
    assert outcome.error == (
        f"SMTP server 127.0.0.1:{smtp_server.port} does not offer STARTTLS; refusing to send in "
        "clear (set smtp.security to 'ssl' or 'none' if that is intended)"
    )
    assert smtp_server.handler.received == []


def test_implicit_tls(start_server, server_tls, certificate, con):
    server = start_server(ssl_context=server_tls)
    settings = smtp(server.port, security="ssl", ca_file=certificate[0])
    assert send_report(con, SmtpMailer(settings), WEEK, message()).status == "sent"
    assert len(server.handler.received) == 1


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
        b"reports",
        PASSWORD.encode(),
    )
    return AuthResult(success=ok, handled=False)  # aiosmtpd replies 535 on failure


def test_login_over_starttls(start_server, server_tls, certificate, con):
    server = start_server(
        tls_context=server_tls,
        require_starttls=True,
        authenticator=authenticator,
        auth_required=True,
    )
    settings = smtp(server.port, security="starttls", ca_file=certificate[0], username="reports")
    outcome = send_report(con, SmtpMailer(settings, SecretStr(PASSWORD)), WEEK, message())
    assert outcome.status == "sent"
    assert len(server.handler.received) == 1


@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")
def test_authentication_failure_is_clear_and_recorded(start_server, con):
    server = start_server(authenticator=authenticator, auth_required=True, auth_require_tls=False)
    settings = smtp(server.port, username="reports")
    sleeps = Sleeps()
    outcome = send_report(
        con, SmtpMailer(settings, SecretStr("wrong-password")), WEEK, message(), sleep=sleeps
    )
    assert outcome.status == "failed" and outcome.attempts == 1 and sleeps == []  # not retried
    assert outcome.error is not None
    assert outcome.error.startswith(
        f"SMTP authentication failed at 127.0.0.1:{server.port} as user 'reports': 535 "
    )
    assert "wrong-password" not in outcome.error
    (row,) = rows(con)
    assert row["kind"] == "failed" and row["error"] == outcome.error and row["attempts"] == 1
    assert server.handler.received == []
    assert pending_unsent_weeks(con) == [WEEK]
    with pytest.raises(MailDeliveryError, match="not sent after 1 attempt"):
        outcome.raise_for_failure()


def test_password_is_not_sent_in_clear_to_a_remote_host():
    settings = SmtpSettings(host="mail.example.org", port=25, security="none", username="reports")
    mailer = SmtpMailer(settings, SecretStr(PASSWORD))
    assert PASSWORD not in repr(mailer)


def test_refused_connection_is_retried_with_backoff_then_recorded(con):
    port = free_port()  # nothing listens there
    sleeps = Sleeps()
    outcome = send_report(
        con, SmtpMailer(smtp(port)), WEEK, message(), retries=2, backoff_s=0.5, sleep=sleeps
    )
    assert outcome.status == "failed" and outcome.attempts == 3
    assert sleeps == [0.5, 1.0]
    assert outcome.error == (
        f"cannot connect to SMTP server 127.0.0.1:{port}: connection refused "
        "(is the server running and smtp.host/smtp.port right?)"
    )
    (row,) = rows(con)
    assert (row["kind"], row["attempts"], row["error"]) == ("failed", 3, outcome.error)
    assert pending_unsent_weeks(con) == [WEEK]


def test_partly_refused_recipients_still_count_as_sent(smtp_server: Server, con):
    sent = message(recipients=["reader@example.org", "nobody@example.org"])
    outcome = send_report(con, SmtpMailer(smtp(smtp_server.port)), WEEK, sent)
    assert outcome.status == "sent"
    assert outcome.refused == {"nobody@example.org": "550 5.1.1 no such user"}
    assert rows(con)[0]["error"] == "refused: nobody@example.org: 550 5.1.1 no such user"
    assert smtp_server.handler.received[0].rcpt_tos == ["reader@example.org"]


# ------------------------------------------------------------- send once


def test_a_week_is_sent_once_unless_resent(smtp_server: Server, con):
    mailer = SmtpMailer(smtp(smtp_server.port))
    first = send_report(con, mailer, WEEK, message())
    with pytest.raises(AlreadySentError) as refused:
        send_report(con, mailer, WEEK, message())
    assert f"week {WEEK} was already sent on " in str(refused.value)
    assert first.message_id in str(refused.value) and "--resend" in str(refused.value)
    assert len(smtp_server.handler.received) == 1

    again = send_report(con, mailer, WEEK, message(), resend=True)
    assert again.status == "sent" and again.previously_sent_at is not None
    assert again.message_id == first.message_id.replace("@", ".r1@")
    assert [m.message["Message-ID"] for m in smtp_server.handler.received] == [
        first.message_id,
        again.message_id,
    ]
    assert [(r["kind"], r["resend"]) for r in rows(con)] == [("sent", False), ("sent", True)]
    assert pending_unsent_weeks(con) == []


def test_failed_week_is_pending_until_a_later_run_sends_it(smtp_server: Server, con):
    down = SmtpMailer(smtp(free_port()))
    send_report(con, down, "2026-W47", message(week="2026-W47"), retries=0)
    send_report(con, down, WEEK, message(), retries=0)
    assert pending_unsent_weeks(con) == ["2026-W47", WEEK]

    up = SmtpMailer(smtp(smtp_server.port))
    for week in pending_unsent_weeks(con):
        assert send_report(con, up, week, message(week=week)).status == "sent"
    assert pending_unsent_weeks(con) == []
    assert [r["kind"] for r in rows(con)] == ["failed", "failed", "sent", "sent"]


def test_an_interrupted_send_blocks_until_resend(smtp_server: Server, con):
    query(
        con,
        "insert_report_sending",
        week=WEEK,
        sha256="x",
        message_sha256="y",
        recipients=["reader@example.org"],
        message_id="<m@example.org>",
        transport="smtp://mail.example.org:587 (starttls)",
        resend=False,
        started_at=DATE,
        reader=None,
    )
    mailer = SmtpMailer(smtp(smtp_server.port))
    with pytest.raises(AlreadySentError, match="never finished: it may have been delivered"):
        send_report(con, mailer, WEEK, message())
    assert pending_unsent_weeks(con) == []
    assert send_report(con, mailer, WEEK, message(), resend=True).status == "sent"


def test_dry_run_writes_an_eml_and_does_not_count_as_sent(tmp_path: Path, smtp_server: Server, con):
    sent = message(attachments=[Attachment(b"a,b\n", "new.csv", "text/csv")])
    outcome = send_report(con, EmlFolderMailer(tmp_path / "out"), WEEK, sent)
    assert outcome.status == "dry_run" and outcome.path == tmp_path / "out" / f"{WEEK}.eml"
    raw = outcome.path.read_bytes()
    assert raw == message_bytes(sent)
    parsed = email.message_from_bytes(raw, policy=policy.default)
    assert parsed["Subject"] == sent["Subject"] and parsed["Message-ID"] == sent["Message-ID"]
    assert isinstance(parsed, EmailMessage)
    assert tree(parsed) == tree(sent)
    assert html_sha256(parsed) == html_sha256(sent)
    assert [(r["kind"], r["path"]) for r in rows(con)] == [("dry_run", str(outcome.path))]
    assert list((tmp_path / "out").iterdir()) == [outcome.path]  # no temporary file left

    assert send_report(con, SmtpMailer(smtp(smtp_server.port)), WEEK, sent).status == "sent"


# ------------------------------------------------------------ validation


def test_header_injection_is_refused():
    with pytest.raises(
        HeaderInjectionError, match=r"Subject contains a line break .*'\\n' at position 5"
    ):
        message(subject="hello\nBcc: victim@example.org")
    with pytest.raises(HeaderInjectionError, match="recipient 2 contains a line break"):
        message(recipients=["a@example.org", "b@example.org\r\nBcc: victim@example.org"])
    with pytest.raises(HeaderInjectionError, match="sender"):
        message(sender="x@example.org\rBcc: victim@example.org")
    with pytest.raises(HeaderInjectionError):
        message(attachments=[Attachment(b"", "a\n.csv", "text/csv")])
    for bad in ("a\u2028b", "a\x00b", "a\x85b", "a\x1bb"):
        with pytest.raises(HeaderInjectionError):
            validate_header_value("Subject", bad)
    assert validate_header_value("Subject", "tab\tis fine — 论文") == "tab\tis fine — 论文"


def test_subject_for_collapses_line_breaks_in_venue_names():
    assert subject_for(["ICLR\n2025\r\nBcc: x"], WEEK, 0, 0) == (
        "paperwatch — ICLR 2025 Bcc: x week 2026-W48: 0 new papers, 0 duplicates"
    )


def test_validate_address():
    assert validate_address("reader@example.org") == "reader@example.org"
    assert validate_address("Zoë Lee <zoe@example.org>") == "Zoë Lee <zoe@example.org>"
    for bad in (
        "not an address",
        "a@b@c.org",
        "a@example.org, b@example.org",
        "a@localhost.",
        "",
        "@x.org",
    ):
        with pytest.raises(ValueError):
            validate_address(bad)
    with pytest.raises(ValueError, match="SMTPUTF8"):
        validate_address("论文@example.org")


def test_build_message_refuses_bad_input():
    with pytest.raises(ValueError, match="time-zone aware"):
        message(date=dt.datetime(2026, 11, 30, 8))
    with pytest.raises(ValueError, match="no recipients"):
        message(recipients=[])
    with pytest.raises(UnsafeHtmlError, match="script element"):
        message(html="<html><body><script>alert(1)</script></body></html>")
    with pytest.raises(UnsafeHtmlError, match="over the 100,000-byte limit"):
        message(html="<p>" + "x" * 100_000 + "</p>")
    with pytest.raises(ValueError, match="ISO week"):
        message(week="2026-48")


@pytest.mark.parametrize(
    ("venues", "new", "dups", "expected"),
    [
        (["NeurIPS 2026"], 1, 1,
         "paperwatch — NeurIPS 2026 week 2026-W48: 1 new paper, 1 duplicate"),
        (["NeurIPS 2026", "ICLR 2025", "NeurIPS 2026"], 0, 2,
         "paperwatch — NeurIPS 2026, ICLR 2025 week 2026-W48: 0 new papers, 2 duplicates"),
        (["A", "B", "C", "D", "E"], 5000, 12,
         "paperwatch — A, B, C and 2 more week 2026-W48: 5000 new papers, 12 duplicates"),
        ([], 0, 0, "paperwatch — week 2026-W48: 0 new papers, 0 duplicates"),
    ],
)  # fmt: skip
def test_subject_for(venues, new, dups, expected):
    assert subject_for(venues, WEEK, new, dups) == expected


def test_subject_for_rejects_bad_week_and_counts():
    with pytest.raises(ValueError, match="ISO week"):
        subject_for([], "2026-W54", 0, 0)
    with pytest.raises(ValueError, match=">= 0"):
        subject_for([], WEEK, -1, 0)


# ------------------------------------------------------------ CSS inlining


def test_inline_css_inlines_rules_and_keeps_only_media_queries():
    html = (
        '<html><head><link rel="stylesheet" href="https://cdn.example.org/x.css">'
        "<style>@import url(https://fonts.example.org/f.css);"
        "@font-face { font-family: X; src: url(https://fonts.example.org/x.woff); }"
        "p { color: red; } .big { font-size: 20px; }"
        "@media (max-width: 480px) { p { font-size: 14px !important; } }"
        '</style></head><body><p class="big">&lt;img src=x onerror=alert(1)&gt;</p></body></html>'
    )
    out = inline_css(html)
    assert out == (
        "<html><head><style>@media (max-width: 480px) {p { font-size: 14px !important; }}</style>"
        '</head><body><p class="big" style="color: red;font-size: 20px;">'
        "&lt;img src=x onerror=alert(1)&gt;</p></body></html>"
    )
    assert inline_css(out) == out  # idempotent


def test_inline_css_without_media_queries_leaves_no_style_block():
    assert inline_css(
        "<html><head><style>p{color:red}</style></head><body><p>x</p></body></html>"
    ) == ('<html><head></head><body><p style="color: red;">x</p></body></html>')


def test_inline_css_refuses_what_it_cannot_fix():
    with pytest.raises(UnsafeHtmlError) as caught:
        inline_css(
            '<html><body><img src="https://tracker.example.org/p.gif"><script>x()</script></body></html>'
        )
    assert caught.value.problems == [
        "img without alt text (line 1)",
        "external resource src= on <img> (embed it and use cid:) (line 1)",
        "script element (line 1)",
    ]


def test_inline_css_without_the_check_gives_the_same_document():
    """check=False (the report's size search) inlines the same way and only skips the check."""
    html = "<html><head><style>p{color:red}</style></head><body><p>x</p></body></html>"
    assert inline_css(html, check=False) == inline_css(html)
    unsafe = "<html><body><p>x</p><script>x()</script></body></html>"
    assert inline_css(unsafe, check=False) == unsafe.replace("<body>", "<head></head><body>")


# ------------------------------------------------------------ password


def test_password_from_environment_wins(monkeypatch):
    monkeypatch.setenv("PAPERWATCH_SMTP__PASSWORD", PASSWORD)
    monkeypatch.setenv("PAPERWATCH_SMTP__PASSWORD_BLOCK", "smtp-password")
    settings = Settings()
    password = resolve_smtp_password(settings)
    assert password is not None and password.get_secret_value() == PASSWORD
    assert PASSWORD not in repr(settings) and PASSWORD not in str(password)


def test_password_from_a_prefect_secret_block(monkeypatch):
    from prefect.blocks.system import Secret

    loaded: list[str] = []

    class FakeSecret:
        def get(self) -> str:
            return PASSWORD

    def fake_load(name: str, *args: Any, **kwargs: Any) -> FakeSecret:
        loaded.append(name)
        if name != "smtp-password":
            raise ValueError(f"Unable to find block document named {name}")
        return FakeSecret()

    monkeypatch.setattr(Secret, "load", fake_load)
    password = resolve_smtp_password(SmtpSettings(password_block="smtp-password"))
    assert password is not None and password.get_secret_value() == PASSWORD
    with pytest.raises(RuntimeError, match="Secret block 'missing': ValueError"):
        resolve_smtp_password(SmtpSettings(password_block="missing"))
    assert loaded == ["smtp-password", "missing"]
    assert resolve_smtp_password(SmtpSettings()) is None
