"""Turn a rendered weekly report into one email message and send it once.

The pieces, in the order the weekly-report flow uses them::

    html = inline_css(render_html(...))            # CSS inlined, only @media kept
    message = build_message(subject=subject_for(...), sender=..., recipients=...,
                            html=html, text=text, date=..., week=week,
                            message_id_domain=..., attachments=[csv])
    mailer = SmtpMailer(settings.smtp, resolve_smtp_password(settings))
    outcome = send_report(con, mailer, week, message, resend=False)

The message is built with the standard library (``multipart/alternative`` of a
text/plain and a text/html part, wrapped in ``multipart/mixed`` when files are
attached), not with prefect-email, whose ``email_send_message`` puts both bodies
side by side in ``multipart/mixed`` (PITFALLS.md, Email). Its bytes are a pure
function of the inputs: ``Date`` is given, ``Message-ID`` and MIME boundaries are
derived from a hash of the content.

Mailers are a small interface (:class:`Mailer`): :class:`SmtpMailer` delivers over
SMTP (STARTTLS, implicit TLS, or none), :class:`EmlFolderMailer` writes
``<week>.eml`` files (dry runs and tests). :func:`send_report` records every send
in the DuckDB table ``reports`` so that a week is delivered at most once unless a
resend is asked for, and failed weeks are retried by the next scheduled run
(:func:`pending_unsent_weeks`).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import logging
import os
import re
import smtplib
import socket
import ssl
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import errors, policy
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr
from pathlib import Path
from typing import Literal, Protocol, cast

import css_inline
import duckdb
from pydantic import SecretStr

from paperwatch.db import query
from paperwatch.report.email_safety import MAX_HTML_BYTES, check_email_safety, keep_media_rules
from paperwatch.settings import Reader, Settings, SmtpSettings

log = logging.getLogger(__name__)

__all__ = [
    "AlreadySentError",
    "Attachment",
    "EmlFolderMailer",
    "HeaderInjectionError",
    "MailDeliveryError",
    "MailSettingsError",
    "Mailer",
    "SendOutcome",
    "SmtpMailer",
    "UnsafeHtmlError",
    "build_message",
    "check_email_safety",
    "configured_addresses",
    "html_sha256",
    "inline_css",
    "message_bytes",
    "pending_unsent_weeks",
    "resolve_smtp_password",
    "send_report",
    "subject_for",
    "validate_address",
    "validate_header_value",
]

_WEEK = re.compile(r"^\d{4}-W(0[1-9]|[1-4]\d|5[0-3])$")
# CR, LF, NUL and the other C0 controls except TAB, DEL, and the characters Python's
# str.splitlines() (used by the email package when folding) treats as line breaks.
_HEADER_BREAKS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}


# --------------------------------------------------------------------------- errors


class HeaderInjectionError(ValueError):
    """A header value (subject, address, file name) contains a line break or control character."""


class UnsafeHtmlError(ValueError):
    """The HTML part failed :func:`paperwatch.report.email_safety.check_email_safety`."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("HTML is not safe to email: " + "; ".join(self.problems))


class AlreadySentError(RuntimeError):
    """The week was already sent (or a send of it was interrupted) and no resend was asked for.

    The message reads ``week 2026-W48 was already sent on 2026-11-30 08:00 UTC to
    reader@example.org (Message-ID <...>); use --resend to send it again``. It is never
    worth retrying: the flow's ``send-report`` task does not, and the CLI exits with 2.
    """


class MailDeliveryError(RuntimeError):
    """A delivery attempt failed.

    Attributes:
        transient: ``True`` when trying again later may succeed (connection refused or
            timed out, 4xx reply); ``False`` for authentication failures, TLS errors and
            5xx rejections, which :func:`send_report` does not retry.
    """

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


# ------------------------------------------------------------------ header checks


def validate_header_value(name: str, value: str) -> str:
    """Refuse a header value that could inject headers; return it unchanged otherwise.

    Args:
        name: the header or field name, used in the error message (``"Subject"``).
        value: the value as it would be set on the message.

    Raises:
        HeaderInjectionError: ``value`` contains CR, LF, NUL, another C0 control character
            except TAB, DEL, or U+0085/U+2028/U+2029 (which the email package's folding
            treats as line breaks). The message shows the value with escapes, e.g.
            ``Subject contains a line break or control character ('\\n' at position 5)``.
    """
    match = _HEADER_BREAKS.search(value)
    if match:
        raise HeaderInjectionError(
            f"{name} contains a line break or control character "
            f"({match.group(0)!r} at position {match.start()}): {value!r}; "
            "refused to prevent header injection"
        )
    return value


