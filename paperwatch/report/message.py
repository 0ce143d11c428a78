"""Build the report's e-mail: addresses and headers checked, CSS inlined, MIME assembled.

:func:`build_message` makes ``multipart/alternative`` (text/plain, text/html), wrapped in
``multipart/mixed`` when files are attached, with the standard library (not prefect-email:
docs/design.md, "Where the report and the mail live"). Its bytes are a pure function of
the inputs: ``Date`` is given, ``Message-ID`` and MIME boundaries derive from a hash of
the content.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from email import errors, policy
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr
from typing import TYPE_CHECKING

import css_inline

from paperwatch.report.email_safety import MAX_HTML_BYTES, check_email_safety, keep_media_rules
from paperwatch.report.papers_csv import csv_name
from paperwatch.settings import Reader, SmtpSettings

if TYPE_CHECKING:
    from paperwatch.report.render import RenderedReport

__all__ = [
    "Attachment",
    "HeaderInjectionError",
    "MailSettingsError",
    "UnsafeHtmlError",
    "build_message",
    "check_email_safety",
    "configured_addresses",
    "configured_readers",
    "html_sha256",
    "inline_css",
    "message_bytes",
    "recipients_of",
    "report_message",
    "require_iso_week",
    "subject_for",
    "validate_address",
    "validate_header_value",
]

_WEEK = re.compile(r"\A\d{4}-W(0[1-9]|[1-4]\d|5[0-3])\Z")
# CR, LF, NUL and the other C0 controls except TAB, DEL, and the characters Python's
# str.splitlines() (used by the email package when folding) treats as line breaks.
_HEADER_BREAKS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")


# --------------------------------------------------------------------------- errors


class HeaderInjectionError(ValueError):
    """A header value (subject, address, file name) contains a line break or control character."""


class UnsafeHtmlError(ValueError):
    """The HTML part failed :func:`paperwatch.report.email_safety.check_email_safety`."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("HTML is not safe to email: " + "; ".join(self.problems))


