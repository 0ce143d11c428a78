"""The weekly report: gather the week's data from DuckDB, render HTML and plain text.

:func:`collect_report` reads (queries in ``sql/queries/report_*.sql``);
:func:`render_report` is pure (templates in ``reports/templates/``, autoescaped
HTML with CSS inlined for mail clients, and a plain-text alternative). The same
data renders to the same bytes: nothing in the body depends on the time of
rendering.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import css_inline
import duckdb
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from paperwatch import __version__, db
from paperwatch.clock import parse_week, week_days
from paperwatch.dedup import word_diff
from paperwatch.resources import resource_dir
from paperwatch.settings import Settings
from paperwatch.trending import trending_terms_for_week

#: Lists in the e-mailed report are cut here, with "and N more" (Gmail clips messages over ~102 KB).
MAX_LISTED = 200


@dataclass(slots=True)
class ReportData:
    """Everything a weekly report shows. ``week`` is an ISO week (``2026-W48``)."""

    week: str
    monday: str
    sunday: str
    timezone: str
    figures: dict[str, Any]
    new_papers: list[dict[str, Any]]
    duplicates: list[dict[str, Any]]
    revisions: list[dict[str, Any]]
    quality: dict[str, list[dict[str, Any]]]
    sections: dict[str, Any] = field(default_factory=dict)
    near_threshold: float = 0.8


@dataclass(frozen=True, slots=True)
class RenderedReport:
    """A rendered report: HTML (CSS inlined), plain text, and the sha256 of the HTML."""

    week: str
    html: str
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.html.encode("utf-8")).hexdigest()


def _with_diffs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add ``diff`` (a :func:`paperwatch.dedup.word_diff`) to near-duplicate rows."""
    for row in rows:
        row["diff"] = None
        if row["kind"] == "near" and row.get("original_abstract"):
            row["diff"] = word_diff(row["original_abstract"], row["abstract"])
    return rows


def collect_report(con: duckdb.DuckDBPyConnection, week: str, settings: Settings) -> ReportData:
    """Read the data of ``week`` from the database.

    Args:
        con: a read-write connection (the week's trending terms are stored in ``trending_terms``).
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
        duplicates=_with_diffs(db.query(con, "report_duplicates", week=week)),
        revisions=db.query(con, "report_revisions", week=week),
        quality={
            "suites": db.query(con, "report_data_quality", week=week),
            "quarantined": db.query(con, "report_quarantine", week=week),
            "warnings": db.query(con, "report_warnings", week=week),
        },
        sections={"trending": trending_terms_for_week(con, week, settings)},
        near_threshold=settings.dedup.threshold,
    )


@cache
def _environment() -> Environment:
    env = Environment(
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
    return env


def safe_url(url: object) -> str | None:
    """``url`` when it is an http(s) URL, else None (no ``javascript:`` or ``data:`` links)."""
    text = str(url or "").strip()
    return text if text.lower().startswith(("http://", "https://")) and " " not in text else None


def render_report(data: ReportData) -> RenderedReport:
    """Render ``data`` with ``report.html.j2`` (CSS then inlined) and ``report.txt.j2``.

    Everything from the listings is escaped by Jinja2's autoescape; links are
    only http(s). Lists longer than :data:`MAX_LISTED` are cut with "and N more".
    """
    env = _environment()
    context = {
        "r": data,
        "max_listed": MAX_LISTED,
        "version": __version__,
        "near_threshold": data.near_threshold,
        **data.sections,
    }
    html = env.get_template("report.html.j2").render(context)
    html = css_inline.CSSInliner(keep_style_tags=False, keep_at_rules=True).inline(html)
    text = env.get_template("report.txt.j2").render(context)
    return RenderedReport(week=data.week, html=html, text=text)


def write_report(report: RenderedReport, folder: Path) -> tuple[Path, Path]:
    """Write ``<week>.html`` and ``<week>.txt`` into ``folder`` (created when missing).

    Files are written to a temporary name and renamed, so a reader never sees half a report.
    """
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for suffix, body in ((".html", report.html), (".txt", report.text)):
        path = folder / f"{report.week}{suffix}"
        tmp = path.with_suffix(suffix + ".tmp")
        tmp.write_text(body, encoding="utf-8", newline="\n")
        tmp.replace(path)
        paths.append(path)
    return paths[0], paths[1]


def record_rendered(
    con: duckdb.DuckDBPyConnection, report: RenderedReport, path: Path, at: Any
) -> None:
    """Add a ``rendered`` row to ``reports``."""
    con.execute(
        "insert into reports (week, kind, path, sha256, happened_at) values (?, 'rendered', ?, ?, ?)",
        [report.week, str(path), report.sha256, at],
    )