def validate_address(value: str, *, field_name: str = "address") -> str:
    """Check one mailbox (``user@example.org`` or ``Name <user@example.org>``).

    Display names may be non-ASCII (they are RFC 2047-encoded when sent); the address
    itself must be ASCII (SMTPUTF8 is not used).

    Args:
        value: the mailbox as configured.
        field_name: what it is (``"sender"``, ``"recipient 2"``), for the error message.

    Returns:
        The mailbox in canonical form (``"Name <user@example.org>"`` or ``"user@example.org"``).

    Raises:
        HeaderInjectionError: it contains a line break or control character.
        ValueError: it is not exactly one well-formed ``local@domain`` address.
    """
    validate_header_value(field_name, value)
    header = policy.default.header_factory("To", value)
    addresses: tuple[Address, ...] = tuple(getattr(header, "addresses", ()))
    if any(isinstance(d, errors.NonASCIILocalPartDefect) for d in header.defects):
        raise ValueError(
            f"{field_name} {value!r}: non-ASCII addresses need SMTPUTF8, which is not supported"
        )
    if len(addresses) != 1 or header.defects:
        found = f"{len(addresses)} addresses" if len(addresses) != 1 else "a malformed address"
        raise ValueError(f"{field_name} {value!r} is not one valid email address ({found})")
    address = addresses[0]
    local, domain = address.username, address.domain
    dotted = "." in domain.strip(".") or domain.lower() == "localhost"  # a local relay's default
    if not local or not domain or not dotted or domain != domain.strip("."):
        raise ValueError(f"{field_name} {value!r} is not a valid email address (need user@domain)")
    if not address.addr_spec.isascii():
        raise ValueError(
            f"{field_name} {value!r}: non-ASCII addresses need SMTPUTF8, which is not supported"
        )
    return str(address)


class MailSettingsError(ValueError):
    """The ``[smtp]`` settings cannot send a report (no recipients, a bad sender address)."""


def configured_addresses(smtp: SmtpSettings) -> tuple[str, list[str]]:
    """Check ``smtp.sender``, ``smtp.recipients`` and ``smtp.readers`` before anything is
    rendered or sent.

    Args:
        smtp: ``Settings.smtp``.

    Returns:
        ``(sender, recipients)`` in canonical form (see :func:`validate_address`): the
        plain recipients, who share one message. A reader of ``smtp.readers`` is left out
        of them (they get a message of their own, :func:`configured_readers`), so nobody
        gets the week twice.

    Raises:
        MailSettingsError: neither a recipient nor a reader is configured, or the sender, a
            recipient or a reader is not a valid address; the message names the setting
            to fix (``smtp.recipients`` in ``paperwatch.toml`` or
            ``PAPERWATCH_SMTP__RECIPIENTS``, ``smtp.sender`` or ``PAPERWATCH_SMTP__SENDER``).
        HeaderInjectionError: an address contains a line break or control character.
    """
    if not smtp.recipients and not smtp.readers:
        raise MailSettingsError(
            "no recipients configured: set smtp.recipients in paperwatch.toml "
            '(recipients = ["reader@example.org"]) or the environment variable '
            "PAPERWATCH_SMTP__RECIPIENTS (a JSON list: '[\"reader@example.org\"]'), "
            "or add readers with topics ([[smtp.readers]])"
        )
    fix_sender = "set smtp.sender in paperwatch.toml or PAPERWATCH_SMTP__SENDER"
    fix_recipients = "fix smtp.recipients in paperwatch.toml or PAPERWATCH_SMTP__RECIPIENTS"
    sender = _checked_address(smtp.sender, "sender", fix_sender)
    readers = {parseaddr(reader.address)[1].lower() for reader in configured_readers(smtp)}
    recipients = [
        _checked_address(value, f"recipient {i + 1}", fix_recipients)
        for i, value in enumerate(smtp.recipients)
    ]
    return sender, [r for r in recipients if parseaddr(r)[1].lower() not in readers]


def configured_readers(smtp: SmtpSettings) -> list[Reader]:
    """The readers of ``smtp.readers`` with their addresses in canonical form, in order;
    a reader listed twice keeps the first entry.

    Raises:
        MailSettingsError: an address is not valid (names ``smtp.readers``).
        HeaderInjectionError: an address contains a line break or control character.
    """
    fix = "fix the address of [[smtp.readers]] in paperwatch.toml"
    readers: list[Reader] = []
    seen: set[str] = set()
    for i, reader in enumerate(smtp.readers):
        address = _checked_address(reader.address, f"reader {i + 1}", fix)
        key = parseaddr(address)[1].lower()
        if key not in seen:
            seen.add(key)
            readers.append(reader.model_copy(update={"address": address}))
    return readers


