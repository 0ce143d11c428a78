"""A reader's message with library matches and their reasons in a real browser (headless
Chromium), at the e-mail width (640 px) and a phone's (375 px): nothing passes the right
edge, and the reasons are drawn. The screenshots are kept in tests/artifacts/ (git-ignored);
docs/images/for-you-library-*.png are copies of them. Skipped, with the reason, when
Chromium is not installed (``make browser``)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from paperwatch import db
from paperwatch.db.library import reader_picks, week_papers
from paperwatch.db.report_data import collect_report, topic_matches
from paperwatch.ingest.library import reader_library
from paperwatch.report.render import for_reader, render_report
from paperwatch.settings import Reader, Settings

from .chromium import Chromium
from .conftest import ROOT
from .library_week import LIBRARY, WEEK, build_week

pytestmark = pytest.mark.browser

ARTIFACTS = ROOT / "tests" / "artifacts"
#: The colour of a reason line (``.why`` in report.html.j2).
WHY = (0x06, 0x5F, 0x46)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("library-page")
    database = folder / "week.duckdb"
    build_week(database)
    reader = Reader(
        address="Ann Lee <ann@example.org>",
        topics=["speech recognition"],
        library=LIBRARY,
        library_picks=5,
        authors=["Étienne Moreau"],
        exclude=["reinforcement learning"],
    )
    with db.reader(database) as con:
        data = collect_report(con, WEEK, Settings(), persist=False)
        matches = topic_matches(con, WEEK, reader.topics)
        picks = reader_picks(con, week_papers(con, WEEK), reader, reader_library(reader), 2026)
    path = folder / "for-you-library.html"
    path.write_text(render_report(for_reader(data, reader, matches, picks)).html, encoding="utf-8")
    return path


@pytest.mark.parametrize(("width", "mobile"), [(640, False), (375, True)])
def test_library_matches_and_reasons_fit_the_width(
    chromium: Chromium, page: Path, width: int, mobile: bool
) -> None:
    html = page.read_text(encoding="utf-8")
    section = html[html.index(">For you</h2>") : html.index(">New papers</h2>")]
    assert section.count("close to your") == 5 and "whom you follow" in section
    assert "Grasping Unknown" not in section  # excluded
    shot = chromium.shoot(page.as_uri(), width, mobile=mobile)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"for-you-library-{width}.png").write_bytes(shot.png)
    assert shot.viewport == width
    assert shot.overflowing == []
    assert shot.scroll_width <= width
    image = Image.open(io.BytesIO(shot.png)).convert("RGB")
    assert image.size == (width, shot.height)
    # The reasons are drawn, in their colour (anti-aliased text has some exact pixels).
    assert sum(1 for pixel in image.get_flattened_data() if pixel == WHY) > 50
