"""Render the weekly report from collected data: HTML (CSS inlined) and plain text.

:func:`render_report` is pure: templates in ``reports/templates/``, autoescaped HTML with
CSS inlined for mail clients, and a plain-text alternative; the same data renders to the
same bytes. The data comes from :func:`paperwatch.db.report_data.collect_report`. Lists
are cut to fit the e-mail budget (:mod:`paperwatch.report.budget`) with "and N more";
every new paper is in the CSV (:mod:`paperwatch.report.papers_csv`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import re
import sys
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from jinja2.bccache import Bucket, FileSystemBytecodeCache

from paperwatch import __version__
from paperwatch.clock import week_days
from paperwatch.report.budget import HTML_BUDGET_BYTES, MAX_LISTED, fit_rows
from paperwatch.report.message import inline_css, subject_for
from paperwatch.report.papers_csv import csv_name, new_papers_csv
from paperwatch.report.rows import column_values
from paperwatch.resources import resource_dir
from paperwatch.settings import Reader
from paperwatch.untrusted import BIDI_CONTROLS, one_line_text, plain_text, shorten, web_url

if TYPE_CHECKING:  # the maths module loads Polars and SciPy, which rendering does not need
    from paperwatch.analysis.library import ReaderPicks

#: First sentences longer than this (characters) are cut with "…" in the report; the CSV
#: has them whole.
MAX_SENTENCE_CHARS = 320
#: Titles (and refused links, shown as text) longer than this are cut with "…" for
#: display, like first sentences: one record cannot take the week's e-mail budget.
MAX_TITLE_DISPLAY_CHARS = 200

_BLANK_RUNS = re.compile(r"\n(?:[ \t]*\n){2,}")

#: Papers listed in a reader's "For you" section at most; the rest are counted.
MAX_FOR_YOU = 20

#: File name of the archive page in the report folder.
ARCHIVE_NAME = "index.html"


@dataclass(slots=True)
class ReportData:
    """Everything a weekly report shows. ``week`` is an ISO week (``2026-W48``)."""

    week: str
    monday: str
    sunday: str
    timezone: str
    figures: dict[str, Any]
    #: Papers first seen in the week, in report order (``report_new_papers.sql``; from
    #: the database a :class:`~paperwatch.report.rows.FrameRows`).
    new_papers: Sequence[dict[str, Any]]
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
        html: the HTML document, CSS inlined (:func:`paperwatch.report.message.inline_css`).
        text: the plain-text alternative.
        subject: the e-mail subject (:func:`paperwatch.report.message.subject_for`).
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


def for_reader(
    data: ReportData,
    reader: Reader,
    matches: Sequence[Mapping[str, Any]],
    picks: ReaderPicks | None = None,
) -> ReportData:
    """A copy of ``data`` whose report starts with ``reader``'s "For you" section.

    Args:
        data: the week's report data (:func:`paperwatch.db.report_data.collect_report`).
        reader: the reader (address, topics, library, authors, exclusions).
        matches: :func:`topic_matches` of the reader's topics for ``data.week``.
        picks: :func:`paperwatch.db.library.reader_picks` of the reader (None: topics only).

    Returns:
        ``data`` with ``for_you = {"address", "topics", "authors", "exclude", "library"
        ({"size", "missing"} or None), "papers", "total"}``. ``papers``, each once and
        never an excluded one: papers by followed authors (report order), then those
        closest to the library (by score), then the topic matches (by score, ties in
        report order); each with ``followed`` (authors), ``closest`` (the library item:
        title, year, similarity, shared terms, or None), ``matched`` (topics) and
        ``score``. At most :data:`MAX_FOR_YOU` are listed, ``total`` counts all. Everything
        else is shared with ``data`` (not copied).
    """
    library = picks.library if picks is not None else []
    followed = picks.followed if picks is not None else {}
    excluded = picks.excluded if picks is not None else frozenset()
    new_ids = column_values(data.new_papers, "paper_id")
    order = {paper_id: index for index, paper_id in enumerate(new_ids)}
    ranked = sorted(
        (m for m in matches if m["paper_id"] in order),
        key=lambda m: (-int(m["score"]), order[m["paper_id"]]),
    )
    topics = {m["paper_id"]: m for m in ranked}
    closest = {m["paper_id"]: m for m in library}
    chosen: dict[str, dict[str, Any]] = {}
    ids = [paper_id for paper_id in new_ids if paper_id in followed]
    ids += [m["paper_id"] for m in library] + [m["paper_id"] for m in ranked]
    for paper_id in ids:
        if paper_id in chosen or paper_id not in order or paper_id in excluded:
            continue
        topic = topics.get(paper_id)
        near = closest.get(paper_id)
        chosen[paper_id] = {
            **data.new_papers[order[paper_id]],
            "followed": list(followed.get(paper_id, [])),
            "closest": None
            if near is None
            else {k: near[k] for k in ("title", "year", "similarity", "shared")},
            "matched": list(topic["topics"]) if topic else [],
            "score": int(topic["score"]) if topic else 0,
        }
    papers = list(chosen.values())
    section = {
        "address": reader.address,
        "topics": list(reader.topics),
        "authors": list(reader.authors),
        "exclude": list(reader.exclude),
        "library": None
        if reader.library is None or picks is None
        else {"size": picks.library_items, "missing": picks.library_missing},
        "papers": papers[:MAX_FOR_YOU],
        "total": len(papers),
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
    Entries are keyed by template name and path and checked against the source's checksum;
    the folder (:func:`template_cache_dir`) is per Jinja2 version and compile options.
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
    env.filters["display_title"] = display_title
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


def url_label(url: str, limit: int = 60) -> str:
    """Link text for ``url``: without ``http(s)://`` and a trailing slash, cut at ``limit``
    characters with "…" (``https://github.com/a/b/`` → ``github.com/a/b``)."""
    label = url.split("://", 1)[-1].rstrip("/")
    return label if len(label) <= limit else label[: limit - 1] + "…"


def printable(value: object) -> str:
    """``value`` as text with control characters (NUL, ESC, bidi overrides…) shown as U+FFFD.

    For raw text that was quarantined: it may hold anything, and a terminal, mail
    client or browser must only ever see it as inert text. Format characters other than
    bidi controls (the joiners of emoji and of Indic and Persian script) are kept.
    """
    text = str(value if value is not None else "")
    if text.isprintable():
        return text
    return "".join(
        c
        if c.isprintable()
        or c in "\n\t"
        or (unicodedata.category(c) == "Cf" and c not in BIDI_CONTROLS)
        else "\ufffd"
        for c in text
    )


def display_title(value: object, limit: int = MAX_TITLE_DISPLAY_CHARS) -> str:
    """A title (or other one-line field) as shown: one line of printable text, cut at
    ``limit`` characters with "…"."""
    return shorten(printable(one_line_text(value)), limit)


def safe_url(url: object) -> str | None:
    """``url`` when it may be linked and shown (:func:`paperwatch.untrusted.web_url`:
    plain http(s), no user or password, IDNA host, no mixed-script host), else None."""
    return web_url(url)


def report_subject(data: ReportData) -> str:
    """The e-mail subject of ``data``'s week (see :func:`paperwatch.report.message.subject_for`).

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


def render_report(
    data: ReportData,
    *,
    max_listed: int = MAX_LISTED,
    budget_bytes: int = HTML_BUDGET_BYTES,
) -> RenderedReport:
    """Render ``data`` with ``report.html.j2`` (CSS then inlined) and ``report.txt.j2``.

    Text from the listings is autoescaped; only http(s) URLs become links. Each list shows
    at most ``max_listed`` rows, fewer when the inlined HTML would exceed ``budget_bytes``
    (:func:`paperwatch.report.budget.fit_rows`), then "and N more"; the text part lists
    the same rows. First sentences are cut at :data:`MAX_SENTENCE_CHARS` characters.

    Args:
        data: from :func:`paperwatch.db.report_data.collect_report` (or built in tests).
        max_listed: rows per list at most (>= 0).
        budget_bytes: UTF-8 size the HTML should stay under. When even zero rows do
            not fit, the zero-row HTML is returned (and
            :func:`paperwatch.report.message.build_message` refuses it).

    Returns:
        A :class:`RenderedReport`; the same ``data`` always gives the same bytes.

    Raises:
        paperwatch.report.message.UnsafeHtmlError: the template produced unsafe HTML (a bug).
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

    # (When nothing fits it is 0, whose HTML was measured: build_message refuses it.)
    listed = fit_rows(size_of, listed, budget_bytes)
    html = rendered[listed]
    text = _environment().get_template("report.txt.j2").render(_context(data, listed))
    # One blank line between blocks, however the sections' templates end: a heading then
    # always has exactly one blank line before it.
    # Plain, printable text whatever a template let through: no ESC, CR or bidi control
    # reaches a terminal or the mail's text part.
    text = plain_text(_BLANK_RUNS.sub("\n\n", text))
    return RenderedReport(
        week=data.week,
        html=html,
        text=text,
        subject=report_subject(data),
        csv=new_papers_csv(data.new_papers),
        listed=listed,
    )


def report_files(report: RenderedReport, folder: Path) -> list[tuple[Path, bytes]]:
    """The files :func:`write_report` writes: ``(path, bytes)`` of ``<week>.html``,
    ``<week>.txt`` and, when ``report.csv`` is not empty, ``<week>-new-papers.csv``."""
    bodies: list[tuple[Path, bytes]] = [
        (folder / f"{report.week}.html", report.html.encode("utf-8")),
        (folder / f"{report.week}.txt", report.text.encode("utf-8")),
    ]
    if report.csv:
        bodies.append((folder / csv_name(report.week), report.csv))
    return bodies


def is_written(report: RenderedReport, folder: Path) -> bool:
    """True when every file of ``report`` (:func:`report_files`) is in ``folder`` with
    exactly these bytes."""
    try:
        return all(path.read_bytes() == body for path, body in report_files(report, folder))
    except OSError:
        return False


def write_report(report: RenderedReport, folder: Path) -> tuple[Path, Path]:
    """Write the files of ``report`` (:func:`report_files`) into ``folder``.

    The folder is created when missing. Files are written to a temporary name and
    renamed, so a reader never sees half a report.

    Returns:
        The paths of the HTML and of the text file (the CSV is ``folder / csv_name(week)``).
    """
    folder.mkdir(parents=True, exist_ok=True)
    bodies = report_files(report, folder)
    for path, body in bodies:
        _replace_file(path, body)
    return bodies[0][0], bodies[1][0]


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
        paperwatch.report.message.UnsafeHtmlError: the template produced unsafe HTML (a bug).
    """
    rows: list[dict[str, Any]] = []
    for week in weeks:
        try:
            monday, sunday = week_days(str(week["week"]))
        except ValueError:  # a week stored before weeks were held to the years reported on
            continue
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


def write_archive_page(weeks: Sequence[Mapping[str, Any]], folder: Path) -> Path:
    """Write ``<folder>/index.html`` (:func:`render_archive` of ``weeks``, linking the files
    present in ``folder``), replacing it atomically (temporary file, then rename).

    Returns:
        Its path.
    """
    folder.mkdir(parents=True, exist_ok=True)
    present = {path.name for path in folder.iterdir() if path.is_file()}
    path = folder / ARCHIVE_NAME
    _replace_file(path, render_archive(weeks, present).encode("utf-8"))
    return path


def _replace_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file beside it, renamed over it, so
    that a reader never sees half a file.

    Raises:
        OSError: naming ``path`` (a folder there, a full disk); the temporary file is
            removed.
    """
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "a folder is in the way of the file", str(path))
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from None
