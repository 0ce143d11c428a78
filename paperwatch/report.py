"""The weekly report: gather the week's data from DuckDB, render HTML and plain text.

:func:`collect_report` reads (queries in ``sql/queries/report_*.sql``);
:func:`render_report` is pure (templates in ``reports/templates/``, autoescaped
HTML with CSS inlined for mail clients, and a plain-text alternative). The same
data renders to the same bytes: nothing in the body depends on the time of
rendering.

The report written to disk is the one that is e-mailed (docs/email.md, "Long
weeks"): lists are cut at :data:`MAX_LISTED` rows and, if still needed, to fit
:data:`HTML_BUDGET_BYTES`, with "and N more"; every new paper of the week is in
the CSV file :func:`new_papers_csv` makes, attached to the message and written
beside the report.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from email.message import EmailMessage
from email.utils import parseaddr
from functools import cache
from pathlib import Path
from typing import Any

import duckdb
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from paperwatch import __version__, db
from paperwatch.clock import parse_week, week_days
from paperwatch.dedup import word_diff
from paperwatch.email_safety import MAX_HTML_BYTES
from paperwatch.mailer import Attachment, build_message, inline_css, subject_for
from paperwatch.resources import resource_dir
from paperwatch.settings import Settings
from paperwatch.trending import trending_terms_for_week

#: Rows listed per list (new papers, repeated papers) before "and N more". The rest are
#: in the attached CSV and in the database.
MAX_LISTED = 100

#: Largest HTML (UTF-8 bytes, after CSS inlining) :func:`render_report` produces when it
#: can by listing fewer rows. 10 % under :data:`~paperwatch.email_safety.MAX_HTML_BYTES`
#: (Gmail clips at about 102 KB), a margin for the CRLF line ends the part travels with.
HTML_BUDGET_BYTES = 90_000

#: First sentences longer than this (characters) are cut with "…" in the report; the CSV
#: has them whole.
MAX_SENTENCE_CHARS = 320

#: Columns of the new-papers CSV, in order.
NEW_PAPERS_CSV_COLUMNS = (
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
)


@dataclass(slots=True)
class ReportData:
    """Everything a weekly report shows. ``week`` is an ISO week (``2026-W48``)."""

    week: str
    monday: str
    sunday: str
    timezone: str
    figures: dict[str, Any]
    new_papers: list[dict[str, Any]]
    duplicates: list[dict[str, Any]] = field(default_factory=list)
    revisions: list[dict[str, Any]] = field(default_factory=list)
    quality: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {"suites": [], "quarantined": [], "warnings": []}
    )
    sections: dict[str, Any] = field(default_factory=dict)
    near_threshold: float = 0.8


@dataclass(frozen=True, slots=True)
class RenderedReport:
    """A rendered report.

    Attributes:
        week: ISO week ``YYYY-Www``.
        html: the HTML document, CSS inlined (:func:`paperwatch.mailer.inline_css`).
        text: the plain-text alternative.
        subject: the e-mail subject (:func:`paperwatch.mailer.subject_for`).
        csv: every new paper of the week (:func:`new_papers_csv`), UTF-8 bytes.
        listed: rows shown per list (the rest are "and N more").
    """

    week: str
    html: str
    text: str
    subject: str = ""
    csv: bytes = b""
    listed: int = 0

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.html.encode("utf-8")).hexdigest()


def collect_report(
    con: duckdb.DuckDBPyConnection, week: str, settings: Settings, *, persist: bool = True
) -> ReportData:
    """Read the data of ``week`` from the database.

    Args:
        con: a connection; read-write when ``persist`` (the week's trending terms are
            then stored in ``trending_terms``).
        week: ISO week ``YYYY-Www``.
        settings: the time zone the weeks were computed in, and the trending settings.

    Raises:
        ValueError: ``week`` is not a valid ISO week.
    """
    parse_week(week)
    monday, sunday = week_days(week)
    figures = db.query(con, "report_figures", week=week)[0]
    return ReportData(
        week=week,
        monday=monday.isoformat(),
        sunday=sunday.isoformat(),
        timezone=settings.timezone,
        figures=figures,
        new_papers=db.query(con, "report_new_papers", week=week),
        duplicates=db.query(con, "report_duplicates", week=week),
        revisions=db.query(con, "report_revisions", week=week),
        quality={
            "suites": db.query(con, "report_data_quality", week=week),
            "quarantined": db.query(con, "report_quarantine", week=week),
            "warnings": db.query(con, "report_warnings"),
        },
        sections={"trending": trending_terms_for_week(con, week, settings, persist=persist)},
        near_threshold=settings.dedup.threshold,
    )


@cache
def _environment() -> Environment:
    env = Environment(
        extensions=["jinja2.ext.do"],
        loader=FileSystemLoader(str(resource_dir("templates"))),
        autoescape=select_autoescape(enabled_extensions=("html", "html.j2"), default=False),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["plural"] = lambda n, word, words=None: (
        f"{n:,} {word}" if n == 1 else f"{n:,} {words or word + 's'}"
    )
    env.filters["safe_url"] = safe_url
    env.filters["printable"] = printable
    # Word diffs are computed for the rows a report lists only, not for every pair of the week.
    env.globals["word_diff"] = word_diff
    env.filters["url_label"] = url_label
    return env


def csv_name(week: str) -> str:
    """File name of the week's new-papers CSV: ``<week>-new-papers.csv``."""
    return f"{week}-new-papers.csv"


