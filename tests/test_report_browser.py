"""The rendered report in a real browser (headless Chromium): at the e-mail width (640 px)
and a phone's (375 px) nothing overflows sideways and the page is not blank. Pages: the
seeds week with an unbreakable row, an empty week, a week with trends against earlier
weeks (with related earlier papers), a reader's message with its "For you" section, and
the archive page.

Screenshots are kept in tests/artifacts/ (git-ignored) for people to look at. Skipped,
with the reason, when Chromium is not installed (``make browser`` installs it).
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest
from PIL import Image, ImageStat

from paperwatch import db
from paperwatch.db.report_data import (
    collect_archive,
    collect_report,
    record_rendered,
    topic_matches,
)
from paperwatch.report.render import for_reader, render_archive, render_report
from paperwatch.settings import Reader, Settings

from .chromium import Chromium, Shot
from .conftest import ROOT, SEEDS_WEEK
from .report_weeks import EARLIER_ABSTRACTS, baseline_abstracts, build

pytestmark = pytest.mark.browser

ARTIFACTS = ROOT / "tests" / "artifacts"
LONG_ROW = {
    "paper_id": "ffffffffffffffff",
    "method_name": "A" * 70,
    "first_sentence": "An unbroken token "
    + "pneumonoultramicroscopicsilicovolcanoconiosis" * 3
    + " and https://example.org/"
    + "very-long-path-segment/" * 6
    + " in a sentence <script>alert(1)</script>.",
    "abstract": "",
    "code_urls": ["https://github.com/" + "a-very-long-organisation-name/" * 4 + "repo"],
    "word_count": 20,
    "source_file": "999_" + "f" * 16 + ".txt",
    "position": 1,
}


@pytest.fixture
def report_file(seeded_database: Path, tmp_path: Path) -> Path:
    """The seeds week's report, with a row of unbreakable text and long URLs on top."""
    with db.reader(seeded_database) as con:
        data = collect_report(con, SEEDS_WEEK, Settings(), persist=False)
    data = dataclasses.replace(data, new_papers=[LONG_ROW, *data.new_papers])
    path = tmp_path / "report.html"
    path.write_text(render_report(data).html, encoding="utf-8")
    return path


@pytest.mark.parametrize(("width", "mobile"), [(640, False), (375, True)])
def test_report_fits_the_width_and_is_not_blank(
    chromium: Chromium, report_file: Path, width: int, mobile: bool
) -> None:
    shot = chromium.shoot(report_file.as_uri(), width, mobile=mobile)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"report-{width}.png").write_bytes(shot.png)

    # The layout: no element passes the right edge, nothing scrolls sideways.
    assert shot.viewport == width
    assert shot.overflowing == []
    assert shot.scroll_width <= width
    assert shot.height > 2_000  # 55 papers listed

    image = Image.open(io.BytesIO(shot.png)).convert("RGB")
    assert image.size == (width, shot.height)
    # The right-most columns hold only the colours of the left-most ones (page and header
    # backgrounds): no text is cut at the right edge.
    left = set(image.crop((0, 0, 3, image.height)).get_flattened_data())
    right = set(image.crop((width - 3, 0, width, image.height)).get_flattened_data())
    assert right <= left, sorted(right - left)[:5]
    # Not blank: varied pixels, and text.
    grey = image.convert("L")
    assert ImageStat.Stat(grey).stddev[0] > 20
    dark = sum(grey.histogram()[:100])  # pixels darker than 100 of 255
    assert dark > 0.01 * width * image.height


# --- more weeks: empty, with trends, a reader's "For you", the archive -------------------

#: Earlier weeks of the trends database: four baseline weeks of abstracts in another
#: vocabulary (the seeds' terms rise against them), the last with the abstracts written
#: for the tests (earlier papers related to the seeds).
BASELINE = {f"2026-W{n}": baseline_abstracts(n) for n in (44, 45, 46, 47)}
BASELINE["2026-W47"] = BASELINE["2026-W47"] + EARLIER_ABSTRACTS


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pages")
    database = build(folder / "weeks.duckdb", BASELINE, seeds_week=SEEDS_WEEK)
    found: dict[str, Path] = {}
    with db.writer(database) as con:
        trends = collect_report(con, SEEDS_WEEK, Settings())
        empty = collect_report(con, "2026-W49", Settings())
        reader = Reader(address="ann@example.org", topics=["quantization", "diffusion"])
        mine = for_reader(trends, reader, topic_matches(con, SEEDS_WEEK, reader.topics))
        for name, data in (("trends", trends), ("empty", empty), ("for-you", mine)):
            rendered = render_report(data)
            found[name] = folder / f"{name}.html"
            found[name].write_text(rendered.html, encoding="utf-8")
            record_rendered(con, rendered, found[name], "2026-11-30 08:00:00+00")
        archive = render_archive(collect_archive(con), {f"{SEEDS_WEEK}.html"})
    found["archive"] = folder / "index.html"
    found["archive"].write_text(archive, encoding="utf-8")
    assert trends.related and trends.sections["trending"].has_baseline
    assert trends.sections["trending"].rising  # a week with trends
    assert empty.empty and mine.for_you is not None and mine.for_you["total"] == 13
    return found


def _fits(shot: Shot, width: int) -> None:
    assert shot.viewport == width
    assert shot.overflowing == []
    assert shot.scroll_width <= width
    image = Image.open(io.BytesIO(shot.png)).convert("RGB")
    assert image.size == (width, shot.height)
    left = set(image.crop((0, 0, 3, image.height)).get_flattened_data())
    right = set(image.crop((width - 3, 0, width, image.height)).get_flattened_data())
    assert right <= left, sorted(right - left)[:5]
    grey = image.convert("L")
    assert ImageStat.Stat(grey).stddev[0] > 20


@pytest.mark.parametrize("page", ["empty", "trends", "for-you", "archive"])
@pytest.mark.parametrize(("width", "mobile"), [(640, False), (375, True)])
def test_more_pages_fit_the_width(
    chromium: Chromium, pages: dict[str, Path], page: str, width: int, mobile: bool
) -> None:
    shot = chromium.shoot(pages[page].as_uri(), width, mobile=mobile)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"report-{page}-{width}.png").write_bytes(shot.png)
    _fits(shot, width)
    html = pages[page].read_text(encoding="utf-8")
    if page == "empty":
        assert "No new listings this week." in html and shot.height < 1_400
    elif page == "for-you":
        assert html.index(">For you</h2>") < html.index(">New papers</h2>")
        assert shot.height > 2_000
    elif page == "trends":
        assert "Related earlier papers:" in html and "No baseline yet" not in html
