"""Parsing listing files: every layout variant users produce gives the same entries."""

from __future__ import annotations

import pytest

from paperwatch.ingest.parse import (
    Header,
    ListingDecodeError,
    decode_listing,
    parse_header,
    parse_listing,
    sequence_number,
)
from paperwatch.ingest.readers.lines import read_text as read_lines_text

from .conftest import SEEDS

A = "First abstract sentence one. It has two sentences about kv cache compression."
B = "Second abstract about federated continual learning with many clients."
C = "Third abstract on speculative decoding for large language models."
HEADER = "NeurIPS 2026 论文列表"


def texts(listing: object) -> list[str]:
    return [e.text for e in listing.entries]  # type: ignore[attr-defined]


def test_seed_file_parses_to_header_and_19_entries() -> None:
    data = (SEEDS / "000_5dc500fada0b6079.txt").read_bytes()
    listing = parse_listing(decode_listing(data))
    assert listing.header == Header(text=HEADER, venue="NeurIPS", year=2026, label="论文列表")
    assert len(listing.entries) == 19
    assert [e.position for e in listing.entries] == list(range(1, 20))
    assert [e.line for e in listing.entries] == list(range(3, 40, 2))
    assert listing.entries[0].text.startswith("Pairwise comparisons from multiple judges")
    assert listing.entries[-1].text.endswith("improvements across model scales and task settings.")


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(f"{HEADER}\n\n{A}\n\n{B}\n\n{C}\n", id="lf"),
        pytest.param(f"{HEADER}\r\n\r\n{A}\r\n\r\n{B}\r\n\r\n{C}\r\n", id="crlf"),
        pytest.param(f"{HEADER}\r\r{A}\r\r{B}\r\r{C}\r", id="cr"),
        pytest.param(f"\ufeff{HEADER}\n\n{A}\n\n{B}\n\n{C}\n", id="bom"),
        pytest.param(f"{HEADER}  \n\n{A}   \n\n{B}\t\n\n{C} \n", id="trailing-spaces"),
        pytest.param(f"{HEADER}\n\n\n\n{A}\n\n\n{B}\n \n\t\n{C}\n\n\n", id="several-blank-lines"),
        pytest.param(
            f"{HEADER}\n   \n{A}\n \t \n{B}\n    \n{C}", id="whitespace-only-lines-no-final-newline"
        ),
        pytest.param(
            f"{HEADER}\n\nFirst abstract sentence one. It has two\nsentences about kv cache\ncompression.\n\n"
            f"Second abstract about federated\ncontinual learning with many clients.\n\n"
            f"Third abstract on speculative decoding\n  for large language models.\n",
            id="hard-wrapped",
        ),
    ],
)
def test_layout_variants_give_the_same_entries(body: str) -> None:
    listing = parse_listing(body)
    assert listing.header is not None and listing.header.venue == "NeurIPS"
    assert texts(listing) == [A, B, C]


def test_bom_and_crlf_bytes_decode() -> None:
    data = ("\ufeff" + f"{HEADER}\r\n\r\n{A}\r\n").encode("utf-8")
    listing = parse_listing(decode_listing(data))
    assert listing.header is not None and listing.header.year == 2026
    assert texts(listing) == [A]


def test_english_header() -> None:
    listing = parse_listing(f"ICLR 2025 accepted papers\n\n{A}\n\n{B}\n")
    assert listing.header == Header("ICLR 2025 accepted papers", "ICLR", 2025, "accepted papers")
    assert texts(listing) == [A, B]


@pytest.mark.parametrize(
    ("line", "venue", "label"),
    [
        ("cs.AI（2026-11-20）", "cs.AI", ""),
        ("ICML (2026)", "ICML", ""),
        ("ACL [2026] accepted", "ACL", "accepted"),
        ("arXiv 2026/11/20 digest", "arXiv", "digest"),
        ("ICLR 2026 (accepted papers)", "ICLR", "(accepted papers)"),
    ],
)
def test_a_year_in_brackets_or_a_date_leaves_them_out_of_venue_and_label(
    line: str, venue: str, label: str
) -> None:
    assert parse_header(line) == Header(line, venue, 2026, label)


def test_missing_header_first_paragraph_is_an_entry() -> None:
    listing = parse_listing(f"{A}\n\n{B}\n")
    assert listing.header is None
    assert texts(listing) == [A, B]
    assert [e.line for e in listing.entries] == [1, 3]


def test_empty_file() -> None:
    listing = parse_listing("")
    assert listing.header is None and listing.entries == []


def test_whitespace_only_file() -> None:
    listing = parse_listing(" \n\n\t\r\n")
    assert listing.header is None and listing.entries == []


def test_header_only_file() -> None:
    listing = parse_listing(f"{HEADER}\n")
    assert listing.header is not None and listing.header.venue == "NeurIPS"
    assert listing.entries == []


def test_header_directly_followed_by_abstract() -> None:
    listing = parse_listing(f"ICML 2024 papers\n{A}\n\n{B}\n")
    assert listing.header is not None and listing.header.venue == "ICML"
    assert texts(listing) == [A, B]
    assert listing.entries[0].line == 2


