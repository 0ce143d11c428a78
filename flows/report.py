"""The ``weekly-report`` flow: render the report of an ISO week into the report folder.

Tasks wire :mod:`paperwatch.report`; the rendering itself is a pure function.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from paperwatch import db
from paperwatch.artifacts import REPORT_ARTIFACT_KEY, report_markdown
from paperwatch.clock import iso_week, now_utc, parse_as_of, previous_week
from paperwatch.report import (
    RenderedReport,
    collect_report,
    record_rendered,
    render_report,
    write_report,
)
from paperwatch.settings import Settings, load_settings
from paperwatch.writer_lock import holds_writer_lock


@dataclass(frozen=True, slots=True)
class ReportOutcome:
    """Where the week's report went."""

    week: str
    html_path: Path
    text_path: Path
    new_papers: int
    exact_duplicates: int


@task(name="render-report", cache_policy=NO_CACHE)
def render_week(settings: Settings, week: str) -> tuple[RenderedReport, dict[str, int]]:
    """Collect the week's data and render it (read-only on the database)."""
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        data = collect_report(con, week, settings)
    figures = {
        k: int(data.figures[k]) for k in ("new_papers", "exact_duplicates", "near_duplicates")
    }
    return render_report(data), figures


@task(name="write-report", retries=2, retry_delay_seconds=[1, 5], cache_policy=NO_CACHE)
def write_week(settings: Settings, report: RenderedReport) -> tuple[Path, Path]:
    """Write the report files and record them in ``reports``."""
    html_path, text_path = write_report(report, settings.report_dir)
    with db.writer(settings.database, settings.lock_timeout_s) as con:
        record_rendered(con, report, html_path, now_utc())
    return html_path, text_path


# --- server runs: report artifact (see flows/deployments.py) ---


@task(name="publish-report-artifact", retries=2, retry_delay_seconds=[1, 5], cache_policy=NO_CACHE)
def publish_report_artifact(outcome: ReportOutcome) -> None:
    """Publish a Markdown artifact linking the report files (key ``weekly-report``)."""
    create_markdown_artifact(
        markdown=report_markdown(
            outcome.week,
            outcome.html_path,
            outcome.text_path,
            outcome.new_papers,
            outcome.exact_duplicates,
        ),
        key=REPORT_ARTIFACT_KEY,
        description=f"report of {outcome.week}",
    )


# --- end server runs ---


@flow(name="weekly-report", log_prints=True)
@holds_writer_lock
def weekly_report(
    week: str | None = None,
    as_of: str | None = None,
    database: str | None = None,
    report_dir: str | None = None,
    last_completed_week: bool = True,
) -> ReportOutcome:
    """Render the report of ``week`` to ``<report_dir>/<week>.html`` and ``.txt``.

    Args:
        week: ISO week ``YYYY-Www``; default from ``as_of``.
        as_of: ISO 8601 date-time used as "now" (default: the current time).
        database: the DuckDB file (default: setting ``database``).
        report_dir: where to write (default: setting ``report_dir``).
        last_completed_week: with no ``week``, report the week that ended before
            ``as_of`` (what a Monday-morning schedule wants); when false, the week
            containing ``as_of``.
    """
    settings = load_settings(database=database, report_dir=report_dir)
    moment = parse_as_of(as_of, settings.tz)
    if week is None:
        week = (
            previous_week(moment, settings.tz)
            if last_completed_week
            else iso_week(moment, settings.tz)
        )
    report, figures = render_week(settings, week)
    html_path, text_path = write_week(settings, report)
    get_run_logger().info("report of %s written to %s", week, html_path)
    outcome = ReportOutcome(
        week, html_path, text_path, figures["new_papers"], figures["exact_duplicates"]
    )
    publish_report_artifact(outcome)
    return outcome
