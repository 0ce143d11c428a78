"""Deliver a built message: over SMTP (:class:`SmtpMailer`) or into ``.eml`` files
(:class:`EmlFolderMailer`), retrying transient failures (:func:`deliver`).

Recording what was sent is :mod:`paperwatch.db.sends`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import smtplib
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import parseaddr
from pathlib import Path
from typing import Protocol

from pydantic import SecretStr

from paperwatch.report.message import message_bytes, require_iso_week
from paperwatch.settings import SmtpSettings

log = logging.getLogger(__name__)

_LOOPBACK = {"localhost", "127.0.0.1", "::1"}


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
        require_iso_week(week)
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
        password: from :func:`paperwatch.secrets.resolve_smtp_password`; login happens when both it and
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
        except (smtplib.SMTPException, OSError) as exc:
            error = self._delivery_error(exc, step)
            if error is None:
                raise
            raise error from exc
        finally:
            if smtp is not None:
                with contextlib.suppress(OSError):
                    smtp.close()

    def _delivery_error(self, exc: BaseException, step: str) -> MailDeliveryError | None:
        """The :class:`MailDeliveryError` that says what ``exc`` (raised during ``step``)
        means for the reader of the error, or None for an error that is not a delivery
        failure (it then propagates as it is)."""
        s = self.settings
        where = self._where
        if isinstance(exc, smtplib.SMTPAuthenticationError):
            return MailDeliveryError(
                f"SMTP authentication failed at {where} as user {s.username!r}: "
                f"{exc.smtp_code} {_text(exc.smtp_error)} (check the username and the password "
                "in PAPERWATCH_SMTP__PASSWORD or the Secret block smtp.password_block)",
                transient=False,
            )
        if isinstance(exc, smtplib.SMTPNotSupportedError):
            return MailDeliveryError(
                f"SMTP server {where} does not support {step}: {exc}", transient=False
            )
        if isinstance(exc, smtplib.SMTPRecipientsRefused):
            codes = [code for code, _ in exc.recipients.values()]
            detail = ", ".join(f"{a}: {c} {_text(r)}" for a, (c, r) in exc.recipients.items())
            return MailDeliveryError(
                f"SMTP server {where} refused every recipient ({detail})",
                transient=all(400 <= c < 500 for c in codes),
            )
        if isinstance(exc, smtplib.SMTPResponseException):
            return MailDeliveryError(
                f"SMTP server {where} rejected {step}: {exc.smtp_code} {_text(exc.smtp_error)}",
                transient=400 <= exc.smtp_code < 500,
            )
        if isinstance(exc, ssl.SSLCertVerificationError):
            return MailDeliveryError(
                f"TLS certificate of SMTP server {where} not trusted: {exc.verify_message} "
                "(for a private CA or self-signed relay set smtp.ca_file)",
                transient=False,
            )
        if isinstance(exc, ssl.SSLError):
            return MailDeliveryError(
                f"TLS handshake with SMTP server {where} failed during {step}: {exc}",
                transient=False,
            )
        if isinstance(exc, ConnectionRefusedError):
            return MailDeliveryError(
                f"cannot connect to SMTP server {where}: connection refused "
                "(is the server running and smtp.host/smtp.port right?)",
                transient=True,
            )
        if isinstance(exc, TimeoutError):
            return MailDeliveryError(
                f"SMTP server {where} timed out during {step} after {s.timeout_s:g} s",
                transient=True,
            )
        if isinstance(exc, socket.gaierror):
            return MailDeliveryError(
                f"cannot resolve SMTP host {s.host!r}: {exc.strerror}", transient=True
            )
        if isinstance(exc, smtplib.SMTPServerDisconnected | OSError):
            return MailDeliveryError(
                f"SMTP connection to {where} failed during {step}: {exc}", transient=True
            )
        return None


def _text(reply: bytes | str) -> str:
    return reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)


@dataclass(frozen=True, slots=True)
class Delivery:
    """What :func:`deliver` did.

    Attributes:
        attempts: delivery attempts made (>= 1).
        error: the last failure's message, or None when delivered.
        transient: whether that failure was transient (:attr:`MailDeliveryError.transient`).
        refused: recipients the server refused while accepting the others.
    """

    attempts: int
    error: str | None
    transient: bool
    refused: dict[str, str]


def deliver(
    mailer: Mailer,
    message: EmailMessage,
    *,
    week: str,
    reader: str | None,
    retries: int,
    backoff_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> Delivery:
    """Send ``message`` with ``mailer``, retrying transient failures ``retries`` times after
    ``backoff_s * 2**k`` seconds (k = 0, 1, ...); permanent failures are not retried.

    Each failed attempt is logged as a warning. Never raises :class:`MailDeliveryError`:
    the last one is in :attr:`Delivery.error`.
    """
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
    return Delivery(attempts, error, transient, refused)
