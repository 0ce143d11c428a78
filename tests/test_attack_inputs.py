"""Hostile inputs for the readers: each failed in a way the operator could not act on.

JSON nested thousands of levels deep made Python's ``json`` raise RecursionError, which
quarantined the file as an "internal error while preparing" instead of naming the line;
a BibTeX block left open (an unbalanced brace in an ``@comment``) was quarantined with an
empty reason, and bibtexparser's own warnings were printed on the terminal.
"""

from __future__ import annotations

import logging

import pytest

from paperwatch.ingest import readers
from paperwatch.ingest.readers import ReaderError, decide_format

ABSTRACT = (
    "We count the lighthouses of a rocky coast from old postcards and compare the tally "
    "with harbour records, finding that a third of the towers were never mapped."
)


def test_json_nested_ten_thousand_deep_names_the_line() -> None:
    text = '{"papers": [\n{"abstract": "' + ABSTRACT + '",\n "extra": ' + "[" * 10_000
    text += "]" * 10_000 + "}\n]}\n"
    with pytest.raises(ReaderError) as caught:
        readers.read(text.encode(), "deep.json")
    assert str(caught.value) == (
        "cannot be read as JSON: line 3: arrays or objects nested more than 500 levels "
        "deep (column 508): not a file of paper records"
    )


def test_jsonl_line_nested_too_deep_names_that_line() -> None:
    text = '{"abstract": "' + ABSTRACT + '"}\n{"a": ' + "[" * 3_000 + "]" * 3_000 + "}\n"
    with pytest.raises(ReaderError) as caught:
        readers.read(text.encode(), "deep.jsonl")
    assert (caught.value.line, caught.value.format) == (2, "jsonl")
    assert "nested more than 500 levels deep (column 506)" in str(caught.value)


def test_deeply_nested_brackets_in_a_txt_are_plain_text() -> None:
    decision = decide_format("deep.txt", "[" * 10_000 + "]" * 10_000)
    assert (decision.format, decision.reason) == ("text", "by content: paragraphs of text")


