"""The trending section in a real browser (headless Chromium), in the whole report: a first
week (the seeds: no baseline) and a week with trends (the new-term case, ingested by the real
flow in two ISO weeks), at the e-mail width (640 px) and a phone's (375 px). Nothing may pass
the right edge; the screenshots are kept in tests/artifacts/ (git-ignored) for people to look
at. Skipped, with the reason, when Chromium is not installed (``make browser``)."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest
from PIL import Image

from paperwatch import db
from paperwatch.db.report_data import collect_report
from paperwatch.report.render import render_report
from paperwatch.settings import Settings

from .chromium import Chromium
from .conftest import ROOT, SEEDS_WEEK

pytestmark = pytest.mark.browser

ARTIFACTS = ROOT / "tests" / "artifacts"
CASE = Path(__file__).resolve().parent / "data" / "trend-new-term"
CASE_WEEK = "2026-W48"


@pytest.fixture(scope="module")
def case_database(prefect_harness: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The case's week-45 listing ingested in 2026-W45, its week-48 listing in 2026-W48."""
    from paperwatch.flows.ingest import ingest_listings

    folder = tmp_path_factory.mktemp("case")
    listings = folder / "listings"
    listings.mkdir()
    path = folder / "paperwatch.duckdb"
    with pytest.MonkeyPatch.context() as mp:
        for key in list(os.environ):
            if key.startswith("PAPERWATCH_"):
                mp.delenv(key)
        mp.setenv("PAPERWATCH_CONFIG", "")
        shutil.copy(CASE / "week45" / "w45.txt", listings / "001_00000000000000a5.txt")
        first = ingest_listings(str(listings), str(path), "2026-11-04T10:00:00+00:00")
        shutil.copy(CASE / "week48" / "w48.txt", listings / "002_00000000000000a8.txt")
        second = ingest_listings(str(listings), str(path), "2026-11-25T10:00:00+00:00")
    assert (first.week, first.new_papers, second.week, second.new_papers) == (
        "2026-W45", 25, CASE_WEEK, 25,
    )  # fmt: skip
    return path


def render(database: Path, week: str, out: Path) -> tuple[Path, str]:
    with db.reader(database) as con:
        data = collect_report(con, week, Settings(), persist=False)
    html = render_report(data).html
    out.write_text(html, encoding="utf-8")
    return out, html


@pytest.mark.parametrize(("width", "mobile"), [(640, False), (375, True)])
def test_first_week_trending_fits_the_width(
    chromium: Chromium, seeded_database: Path, tmp_path: Path, width: int, mobile: bool
) -> None:
    path, html = render(seeded_database, SEEDS_WEEK, tmp_path / "first.html")
    assert "trends start next week" in html and "large language model" in html
    section = html[html.index("Trending terms") :]
    assert section.count("<th") == 1  # one column heading in a first week: "Term"
    shot = chromium.shoot(path.as_uri(), width, mobile=mobile)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"trending-first-week-{width}.png").write_bytes(shot.png)
    assert shot.viewport == width
    assert shot.overflowing == []
    assert shot.scroll_width <= width
    assert Image.open(io.BytesIO(shot.png)).size == (width, shot.height)


@pytest.mark.parametrize(("width", "mobile"), [(640, False), (375, True)])
def test_week_with_trends_fits_the_width(
    chromium: Chromium, case_database: Path, tmp_path: Path, width: int, mobile: bool
) -> None:
    path, html = render(case_database, CASE_WEEK, tmp_path / "trends.html")
    section = html[html.index("Trending terms") :]
    assert "New this week" in section and "mamba" in section and "Falling" in section
    assert section.count(">Last 8 weeks</th>") == 2  # the new and the falling tables
    assert "<svg" not in html.lower() and "<script" not in html.lower()
    shot = chromium.shoot(path.as_uri(), width, mobile=mobile)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"trending-trends-{width}.png").write_bytes(shot.png)
    assert shot.viewport == width
    assert shot.overflowing == []
    assert shot.scroll_width <= width
    image = Image.open(io.BytesIO(shot.png)).convert("RGB")
    # The chart bar of "mamba" in week 48 is drawn: 6 x 24 px of the new-term colour.
    green = sum(1 for pixel in image.get_flattened_data() if pixel == (0x16, 0xA3, 0x4A))
    assert green >= 6 * 24
