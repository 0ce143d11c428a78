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
import dataclasses
import hashlib
import io
import re
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import parseaddr
from functools import cache
from pathlib import Path
from typing import Any

import duckdb
import jinja2
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from jinja2.bccache import Bucket, FileSystemBytecodeCache

from paperwatch import __version__, db
from paperwatch.analysis.related import related_earlier_papers, store_related_papers
from paperwatch.clock import now_utc, parse_week, week_days
from paperwatch.db.trends import trending_terms_for_week
from paperwatch.report.email_safety import MAX_HTML_BYTES
from paperwatch.report.mail import Attachment, build_message, inline_css, subject_for
from paperwatch.resources import resource_dir
from paperwatch.settings import Reader, Settings

#: Rows listed per list (new papers, repeated papers) before "and N more". The rest are
#: in the attached CSV and in the database.
MAX_LISTED = 100

#: Largest HTML (UTF-8 bytes, after CSS inlining) :func:`render_report` produces when it
#: can by listing fewer rows. 10 % under :data:`~paperwatch.report.email_safety.MAX_HTML_BYTES`
#: (Gmail clips at about 102 KB), a margin for the CRLF line ends the part travels with.
HTML_BUDGET_BYTES = 90_000

#: First sentences longer than this (characters) are cut with "…" in the report; the CSV
#: has them whole.
MAX_SENTENCE_CHARS = 320

_BLANK_RUNS = re.compile(r"\n(?:[ \t]*\n){2,}")

#: Papers listed in a reader's "For you" section at most; the rest are counted.
MAX_FOR_YOU = 20

#: File name of the archive page in the report folder.
ARCHIVE_NAME = "index.html"

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
    #: Related earlier papers by new paper_id (rows of ``report_related.sql``, by rank).
    related: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: A reader's "For you" section (:func:`for_reader`), or None in the shared report.
    for_you: dict[str, Any] | None = None

    @property
    def empty(self) -> bool:
        """True when no listing file was first seen in the week ("no new listings")."""
        return not self.figures.get("files") and not self.new_papers


@dataclass(frozen=True, slots=True)
class RenderedReport:
    """A rendered report.

    Attributes:
        week: ISO week ``YYYY-Www``.
        html: the HTML document, CSS inlined (:func:`paperwatch.report.mail.inline_css`).
        text: the plain-text alternative.
        subject: the e-mail subject (:func:`paperwatch.report.mail.subject_for`).
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
            then stored in ``trending_terms`` and its related earlier papers in
            ``related_papers``, :mod:`paperwatch.analysis.related`); read-only computes both
            without storing them.
        week: ISO week ``YYYY-Www``.
        settings: the time zone the weeks were computed in, and the trending settings.

    Raises:
        ValueError: ``week`` is not a valid ISO week.
    """
    parse_week(week)
    monday, sunday = week_days(week)
    figures = db.query(con, "report_figures", week=week)[0]
    if persist:
        store_related_papers(con, week, related_earlier_papers(con, week), now_utc())
        shown = db.query(con, "report_related", week=week)
    else:
        shown = _related_rows(con, week)
    related: dict[str, list[dict[str, Any]]] = {}
    for row in shown:
        related.setdefault(row["paper_id"], []).append(row)
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
            "warnings": db.query(con, "report_warnings", week=week),
        },
        sections={"trending": trending_terms_for_week(con, week, settings, persist=persist)},
        near_threshold=settings.dedup.threshold,
        related=related,
    )


def _related_rows(con: duckdb.DuckDBPyConnection, week: str) -> list[dict[str, Any]]:
    """Related papers computed now, without storing them (a read-only connection)."""
    rows = related_earlier_papers(con, week)
    if not rows:
        return []
    ids = sorted({r["related_id"] for r in rows})
    shown = {r["paper_id"]: r for r in db.query(con, "papers_by_id", ids=ids)}
    return [
        {
            **r,
            "method_name": shown[r["related_id"]]["method_name"],
            "first_sentence": shown[r["related_id"]]["first_sentence"],
            "week": shown[r["related_id"]]["week"],
        }
        for r in rows
    ]


