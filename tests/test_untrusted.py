"""Record fields from other formats are untrusted: what reaches the report, the mail's text
part, the CSV and the database (paperwatch.untrusted; cases in tests/data/metadata-injection,
each a case of ../shared/cases/metadata-injection in our own words)."""

from __future__ import annotations

import datetime as dt
import html as htmllib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paperwatch import db
from paperwatch.db.report_data import ReportData, collect_report
from paperwatch.flows.ingest import ingest_listings
from paperwatch.ingest.parse import Entry
from paperwatch.ingest.readers import read_text
from paperwatch.report.budget import MIN_LISTED
from paperwatch.report.message import build_message
from paperwatch.report.render import MAX_TITLE_DISPLAY_CHARS, render_report
from paperwatch.settings import Settings
from paperwatch.untrusted import (
    MAX_TITLE_CHARS,
    check_web_url,
    is_mixed_script,
    is_unsafe_char,
    one_line_text,
    plain_text,
    safe_entry,
    shorten,
    valid_external_id,
)

CASES = Path(__file__).parent / "data" / "metadata-injection"
AS_OF = "2026-11-25T10:00:00+00:00"
ABSTRACT = (
    "We propose a sparse router for mixture-of-experts models that keeps expert load "
    "balanced without an auxiliary loss, and show on four benchmarks that it trains "
    "faster and forgets less than dense baselines."
)


@pytest.mark.parametrize(
    ("raw", "url", "problem"),
    [
        ("https://arxiv.org/abs/2611.01234", "https://arxiv.org/abs/2611.01234", None),
        ("HTTPS://Arxiv.org/abs/1", "HTTPS://Arxiv.org/abs/1", None),
        ("http://admin:s3cret@intranet.example/login", None, "holds a user name or password"),
        ("https://arxiv.org@evil.example/abs/2611.00001", None, "holds a user name or password"),
        ("https://аrxiv.org/abs/1", None, "host mixes scripts (xn--rxiv-43d.org)"),
        ("https://xn--rxiv-43d.org/abs/1", None, "host mixes scripts (xn--rxiv-43d.org)"),
        ("https://xn--arxv-0ra.org/abs/1", "https://xn--arxv-0ra.org/abs/1", None),
        ("https://bücher.example/ü", "https://xn--bcher-kva.example/%C3%BC", None),
        ("https://例え.jp/a", "https://xn--r8jz45g.jp/a", None),
        ("https://a.example/x\n\n*forged", None, "holds white space, control or format characters"),
        ("https://a.example/\x1b[2J", None, "holds white space, control or format characters"),
        (
            "https://a.example/\u202efdp.exe",
            None,
            "holds white space, control or format characters",
        ),
        ("javascript:alert(1)", None, "not an http(s) address"),
        ("data:text/html,x", None, "not an http(s) address"),
        ("https:///path", None, "has no host"),
        ("https://a.example:99999/", None, "not a URL (Port out of range 0-65535)"),
        ("", None, None),
    ],
)
def test_check_web_url(raw: str, url: str | None, problem: str | None) -> None:
    assert check_web_url(raw) == (url, problem)


def test_mixed_scripts_follow_the_highly_restrictive_level() -> None:
    assert is_mixed_script("аrxiv")  # Cyrillic а, Latin rxiv
    assert not is_mixed_script("arxiv")
    assert not is_mixed_script("例えtokyo")  # Han, Hiragana and Latin: Japanese
    assert not is_mixed_script("пример")
    assert is_mixed_script("paypaΙ")  # Greek capital iota


def test_external_ids_are_checked_against_their_syntax() -> None:
    assert valid_external_id("arXiv:2611.01234")
    assert valid_external_id("arXiv:cs/0112017")
    assert valid_external_id("doi:10.1145/3592979.3593418")
    assert valid_external_id("openreview:Abc123_-x")
    assert not valid_external_id("openreview:Abc123\n\n*_Security_notice")
    assert not valid_external_id("doi:10.1234/abc\x1b[2J")
    assert not valid_external_id("arXiv:2611.012")
    assert not valid_external_id("isbn:12345")


def test_plain_text_and_shorten() -> None:
    assert plain_text("a\x1b[2Jb\rc\u202ed\te\nf") == "a\ufffd[2Jb\ufffdc\ufffdd\te\nf"
    assert shorten("one two three four", 10) == "one two…"
    assert shorten("X" * 50, 10) == "X" * 9 + "…"
    assert shorten("short", 10) == "short"