def _checked_address(value: str, field_name: str, fix: str) -> str:
    try:
        return validate_address(value, field_name=field_name)
    except HeaderInjectionError as exc:
        raise HeaderInjectionError(f"{exc}; {fix}") from None
    except ValueError as exc:
        raise MailSettingsError(f"{exc}; {fix}") from None


# --------------------------------------------------------------------- content


def inline_css(html: str, *, relative_links: bool = False, check: bool = True) -> str:
    """Inline a document's CSS for email and keep only ``@media`` rules in a ``<style>`` block.

    Uses css-inline (``CSSInliner(keep_style_tags=False, keep_at_rules=True,
    keep_link_tags=False, load_remote_stylesheets=False)``): every rule of every
    ``<style>`` element is copied into the ``style`` attributes of the elements it
    matches (existing ``style`` attributes win), ``<link>`` elements are removed
    without being fetched, and the at-rules that cannot be inlined are kept in one
    ``<style>`` block. Of those only ``@media`` rules without external ``url()`` are
    kept (``@import``, ``@font-face`` and the like are dropped); clients that drop
    ``<style>`` still get the inlined desktop layout.

    Args:
        html: a full HTML document (``<html>...``), as rendered.
        relative_links: accept relative links (``<a href="2026-W48.html">``): for a page
            that sits beside the files it links (the archive page), never for a message.
        check: run the safety check (False only to measure the size of a document whose
            content was already checked in a larger rendering, as the report's size
            search does).

    Returns:
        The inlined document. Deterministic: the same input gives the same string.

    Raises:
        UnsafeHtmlError: something unsafe is left that inlining cannot fix (``<script>``,
            event handlers, external images, ``javascript:`` links, SVG, images
            without alt text). The size limit is not checked here; see
            :func:`build_message`.
    """
    inliner = css_inline.CSSInliner(
        inline_style_tags=True,
        keep_style_tags=False,
        keep_at_rules=True,
        keep_link_tags=False,
        load_remote_stylesheets=False,
    )
    inlined = inliner.inline(html)

    def _filter(match: re.Match[str]) -> str:
        kept = keep_media_rules(match.group(2))
        return f"{match.group(1)}{kept}</style>" if kept else ""

    inlined = re.sub(r"(<style\b[^>]*>)(.*?)</style>", _filter, inlined, flags=re.S | re.I)
    if not check:
        return inlined
    problems = check_email_safety(inlined, max_bytes=None)
    if relative_links:
        problems = [p for p in problems if "with a relative URL" not in p]
    if problems:
        raise UnsafeHtmlError(problems)
    return inlined


def subject_for(venues: Sequence[str], week: str, new_papers: int, duplicates: int) -> str:
    """The report's subject line.

    Format: ``paperwatch — <venues> week <ISO week>: N new papers, M duplicates``, with
    "1 new paper" / "1 duplicate" in the singular. Venues are the listing headers'
    venue names (e.g. ``"NeurIPS 2026"``): whitespace and control characters in them
    are collapsed to one space, repeats dropped (first occurrence kept, order kept),
    joined with ``", "``; more than three are shown as ``"A, B, C and 2 more"``. With no
    venue the part is left out (``paperwatch — week 2026-W48: ...``).

    Args:
        venues: venue names in display order.
        week: ISO week ``YYYY-Www`` (e.g. ``2026-W48``).
        new_papers: papers first seen this week (>= 0).
        duplicates: exact and near duplicates found this week (>= 0).

    Raises:
        ValueError: ``week`` is not an ISO week or a count is negative.
    """
    if not _WEEK.match(week):
        raise ValueError(f"week {week!r} is not an ISO week like 2026-W48")
    if new_papers < 0 or duplicates < 0:
        raise ValueError(f"counts must be >= 0, got {new_papers} new, {duplicates} duplicates")
    names: list[str] = []
    for venue in venues:
        name = " ".join(_HEADER_BREAKS.sub(" ", venue).split())
        if name and name not in names:
            names.append(name)
    if len(names) > 3:
        shown = ", ".join(names[:3]) + f" and {len(names) - 3} more"
    else:
        shown = ", ".join(names)
    papers = f"{new_papers} new paper{'' if new_papers == 1 else 's'}"
    dups = f"{duplicates} duplicate{'' if duplicates == 1 else 's'}"
    venue_part = f"{shown} " if shown else ""
    return f"paperwatch — {venue_part}week {week}: {papers}, {dups}"


@dataclass(frozen=True)
class Attachment:
    """A file carried by the message.

    Attributes:
        data: the file's bytes.
        filename: the name shown to the reader (``"2026-W48-new-papers.csv"``).
        mime_type: ``"maintype/subtype"``, e.g. ``"text/csv"`` or ``"image/png"``; ``text/*``
            data must be UTF-8 (the part is labelled ``charset=utf-8``).
        content_id: set for an image the HTML shows with ``<img src="cid:<content_id>">``:
            it is then placed next to the HTML part in ``multipart/related`` instead of
            being a download.
    """

    data: bytes
    filename: str
    mime_type: str = "application/octet-stream"
    content_id: str | None = None


