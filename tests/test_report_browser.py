"""The rendered report in a real browser (headless Chromium): at the e-mail width (640 px)
and a phone's (375 px) nothing overflows sideways and the page is not blank.

Screenshots are kept in tests/artifacts/ (git-ignored) for people to look at. Skipped,
with the reason, when Chromium is not installed (``make browser`` installs it).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image, ImageStat

from paperwatch import db
from paperwatch.report import collect_report, render_report
from paperwatch.settings import Settings

from .chromium import Chromium, find_chromium
from .conftest import ROOT, SEEDS_WEEK

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


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    executable = find_chromium()
    if executable is None:
        pytest.skip("Chromium is not installed: run `make browser` (apt-get install chromium)")
    browser = Chromium(executable, tmp_path_factory.mktemp("chromium-profile"))
    try:
        browser.__enter__()
    except RuntimeError as exc:
        pytest.skip(f"Chromium could not start: {exc}")
    yield browser
    browser.__exit__(None, None, None)


@pytest.fixture
def report_file(seeded_database: Path, tmp_path: Path) -> Path:
    """The seeds week's report, with a row of unbreakable text and long URLs on top."""
    with db.reader(seeded_database) as con:
        data = collect_report(con, SEEDS_WEEK, Settings(), persist=False)
    data.new_papers.insert(0, LONG_ROW)
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
    left = set(image.crop((0, 0, 3, image.height)).getdata())
    right = set(image.crop((width - 3, 0, width, image.height)).getdata())
    assert right <= left, sorted(right - left)[:5]
    # Not blank: varied pixels, and text.
    grey = image.convert("L")
    assert ImageStat.Stat(grey).stddev[0] > 20
    dark = sum(grey.histogram()[:100])  # pixels darker than 100 of 255
    assert dark > 0.01 * width * image.height