def test_short_abstract_with_year_is_not_a_header() -> None:
    assert parse_header("We revisit results published in 2023.") is None
    assert parse_header(A) is None
    assert parse_header("ACL Findings 2024") == Header(
        "ACL Findings 2024", "ACL Findings", 2024, ""
    )


def test_invalid_utf8_names_offset_and_line() -> None:
    data = f"{HEADER}\n\n{A}\n\n".encode() + b"Caf\xe9 latin-1 text\n"
    with pytest.raises(ListingDecodeError) as info:
        decode_listing(data, "bad.txt")
    offset = len(f"{HEADER}\n\n{A}\n\n".encode()) + 3
    assert info.value.offset == offset
    assert info.value.line == 5
    assert f"bad.txt: not valid UTF-8 at byte {offset} (line 5)" in str(info.value)


def test_sequence_numbers() -> None:
    assert sequence_number("000_5dc500fada0b6079.txt") == 0
    assert sequence_number("002_bf103a832150c832.txt") == 2
    assert sequence_number("neurips extra.txt") is None
    assert sequence_number("12_5dc500fada0b607.txt") is None


def test_form_feed_and_unicode_separators_break_lines() -> None:
    listing = parse_listing(f"{HEADER}\u2029\u2029{A}\f\f{B}\x0b\x0b{C}\u2028")
    assert listing.header is not None
    assert texts(listing) == [A, B, C]


def test_lines_after_a_form_feed_are_numbered_as_an_editor_numbers_them() -> None:
    """A page break or U+2028 ends a paragraph but not a line of the count: an error
    then names the line ``grep -n`` shows."""
    listing = parse_listing(f"{HEADER}\n\n{A}\f\n{B}\u2028{C}\n\n\f\fD\n")
    assert [(e.line, e.text) for e in listing.entries] == [(3, A), (4, f"{B} {C}"), (6, "D")]
    assert listing.line_count == 6
    one_per_line = read_lines_text(f"{A}\f{B}\x0b\n\x85{C}\r\n")
    assert [(e.line, e.text) for e in one_per_line.entries] == [(1, A), (1, B), (2, C)]
    assert one_per_line.line_count == 2


def test_a_date_written_before_the_year_is_not_part_of_the_venue() -> None:
    assert parse_header("TLDR AI - Friday, November 20, 2026") == Header(
        "TLDR AI - Friday, November 20, 2026", "TLDR AI", 2026, ""
    )
    assert parse_header("Digest 20 Nov 2026 picks") == Header(
        "Digest 20 Nov 2026 picks", "Digest", 2026, "picks"
    )
    assert parse_header("November 20, 2026") is None
    assert parse_header("ECCV Oct 2026") == Header("ECCV Oct 2026", "ECCV Oct", 2026, "")


def test_a_read_time_title_is_the_title_of_the_next_paragraph() -> None:
    """``Title (N minute read)`` then its summary: one entry at the title's line. A title
    with no summary after it (the last paragraph, or another title next) stays an entry of
    its own; a paragraph of more than 30 words before the marker is no title."""
    long_title = " ".join(["word"] * 31)
    text = (
        "Top Stories\n\n"
        "Quiet Gradients (4 minute read)\n\n"
        f"{A}\n{B}\n\n"
        "Two Titles (2 MIN READ)\n\n"
        "In a Row (12 mins read)\n\n"
        f"{C}\n\n"
        f"{long_title} (3 minute read)\n\n"
        f"{A}\n\n"
        "Last (1 minute read)\n"
    )
    listing = parse_listing(text)
    assert [(e.line, e.title, e.text, e.line_breaks) for e in listing.entries] == [
        (1, None, "Top Stories", ()),
        (3, "Quiet Gradients", f"{A} {B}", (len(A),)),
        (8, None, "Two Titles (2 MIN READ)", ()),
        (10, "In a Row", C, ()),
        (14, None, f"{long_title} (3 minute read)", ()),
        (16, None, A, ()),
        (18, None, "Last (1 minute read)", ()),
    ]
    assert [e.position for e in listing.entries] == list(range(1, 8))


def test_a_short_abstract_ending_in_a_read_time_is_no_title() -> None:
    sentence = "We compare six tokenizers on code. Most are slower than expected (5 min read)"
    long_title = " ".join(["Word"] * 21) + " (4 minute read)"
    summary = "A summary of the story in one paragraph of plain words."
    for first in (sentence, long_title):
        listing = parse_listing(f"{first}\n\n{summary}\n")
        assert [(e.title, e.text) for e in listing.entries] == [(None, first), (None, summary)]


def test_a_first_headline_naming_a_year_is_no_header() -> None:
    listing = parse_listing("Reasoning Models Of 2026 Compared (8 minute read)\n\nA summary.\n")
    assert listing.header is None
    assert [(e.line, e.title) for e in listing.entries] == [
        (1, "Reasoning Models Of 2026 Compared")
    ]


def test_a_sponsor_headline_marks_its_advertisement_as_no_paper() -> None:
    ad = "Acme stores billions of embeddings and serves them fast for search and ranking."
    listing = parse_listing(f"Try Acme Vector DB free for 30 days (Sponsor)\n\n{ad}\n")
    assert [(e.line, e.title, e.text, e.outside_paper) for e in listing.entries] == [
        (1, "Try Acme Vector DB free for 30 days", ad, True)
    ]
