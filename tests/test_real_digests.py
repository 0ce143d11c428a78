"""Digests as people publish them (tests/data/real-digests/README.md): each kind is read
by its structure, with exact papers and quarantine reasons."""

from __future__ import annotations

from pathlib import Path

from paperwatch.ingest.clean import clean_abstract
from paperwatch.ingest.readers import decide_format, read_text

DATA = Path(__file__).parent / "data" / "real-digests"


def _read(name: str):  # type: ignore[no-untyped-def]
    text = (DATA / name).read_text(encoding="utf-8")
    decision = decide_format(name, text)
    assert decision.format is not None, decision.reason
    return decision.format, read_text(decision.format, text, name)


def test_one_abstract_per_line_with_one_split_over_three_lines() -> None:
    fmt, listing = _read("one_per_line_with_split.txt")
    assert fmt == "lines"
    assert len(listing.entries) == 12
    split = listing.entries[10]
    assert (split.line, len(split.line_breaks)) == (11, 2)
    assert split.text.split()[-1].endswith(".")
    assert all(clean_abstract(e.text).word_count >= 15 for e in listing.entries)


def test_refer_abstract_tags_are_the_field_name_not_the_text() -> None:
    fmt, listing = _read("refer_X_prefix.txt")
    assert fmt == "lines"
    assert len(listing.entries) == 10
    assert not any(e.text.startswith("%") for e in listing.entries)
    assert listing.entries[0].text.startswith("We study how curriculum order")


def test_the_english_abstract_in_details_is_the_abstract() -> None:
    fmt, listing = _read("mixed_tldr_hardwrapped.md")
    assert fmt == "markdown"
    assert [(e.title, e.url, e.listed_number) for e in listing.entries] == [
        (
            "Quiet Gradients: Detecting Silent Divergence in Large-Batch Training",
            "https://arxiv.org/abs/2611.02001",
            1,
        ),
        (
            "Tables Are Graphs: Schema-Aware Retrieval for Spreadsheet Question Answering",
            "https://arxiv.org/abs/2611.02002",
            2,
        ),
    ]
    first = listing.entries[0].text
    assert first.startswith("Large-batch training can diverge silently: the loss keeps falling")
    assert first.endswith("with at most one false alarm per run.")
    assert "TL;DR" not in first and "提出" not in first
    assert [clean_abstract(e.text).word_count for e in listing.entries] == [72, 63]
