"""The report as a researcher reads it: sources they can place, an empty week, one word
for duplicates, a blank line before each text section, "For you" per reader, the archive."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from paperwatch import db
from paperwatch.db.report_data import collect_report, topic_matches
from paperwatch.report.email_safety import check_email_safety
from paperwatch.report.render import (
    ReportData,
    for_reader,
    render_archive,
    render_report,
    source_label,
    topic_patterns,
)
from paperwatch.settings import Reader, Settings, SmtpSettings

from .report_weeks import EARLIER_ABSTRACTS, build

WEEK = "2026-W48"
EMPTY_WEEK = "2026-W49"
TOPICS = ["quantization", "diffusion", "federated continual learning"]


@pytest.fixture(scope="module")
def weeks_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    database = tmp_path_factory.mktemp("weeks") / "weeks.duckdb"
    return build(
        database,
        {"2026-W44": EARLIER_ABSTRACTS[:3], "2026-W45": EARLIER_ABSTRACTS[3:]},
        seeds_week=WEEK,
    )


def report_of(database: Path, week: str) -> ReportData:
    with db.reader(database) as con:
        return collect_report(con, week, Settings(), persist=False)


def headings(text: str) -> list[tuple[str, str]]:
    """(line before, heading) of every section heading (a line underlined with ===)."""
    lines = text.splitlines()
    return [
        (lines[i - 1], lines[i])
        for i in range(1, len(lines) - 1)
        if re.fullmatch(r"=+", lines[i + 1]) and len(lines[i + 1]) == len(lines[i])
    ]


# ------------------------------------------------------------ sources


@pytest.mark.parametrize(
    ("row", "label"),
    [
        (
            {"venue": "NeurIPS", "year": 2026, "sequence_number": 2, "position": 12},
            "NeurIPS 2026 · listing 002 · #12",
        ),
        ({"venue": None, "year": None, "sequence_number": 7, "position": 1}, "listing 007 · #1"),
        (
            {
                "venue": "ICLR",
                "year": 2025,
                "sequence_number": None,
                "source_file": "nov.txt",
                "position": 3,
            },
            "ICLR 2025 · listing “nov” · #3",
        ),
        ({"file": "digest.TXT", "position": 4}, "listing “digest” · #4"),
    ],
)
def test_source_label(row: dict[str, object], label: str) -> None:
    assert source_label(row) == label


def test_sources_name_venue_listing_and_position_and_files_only_in_the_csv(
    weeks_database: Path,
) -> None:
    report = render_report(report_of(weeks_database, WEEK))
    assert "NeurIPS 2026 · listing 000 · #1" in report.html
    assert "* HJA (NeurIPS 2026 · listing 000 · #1)\n" in report.text
    # The repeated papers: every place they were listed.
    assert (
        "  in NeurIPS 2026 · listing 002 · #16; NeurIPS 2026 · listing 003 · #19\n" in report.text
    )
    for part in (report.html, report.text):
        assert "5dc500fada0b6079" not in part and ".txt #" not in part
    csv_text = report.csv.decode("utf-8-sig")
    assert "000_5dc500fada0b6079.txt,1,,,,\r\n" in csv_text


# ------------------------------------------------------------ wording, layout


def test_one_word_for_duplicates_and_a_blank_line_before_each_section(
    weeks_database: Path,
) -> None:
    report = render_report(report_of(weeks_database, WEEK))
    assert report.subject.endswith("54 new papers, 3 duplicates")
    assert "3 duplicates (3 exact, 0 near)" in report.text
    assert "duplicates (3 exact, 0 near)" in report.html
    for part in (report.subject, report.html, report.text):
        assert "repeated entr" not in part.lower()
    found = headings(report.text)
    assert [h for _, h in found] == ["NEW PAPERS", "DUPLICATES", "DATA QUALITY", "TRENDING TERMS"]
    assert [before for before, _ in found] == [""] * 4
    assert "\n\n\n" not in report.text


def test_the_quarantine_figure_agrees_with_its_number(weeks_database: Path) -> None:
    data = report_of(weeks_database, WEEK)
    assert re.search(r">0</div><div[^>]*>entries quarantined</div>", render_report(data).html)
    data.figures = {**data.figures, "entries_quarantined": 1}
    assert re.search(r">1</div><div[^>]*>entry quarantined</div>", render_report(data).html)


def test_an_empty_week_says_no_new_listings_and_nothing_stale(weeks_database: Path) -> None:
    data = report_of(weeks_database, EMPTY_WEEK)
    assert data.empty
    report = render_report(data)
    for part in (report.html, report.text):
        assert "No new listings this week." in part
        assert "Sequence gap" not in part and "sequence gap" not in part
        assert "0 of 0" not in part
        assert "Nothing was quarantined" not in part
    assert report.subject == "paperwatch — week 2026-W49: 0 new papers, 0 duplicates"
    found = headings(report.text)
    assert [h for _, h in found] == ["NEW PAPERS", "DATA QUALITY", "TRENDING TERMS"]
    assert [before for before, _ in found] == [""] * 3
    assert check_email_safety(report.html) == []


def test_a_gap_is_reported_in_the_week_of_the_files_beside_it(weeks_database: Path) -> None:
    seeds = render_report(report_of(weeks_database, WEEK))
    assert "Warning: sequence gap: listing 001 is missing." in seeds.text
    # File 900 of W44 borders the gap after the seeds' 003, not 001: each week reports the
    # gaps beside its own files.
    earlier = render_report(report_of(weeks_database, "2026-W44")).text
    assert "Warning: sequence gap: listing 004–899 are missing." in earlier
    assert "listing 001" not in earlier


# ------------------------------------------------------------ readers


def test_reader_settings_from_toml_and_plain_recipients_still_work(tmp_path: Path) -> None:
    toml = """