def build_message(
    *,
    subject: str,
    sender: str,
    recipients: Sequence[str],
    html: str,
    text: str,
    date: datetime,
    message_id_domain: str,
    week: str | None = None,
    attachments: Iterable[Attachment] = (),
    max_html_bytes: int = MAX_HTML_BYTES,
) -> EmailMessage:
    """Build the report email: text and HTML alternatives, plus attachments.

    MIME tree (without attachments; both bodies quoted-printable)::

        multipart/alternative
          text/plain; charset=utf-8
          text/html; charset=utf-8

    With attachments the alternative is wrapped in ``multipart/mixed`` followed by the
    files; an attachment with ``content_id`` goes into ``multipart/related`` with the HTML
    part instead. Headers: ``From``, ``To``, ``Subject`` (non-ASCII text, e.g. a Chinese
    venue header, is RFC 2047-encoded when serialised), ``Date``, ``Message-ID``,
    ``Auto-Submitted: auto-generated`` (RFC 3834, so auto-responders stay quiet) and
    ``X-Paperwatch-Week`` when ``week`` is given.

    The result is deterministic: ``Message-ID`` is
    ``<paperwatch.<week>.<16 hex>@<message_id_domain>>`` where the hex digits start the
    SHA-256 of subject, sender, recipients, date, both bodies and every attachment, and
    the multipart boundaries derive from the same hash, so rendering the same week again
    gives the same bytes (``message.as_bytes()``).

    Args:
        subject: the subject (see :func:`subject_for`).
        sender: the ``From`` mailbox.
        recipients: ``To`` mailboxes (at least one).
        html: the HTML part, already inlined (:func:`inline_css`).
        text: the plain-text part.
        date: the ``Date`` header; must be time-zone aware (e.g. the end of the week).
        message_id_domain: right-hand side of the Message-ID (e.g. the sender's domain).
        week: the ISO week the report is about, used in Message-ID and a header.
        attachments: files to attach (see :class:`Attachment`).
        max_html_bytes: size limit passed to :func:`check_email_safety`.

    Returns:
        An :class:`email.message.EmailMessage` with policy :data:`email.policy.SMTP`
        (CRLF line ends), ready for :meth:`Mailer.send`.

    Raises:
        HeaderInjectionError: a subject, address, file name or content id contains a line
            break or control character.
        ValueError: an address is invalid, there is no recipient, ``date`` is naive, or
            ``week`` is not an ISO week.
        UnsafeHtmlError: the HTML fails :func:`check_email_safety`.
    """
    validate_header_value("Subject", subject)
    sender = validate_address(sender, field_name="sender")
    if not recipients:
        raise ValueError("no recipients: set smtp.recipients")
    to = [validate_address(r, field_name=f"recipient {i + 1}") for i, r in enumerate(recipients)]
    validate_header_value("message_id_domain", message_id_domain)
    if not re.fullmatch(r"[A-Za-z0-9.-]+", message_id_domain):
        raise ValueError(f"message_id_domain {message_id_domain!r} is not a domain name")
    if date.tzinfo is None or date.utcoffset() is None:
        raise ValueError("date must be time-zone aware")
    if week is not None and not _WEEK.match(week):
        raise ValueError(f"week {week!r} is not an ISO week like 2026-W48")
    attachments = list(attachments)
    for item in attachments:
        validate_header_value("attachment filename", item.filename)
        if not re.fullmatch(r"[\w.+-]+/[\w.+-]+", item.mime_type):
            raise ValueError(f"attachment {item.filename!r}: bad MIME type {item.mime_type!r}")
        if item.content_id is not None:
            validate_header_value("attachment content_id", item.content_id)
    problems = check_email_safety(html, max_bytes=max_html_bytes)
    if problems:
        raise UnsafeHtmlError(problems)

    digest = hashlib.sha256()
    for piece in (subject, sender, "\0".join(to), date.isoformat(), week or "", text, html):
        digest.update(piece.encode("utf-8") + b"\0")
    for item in attachments:
        for bit in (item.filename, item.mime_type, item.content_id or ""):
            digest.update(bit.encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(item.data).digest())
    token = digest.hexdigest()[:16]

    message = EmailMessage(policy=policy.SMTP)
    message["Subject"] = subject
    message["From"] = sender
    message["To"] = ", ".join(to)
    message["Date"] = format_datetime(date)
    week_part = f"{week}." if week else ""
    message["Message-ID"] = f"<paperwatch.{week_part}{token}@{message_id_domain}>"
    message["Auto-Submitted"] = "auto-generated"
    if week:
        message["X-Paperwatch-Week"] = week
    # quoted-printable keeps both bodies 7-bit (no reliance on 8BITMIME) and readable.
    message.set_content(text, subtype="plain", charset="utf-8", cte="quoted-printable")
    message.add_alternative(html, subtype="html", charset="utf-8", cte="quoted-printable")

    html_part = message.get_body(preferencelist=("html",))
    assert isinstance(html_part, EmailMessage)
    for item in attachments:
        maintype, subtype = item.mime_type.split("/", 1)
        if item.content_id is not None:
            html_part.add_related(
                item.data,
                maintype=maintype,
                subtype=subtype,
                cid=f"<{item.content_id}>",
                filename=item.filename,
                disposition="inline",
            )
    for item in attachments:
        maintype, subtype = item.mime_type.split("/", 1)
        if item.content_id is None:
            # Text attachments are UTF-8: say so, or clients read them as US-ASCII.
            params = {"charset": "utf-8"} if maintype == "text" else None
            message.add_attachment(
                item.data, maintype=maintype, subtype=subtype, filename=item.filename, params=params
            )

    for part in message.walk():
        if part is not message:
            del part["MIME-Version"]  # only the top-level header carries it (RFC 2045 4)
    for n, part in enumerate(p for p in message.walk() if p.is_multipart()):
        part.set_boundary(f"==paperwatch-{token}-{n}==")
    return message