def test_safe_entry_names_each_changed_field_and_keeps_the_raw_fields() -> None:
    entry = Entry(
        position=1,
        line=1,
        text=ABSTRACT,
        title="Title\x1b[31m red" + " word" * 300,
        authors=("Ada\u202e Lovelace",),
        url="http://admin:s3cret@intranet.example/login",
        external_id="openreview:Abc123\n\nforged",
    )
    safe = safe_entry(entry)
    assert safe.title is not None and len(safe.title) == 995  # whole words, then "…"
    assert safe.title.endswith(" word…") and len(safe.title) <= MAX_TITLE_CHARS
    assert safe.title.startswith("Title red word")
    assert safe.authors == ("Ada Lovelace",)
    assert (safe.url, safe.external_id) == (None, None)
    assert safe.field_faults == (
        "title: control or bidi characters removed",
        "title: 1,509 characters, shortened to 1,000",
        "author: control or bidi characters removed",
        "external_id: not a valid arXiv id, DOI or OpenReview id",
        "url: holds a user name or password, not linked",
    )
    assert safe.raw_fields is not None
    assert json.loads(safe.raw_fields)["external_id"] == "openreview:Abc123\n\nforged"
    plain = Entry(position=1, line=1, text=ABSTRACT, title="A title", url="https://a.example/")
    assert safe_entry(plain) is plain


def test_a_refused_url_falls_back_to_the_address_of_a_valid_id() -> None:
    entry = Entry(
        position=1,
        line=1,
        text=ABSTRACT,
        url="https://arxiv.org@evil.example/abs/2611.00001",
        external_id="arXiv:2611.00001",
    )
    assert safe_entry(entry).url == "https://arxiv.org/abs/2611.00001"


def _case_folder(root: Path) -> Path:
    folder = root / "listings"
    shutil.copytree(CASES, folder)
    # One record whose title is 150,000 characters (kept out of the repository).
    huge = [{"title": "X" * 150_000, "abstract": ABSTRACT}]
    (folder / "a_huge.json").write_text(json.dumps(huge), encoding="utf-8")
    return folder


@pytest.mark.usefixtures("prefect_harness")
def test_hostile_records_neither_blank_the_week_nor_forge_lines(tmp_path: Path) -> None:
    database = tmp_path / "db" / "paperwatch.duckdb"
    summary = ingest_listings(str(_case_folder(tmp_path)), str(database), AS_OF)
    assert (summary.files_loaded, summary.new_papers, summary.entries_quarantined) == (6, 20, 0)
    with db.reader(database) as con:
        data = collect_report(con, "2026-W48", Settings(), persist=False)
        faults = con.execute(
            "select count(*), count(raw_fields) from paper_occurrences "
            "where field_faults is not null"
        ).fetchone()
        stored = con.execute(
            "select url, external_id, title from paper_occurrences order by all"
        ).fetchall()
        warned = con.execute(
            "select count(*) from validation_results where expectation like '%field_faults%' "
            "and outcome = 'failed'"
        ).fetchone()
    assert faults == (9, 9)
    assert warned == (5,)  # one warning per file whose records were changed
    for url, ext, title in stored:
        for value in (url, ext, title):
            assert value is None or not any(is_unsafe_char(c) for c in value)
        assert url is None or check_web_url(url) == (url, None)
    report = render_report(data)
    # Every new paper fits: the 150,000-character title is cut for display.
    assert report.listed == 20
    assert "X" * (MAX_TITLE_DISPLAY_CHARS - 1) + "…" in report.text
    assert "X" * MAX_TITLE_DISPLAY_CHARS not in report.html
    _assert_inert(report.html, report.text)
    _assert_unlinked(report.html, report.text)
    assert "https://xn--arxv-0ra.org/abs/2611.00002" in report.text
    message = build_message(
        subject=report.subject,
        sender="paperwatch@example.org",
        recipients=["team@example.org"],
        html=report.html,
        text=report.text,
        date=dt.datetime(2026, 11, 30, 8, tzinfo=dt.UTC),
        message_id_domain="example.org",
    )
    body = message.get_body(("plain",))
    assert body is not None
    assert body.get_content() == report.text.replace("\r\n", "\n")


