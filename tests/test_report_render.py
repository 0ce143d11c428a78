"""The rendered report as an e-mail: safe HTML, size with 5,000 new papers, the CSV,
escaping of hostile listings, and header injection."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from paperwatch import db
from paperwatch.db.report_data import collect_report
from paperwatch.report.budget import MAX_LISTED, largest_fitting
from paperwatch.report.email_safety import MAX_HTML_BYTES, check_email_safety
from paperwatch.report.message import HeaderInjectionError, message_bytes, report_message
from paperwatch.report.papers_csv import new_papers_csv
from paperwatch.report.render import RenderedReport, ReportData, render_report
from paperwatch.settings import Settings

from .conftest import SEEDS_WEEK

WEEK = SEEDS_WEEK
DATE = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.UTC)
SYNTHETIC = 5_000


def figures(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "files": 1,
        "files_loaded": 1,
        "files_duplicate": 0,
        "files_quarantined": 0,
        "entries": 1,
        "new_papers": 1,
        "exact_duplicates": 0,
        "near_duplicates": 0,
        "entries_quarantined": 0,
        "checks_passed": 4,
        "checks_total": 4,
        "venues": ["ICLR 2025"],
    }
    values.update(overrides)
    return values


def paper(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "paper_id": "0123456789abcdef",
        "method_name": "EvilNet",
        "first_sentence": "We propose EvilNet.",
        "abstract": "We propose EvilNet.",
        "code_urls": [],
        "word_count": 3,
        "source_file": "010_aaaaaaaaaaaaaaaa.txt",
        "position": 1,
    }
    values.update(overrides)
    return values


def data_of(papers: list[dict[str, Any]], **figure_overrides: Any) -> ReportData:
    return ReportData(
        week=WEEK,
        monday="2026-11-23",
        sunday="2026-11-29",
        timezone="UTC",
        figures=figures(new_papers=len(papers), entries=len(papers), **figure_overrides),
        new_papers=papers,
    )


def seeds_report(database: Path) -> ReportData:
    with db.reader(database) as con:
        return collect_report(con, WEEK, Settings(), persist=False)


# ------------------------------------------------------------ the seeds week


def test_seeds_report_is_fit_for_email(seeded_database: Path) -> None:
    report = render_report(seeds_report(seeded_database))
    assert check_email_safety(report.html) == []
    assert report.listed == 54
    assert len(report.html.encode()) < MAX_HTML_BYTES
    assert report.subject == "paperwatch — NeurIPS 2026 week 2026-W48: 54 new papers, 3 duplicates"
    # Only @media rules are left in <style>; everything else is inlined.
    styles = re.findall(r"<style[^>]*>(.*?)</style>", report.html, flags=re.S)
    assert len(styles) == 1 and styles[0].startswith("@media only screen and (max-width: 660px)")
    assert 'class="item" style="' in report.html
    # The same week, rendered again, gives the same bytes; so does its message.
    again = render_report(seeds_report(seeded_database))
    assert (again.html, again.text, again.csv) == (report.html, report.text, report.csv)
    first = report_message(report, sender="pw@example.org", recipients=["a@example.org"], date=DATE)
    second = report_message(again, sender="pw@example.org", recipients=["a@example.org"], date=DATE)
    assert message_bytes(first) == message_bytes(second)


# ----------------------------------------------------- a week of 5,000 papers


def fill_synthetic_week(database: Path, count: int) -> None:
    """One loaded listing file of week 2026-W48 with ``count`` distinct papers, in SQL."""
    with db.writer(database) as con:
        con.execute(
            """
            insert into listing_files (sha256, path, name, sequence_number, size_bytes, mtime_ns,
                venue, year, header, entry_count, entries_loaded, entries_quarantined, status,
                first_seen, first_seen_week, loaded_at, run_id)
            values (repeat('a', 64), '100_0123456789abcdef.txt', '100_0123456789abcdef.txt', 100,
                0, 0, 'NeurIPS', 2026, 'NeurIPS 2026 论文列表', $count, $count, 0, 'loaded',
                timestamptz '2026-11-25 10:00:00+00', $week, timestamptz '2026-11-25 10:00:00+00',
                'synthetic')
            """,
            {"count": count, "week": WEEK},
        )
        con.execute(
            """
            insert into papers
            select
                format('{:016x}', i) as paper_id,
                s || ' ' || repeat('Further details follow in the abstract. ', 20) as abstract,
                s as abstract_raw,
                'Method' || i as method_name,
                s as first_sentence,
                200 as word_count,
                ['https://github.com/example-lab-' || i || '/method-' || i || '-official-code'],
                'NeurIPS', 2026, 1, i + 1,
                timestamptz '2026-11-25 10:00:00+00', $week, null, null, null, null
            from (
                select i, 'We propose Method' || i || ', a scalable approach to long-context '
                    || 'language modelling that compresses the key-value cache with spectral '
                    || 'sketches, cutting memory by ' || (i % 90 + 5) || '% while keeping '
                    || 'accuracy on retrieval, reasoning and code benchmarks.' as s
                from range($count) t(i)
            )
            """,
            {"count": count, "week": WEEK},
        )
        con.execute(
            """
            insert into paper_occurrences (file_id, position, line, paper_id, raw_text, run_id)
            select 1, first_position, first_position * 2, paper_id, abstract_raw, 'synthetic'
            from papers
            """
        )


@pytest.fixture(scope="module")
def big_week(tmp_path_factory: pytest.TempPathFactory) -> ReportData:
    database = tmp_path_factory.mktemp("big") / "paperwatch.duckdb"
    fill_synthetic_week(database, SYNTHETIC)
    return seeds_report(database)


def test_5000_new_papers_stay_under_the_gmail_limit(big_week: ReportData) -> None:
    assert len(big_week.new_papers) == SYNTHETIC
    report = render_report(big_week)
    size = len(report.html.encode())
    assert size < MAX_HTML_BYTES
    assert check_email_safety(report.html) == []
    assert 0 < report.listed <= MAX_LISTED
    more = SYNTHETIC - report.listed
    assert f"… and {more:,} more. All 5,000 new papers are in the attached file" in report.html
    assert f"… and {more:,} more. All 5,000 new papers are in the attached" in report.text
    assert "<b>2026-W48-new-papers.csv</b>" in report.html
    # Both parts list the same rows.
    shown = [f"Method{i}" for i in range(report.listed)]
    assert re.findall(r'<b class="name"[^>]*>(Method\d+)</b>', report.html) == shown
    assert re.findall(r"^\* (Method\d+) \(", report.text, flags=re.M) == shown
    # The CSV has every paper.
    rows = list(csv.reader(io.StringIO(report.csv.decode("utf-8-sig"))))
    assert len(rows) == SYNTHETIC + 1
    assert rows[1] == [
        "0000000000000000",
        "Method0",
        big_week.new_papers[0]["first_sentence"],
        "https://github.com/example-lab-0/method-0-official-code",
        "100_0123456789abcdef.txt",
        "1",
        "",
        "",
        "",
        "",
    ]
    message = report_message(
        report, sender="pw@example.org", recipients=["a@example.org"], date=DATE
    )
    assert message["Subject"] == (
        "paperwatch — NeurIPS 2026 week 2026-W48: 5000 new papers, 0 duplicates"
    )


def _binary_search(sizes: list[int], high: int, budget: int) -> int:
    """The search render_report used before largest_fitting: the reference answer."""
    low, top, found = 0, high - 1, 0
    while low <= top:
        middle = (low + top) // 2
        if sizes[middle] <= budget:
            found, low = middle, middle + 1
        else:
            top = middle - 1
    return found


def test_largest_fitting_finds_the_binary_search_answer_in_fewer_measurements() -> None:
    # A report-like size: 20,000 bytes of header, rows of 900-1,300 bytes.
    sizes = [20_000]
    for i in range(100):
        sizes.append(sizes[-1] + 900 + (i * 37) % 400)
    measured: list[int] = []

    def size_of(rows: int) -> int:
        measured.append(rows)
        return sizes[rows]

    assert largest_fitting(size_of, 100, 90_000, high_size=sizes[100]) == 63
    assert _binary_search(sizes, 100, 90_000) == 63
    assert measured == [0, 63, 64]
    # Every budget and bracket gives the binary search's answer (sizes non-decreasing,
    # flat runs included), and at most 3 measurements per halving.
    flat = [10, 10, 10, 12, 12, 40, 41, 41, 41, 90, 91, 200]
    for table in (sizes, flat):
        for high in range(1, len(table)):
            for budget in range(table[0], table[high], max(1, (table[high] - table[0]) // 60)):
                measured.clear()
                found = largest_fitting(_size_of_table(table, measured), high, budget)
                assert found == _binary_search(table, high, budget), (high, budget)
                assert len(measured) <= 2 + 3 * max(1, high.bit_length()), (high, budget)
    # Nothing fits: 0 (the caller measures 0 rows itself); a fitting high is an error.
    assert largest_fitting(lambda rows: 10 + rows, 5, 9) == 0
    with pytest.raises(ValueError, match="nothing to search"):
        largest_fitting(lambda rows: rows, 5, 5)
    with pytest.raises(ValueError, match="at least 1"):
        largest_fitting(lambda rows: rows, 0, 5)


def _size_of_table(table: list[int], measured: list[int]) -> Any:
    def size_of(rows: int) -> int:
        measured.append(rows)
        return table[rows]

    return size_of


def test_a_tighter_budget_lists_fewer_rows(big_week: ReportData) -> None:
    loose = render_report(big_week)
    tight = render_report(big_week, budget_bytes=40_000)
    assert len(tight.html.encode()) <= 40_000
    assert 0 < tight.listed < loose.listed
    # The largest number of rows that fits: one more would not.
    assert (
        len(render_report(big_week, max_listed=tight.listed + 1, budget_bytes=10**9).html.encode())
        > 40_000
    )
    assert render_report(big_week, max_listed=3).listed == 3


# ------------------------------------------------------------------ escaping


def elements(html: str) -> tuple[set[str], set[str]]:
    """The element and attribute names an HTML parser finds in ``html``."""
    tags: set[str] = set()
    attributes: set[str] = set()

    class Collect(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            tags.add(tag)
            attributes.update(name for name, _ in attrs)

    Collect().feed(html)
    return tags, attributes


HOSTILE = (
    "We propose EvilNet <script>alert('x')</script> with an <img src=x onerror=alert(1)> "
    "image, a javascript:alert(document.cookie) link and a " + "Supercalifragilistic" * 8 + " word."
)


def test_hostile_listings_are_shown_as_text() -> None:
    papers = [
        paper(
            first_sentence=HOSTILE,
            method_name="<b onmouseover=alert(1)>Evil</b>",
            code_urls=[
                "javascript:alert(1)",
                "https://example.org/a?b=1&c=<x>",
                'https://example.org/"onmouseover="alert(1)',
                "data:text/html,<script>alert(1)</script>",
            ],
        )
    ]
    report = render_report(data_of(papers))
    html = report.html
    assert check_email_safety(html) == []
    tags, attributes = elements(html)
    assert {"script", "img"} & tags == set()
    assert [a for a in attributes if a.startswith("on")] == []
    assert "&lt;script&gt;alert('x')&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&lt;b onmouseover=alert(1)&gt;Evil&lt;/b&gt;" in html
    # Only http(s) URLs are links (attribute values keep their quotes escaped: HTML5
    # serialisation escapes & and " there); the others are shown as text.
    assert re.findall(r'href="([^"]*)"', html) == [
        "https://example.org/a?b=1&amp;c=<x>",
        "https://example.org/&quot;onmouseover=&quot;alert(1)",
    ]
    assert 'code (not a web link): <span class="code"' in html
    assert ">javascript:alert(1)</span>" in html
    assert ">data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;</span>" in html
    # The plain-text part shows the text as it is (it is not HTML).
    assert "<script>alert('x')</script>" in report.text
    assert "code: javascript:alert(1) (not a web link)" in report.text
    assert "code: https://example.org/a?b=1&c=<x>\n" in report.text


def test_a_header_with_a_line_break_is_refused() -> None:
    report = render_report(data_of([paper()], venues=["ICLR 2025\r\nBcc: thief@example.net"]))
    # Venue names come from listing headers: line breaks in them are collapsed.
    assert report.subject == (
        "paperwatch — ICLR 2025 Bcc: thief@example.net week 2026-W48: 1 new paper, 0 duplicates"
    )
    message = report_message(
        report, sender="pw@example.org", recipients=["a@example.org"], date=DATE
    )
    assert message["Bcc"] is None and "\n" not in str(message["Subject"])
    with pytest.raises(HeaderInjectionError, match="recipient 1 contains a line break"):
        report_message(
            report,
            sender="pw@example.org",
            recipients=["a@example.org\nBcc: thief@example.net"],
            date=DATE,
        )
    with pytest.raises(HeaderInjectionError, match="Subject contains a line break"):
        report_message(
            RenderedReport(
                week=WEEK, html=report.html, text=report.text, subject="x\r\nBcc: t@example.net"
            ),
            sender="pw@example.org",
            recipients=["a@example.org"],
            date=DATE,
        )


def test_new_papers_csv_columns_and_formula_cells() -> None:
    data = new_papers_csv(
        [
            paper(code_urls=["https://a.example/x", "https://b.example/y"]),
            paper(paper_id="fedcba9876543210", method_name="=HYPERLINK(\"http://x\")",
                  first_sentence="-1 is less, “quoted” × 2", position=2),
        ]
    )  # fmt: skip
    assert data.startswith(b"\xef\xbb\xbf")
    assert data.decode("utf-8-sig") == (
        "paper_id,method_name,first_sentence,code_urls,source_file,position,"
        "title,authors,url,external_id\r\n"
        "0123456789abcdef,EvilNet,We propose EvilNet.,https://a.example/x https://b.example/y,"
        "010_aaaaaaaaaaaaaaaa.txt,1,,,,\r\n"
        'fedcba9876543210,"\'=HYPERLINK(""http://x"")","\'-1 is less, “quoted” × 2",,'
        "010_aaaaaaaaaaaaaaaa.txt,2,,,,\r\n"
    )


def _compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the templates Jinja2 compiles from source from now on."""
    import jinja2

    compiled: list[str] = []
    original = jinja2.Environment.compile

    def recording(
        self: jinja2.Environment, source: Any, name: Any = None, *a: Any, **k: Any
    ) -> Any:
        compiled.append(str(name))
        return original(self, source, name, *a, **k)

    monkeypatch.setattr(jinja2.Environment, "compile", recording)
    return compiled