def require_iso_week(week: str) -> str:
    """Return ``week`` when it is an ISO week ``YYYY-Www`` (W01-W53).

    Raises:
        ValueError: it is not (``week '2026-48' is not an ISO week like 2026-W48``).
    """
    if not _WEEK.match(week):
        raise ValueError(f"week {week!r} is not an ISO week like 2026-W48")
    return week


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

    css-inline copies every ``<style>`` rule into the ``style`` attributes of the elements
    it matches (existing ones win), drops ``<link>`` without fetching it, and keeps only
    ``@media`` rules without external ``url()`` in one ``<style>`` block.

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

    MIME: ``multipart/alternative`` (text/plain, text/html; UTF-8, quoted-printable),
    wrapped in ``multipart/mixed`` with the attachments; one with ``content_id`` goes into
    ``multipart/related`` with the HTML part. Headers: From, To, Subject (RFC 2047 when
    non-ASCII), Date, ``Message-ID: <paperwatch.<week>.<16 hex>@<message_id_domain>>``
    (the hex from a SHA-256 of every input, as are the MIME boundaries: the same inputs
    give the same bytes), ``Auto-Submitted: auto-generated`` (RFC 3834) and
    ``X-Paperwatch-Week`` when ``week`` is given.

    Args:
        subject, sender, recipients: the headers (:func:`subject_for`; at least one
            recipient).
        html: the HTML part, already inlined (:func:`inline_css`); ``text``: the text part.
        date: the ``Date`` header, time-zone aware.
        message_id_domain: right-hand side of the Message-ID (e.g. the sender's domain).
        week: the ISO week the report is about, or None.
        attachments: files to attach (:class:`Attachment`).
        max_html_bytes: size limit passed to :func:`check_email_safety`.

    Returns:
        An :class:`~email.message.EmailMessage` with policy :data:`email.policy.SMTP`.

    Raises:
        HeaderInjectionError: a subject, address, file name or content id contains a line
            break or control character.
        ValueError: an address is invalid, no recipient, ``date`` naive, ``week`` not an
            ISO week, a bad MIME type or domain.
        UnsafeHtmlError: the HTML fails :func:`check_email_safety`.
    """
    sender, to = _checked_headers(subject, sender, recipients, message_id_domain, date, week)
    attachments = list(attachments)
    _check_attachments(attachments)
    problems = check_email_safety(html, max_bytes=max_html_bytes)
    if problems:
        raise UnsafeHtmlError(problems)
    token = _content_token(subject, sender, to, date, week, text, html, attachments)

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
    _attach(message, attachments)

    for part in message.walk():
        if part is not message:
            del part["MIME-Version"]  # only the top-level header carries it (RFC 2045 4)
    for n, part in enumerate(p for p in message.walk() if p.is_multipart()):
        part.set_boundary(f"==paperwatch-{token}-{n}==")
    return message


def _checked_headers(
    subject: str,
    sender: str,
    recipients: Sequence[str],
    message_id_domain: str,
    date: datetime,
    week: str | None,
) -> tuple[str, list[str]]:
    """The sender and recipients in canonical form, after every header check of
    :func:`build_message` (same errors)."""
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
    return sender, to


def _check_attachments(attachments: Sequence[Attachment]) -> None:
    for item in attachments:
        validate_header_value("attachment filename", item.filename)
        if not re.fullmatch(r"[\w.+-]+/[\w.+-]+", item.mime_type):
            raise ValueError(f"attachment {item.filename!r}: bad MIME type {item.mime_type!r}")
        if item.content_id is not None:
            validate_header_value("attachment content_id", item.content_id)


def _content_token(
    subject: str,
    sender: str,
    to: Sequence[str],
    date: datetime,
    week: str | None,
    text: str,
    html: str,
    attachments: Sequence[Attachment],
) -> str:
    """16 hex digits of the SHA-256 of every input of the message."""
    digest = hashlib.sha256()
    for piece in (subject, sender, "\0".join(to), date.isoformat(), week or "", text, html):
        digest.update(piece.encode("utf-8") + b"\0")
    for item in attachments:
        for bit in (item.filename, item.mime_type, item.content_id or ""):
            digest.update(bit.encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(item.data).digest())
    return digest.hexdigest()[:16]


def _attach(message: EmailMessage, attachments: Sequence[Attachment]) -> None:
    """Images with a content id next to the HTML part (``multipart/related``), then the
    other files as attachments."""
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


def recipients_of(message: EmailMessage) -> list[str]:
    """The envelope recipients of ``message``: the addresses of To, Cc and Bcc, in order."""
    out: list[str] = []
    for name in ("To", "Cc", "Bcc"):
        header = message[name]
        for address in getattr(header, "addresses", ()):
            out.append(address.addr_spec)
    return out


def report_message(
    report: RenderedReport,
    *,
    sender: str,
    recipients: Sequence[str],
    date: datetime,
) -> EmailMessage:
    """The e-mail of a rendered report: text and HTML alternatives plus the CSV attached.

    MIME tree: ``multipart/mixed`` of ``multipart/alternative`` (text/plain, text/html)
    and ``text/csv`` named ``<week>-new-papers.csv``. The ``Message-ID`` domain is the
    sender's.

    Args:
        report: from :func:`paperwatch.report.render.render_report`.
        sender: the ``From`` mailbox (``smtp.sender``).
        recipients: ``To`` mailboxes (``smtp.recipients``).
        date: the ``Date`` header, time-zone aware (the flow's clock: ``--as-of`` or now).

    Returns:
        The message (:func:`build_message`); deterministic.

    Raises:
        HeaderInjectionError: the subject or an address contains a line break or control
            character.
        ValueError: an address is invalid, no recipient, ``date`` naive.
        UnsafeHtmlError: the HTML fails the e-mail safety check (for example over
            :data:`~paperwatch.report.email_safety.MAX_HTML_BYTES`).
    """
    domain = parseaddr(sender)[1].rpartition("@")[2] or "localhost"
    return build_message(
        subject=report.subject or subject_for([], report.week, 0, 0),
        sender=sender,
        recipients=recipients,
        html=report.html,
        text=report.text,
        date=date,
        message_id_domain=domain,
        week=report.week,
        attachments=[Attachment(report.csv, csv_name(report.week), "text/csv")],
        max_html_bytes=MAX_HTML_BYTES,
    )
