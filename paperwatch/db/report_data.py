"""The database side of the weekly report: collect a week's data, record what was written.

:func:`collect_report` reads ``sql/queries/report_*.sql`` into a
:class:`~paperwatch.report.render.ReportData`; :func:`write_week_report` is the whole
command-line report (collect, render, write, record) without orchestration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from paperwatch import db
from paperwatch.clock import now_utc, parse_week, week_days
from paperwatch.db.related import related_earlier_papers, store_related_papers
from paperwatch.db.trends import trending_terms_for_week
from paperwatch.report.render import (
    RenderedReport,
    ReportData,
    is_written,
    render_report,
    topic_patterns,
    write_archive_page,
    write_report,
)
from paperwatch.report.rows import FrameRows
from paperwatch.settings import Settings


def collect_report(
    con: duckdb.DuckDBPyConnection, week: str, settings: Settings, *, persist: bool = True
) -> ReportData:
    """Read the data of ``week`` from the database.

    Args:
        con: a connection; read-write when ``persist`` (the week's trending terms are
            then stored in ``trending_terms`` and its related earlier papers in
            ``related_papers``, :mod:`paperwatch.db.related`); read-only computes both
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
        new_papers=FrameRows(db.query_frame(con, "report_new_papers", week=week)),
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


def record_rendered(
    con: duckdb.DuckDBPyConnection, report: RenderedReport, path: Path, at: Any
) -> None:
    """Add a ``rendered`` row to ``reports`` (``at``: when, aware)."""
    db.query(
        con, "insert_report_rendered", week=report.week, path=str(path), sha256=report.sha256, at=at
    )


def collect_archive(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The weeks with a rendered report, newest first, with their figures
    (``sql/queries/report_archive.sql``: week, new_papers, duplicates (exact + near),
    files, entries_quarantined, venues, sent_at (UTC) or None)."""
    return db.query(con, "report_archive")


def write_archive(con: duckdb.DuckDBPyConnection, folder: Path) -> Path:
    """Write ``<folder>/index.html`` (:func:`paperwatch.report.render.write_archive_page` of
    :func:`collect_archive`). Returns its path."""
    return write_archive_page(collect_archive(con), folder)


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

    @classmethod
    def of(
        cls, data: ReportData, report: RenderedReport, html_path: Path, text_path: Path
    ) -> WrittenReport:
        """The written report of ``data`` (its week and figures) rendered as ``report``."""
        figures = data.figures
        return cls(
            data.week,
            html_path,
            text_path,
            int(figures["new_papers"]),
            int(figures["exact_duplicates"]),
            int(figures["near_duplicates"]),
            report,
        )


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
    return WrittenReport.of(data, report, html_path, text_path)


def unchanged_report(settings: Settings, week: str) -> WrittenReport | None:
    """The report of ``week`` when the files in ``settings.report_dir`` already hold exactly
    what rendering it now gives, else None.

    Reads through a read-only connection (:func:`collect_report` with ``persist=False``:
    nothing is stored) and renders in this process, so a run that loaded nothing new need
    not start a flow run to write the same bytes again. None, too, when the files are
    missing or the database cannot be read as it is (locked, older schema): the caller
    then renders the report the usual way.
    """
    folder = settings.report_dir
    if not (folder / f"{week}.html").is_file() or not settings.database.is_file():
        return None
    try:
        with db.reader(settings.database, timeout_s=0) as con:
            if not db.schema_is_current(con):
                return None
            data = collect_report(con, week, settings, persist=False)
    except (db.DatabaseLockedError, duckdb.Error):
        return None
    report = render_report(data)
    if not is_written(report, folder):
        return None
    return WrittenReport.of(data, report, folder / f"{week}.html", folder / f"{week}.txt")


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