def test_compiled_templates_are_kept_in_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first command compiles the templates and stores their code in the user cache;
    the next loads it and renders the same bytes."""
    from paperwatch.report import render as report

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    compiled = _compiles(monkeypatch)
    data = data_of([paper(), paper(paper_id="fedcba9876543210", method_name="KindNet")])
    report._environment.cache_clear()
    first = render_report(data)
    assert sorted(compiled) == ["report.html.j2", "report.txt.j2"]
    folder = report.template_cache_dir()
    assert folder is not None and folder.parent == tmp_path / "cache" / "paperwatch"
    assert len([p for p in folder.iterdir() if p.suffix == ".cache"]) == 2
    compiled.clear()
    report._environment.cache_clear()  # a new process
    again = render_report(data)
    report._environment.cache_clear()
    assert compiled == []
    assert (again.html, again.text, again.csv) == (first.html, first.text, first.csv)


def _rendered_twice_as_new_processes(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, list[str]]:
    """Render one report twice, each time with a new template environment (as two
    processes would): the two renderings and the templates compiled meanwhile."""
    from paperwatch.report import render as report

    compiled = _compiles(monkeypatch)
    data = data_of([paper()])
    report._environment.cache_clear()
    first = render_report(data)
    report._environment.cache_clear()
    again = render_report(data)
    report._environment.cache_clear()
    return first, again, sorted(compiled)


def test_an_unwritable_template_cache_only_means_compiling_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    first, again, compiled = _rendered_twice_as_new_processes(monkeypatch)
    assert compiled == ["report.html.j2"] * 2 + ["report.txt.j2"] * 2
    assert again.html == first.html and blocker.read_text(encoding="utf-8").startswith("a file")


def test_without_a_home_the_templates_are_compiled_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HOME unset and the user not in the password database (a container's uid): no cache
    folder, so no compiled code is kept, and the report renders all the same."""
    import pwd

    from paperwatch.report import render as report

    def unknown(uid: int) -> pwd.struct_passwd:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(pwd, "getpwuid", unknown)
    assert report.template_cache_dir() is None
    first, again, compiled = _rendered_twice_as_new_processes(monkeypatch)
    assert report._environment().bytecode_cache is None
    report._environment.cache_clear()
    assert compiled == ["report.html.j2"] * 2 + ["report.txt.j2"] * 2
    assert again.html == first.html and "EvilNet" in first.text


def test_the_text_trending_paragraph_ends_before_the_list(seeded_database: Path) -> None:
    """The first week's explanation is its own paragraph: a blank line, then the list
    (the newline after the wrapped paragraph used to be eaten by the next block tag)."""
    text = render_report(seeds_report(seeded_database)).text
    section = text[text.index("TRENDING TERMS") :]
    assert "against general English.\n\n  1. large language model — 12 of 54 papers" in section
    assert all(len(line) <= 78 for line in section.split("\n\n")[1].splitlines())