def _assert_inert(html: str, text: str) -> None:
    assert not any(is_unsafe_char(c) for c in text)
    assert not any(is_unsafe_char(c) for c in html.replace("\r", ""))
    for line in text.splitlines():
        assert not line.lstrip().startswith("*_Security"), line
    for href in re.findall(r'href="([^"]*)"', html):
        link = htmllib.unescape(href)
        assert check_web_url(link) == (link, None), href


def _assert_unlinked(html: str, text: str) -> None:
    """The cases' passwords and look-alike hosts are neither linked nor printed."""
    for secret in ("s3cret", "evil.example", "аrxiv"):
        assert secret not in html and secret not in text, secret


# --- Random Unicode into every record field of every reader ------------------------------

_FIELD = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=300)
_HOSTILE = st.sampled_from(
    [
        "\x1b[2J",
        "\r",
        "\n\n* forged line",
        "\u202e",
        "javascript:alert(1)",
        "http://u:p@h.example/",
        "https://аrxiv.org/",
        "data:text/html,x",
    ]
)
_VALUE = st.one_of(_FIELD, st.builds(lambda a, b: a + b, _FIELD, _HOSTILE))


def _json(title: str, author: str, url: str, ident: str) -> tuple[str, str]:
    record = {"title": title, "authors": [author], "url": url, "forum": ident, "abstract": ABSTRACT}
    return "json", json.dumps([record])


def _bibtex(title: str, author: str, url: str, ident: str) -> tuple[str, str]:
    def field(value: str) -> str:
        return re.sub(r"[{}\\@]", " ", value)

    return "bibtex", (
        f"@inproceedings{{k1,\n  title = {{{field(title)}}},\n  author = {{{field(author)}}},\n"
        f"  url = {{{field(url)}}},\n  doi = {{{field(ident)}}},\n  abstract = {{{ABSTRACT}}}\n}}\n"
    )


def _feed(title: str, author: str, url: str, ident: str) -> tuple[str, str]:
    from xml.sax.saxutils import escape

    def x(value: str) -> str:
        kept = "".join(c for c in value if c in "\t\n\r" or ord(c) >= 0x20)
        return escape(kept.replace("\ufffe", "").replace("\uffff", ""), {'"': "&quot;"})

    return "feed", (
        '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
        f"<entry><title>{x(title)}</title><author><name>{x(author)}</name></author>"
        f'<link href="{x(url)}"/><id>{x(ident)}</id><summary>{ABSTRACT}</summary></entry></feed>'
    )


def _markdown(title: str, author: str, url: str, ident: str) -> tuple[str, str]:
    def line(value: str) -> str:
        return " ".join(value.split()) or "x"

    return "markdown", (
        f"# Digest\n\n## [1] [{line(title)}]({line(url)})\n\n**Authors:** {line(author)}\n\n"
        f"**Link:** {line(ident)}\n\n{ABSTRACT}\n\n## [2] Second paper\n\n{ABSTRACT} Again.\n"
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([_json, _bibtex, _feed, _markdown]),
    _VALUE,
    _VALUE,
    _VALUE,
    _VALUE,
)
def test_random_record_fields_reach_no_output_unsafe(
    make: Any, title: str, author: str, url: str, ident: str
) -> None:
    fmt, text = make(title, author, url, ident)
    listing = read_text(fmt, text, f"hostile.{fmt}")
    papers = []
    for entry in listing.entries:
        for value in (entry.title, entry.external_id, *entry.authors):
            assert value is None or not any(is_unsafe_char(c) for c in value)
        assert entry.url is None or check_web_url(entry.url) == (entry.url, None)
        papers.append(
            {
                "paper_id": f"{entry.position:016x}",
                "method_name": None,
                "first_sentence": ABSTRACT,
                "abstract": ABSTRACT,
                "code_urls": [entry.url or "https://x.example/"],
                "word_count": 30,
                "source_file": f"hostile.{fmt}",
                "position": entry.position,
                "title": entry.title,
                "authors": list(entry.authors),
                "url": entry.url,
                "external_id": entry.external_id,
            }
        )
    # Enough papers that the budget matters; each is the record as read.
    papers = (papers * (MIN_LISTED + 5))[: MIN_LISTED + 5]
    report = render_report(_data(papers))
    assert report.listed >= MIN_LISTED
    _assert_inert(report.html, report.text)
    csv_text = report.csv.decode("utf-8-sig")
    assert not any(is_unsafe_char(c) for c in csv_text.replace("\r", ""))