def _csv_cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        value = " ".join(str(v) for v in value)
    text = str(value)
    # A cell starting like a formula runs as one in spreadsheets (OWASP "CSV injection").
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def new_papers_csv(papers: Sequence[Mapping[str, Any]]) -> bytes:
    """The week's new papers as a CSV file.

    Args:
        papers: rows with at least the keys of :data:`NEW_PAPERS_CSV_COLUMNS`
            (``code_urls`` a list of strings), as :func:`collect_report` returns them.

    Returns:
        RFC 4180 CSV (CRLF line ends, fields quoted when needed), UTF-8 with a byte-order
        mark so that spreadsheet programs read accents and typographic quotes right. A
        header row, then one row per paper in the given order; ``code_urls`` joined with
        a space; a value starting with ``=``, ``+``, ``-``, ``@``, TAB or CR is prefixed
        with ``'`` so that no spreadsheet evaluates it (OWASP, "CSV Injection").
    """
    # Encoded as written: a week of 500,000 papers would otherwise hold the text twice more.
    buffer = io.BytesIO()
    out = io.TextIOWrapper(buffer, encoding="utf-8-sig", newline="", write_through=True)
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(NEW_PAPERS_CSV_COLUMNS)
    for paper in papers:
        writer.writerow([_csv_cell(paper.get(column)) for column in NEW_PAPERS_CSV_COLUMNS])
    out.flush()
    data = buffer.getvalue()
    out.close()
    return data


def url_label(url: str, limit: int = 60) -> str:
    """Link text for ``url``: without ``http(s)://`` and a trailing slash, cut at ``limit``
    characters with "…" (``https://github.com/a/b/`` → ``github.com/a/b``)."""
    label = url.split("://", 1)[-1].rstrip("/")
    return label if len(label) <= limit else label[: limit - 1] + "…"


def printable(value: object) -> str:
    """``value`` as text with control characters (NUL, ESC, bidi overrides…) shown as U+FFFD.

    For raw text that was quarantined: it may hold anything, and a terminal, mail
    client or browser must only ever see it as inert text.
    """
    return "".join(
        c if c.isprintable() or c in "\n\t" else "\ufffd"
        for c in str(value if value is not None else "")
    )


def safe_url(url: object) -> str | None:
    """``url`` when it is an http(s) URL, else None (no ``javascript:`` or ``data:`` links)."""
    text = str(url or "").strip()
    return text if text.lower().startswith(("http://", "https://")) and " " not in text else None


def report_subject(data: ReportData) -> str:
    """The e-mail subject of ``data``'s week (see :func:`paperwatch.mailer.subject_for`).

    Duplicates are the exact ones plus, when the near-duplicate section is present,
    ``figures["near_duplicates"]``.
    """
    duplicates = int(data.figures.get("exact_duplicates") or 0)
    duplicates += int(data.figures.get("near_duplicates") or 0)
    return subject_for(
        list(data.figures.get("venues") or []),
        data.week,
        int(data.figures.get("new_papers") or 0),
        duplicates,
    )


def _render_html(data: ReportData, listed: int) -> str:
    context = _context(data, listed)
    html = inline_css(_environment().get_template("report.html.j2").render(context))
    # End with a newline, as a MIME body does: the HTML part of the message then has the
    # same bytes (and sha256) as the file written to disk.
    return html if html.endswith("\n") else html + "\n"