def topic_patterns(topics: Sequence[str]) -> list[str]:
    """RE2 patterns matching each topic as whole words in lowercase text, spaces matching
    any white space: ``"federated learning"`` → ``\\bfederated\\s+learning\\b``.

    Args:
        topics: lowercase topics (:class:`paperwatch.settings.Reader` normalises them).

    Returns:
        One pattern per topic, same order. Regular-expression characters in a topic are
        escaped, so a topic is always literal text (``c++`` matches "c++").
    """
    patterns: list[str] = []
    for topic in topics:
        words = [re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", w) for w in topic.split()]
        start = r"\b" if re.match(r"\w", topic) else ""
        end = r"\b" if re.search(r"\w$", topic) else ""
        patterns.append(start + r"\s+".join(words) + end)
    return patterns


def topic_matches(
    con: duckdb.DuckDBPyConnection, week: str, topics: Sequence[str]
) -> list[dict[str, Any]]:
    """The papers of ``week`` that match ``topics`` (``sql/queries/report_topic_matches.sql``).

    A topic matches a paper when it is one of the paper's extracted terms (any case) or
    appears in its abstract as whole words. Score: 2 per topic among its terms plus 1 per
    occurrence in the text.

    Returns:
        Rows ``{"paper_id", "topics": [matched topics, sorted], "score": int > 0}``, best
        first; empty without topics.
    """
    if not topics:
        return []
    return db.query(
        con,
        "report_topic_matches",
        week=week,
        topics=list(topics),
        patterns=topic_patterns(topics),
    )


def for_reader(
    data: ReportData, reader: Reader, matches: Sequence[Mapping[str, Any]]
) -> ReportData:
    """A copy of ``data`` whose report starts with ``reader``'s "For you" section.

    Args:
        data: the week's report data (:func:`collect_report`).
        reader: the reader (address and topics).
        matches: :func:`topic_matches` of the reader's topics for ``data.week``.

    Returns:
        ``data`` with ``for_you = {"address", "topics", "papers", "total"}``: the matching
        new papers ranked by score, ties in report order, each with ``matched`` (its
        topics) and ``score``; ``papers`` holds at most :data:`MAX_FOR_YOU`, ``total``
        counts all. Everything else is shared with ``data`` (not copied).
    """
    order = {paper["paper_id"]: index for index, paper in enumerate(data.new_papers)}
    by_id = {paper["paper_id"]: paper for paper in data.new_papers}
    ranked = sorted(
        (m for m in matches if m["paper_id"] in by_id),
        key=lambda m: (-int(m["score"]), order[m["paper_id"]]),
    )
    papers = [
        {**by_id[m["paper_id"]], "matched": list(m["topics"]), "score": int(m["score"])}
        for m in ranked[:MAX_FOR_YOU]
    ]
    section = {
        "address": reader.address,
        "topics": list(reader.topics),
        "papers": papers,
        "total": len(ranked),
    }
    return dataclasses.replace(data, for_you=section)


def source_label(item: Mapping[str, Any]) -> str:
    """Where an entry was listed, as a reader places it: ``NeurIPS 2026 · listing 002 · #12``.

    Args:
        item: a row with ``venue``, ``year``, ``sequence_number`` (of the listing file),
            ``position`` and the file name as ``source_file`` or ``file``.

    Returns:
        Venue and year when the file's header names them; ``listing NNN`` from the file's
        sequence number, or the file name without ``.txt`` in quotes when it has none
        (``listing “digest-nov”``); ``#position``. The file name itself is in the CSV.
    """
    parts: list[str] = []
    if item.get("venue"):
        parts.append(f"{item['venue']} {item['year']}" if item.get("year") else str(item["venue"]))
    if item.get("sequence_number") is not None:
        parts.append(f"listing {int(item['sequence_number']):03d}")
    else:
        name = str(item.get("source_file") or item.get("file") or "")
        stem = re.sub(r"\.txt$", "", name, flags=re.IGNORECASE)
        if stem:
            parts.append(f"listing “{printable(stem)[:40]}”")
    parts.append(f"#{item.get('position')}")
    return " · ".join(parts)


#: How the templates are compiled (what the compiled code depends on besides their text).
_TEMPLATE_OPTIONS: dict[str, Any] = {
    "extensions": ["jinja2.ext.do"],
    "trim_blocks": True,
    "lstrip_blocks": True,
    "keep_trailing_newline": True,
}
_AUTOESCAPED = ("html", "html.j2")


class TemplateCodeCache(FileSystemBytecodeCache):
    """Jinja2's file-system bytecode cache of the compiled templates, which never fails a
    report: a folder that cannot be created, read or written only means compiling again.

    Compiling ``report.html.j2`` and ``report.txt.j2`` costs about 0.15 s of CPU at each
    command; loading their cached code a few milliseconds. Jinja2 keys each entry by the
    template's name and path and checks the checksum of its source, so an edited template is
    compiled again; the folder (:func:`template_cache_dir`) is per Jinja2 version and
    compile options.
    """

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except OSError:
            bucket.reset()  # unreadable (not a folder, no permission): compile it

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            Path(self.directory).mkdir(parents=True, exist_ok=True)
            super().dump_bytecode(bucket)
        except OSError:
            pass  # a read-only or full cache: the template was compiled, nothing is lost


def template_cache_dir() -> Path | None:
    """Folder of the compiled templates: ``<user cache>/templates-<key>`` (the user cache
    of :func:`paperwatch.prefect_server.cache_dir`, ``$XDG_CACHE_HOME/paperwatch``), where
    ``<key>`` is a hash of the Jinja2 version, the Python version and the compile options,
    which the compiled code depends on. None when there is no home to find a cache in: the
    templates are then compiled on every run."""
    from paperwatch.prefect_server import cache_dir

    base = cache_dir()
    if base is None:
        return None
    options = repr(
        (jinja2.__version__, sys.version_info[:2], sorted(_TEMPLATE_OPTIONS.items()), _AUTOESCAPED)
    )
    return base / f"templates-{hashlib.sha256(options.encode()).hexdigest()[:16]}"


@cache
def _environment() -> Environment:
    folder = template_cache_dir()
    env = Environment(
        loader=FileSystemLoader(str(resource_dir("templates"))),
        autoescape=select_autoescape(enabled_extensions=_AUTOESCAPED, default=False),
        undefined=StrictUndefined,
        bytecode_cache=None if folder is None else TemplateCodeCache(str(folder), "%s.cache"),
        **_TEMPLATE_OPTIONS,
    )
    env.filters["plural"] = lambda n, word, words=None: (
        f"{n:,} {word}" if n == 1 else f"{n:,} {words or word + 's'}"
    )
    env.filters["safe_url"] = safe_url
    env.filters["printable"] = printable
    # Word diffs are computed for the rows a report lists only, not for every pair of the week.
    env.globals["word_diff"] = _word_diff
    env.filters["url_label"] = url_label
    env.filters["source"] = source_label
    return env


def _word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """:func:`paperwatch.analysis.duplicates.word_diff`, imported at the first near-duplicate shown (its
    module loads MinHash code a report does not otherwise need)."""
    from paperwatch.analysis.duplicates import word_diff

    return word_diff(old, new)


def csv_name(week: str) -> str:
    """File name of the week's new-papers CSV: ``<week>-new-papers.csv``."""
    return f"{week}-new-papers.csv"


#: First characters that make a spreadsheet evaluate a cell (OWASP "CSV injection").
_FORMULA_STARTS = frozenset(("=", "+", "-", "@", "\t", "\r"))


def _csv_cell(value: object) -> str:
    if value is None:
        return ""
    if type(value) is str:  # most cells: no conversion (the CSV of a 10k week has 98,000)
        text = value
    elif isinstance(value, list | tuple):
        text = " ".join(str(v) for v in value)
    else:
        text = str(value)
    # A cell starting like a formula runs as one in spreadsheets (OWASP "CSV injection").
    return "'" + text if text[:1] in _FORMULA_STARTS else text


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
    cell, columns = _csv_cell, NEW_PAPERS_CSV_COLUMNS
    writer.writerows([cell(paper.get(column)) for column in columns] for paper in papers)
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
    """The e-mail subject of ``data``'s week (see :func:`paperwatch.report.mail.subject_for`).

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


def _render_html(data: ReportData, listed: int, *, check: bool = True) -> str:
    context = _context(data, listed)
    html = inline_css(_environment().get_template("report.html.j2").render(context), check=check)
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


def largest_fitting(
    size_of: Callable[[int], int], high: int, budget: int, *, high_size: int | None = None
) -> int:
    """The largest row count in ``[0, high)`` whose size is at most ``budget``.

    Interpolation search (Perl, Itai & Avni 1978, "Interpolation search—a log log N
    search", CACM 21(7):550-553) on a size that does not decrease with the rows shown: the
    next guess is where the line through the two nearest measured sizes meets the budget,
    kept strictly inside the bracket, and its neighbour measured too (the line is often
    one row off); a step that does not halve the bracket is followed by a bisection, so
    the worst case is three measurements per halving. With sizes close to linear in the
    rows (the report's lists) it measures 2-3 sizes besides ``size_of(0)``. For any
    non-decreasing size it gives the same answer as a binary search.

    Args:
        size_of: rows → size (bytes; any int unit), non-decreasing in rows.
        high: rows known not to fit (> 0): the answer is below it.
        budget: the size allowed.
        high_size: ``size_of(high)`` when already measured (> ``budget``); else it is
            measured.

    Returns:
        The largest ``rows`` in ``[0, high)`` with ``size_of(rows) <= budget``; 0 when even
        0 rows do not fit (check ``size_of(0)`` then: 0 is returned either way).

    Raises:
        ValueError: ``high`` < 1, or ``size_of(high)`` fits the budget.
    """
    if high < 1:
        raise ValueError(f"high must be at least 1, got {high}")
    top = size_of(high) if high_size is None else high_size
    if top <= budget:
        raise ValueError(f"{high} rows fit the budget ({top} <= {budget}): nothing to search")
    low, low_size = 0, size_of(0)
    if low_size > budget:
        return 0
    # Invariant: size_of(low) <= budget < size_of(high).
    bisect = False
    while high - low > 1:
        width = high - low
        if bisect:  # the last guess did not halve the bracket: halve it
            guess = (low + high) // 2
        else:
            guess = low + (budget - low_size) * width // max(top - low_size, 1)
            guess = min(max(guess, low + 1), high - 1)
        size = size_of(guess)
        if size <= budget:
            low, low_size = guess, size
            # The line's guess is often the answer or one short of it: measure the next.
            if not bisect and guess + 1 < high:
                after = size_of(guess + 1)
                if after > budget:
                    return guess
                low, low_size = guess + 1, after
        else:
            high, top = guess, size
            if not bisect and guess - 1 > low:
                before = size_of(guess - 1)
                if before <= budget:
                    return guess - 1
                high, top = guess - 1, before
        bisect = high - low > width // 2
    return low


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
    number of rows that fits (:func:`largest_fitting`: the size grows with the rows shown,
    so the sizes measured give the next guess; about 4 renderings instead of the 9 of a
    binary search over 100 rows, with the same result), then "and N more". The plain-text part lists the same rows, so both parts name the same
    papers. First sentences are cut at :data:`MAX_SENTENCE_CHARS` characters.

    Args:
        data: from :func:`collect_report` (or built by hand in tests).
        max_listed: rows per list at most (>= 0).
        budget_bytes: UTF-8 size the HTML should stay under. When even zero rows do
            not fit, the zero-row HTML is returned and
            :func:`paperwatch.report.mail.build_message` will refuse it.

    Returns:
        A :class:`RenderedReport`; the same ``data`` always gives the same bytes.

    Raises:
        paperwatch.report.mail.UnsafeHtmlError: the template produced unsafe HTML (a bug).
        ValueError: ``max_listed`` is negative.
    """
    if max_listed < 0:
        raise ValueError("max_listed must be >= 0")
    longest = max(
        len(data.new_papers), len(data.duplicates), len(data.quality.get("quarantined", []))
    )
    listed = min(max_listed, longest)
    rendered: dict[int, str] = {}

    def size_of(rows: int) -> int:
        # Only the first rendering, with the most rows, is checked for unsafe HTML: the
        # others show fewer of the same rows.
        rendered[rows] = _render_html(data, rows, check=not rendered)
        return len(rendered[rows].encode("utf-8"))

    full = size_of(listed)
    if full > budget_bytes and listed > 0:
        # (When nothing fits it is 0, whose HTML was measured: build_message refuses it.)
        listed = largest_fitting(size_of, listed, budget_bytes, high_size=full)
    html = rendered[listed]
    text = _environment().get_template("report.txt.j2").render(_context(data, listed))
    # One blank line between blocks, however the sections' templates end: a heading then
    # always has exactly one blank line before it.
    text = _BLANK_RUNS.sub("\n\n", text)
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
        The message (see :func:`paperwatch.report.mail.build_message`); deterministic.

    Raises:
        paperwatch.report.mail.HeaderInjectionError: the subject or an address contains a
            line break or control character.
        ValueError: an address is invalid, no recipient, ``date`` naive.
        paperwatch.report.mail.UnsafeHtmlError: the HTML fails the e-mail safety check (for
            example over :data:`~paperwatch.report.email_safety.MAX_HTML_BYTES`).
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


def collect_archive(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The weeks with a rendered report, newest first, with their figures
    (``sql/queries/report_archive.sql``: week, new_papers, duplicates (exact + near),
    files, entries_quarantined, venues, sent_at (UTC) or None)."""
    return db.query(con, "report_archive")


#: Files of a week linked from the archive, by link text.
_ARCHIVE_FILES = (("html", "{week}.html"), ("text", "{week}.txt"), ("CSV", "{week}-new-papers.csv"))


def render_archive(weeks: Sequence[Mapping[str, Any]], present: Collection[str]) -> str:
    """The archive page: every week with its figures and links to its report files.

    Args:
        weeks: rows of :func:`collect_archive`, in display order.
        present: file names that exist beside the page (only those are linked, with
            relative links: ``2026-W48.html``, ``2026-W48.txt``, ``2026-W48-new-papers.csv``).

    Returns:
        HTML, CSS inlined, that passes :func:`paperwatch.report.email_safety.check_email_safety`
        but for its relative links (the page sits beside the files it lists); the same
        rows give the same bytes.

    Raises:
        paperwatch.report.mail.UnsafeHtmlError: the template produced unsafe HTML (a bug).
    """
    rows: list[dict[str, Any]] = []
    for week in weeks:
        monday, sunday = week_days(str(week["week"]))
        links = {
            kind: pattern.format(week=week["week"])
            for kind, pattern in _ARCHIVE_FILES
            if pattern.format(week=week["week"]) in present
        }
        sent = week.get("sent_at")
        rows.append(
            {
                **week,
                "monday": monday.isoformat(),
                "sunday": sunday.isoformat(),
                "sent_at": f"{sent.astimezone(UTC):%Y-%m-%d %H:%M} UTC" if sent else None,
                "links": links,
            }
        )
    template = _environment().get_template("archive.html.j2")
    # The only relative links are the week's files, made above; anything else unsafe raises.
    html = inline_css(template.render(weeks=rows, version=__version__), relative_links=True)
    return html if html.endswith("\n") else html + "\n"


def write_archive(con: duckdb.DuckDBPyConnection, folder: Path) -> Path:
    """Write ``<folder>/index.html`` (:func:`render_archive` of :func:`collect_archive`),
    replacing it atomically (temporary file, then rename). Returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    present = {path.name for path in folder.iterdir() if path.is_file()}
    path = folder / ARCHIVE_NAME
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(render_archive(collect_archive(con), present), encoding="utf-8")
    tmp.replace(path)
    return path


@dataclass(frozen=True, slots=True)
class WrittenReport:
    """A week's report written to the report folder (:func:`write_week_report`).

    Attributes:
        week: ISO week ``YYYY-Www``.
        html_path, text_path: the files written (the CSV is ``csv_name(week)`` beside them).
        new_papers, exact_duplicates, near_duplicates: the week's figures.
        report: what was rendered.
    """

    week: str
    html_path: Path
    text_path: Path
    new_papers: int
    exact_duplicates: int
    near_duplicates: int
    report: RenderedReport


def write_week_report(settings: Settings, week: str, at: datetime) -> WrittenReport:
    """Collect, render and write the report of ``week`` and record it, in this process.

    The same steps, in the same order and with the same results, as the ``weekly-report``
    flow's ``render-report`` and ``write-report`` tasks (``flows/report.py``), for a report
    rendered without orchestration (``paperwatch report`` without ``--send``). The caller
    holds the writer lock (:func:`paperwatch.db.writer_lock.writer_lock`) like the flow does.

    Args:
        settings: ``database``, ``report_dir``, ``timezone``, the trending and dedup settings.
        week: ISO week ``YYYY-Www`` in ``settings.timezone``.
        at: when the report was rendered (aware; recorded in ``reports.happened_at``).

    Returns:
        Where the report went and the week's figures.

    Raises:
        FileNotFoundError: ``settings.database`` does not exist (nothing was ingested).
        ValueError: ``week`` is not an ISO week.
        paperwatch.db.DatabaseLockedError, paperwatch.db.DatabaseDamagedError, duckdb.Error:
            from opening or reading the database.
        OSError: the report folder cannot be written.
    """
    _require_database(settings)
    # One connection for the whole command (collect, then record): the schema is checked
    # and the file checkpointed once, not once per step.
    with db.session(settings.database, settings.lock_timeout_s):
        data = collect_week(settings, week)
        report = render_report(data)
        html_path, text_path = write_and_record(settings, report, at)
    return WrittenReport(
        week,
        html_path,
        text_path,
        int(data.figures["new_papers"]),
        int(data.figures["exact_duplicates"]),
        int(data.figures["near_duplicates"]),
        report,
    )


def collect_week(settings: Settings, week: str) -> ReportData:
    """:func:`collect_report` of ``week`` on ``settings.database``, opened as the writer
    (the week's trending terms and related papers are stored).

    Raises:
        FileNotFoundError: ``settings.database`` does not exist (nothing was ingested).
        paperwatch.db.DatabaseLockedError, paperwatch.db.DatabaseDamagedError, duckdb.Error:
            from opening or reading the database.
    """
    _require_database(settings)
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        return collect_report(con, week, settings)


def _require_database(settings: Settings) -> None:
    if not settings.database.is_file():
        raise FileNotFoundError(
            f"{settings.database} does not exist: nothing was ingested there "
            "(run `paperwatch ingest`, or check --database)"
        )


def write_and_record(settings: Settings, report: RenderedReport, at: datetime) -> tuple[Path, Path]:
    """Write ``report``'s files into ``settings.report_dir``, record them in ``reports``
    (rendered ``at``, aware) and rewrite the archive page ``<report_dir>/index.html``.

    Returns:
        The HTML and text paths written.

    Raises:
        OSError: the report folder cannot be written.
        paperwatch.db.DatabaseLockedError, duckdb.Error: from recording the report.
    """
    html_path, text_path = write_report(report, settings.report_dir)
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        record_rendered(con, report, html_path, at)
        write_archive(con, settings.report_dir)
    return html_path, text_path