def html_sha256(message: EmailMessage) -> str:
    """SHA-256 (hex) of the message's HTML part: its UTF-8 bytes with LF line ends.

    Line ends are normalised because the body travels with CRLF (RFC 5322) and reads back
    that way, while the rendered report is written with LF; the digest equals
    ``sha256(rendered_html.encode())`` of the HTML passed to :func:`build_message`.
    Returns ``""`` when the message has no HTML part.
    """
    body = message.get_body(preferencelist=("html",))
    if body is None:
        return ""
    html = str(body.get_content()).replace("\r\n", "\n")
    return hashlib.sha256(html.encode("utf-8")).hexdigest()


def message_bytes(message: EmailMessage) -> bytes:
    """The message as sent: RFC 5322 bytes with CRLF line ends (:data:`email.policy.SMTP`)."""
    return message.as_bytes(policy=policy.SMTP)


def _recipients_of(message: EmailMessage) -> list[str]:
    out: list[str] = []
    for name in ("To", "Cc", "Bcc"):
        header = message[name]
        for address in getattr(header, "addresses", ()):
            out.append(address.addr_spec)
    return out


# --------------------------------------------------------------------- mailers


class Mailer(Protocol):
    """Something that delivers one message.

    Attributes:
        dry_run: ``True`` when nothing reaches a reader (a folder of ``.eml`` files for
            ``--dry-run``); :func:`send_report` then records a ``dry_run`` row and never
            marks the week as sent.
        transport: where messages go, for the ``reports`` table and logs
            (``smtp://host:587 (starttls)``, ``eml:reports/out``); holds no secret.
    """

    @property
    def dry_run(self) -> bool: ...

    @property
    def transport(self) -> str: ...

    def send(
        self, message: EmailMessage, *, week: str, reader: str | None = None
    ) -> dict[str, str]:
        """Deliver ``message`` (about ``week``; for one reader of ``smtp.readers``, or,
        with ``reader`` None, the plain recipients).

        Returns:
            Recipients the server refused while accepting the others
            (``{address: "550 no such user"}``); empty when all were accepted.

        Raises:
            MailDeliveryError: nothing was delivered.
        """
        ...