def _context(data: ReportData, listed: int) -> dict[str, Any]:
    return {
        "r": data,
        "max_listed": listed,
        "max_sentence": MAX_SENTENCE_CHARS,
        "csv_name": csv_name(data.week),
        "version": __version__,
        "near_threshold": data.near_threshold,
        **data.sections,
    }


def render_report(
    data: ReportData,
    *,
    max_listed: int = MAX_LISTED,
    budget_bytes: int = HTML_BUDGET_BYTES,
) -> RenderedReport:
    """Render ``data`` with ``report.html.j2`` (CSS then inlined) and ``report.txt.j2``.

    Everything from the listings is escaped by Jinja2's autoescape; links are only
    http(s), other code URLs are shown as text. Each list shows at most ``max_listed``
    rows and, when the inlined HTML would still exceed ``budget_bytes``, the largest
    number of rows that fits (binary search; the size grows with the rows shown), then
    "and N more". The plain-text part lists the same rows, so both parts name the same
    papers. First sentences are cut at :data:`MAX_SENTENCE_CHARS` characters.

    Args:
        data: from :func:`collect_report` (or built by hand in tests).
        max_listed: rows per list at most (>= 0).
        budget_bytes: UTF-8 size the HTML should stay under. When even zero rows do
            not fit, the zero-row HTML is returned and
            :func:`paperwatch.mailer.build_message` will refuse it.

    Returns:
        A :class:`RenderedReport`; the same ``data`` always gives the same bytes.

    Raises:
        paperwatch.mailer.UnsafeHtmlError: the template produced unsafe HTML (a bug).
        ValueError: ``max_listed`` is negative.
    """
    if max_listed < 0:
        raise ValueError("max_listed must be >= 0")
    longest = max(
        len(data.new_papers), len(data.duplicates), len(data.quality.get("quarantined", []))
    )
    listed = min(max_listed, longest)
    html = _render_html(data, listed)
    if len(html.encode("utf-8")) > budget_bytes and listed > 0:
        low, high = 0, listed - 1
        listed, html = 0, _render_html(data, 0)
        while low <= high:
            middle = (low + high) // 2
            candidate = _render_html(data, middle)
            if len(candidate.encode("utf-8")) <= budget_bytes:
                listed, html = middle, candidate
                low = middle + 1
            else:
                high = middle - 1
    text = _environment().get_template("report.txt.j2").render(_context(data, listed))
    return RenderedReport(
        week=data.week,
        html=html,
        text=text,
        subject=report_subject(data),
        csv=new_papers_csv(data.new_papers),
        listed=listed,
    )


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
        report: from :func:`render_report`.
        sender: the ``From`` mailbox (``smtp.sender``).
        recipients: ``To`` mailboxes (``smtp.recipients``).
        date: the ``Date`` header, time-zone aware (the flow's clock: ``--as-of`` or now).

    Returns:
        The message (see :func:`paperwatch.mailer.build_message`); deterministic.

    Raises:
        paperwatch.mailer.HeaderInjectionError: the subject or an address contains a
            line break or control character.
        ValueError: an address is invalid, no recipient, ``date`` naive.
        paperwatch.mailer.UnsafeHtmlError: the HTML fails the e-mail safety check (for
            example over :data:`~paperwatch.email_safety.MAX_HTML_BYTES`).
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


def write_report(report: RenderedReport, folder: Path) -> tuple[Path, Path]:
    """Write ``<week>.html``, ``<week>.txt`` and ``<week>-new-papers.csv`` into ``folder``.

    The folder is created when missing. Files are written to a temporary name and
    renamed, so a reader never sees half a report. The CSV is written only when
    ``report.csv`` is not empty.

    Returns:
        The paths of the HTML and of the text file (the CSV is ``folder / csv_name(week)``).
    """
    folder.mkdir(parents=True, exist_ok=True)
    bodies: list[tuple[Path, bytes]] = [
        (folder / f"{report.week}.html", report.html.encode("utf-8")),
        (folder / f"{report.week}.txt", report.text.encode("utf-8")),
    ]
    if report.csv:
        bodies.append((folder / csv_name(report.week), report.csv))
    for path, body in bodies:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(body)
        tmp.replace(path)
    return bodies[0][0], bodies[1][0]


def record_rendered(
    con: duckdb.DuckDBPyConnection, report: RenderedReport, path: Path, at: Any
) -> None:
    """Add a ``rendered`` row to ``reports``."""
    con.execute(
        "insert into reports (week, kind, path, sha256, happened_at) values (?, 'rendered', ?, ?, ?)",
        [report.week, str(path), report.sha256, at],
    )
