"""Sizes and timings of the e-mailed weekly report, for the seeds week and a big week.

    PYTHONPATH=. python bench/bench_report_email.py [papers]

Ingests seeds/ with the real flow into a temporary DuckDB (starts a temporary
Prefect server, 10-20 s), then fills a second database with ``papers`` synthetic
new papers in one week (default 5,000; the SQL of tests/test_report_render.py) and
prints, for each: the HTML part's size, rows listed, plain-text and CSV sizes, the
whole message's size, and the time to render (collect + render + message).
Nothing is asserted; the tests never time anything.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from paperwatch import db  # noqa: E402
from paperwatch.db.report_data import collect_report  # noqa: E402
from paperwatch.report.message import message_bytes, report_message  # noqa: E402
from paperwatch.report.render import render_report  # noqa: E402
from paperwatch.settings import Settings  # noqa: E402
from tests.test_report_render import fill_synthetic_week  # noqa: E402

WEEK = "2026-W48"
DATE = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.UTC)


def measure(label: str, database: Path) -> None:
    started = time.perf_counter()
    with db.reader(database) as con:
        data = collect_report(con, WEEK, Settings(), persist=False)
    collected = time.perf_counter()
    report = render_report(data)
    rendered = time.perf_counter()
    message = report_message(
        report, sender="paperwatch@example.org", recipients=["reader@example.org"], date=DATE
    )
    raw = message_bytes(message)
    done = time.perf_counter()
    print(f"{label}: {len(data.new_papers):,} new papers, {report.listed} listed")
    print(f"  HTML part     {len(report.html.encode()):>10,} bytes (limit 100,000)")
    print(f"  text part     {len(report.text.encode()):>10,} bytes")
    print(f"  CSV           {len(report.csv):>10,} bytes")
    print(f"  message       {len(raw):>10,} bytes (quoted-printable bodies, base64 CSV)")
    print(
        f"  collect {1000 * (collected - started):.0f} ms, render {1000 * (rendered - collected):.0f} ms, "
        f"message {1000 * (done - rendered):.0f} ms"
    )


def main() -> None:
    papers = int(sys.argv[1]) if len(sys.argv) > 1 else 5_000
    folder = Path(tempfile.mkdtemp(prefix="bench-report-email-"))
    try:
        from paperwatch.flows.ingest import ingest_listings

        listings = folder / "listings"
        shutil.copytree(ROOT / "seeds", listings)
        seeds_db = folder / "seeds.duckdb"
        ingest_listings(str(listings), str(seeds_db), "2026-11-25T10:00:00+00:00")
        measure("seeds week 2026-W48", seeds_db)
        big_db = folder / "big.duckdb"
        fill_synthetic_week(big_db, papers)
        measure(f"synthetic week of {papers:,} papers", big_db)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