def _data(papers: list[dict[str, Any]]) -> ReportData:
    return ReportData(
        week="2026-W48",
        monday="2026-11-23",
        sunday="2026-11-29",
        timezone="UTC",
        figures={
            "files": 1,
            "files_loaded": 1,
            "files_duplicate": 0,
            "files_quarantined": 0,
            "entries": len(papers),
            "new_papers": len(papers),
            "exact_duplicates": 0,
            "near_duplicates": 0,
            "entries_quarantined": 0,
            "checks_passed": 4,
            "checks_total": 4,
            "venues": [],
        },
        new_papers=papers,
    )


def test_a_decoded_markdown_reference_is_text_in_the_report_not_markup() -> None:
    """``&lt;script&gt;`` in a Markdown abstract is read as ``<script>`` (the characters
    the digest shows); the report escapes it again, so it is text, never an element."""
    from paperwatch.ingest.clean import clean_abstract
    from paperwatch.report.email_safety import check_email_safety

    abstract = (
        "We show that &lt;script&gt;alert(1)&lt;/script&gt; in a cell &amp; an "
        "&lt;img src=x onerror=alert(2)&gt; tag are read as text by every parser we tried."
    )
    digest = f"# Digest\n\n## [1] Q&amp;A &lt;b&gt;bold&lt;/b&gt;\n\n**Abstract:** {abstract}\n"
    [entry] = read_text("markdown", digest, "x.md").entries
    assert "<script>alert(1)</script>" in entry.text and entry.title == "Q&A <b>bold</b>"
    clean = clean_abstract(entry.text)
    paper = {
        "paper_id": clean.paper_id,
        "method_name": None,
        "first_sentence": clean.first_sentence,
        "abstract": clean.abstract,
        "code_urls": [],
        "word_count": clean.word_count,
        "source_file": "x.md",
        "position": 1,
        "title": entry.title,
        "authors": [],
        "url": None,
        "external_id": None,
    }
    report = render_report(_data([paper] * (MIN_LISTED + 5)))
    assert "<script" not in report.html and "<img src=x" not in report.html
    assert "<b>bold" not in report.html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in report.html
    assert "Q&amp;A &lt;b&gt;bold&lt;/b&gt;" in report.html
    assert check_email_safety(report.html) == []
    _assert_inert(report.html, report.text)


@pytest.mark.parametrize("fmt", ["text", "lines"])
def test_a_plain_header_line_loses_its_control_and_bidi_characters(fmt: str) -> None:
    # The header line becomes the venue of the mail's Subject and the report's heading.
    text = "ICML\x1b[2J\x07 2026\u200f\u2066 accepted \u202epapers\n\nWe study a thing.\n"
    listing = read_text(fmt, text, "x.txt")
    assert listing.header is not None
    assert (listing.header.venue, listing.header.year) == ("ICML", 2026)
    assert listing.header.text == "ICML 2026 accepted papers"
    assert all(c.isprintable() for c in listing.header.text + listing.header.label)


def test_terminal_escape_sequences_leave_nothing_behind() -> None:
    """Text copied from a terminal: colours, a hyperlink and a cursor save are dropped
    whole, in the abstract and in a title (not ``[31m`` left without its ESC)."""
    from paperwatch.ingest.clean import clean_abstract

    raw = (
        "We \x1b[1;31mpropose\x1b[0m a cache policy \x1b]8;;https://example.org\x07that"
        "\x1b]8;;\x07 follows the query mix, and \x1b7evaluate it on four suites."
    )
    assert clean_abstract(raw).abstract == (
        "We propose a cache policy that follows the query mix, and evaluate it on four suites."
    )
    assert one_line_text("Tidal \x1b[32mCaches\x1b[0m\x1b[K") == "Tidal Caches"


def test_a_title_keeps_its_joiners_but_not_its_bidi_controls() -> None:
    from paperwatch.report.render import display_title, printable

    title = "Lab notes 👩\u200d🔬 on می\u200cخواهم"
    assert display_title(title) == title
    assert printable("a\u200db\u202ec\x00") == "a\u200db\ufffdc\ufffd"