@dataclass
class EmlFolderMailer:
    """Writes each message to ``<folder>/<week>.eml`` instead of sending it.

    The file is the exact bytes an SMTP server would receive (CRLF line ends) and opens
    in any mail client. It is written atomically (temporary file, then rename); an
    existing file for the week is replaced.

    Args:
        folder: where the files go (created when missing), e.g. ``reports/out``.
        dry_run: ``True`` (default) for ``--dry-run``; ``False`` when the folder is a real
            delivery route (an MTA pickup directory), so the send counts as sent.
    """

    folder: Path
    dry_run: bool = True
    last_path: Path | None = field(default=None, init=False)

    @property
    def transport(self) -> str:
        return f"eml:{self.folder}"

    def path_for(self, week: str, reader: str | None = None) -> Path:
        """The file a message about ``week`` is written to: ``<week>.eml``, or for a reader
        ``<week>.for-<address, lowercase, characters other than letters, digits, ``.``,
        ``-``, ``_`` and ``@`` as ``_``>.eml`` (``2026-W48.for-ann@example.org.eml``)."""
        if not _WEEK.match(week):
            raise ValueError(f"week {week!r} is not an ISO week like 2026-W48")
        if reader is None:
            return self.folder / f"{week}.eml"
        slug = re.sub(r"[^a-z0-9.@_-]", "_", parseaddr(reader)[1].lower() or reader.lower())
        return self.folder / f"{week}.for-{slug[:100]}.eml"

    def send(
        self, message: EmailMessage, *, week: str, reader: str | None = None
    ) -> dict[str, str]:
        """Write ``message`` to :meth:`path_for` ``(week, reader)``; returns ``{}``.

        Raises:
            MailDeliveryError: the file could not be written (not transient).
        """
        path = self.path_for(week, reader)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".eml.tmp{os.getpid()}")
            tmp.write_bytes(message_bytes(message))
            os.replace(tmp, path)
        except OSError as exc:
            raise MailDeliveryError(f"cannot write {path}: {exc}", transient=False) from exc
        self.last_path = path
        return {}


class SmtpMailer:
    """Delivers messages over SMTP with :mod:`smtplib`.

    Security (``settings.security``): ``"starttls"`` connects in clear and upgrades with
    STARTTLS before anything else (a server that does not offer it is an error, never a
    silent downgrade); ``"ssl"`` is implicit TLS (port 465); ``"none"`` is plain SMTP, for
    a relay on the same machine. Certificates are verified against the system CA store,
    or against ``settings.ca_file`` when set (a private CA or a self-signed relay
    certificate), and the host name is checked. A password is never sent over an
    unencrypted connection except to a loopback host (localhost, 127.0.0.1, ::1).

    Args:
        settings: ``Settings.smtp``: host, port, security, username, timeout_s, ca_file.
        password: from :func:`resolve_smtp_password`; login happens when both it and
            ``settings.username`` are set. Never logged or shown in errors.
    """

    dry_run = False

    def __init__(self, settings: SmtpSettings, password: SecretStr | None = None) -> None:
        self.settings = settings
        self._password = password

    def __repr__(self) -> str:
        return f"SmtpMailer({self.transport}, user={self.settings.username!r})"

    @property
    def transport(self) -> str:
        return f"smtp://{self._where} ({self.settings.security})"

    @property
    def _where(self) -> str:
        host = self.settings.host
        return f"[{host}]:{self.settings.port}" if ":" in host else f"{host}:{self.settings.port}"

    def _tls_context(self) -> ssl.SSLContext:
        ca_file = self.settings.ca_file
        return ssl.create_default_context(cafile=str(ca_file) if ca_file else None)

    def _connect(self) -> smtplib.SMTP:
        s = self.settings
        if s.security == "ssl":
            context = self._tls_context()
            return smtplib.SMTP_SSL(s.host, s.port, timeout=s.timeout_s, context=context)
        return smtplib.SMTP(s.host, s.port, timeout=s.timeout_s)

    def send(
        self, message: EmailMessage, *, week: str, reader: str | None = None
    ) -> dict[str, str]:
        """Connect, secure, log in if configured, send ``message``, quit (``reader`` only
        names the message in logs; the envelope is the message's ``To``).

        Returns:
            Refused recipients (``{address: "550 ..."}``) when the server accepted others.

        Raises:
            MailDeliveryError: with ``host:port`` and the step that failed: connection
                refused, timed out or closed (transient); TLS handshake or certificate
                failure, STARTTLS not offered, authentication rejected, sender or all
                recipients refused, message rejected (transient only for 4xx replies).
        """
        s = self.settings
        where = self._where
        step = "connect"
        smtp: smtplib.SMTP | None = None
        try:
            smtp = self._connect()
            step = "EHLO"
            smtp.ehlo()
            if s.security == "starttls":
                if not smtp.has_extn("starttls"):
                    raise MailDeliveryError(
                        f"SMTP server {where} does not offer STARTTLS; refusing to send in clear "
                        "(set smtp.security to 'ssl' or 'none' if that is intended)",
                        transient=False,
                    )
                step = "STARTTLS"
                smtp.starttls(context=self._tls_context())
                smtp.ehlo()
            if s.username and self._password is not None:
                if s.security == "none" and s.host not in _LOOPBACK:
                    raise MailDeliveryError(
                        f"refusing to send the SMTP password to {where} over an unencrypted "
                        "connection; set smtp.security to 'starttls' or 'ssl'",
                        transient=False,
                    )
                step = "login"
                smtp.login(s.username, self._password.get_secret_value())
            step = "send"
            refused = smtp.send_message(message)
            step = "QUIT"
            # The message was accepted; a failed goodbye changes nothing.
            with contextlib.suppress(smtplib.SMTPException, OSError):
                smtp.quit()
            smtp = None
            return {addr: f"{code} {_text(reply)}" for addr, (code, reply) in refused.items()}
        except MailDeliveryError:
            raise
        except smtplib.SMTPAuthenticationError as exc:
            raise MailDeliveryError(
                f"SMTP authentication failed at {where} as user {s.username!r}: "
                f"{exc.smtp_code} {_text(exc.smtp_error)} (check the username and the password "
                "in PAPERWATCH_SMTP__PASSWORD or the Secret block smtp.password_block)",
                transient=False,
            ) from exc
        except smtplib.SMTPNotSupportedError as exc:
            raise MailDeliveryError(
                f"SMTP server {where} does not support {step}: {exc}", transient=False
            ) from exc
        except smtplib.SMTPRecipientsRefused as exc:
            codes = [code for code, _ in exc.recipients.values()]
            detail = ", ".join(f"{a}: {c} {_text(r)}" for a, (c, r) in exc.recipients.items())
            raise MailDeliveryError(
                f"SMTP server {where} refused every recipient ({detail})",
                transient=all(400 <= c < 500 for c in codes),
            ) from exc
        except smtplib.SMTPResponseException as exc:
            raise MailDeliveryError(
                f"SMTP server {where} rejected {step}: {exc.smtp_code} {_text(exc.smtp_error)}",
                transient=400 <= exc.smtp_code < 500,
            ) from exc
        except ssl.SSLCertVerificationError as exc:
            raise MailDeliveryError(
                f"TLS certificate of SMTP server {where} not trusted: {exc.verify_message} "
                "(for a private CA or self-signed relay set smtp.ca_file)",
                transient=False,
            ) from exc
        except ssl.SSLError as exc:
            raise MailDeliveryError(
                f"TLS handshake with SMTP server {where} failed during {step}: {exc}",
                transient=False,
            ) from exc
        except ConnectionRefusedError as exc:
            raise MailDeliveryError(
                f"cannot connect to SMTP server {where}: connection refused "
                "(is the server running and smtp.host/smtp.port right?)",
                transient=True,
            ) from exc
        except TimeoutError as exc:
            raise MailDeliveryError(
                f"SMTP server {where} timed out during {step} after {s.timeout_s:g} s",
                transient=True,
            ) from exc
        except socket.gaierror as exc:
            raise MailDeliveryError(
                f"cannot resolve SMTP host {s.host!r}: {exc.strerror}", transient=True
            ) from exc
        except (smtplib.SMTPServerDisconnected, OSError) as exc:
            raise MailDeliveryError(
                f"SMTP connection to {where} failed during {step}: {exc}", transient=True
            ) from exc
        finally:
            if smtp is not None:
                with contextlib.suppress(OSError):
                    smtp.close()