def test_unclosed_bibtex_block_gives_the_parser_reason_and_prints_nothing(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    text = (
        "@string{venue = {Coastal Studies 2026}}\n"
        "@comment{ left { open\n"
        "@inproceedings{a,\n title = {Lighthouses},\n abstract = {" + ABSTRACT + "}\n}\n"
    )
    with caplog.at_level(logging.CRITICAL), pytest.raises(ReaderError) as caught:
        readers.read(text.encode(), "open.bib")
    assert str(caught.value) == (
        "cannot be read as BibTeX: line 2: Unexpected block start: `@inproceedings`. Was "
        "still looking for closing bracket (the block that starts on this line)"
    )
    assert capsys.readouterr() == ("", "")


def test_javascript_url_gives_no_link() -> None:
    records = (
        '[{"title": "Lighthouses", "url": "javascript:fetch(\'https://x.example/steal\')", '
        '"abstract": "' + ABSTRACT + '"},\n'
        ' {"title": "Harbours", "url": " JavaScript:alert(1)", "link": "https://x.example/a",'
        ' "abstract": "' + ABSTRACT + ' Again."}]'
    )
    listing = readers.read(records.encode(), "links.json")
    assert [(e.title, e.url) for e in listing.entries] == [
        ("Lighthouses", None),
        ("Harbours", None),
    ]


def test_markdown_digest_copied_from_arxiv_rss_drops_the_announce_prefix() -> None:
    """A digest generated from arXiv's RSS keeps ``arXiv:… Announce Type: new`` before
    the abstract (seen in a public daily digest); the feed reader drops it, so the same
    paper read from the digest must have the same text, and so the same paper_id."""
    digest = (
        "# Coastal digest\n\n"
        "## Counting Lighthouses from Postcards\n"
        "**Link:** [https://arxiv.org/abs/2611.04444](https://arxiv.org/abs/2611.04444)\n\n"
        "**Abstract:** arXiv:2611.04444v1 Announce Type: new \n"
        "Abstract: We count the lighthouses of a rocky coast from old postcards\n"
        "  and compare the tally with harbour records, finding that a third of the towers "
        "were never mapped.\n\n"
        "**Analysis:** True\n\n---\n"
    )
    feed = (
        '<?xml version="1.0"?><rss version="2.0"><channel><title>coast</title><item>'
        "<title>Counting Lighthouses from Postcards</title>"
        "<link>https://arxiv.org/abs/2611.04444</link>"
        "<description>arXiv:2611.04444v1 Announce Type: new Abstract: "
        + ABSTRACT
        + "</description>"
        "</item></channel></rss>"
    )
    (from_md,) = readers.read(digest.encode(), "digest.md").entries
    (from_rss,) = readers.read(feed.encode(), "coast.rss").entries
    assert from_md.text == from_rss.text == ABSTRACT
    assert from_md.line_breaks == (
        len("We count the lighthouses of a rocky coast from old postcards"),
    )
    assert (from_md.external_id, from_md.line) == ("arXiv:2611.04444", 3)


def test_feed_entry_lines_ignore_entries_written_in_comments_and_cdata() -> None:
    feed = (
        '<?xml version="1.0"?>\n'
        '<feed xmlns="http://www.w3.org/2005/Atom"><title>Coast 2026</title>\n'
        "<!-- template: <entry><title>x</title></entry> -->\n"
        "<entry><id>http://arxiv.org/abs/2611.00011v1</id><title>One</title>\n"
        "<summary>" + ABSTRACT + "</summary></entry>\n"
        '<entry><id>http://arxiv.org/abs/2611.00012v1</id><title type="html">'
        "<![CDATA[<entry> tags & more]]></title>\n"
        "<summary>" + ABSTRACT + " Twice.</summary></entry>\n"
        "<entry><id>http://arxiv.org/abs/2611.00013v1</id><title>Three</title>\n"
        "<summary>" + ABSTRACT + " Thrice.</summary></entry>\n"
        "</feed>\n"
    )
    listing = readers.read(feed.encode(), "coast.atom")
    assert [(e.line, e.external_id) for e in listing.entries] == [
        (4, "arXiv:2611.00011"),
        (6, "arXiv:2611.00012"),
        (8, "arXiv:2611.00013"),
    ]


def test_json_number_of_five_thousand_digits_names_the_line() -> None:
    text = '[\n{"abstract": "' + ABSTRACT + '",\n "year": ' + "7" * 5_000 + "}\n]\n"
    with pytest.raises(ReaderError) as caught:
        readers.read(text.encode(), "long.json")
    assert str(caught.value) == (
        "cannot be read as JSON: line 3: a number too long to read: Exceeds the limit "
        "(4300 digits) for integer string conversion: value has 5000 digits; use "
        "sys.set_int_max_str_digits() to increase the limit"
    )


def test_an_external_id_a_file_gives_to_different_texts_joins_nothing() -> None:
    import polars as pl

    from paperwatch.db.load import join_external_ids

    # A proceedings volume's DOI on every record: three different papers, not one.
    good = pl.DataFrame(
        {
            "paper_id": ["p1", "p2", "p3", "p4", "p4b"],
            "external_id": ["doi:10.1/vol", "doi:10.1/vol", "doi:10.1/vol", "arXiv:1", "arXiv:1"],
        }
    )
    joined = join_external_ids(good, existing=set(), known_external={"doi:10.1/vol": "old"})
    assert joined["paper_id"].to_list() == ["p1", "p2", "p3", "p4", "p4b"]
    assert joined["text_paper_id"].to_list() == [None] * 5
    # An id given to one text per file still joins: an edited abstract of a known paper.
    one = pl.DataFrame({"paper_id": ["p9"], "external_id": ["doi:10.1/vol"]})
    joined = join_external_ids(one, existing=set(), known_external={"doi:10.1/vol": "old"})
    assert joined["paper_id"].to_list() == ["old"]
    assert joined["text_paper_id"].to_list() == ["p9"]