[smtp]
recipients = ["bob@example.org"]

[[smtp.readers]]
address = "Ann Lee <ann@example.org>"
topics = ["Diffusion", "federated  learning", "diffusion"]

[[smtp.readers]]
address = "cy@example.org"
"""
    smtp = SmtpSettings(**tomllib.loads(toml)["smtp"])
    assert smtp.recipients == ["bob@example.org"]
    assert [(r.address, r.topics) for r in smtp.readers] == [
        ("Ann Lee <ann@example.org>", ["diffusion", "federated learning"]),
        ("cy@example.org", []),
    ]
    with pytest.raises(ValueError, match="a topic is empty"):
        Reader(address="x@example.org", topics=["  "])


def test_topic_patterns_are_literal_words() -> None:
    assert topic_patterns(["federated learning", "c++", "kv cache"]) == [
        r"\bfederated\s+learning\b",
        r"\bc\+\+",
        r"\bkv\s+cache\b",
    ]


def test_for_you_ranks_the_papers_on_the_readers_topics(weeks_database: Path) -> None:
    data = report_of(weeks_database, WEEK)
    with db.reader(weeks_database) as con:
        matches = topic_matches(con, WEEK, TOPICS)
        assert topic_matches(con, WEEK, []) == []
    mine = for_reader(data, Reader(address="ann@example.org", topics=TOPICS), matches)
    assert mine.for_you is not None and data.for_you is None
    ranked = [(p["method_name"], p["score"], p["matched"]) for p in mine.for_you["papers"]]
    assert ranked == [
        ("SemanticDialect", 13, ["diffusion", "quantization"]),
        ("SPA-Q", 8, ["quantization"]),
        ("SnapMLA", 8, ["quantization"]),
        ("StyleRoute", 6, ["diffusion"]),
        ("Hestia", 5, ["quantization"]),
        ("SPHQuant", 5, ["quantization"]),
        ("ScaleBITS", 5, ["quantization"]),
        ("HoZO", 4, ["quantization"]),
        ("Ha-FCL", 3, ["federated continual learning"]),
        ("HERO", 3, ["federated continual learning"]),
        ("Graph Cascades", 3, ["diffusion"]),
        ("MSA", 3, ["diffusion"]),
        ("SP³", 3, ["diffusion"]),
        ("SOL-ExecBench", 3, ["diffusion"]),
        ("GARD", 1, ["diffusion"]),
    ]
    assert mine.for_you["total"] == 15

    shared, own = render_report(data), render_report(mine)
    # The reader's message starts with "For you", the rest is the week's report unchanged.
    assert headings(own.text)[0] == ("", "FOR YOU")
    head, _, rest = own.text.partition("\nFOR YOU\n=======\n")
    you, _, after = rest.partition("\n\n54 new papers")
    assert head + "\n54 new papers" + after == shared.text
    assert you.startswith(
        "Papers of this week on your topics: quantization, diffusion, federated continual "
        "learning.\n* SemanticDialect (NeurIPS 2026 · listing 003 · #10)\n"
    )
    assert "  matches: diffusion, quantization\n" in you
    assert own.html.index(">For you</h2>") < own.html.index(">New papers</h2>")
    assert check_email_safety(own.html) == []
    assert own.subject == shared.subject and own.csv == shared.csv


def test_a_reader_whose_topics_match_nothing_is_told_so(weeks_database: Path) -> None:
    data = report_of(weeks_database, WEEK)
    with db.reader(weeks_database) as con:
        matches = topic_matches(con, WEEK, ["medieval manuscripts"])
    mine = render_report(
        for_reader(data, Reader(address="a@example.org", topics=["medieval manuscripts"]), matches)
    )
    assert "No new paper this week matches your topics." in mine.text
    assert "No new paper this week matches your topics." in mine.html


# ------------------------------------------------------------ the archive


def test_archive_lists_every_week_with_counts_and_links() -> None:
    from datetime import UTC, datetime

    weeks = [
        {"week": "2026-W49", "new_papers": 0, "duplicates": 0, "files": 0,
         "entries_quarantined": 0, "venues": [], "sent_at": None},
        {"week": "2026-W48", "new_papers": 54, "duplicates": 3, "files": 3,
         "entries_quarantined": 0, "venues": ["NeurIPS 2026"],
         "sent_at": datetime(2026, 11, 30, 8, 0, tzinfo=UTC)},
    ]  # fmt: skip
    present = {"2026-W48.html", "2026-W48.txt", "2026-W48-new-papers.csv", "2026-W49.html",
               "2026-W49.txt"}  # fmt: skip
    html = render_archive(weeks, present)
    assert html == render_archive(weeks, present)
    assert re.findall(r'href="([^"]+)"', html) == [
        "2026-W49.html",
        "2026-W49.txt",
        "2026-W48.html",
        "2026-W48.txt",
        "2026-W48-new-papers.csv",
    ]
    assert ">week 2026-W49</a>" in html and "no new listings" in html
    assert "54 new papers · 3 duplicates · 3 listing files · 0 entries quarantined" in html
    assert "2026-11-23 to 2026-11-29 · e-mailed 2026-11-30 08:00 UTC" in html
    # E-mail safe like the report, but for the relative links to the files beside it.
    problems = check_email_safety(html)
    assert problems and all("relative URL" in p for p in problems)
    assert "<style" in html and 'style="' in html and "<script" not in html