def _text(reply: bytes | str) -> str:
    return reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)


def resolve_smtp_password(settings: Settings | SmtpSettings) -> SecretStr | None:
    """The SMTP password: ``smtp.password`` (environment) first, else a Prefect Secret block.

    ``smtp.password`` is only ever set from the environment (``PAPERWATCH_SMTP__PASSWORD``;
    the TOML loader refuses it). Otherwise, when ``smtp.password_block`` names a Prefect
    Secret block, its value is loaded (``Secret.load(name).get()``; needs the Prefect API).
    The value is returned wrapped in :class:`pydantic.SecretStr` and never logged.

    Args:
        settings: the whole :class:`~paperwatch.settings.Settings` or its ``smtp`` part.

    Returns:
        The password, or ``None`` when neither is configured (no login).

    Raises:
        RuntimeError: the Secret block cannot be loaded (the message names the block only).
    """
    smtp = settings.smtp if isinstance(settings, Settings) else settings
    if smtp.password is not None:
        return smtp.password
    if not smtp.password_block:
        return None
    from prefect.blocks.system import Secret

    try:
        block = cast(Secret, Secret.load(smtp.password_block))
        value = block.get()
    except Exception as exc:
        raise RuntimeError(
            f"cannot load the SMTP password from Prefect Secret block "
            f"{smtp.password_block!r}: {type(exc).__name__}"
        ) from None
    return SecretStr(str(value))


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
    """Send the report of ``week`` at most once, retrying transient failures; record it.

    "Once" is per week and reader: the message of one reader of ``smtp.readers``
    (``reader``, their address) is recorded with ``reports.reader`` set, the message to
    the plain recipients with it null, and each is refused again on its own.

    Before the first attempt a ``sending`` row is inserted in ``reports``; it becomes
    ``sent`` (with recipients, Message-ID, SHA-256 of the HTML part and of the message,
    attempts, refused recipients in ``error``) or ``failed`` (with the last error). A
    ``sending`` row left behind by a process that died mid-send blocks further sends of
    that week: it may have been delivered. Transient failures (connection refused or
    timed out, 4xx) are retried ``retries`` times after ``backoff_s * 2**k`` seconds
    (k = 0, 1, ...); permanent ones (authentication, TLS, 5xx) are not.

    A dry-run mailer (``mailer.dry_run``) writes its file and records a ``dry_run`` row;
    it is never refused and never marks the week as sent.

    A resend of a week already delivered gets a fresh Message-ID
    (``<paperwatch.<week>.<hash>.r<n>@domain>``, n = deliveries so far) on a copy of
    ``message``, because mail clients drop a message whose Message-ID they have seen.

    ``con`` should be the writer connection; holding it for the whole send (at most
    ``(retries + 1) * smtp.timeout_s`` plus the backoff) is what keeps two processes
    from sending the same week.

    Args:
        con: a read-write DuckDB connection with the schema applied.
        mailer: an :class:`SmtpMailer` or :class:`EmlFolderMailer`.
        week: the ISO week, e.g. ``2026-W48``.
        message: from :func:`build_message`.
        resend: send even if the week was sent (or a send was interrupted).
        retries: extra attempts after the first for transient failures (>= 0).
        backoff_s: first wait between attempts, in seconds; doubles each time.
        sleep, clock: injectable for tests (``clock`` returns an aware UTC datetime).
        reader: the reader this message is for (canonical address), or None for the
            message to the plain recipients.

    Returns:
        A :class:`SendOutcome`; ``status == "failed"`` when every attempt failed
        (call :meth:`SendOutcome.raise_for_failure` to turn that into an exception).

    Raises:
        AlreadySentError: the week was sent (message gives when, to whom, Message-ID) or
            a send of it was interrupted, and ``resend`` is false.
        ValueError: ``week`` is not an ISO week or ``retries < 0``.
    """
    if not _WEEK.match(week):
        raise ValueError(f"week {week!r} is not an ISO week like 2026-W48")
    if retries < 0:
        raise ValueError("retries must be >= 0")
    history = query(con, "report_sends", week=week, reader=reader)
    sent = [row for row in history if row["kind"] == "sent"]
    interrupted = history[-1] if history and history[-1]["kind"] == "sending" else None
    previously_sent_at = sent[-1]["happened_at"] if sent else None

    if not mailer.dry_run and not resend:
        if sent:
            last = sent[-1]
            when = f"{last['happened_at']:%Y-%m-%d %H:%M %Z}"
            raise AlreadySentError(
                f"week {week} was already sent on {when} to "
                f"{', '.join(last['recipients'] or [])} (Message-ID {last['message_id']}); "
                "use --resend to send it again"
            )
        if interrupted is not None:
            raise AlreadySentError(
                f"a send of the report of {week} started at "
                f"{interrupted['started_at']:%Y-%m-%d %H:%M %Z} via {interrupted['transport']} "
                "never finished: it may have been delivered. Check the mailbox; use --resend "
                "to send it anyway"
            )
    if resend and sent and not mailer.dry_run:
        message = _with_resend_message_id(message, len(sent))

    recipients = _recipients_of(message)
    body_sha = html_sha256(message)
    message_sha = hashlib.sha256(message_bytes(message)).hexdigest()
    message_id = str(message["Message-ID"])

    if mailer.dry_run:
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

    started = clock()
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
        started_at=started,
        reader=reader,
    )[0]["report_id"]

    attempts = 0
    error: str | None = None
    transient = False
    refused: dict[str, str] = {}
    while True:
        attempts += 1
        try:
            refused = mailer.send(message, week=week, reader=reader)
            error = None
            break
        except MailDeliveryError as exc:
            error = str(exc)
            transient = exc.transient
            log.warning("report %s: attempt %d failed: %s", week, attempts, error)
            if not exc.transient or attempts > retries:
                break
            sleep(backoff_s * 2 ** (attempts - 1))

    status: Literal["sent", "failed"] = "failed" if error else "sent"
    note = error
    if status == "sent" and refused:
        note = "refused: " + "; ".join(f"{a}: {r}" for a, r in sorted(refused.items()))
    query(
        con,
        "finish_report_send",
        report_id=report_id,
        kind=status,
        attempts=attempts,
        error=note,
        at=clock(),
    )
    if status == "sent":
        log.info("report %s sent via %s (%s)", week, mailer.transport, message_id)
    return SendOutcome(
        week, status, message_id, recipients, body_sha, message_sha, attempts, note, refused,
        mailer.transport, report_id, getattr(mailer, "last_path", None), previously_sent_at,
        transient=status == "failed" and transient,
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
