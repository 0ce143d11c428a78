"""What a file or an entry looks like when it is not a listing or an abstract (paperwatch.ingest.shapes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paperwatch.ingest.clean import clean_abstract, strip_abstract_label
from paperwatch.ingest.files import ListingFileStat, prepare_file
from paperwatch.ingest.frames import entries_frame, files_frame
from paperwatch.ingest.parse import parse_header, parse_listing
from paperwatch.ingest.shapes import (
    ENTRY_SHAPES,
    entry_lines,
    entry_shape,
    file_format,
    format_note,
    lfs_pointer_detail,
)
from paperwatch.resources import resource_dir

from .conftest import SEEDS

DATA = Path(__file__).parent / "data" / "lookalikes"
ABSTRACT = (
    "We train a small policy network to schedule jobs on a shared cluster and cut the "
    "mean waiting time by a third against the best hand-written heuristic."
)


def shape(text: str) -> str | None:
    """The shape of a one-paragraph text written with its line breaks."""
    (entry,) = parse_listing(text).entries
    return entry_shape(entry.text, entry.line_breaks)


def test_entries_keep_where_their_lines_broke() -> None:
    listing = parse_listing("one line only\n\nfirst line\n  second  \nthird\n")
    assert [(e.text, e.line_breaks) for e in listing.entries] == [
        ("one line only", ()),
        ("first line second third", (10, 17)),
    ]
    second = listing.entries[1]
    assert entry_lines(second.text, second.line_breaks) == ["first line", "second", "third"]
    assert entry_lines("one line only") == ["one line only"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "@inproceedings{key26,\n  title = {A Title},\n  abstract = {" + ABSTRACT + "}\n}",
            "bibtex",
        ),
        ("TY  - JOUR\nTI  - A Title\nAB  - " + ABSTRACT + "\nER  - ", "ris"),
        ('{"title": "A Title", "abstract": "' + ABSTRACT + '"}', "json"),
        ('[{"id": 1, "abstract": "' + ABSTRACT + '"}]', "json"),
        ("{'title': 'A Title', 'abstract': '" + ABSTRACT + "'}", "python_literal"),
        ("Paper(title='A Title', abstract='" + ABSTRACT + "')", "python_literal"),
        ("<entry><summary>" + ABSTRACT + "</summary></entry>", "markup"),
        ('title,authors,abstract\n"A Title","A. One","' + ABSTRACT + '"', "delimited"),
        ("id\ttitle\nx1\tA Title\nx2\tAnother Title", "delimited"),
        ("x1\t12\tA Title\nx2\t15\tAnother Title", "delimited"),
        ("No abstract available for this paper.", "placeholder"),
        ("Abstract not available", "placeholder"),
        ("[Abstract: TBD]", "placeholder"),
        ("Lorem ipsum dolor sit amet, consectetur adipiscing elit.", "placeholder"),
        (ABSTRACT + " Lorem ipsum dolor sit amet.", "placeholder"),
        ("As an AI language model, I cannot read the paper. " + ABSTRACT, "chatbot"),
        ("I’m sorry, but I can’t access that article. " + ABSTRACT, "chatbot"),
        ("I apologize, but the abstract is not in the text you gave me.", "chatbot"),
        ("Certainly! Here is the abstract rewritten in plain words: " + ABSTRACT, "chatbot"),
        ("**Abstract:** Here's a short summary of the paper. " + ABSTRACT, "chatbot"),
        (ABSTRACT + " I hope this helps!", "chatbot"),
        ("## A Title\n" + ABSTRACT, "markdown_heading"),
        ("|Title|PDF|\n|---|---|\n|A Title|[pdf](https://x.org/1)|", "markdown_table"),
        ("---", "separator"),
        ("* * *", "separator"),
        ("\\\\", "separator"),
        ("[![stars](https://img.example/badge.svg)](https://github.com/x/y)", "metadata"),
        ("Journal-ref: Proc. of a workshop on learning systems, pages 1-9", "metadata"),
        ("Authors: A. One, B. Two\n" + ABSTRACT, "metadata"),
        ("**Authors:** A. One\n**Link:** https://arxiv.org/abs/2611.00001", "metadata"),
        ("- **Affiliation**: Some University", "metadata"),
        (ABSTRACT + "\nKeywords: scheduling, clusters", "metadata"),
        (ABSTRACT + "\narXiv:2611.00001v2 [cs.LG]", "metadata"),
        (
            ABSTRACT + "\n[arXiv](https://arxiv.org/abs/2611.00001) | [PDF](https://x.org/1.pdf)",
            "metadata",
        ),
        ("作者：张三，李四\n" + ABSTRACT, "metadata"),
        (
            "Scheduling Jobs With Learned Policies\nA Study of Cluster Waiting Times\nWarm Starts for Schedulers",
            "title_list",
        ),
        (
            "1. Learned scheduling for shared clusters\n2. Waiting times under load\n3. Warm starts help",
            "title_list",
        ),
        (
            '* "Learned Schedulers for Shared Clusters", *SoCC, 2026*. [[Paper](https://x.org/1)]'
            ' [[Code](https://x.org/2)]\n* "Waiting Less: Queue-Aware Placement", *EuroSys, 2026*.'
            ' [[Paper](https://x.org/3)]\n* "Warm Starts for Job Schedulers", *OSDI, 2026*.',
            "title_list",
        ),
        (
            "- [Learned Schedulers for Shared Clusters](https://x.org/1) - A. One, B. Two\n"
            "- [Waiting Less With Queue-Aware Placement](https://x.org/2) - C. Three\n"
            "- [ ] [sched] Warm Starts for Job Schedulers, https://x.org/3",
            "title_list",
        ),
        ("Scheduling Jobs With Learned Policies on Shared Clusters", "title"),
    ],
)
def test_shapes_that_are_not_abstracts(text: str, expected: str) -> None:
    assert shape(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        ABSTRACT,
        "Abstract: " + ABSTRACT,
        "We apologise for an error in our earlier release. " + ABSTRACT,
        "We study sets {f(x) : x in S} and " + ABSTRACT,
        "Title, abstract and keywords are all we read: " + ABSTRACT,
        "Sorrow and joy are hard to tell apart in speech; " + ABSTRACT,
        "No abstraction is needed when " + ABSTRACT,
        "Here we show that " + ABSTRACT,
        "Here is a new version of a classic scheduler: " + ABSTRACT,
        "As a large language model grows, its memory traffic grows too, and " + ABSTRACT,
        "As an AI system becomes more capable, it needs oversight; " + ABSTRACT,
        "No abstract syntax tree is needed when " + ABSTRACT,
        "LoRA(r=8) adapters are enough: " + ABSTRACT,
        "<p>" + ABSTRACT + "</p>",  # left to the HTML warning
        "Lorem-style placeholder text is easy to spot, and " + ABSTRACT,
        # a structured abstract: its section labels are not metadata
        "Background: clusters are shared.\nMethods: " + ABSTRACT + "\nResults: a third less "
        "waiting.\nConclusions: learned schedulers pay off.",
        # hard-wrapped, a wrapped line starting with a lowercase "label:"
        "We split the work into two parts in the following\ndomain: scheduling and placement. "
        + ABSTRACT,
        # hard-wrapped, lines that start with capitals, the last one a sentence
        "Large Language Models often disagree with\nThemselves when asked twice;\nGPT-style decoders "
        "most of all, which we measure.",
        # one sentence per line
        "Diffusion policies are slow.\nWe distil one into a single step.\nIt keeps its success rate.",
        # a URL alone on the last line
        ABSTRACT + " Code is at\nhttps://github.com/example/repo",
        # a short sentence-case line is left to the length checks
        "Learning to schedule jobs on clusters",
    ],
)
def test_abstracts_that_look_a_little_like_something_else(text: str) -> None:
    assert shape(text) is None


def test_no_seed_entry_or_file_looks_like_anything_else() -> None:
    for path in sorted(SEEDS.glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        assert file_format(text) is None
        assert lfs_pointer_detail(text) is None
        assert [entry_shape(e.text, e.line_breaks) for e in parse_listing(text).entries] == [
            None
        ] * 19


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("markdown_digest_saved_as.txt", "a Markdown digest (.md)"),
        ("markdown_table.txt", "a Markdown digest (.md)"),
        ("bibtex_saved_as.txt", "BibTeX (.bib)"),
        ("json_lines.txt", "JSON Lines (.jsonl)"),
        ("atom_feed.txt", "an Atom feed (.atom)"),
        ("arxiv_email.txt", "an arXiv e-mail listing"),
        ("papers_csv.txt", "CSV (.csv)"),
        ("ris_export.txt", "RIS (.ris)"),
        ("papers_tsv.txt", "TSV (.tsv)"),
        ("title_list.txt", None),
        ("one_paper_digest.txt", None),
        ("lfs_pointer.txt", None),
        ("real_lookalikes.txt", None),
    ],
)
def test_file_formats(name: str, expected: str | None) -> None:
    assert file_format((DATA / name).read_text(encoding="utf-8")) == expected


def test_more_file_formats() -> None:
    assert file_format('[{"title": "A"}]') == "JSON (.json)"
    assert file_format('{"title": "A"}\n{"title": "B"}\n') == "JSON Lines (.jsonl)"
    assert file_format('{"title": "A"}\nnot json\n') is None
    assert file_format('<?xml version="1.0"?>\n<rss version="2.0"></rss>') == "an RSS feed (.rss)"
    assert file_format("<!DOCTYPE html>\n<html></html>") == "an HTML page (.html)"
    assert file_format("# NeurIPS 2026\n\n" + ABSTRACT) is None  # one heading is not a digest
    assert format_note("BibTeX (.bib)") == (
        "the file looks like BibTeX (.bib); paperwatch has no reader for that format and read it as plain text"
    )
    assert format_note(None) is None


def test_git_lfs_pointer() -> None:
    text = (DATA / "lfs_pointer.txt").read_text(encoding="utf-8")
    assert lfs_pointer_detail(text) == (
        "the listing (48,213,377 bytes, sha256 a4c123b1612d…) is in Git LFS storage: "
        "fetch it with git lfs pull"
    )
    assert lfs_pointer_detail(text.replace("\n", "\r\n")) == lfs_pointer_detail(text)
    assert lfs_pointer_detail(text + "\n" + ABSTRACT) is None
    assert lfs_pointer_detail(text.replace("size 48213377", "size many")) is None


def test_frames_carry_the_shape_and_the_file_format() -> None:
    path = DATA / "markdown_digest_saved_as.txt"
    data = path.read_bytes()
    # Pinned to the plain-text format (by content it is read as a Markdown digest).
    stat = ListingFileStat(
        path=path, rel=path.name, size=len(data), mtime_ns=0, pinned=("text", "*.txt")
    )
    prepared = prepare_file(stat, data)
    note = format_note("a Markdown digest (.md)")
    entries = entries_frame([prepared])
    assert entries["looks_like"].to_list() == [
        "markdown_heading",
        None,
        "markdown_heading",
        None,
    ]
    assert entries["format_note"].to_list() == [note] * 4
    files = files_frame([prepared], [])
    assert files.select("lfs_pointer", "lfs_detail", "format_note").row(0) == (False, None, note)


def test_a_header_line_is_named_by_its_own_check_only() -> None:
    listing = parse_listing(ABSTRACT + "\n\nICLR 2025 Accepted Papers\n")
    path = Path("x.txt")
    stat = ListingFileStat(path=path, rel="x.txt", size=0, mtime_ns=0)
    prepared = prepare_file(stat, ("\n\n".join(e.text for e in listing.entries)).encode())
    frame = entries_frame([prepared])
    assert frame.select("is_header_line", "looks_like").rows() == [(False, None), (True, None)]


def test_every_shape_has_a_critical_expectation_with_a_reason() -> None:
    suite = json.loads((resource_dir("expectations") / "papers.json").read_text(encoding="utf-8"))
    checked = {
        value: e["meta"]
        for e in suite["expectations"]
        if e["kwargs"].get("column") == "looks_like"
        for value in e["kwargs"]["value_set"]
    }
    assert sorted(checked) == sorted(ENTRY_SHAPES)
    assert {m["severity"] for m in checked.values()} == {"critical"}
    assert all(
        m["reason"].endswith("not an abstract") or "not an abstract (" in m["reason"]
        for m in checked.values()
    )
    assert {m["detail_column"] for m in checked.values()} == {"format_note"}


def test_an_abstract_label_is_not_part_of_the_abstract() -> None:
    bare = clean_abstract(ABSTRACT)
    for labelled in (
        "Abstract: " + ABSTRACT,
        "**Abstract**: " + ABSTRACT,
        "ABSTRACT — " + ABSTRACT,
        "Abstract—" + ABSTRACT,
        "Abstract. " + ABSTRACT,
        "摘要：" + ABSTRACT,
    ):
        cleaned = clean_abstract(labelled)
        assert (cleaned.abstract, cleaned.paper_id) == (bare.abstract, bare.paper_id), labelled
    assert (
        strip_abstract_label("Abstract-level reasoning helps.") == "Abstract-level reasoning helps."
    )
    assert strip_abstract_label("Abstract:") == "Abstract:"
    assert strip_abstract_label("Abstract not available") == "Abstract not available"


def test_a_markdown_heading_header_keeps_its_venue_without_hashes() -> None:
    header = parse_header("# Daily digest — 2026-11-27")
    assert header is not None and (header.venue, header.year) == ("Daily digest", 2026)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I hope this helps! These abstracts were translated from the original versions "
            "by a tool, so some terms may differ from the papers.",
            "chatbot",
        ),
        (
            "Note: I could not access the full text of these papers, so the summaries above "
            "rely only on the titles given.",
            "chatbot",
        ),
        (
            "Great question! The papers below are the most relevant ones found for robust "
            "routing in sparse models.",
            "chatbot",
        ),
        (
            "以下是根据您提供的会议论文列表整理出的摘要，共二十篇，如需更详细的解读请随时告诉我。",
            "chatbot",
        ),
        ("<!-- entries below were collected from the conference site by a script -->", "markup"),
        (
            "A. Smith, B. Jones, and C. Brown. Deep residual learning for tabular data "
            "classification. In Advances in Neural Information Processing Systems, volume 35, "
            "pages 1024-1036, 2022.",
            "reference",
        ),
        ("References: [1] Vaswani et al. Attention. [2] Devlin et al. BERT.", "metadata"),
        (
            "[PDF](https://x.org/pdf?id=1) | [Code](https://x.org/c) | [Video](https://x.org/v)"
            " | [Slides](https://x.org/s)",
            "metadata",
        ),
        (
            '2611.01234,"Learning to Route Tokens","A. Zhang; B. Li",cs.LG,2026-11-24,'
            '"We route tokens to experts by load."',
            "delimited",
        ),
        (
            "Proceedings of the 40th Conference on Learning Systems. Copyright 2026 by the "
            "author(s). Reprints are permitted for personal use.",
            "boilerplate",
        ),
        (
            "Table of Contents: Oral Session 1 (Monday) .......... 3; Oral Session 2 "
            "(Tuesday) .......... 9",
            "boilerplate",
        ),
        (
            "Accepted papers are listed in alphabetical order of the first author. Contact "
            "the program chairs at chairs@example.org with corrections.",
            "boilerplate",
        ),
    ],
)
def test_more_shapes_found_by_trying_bad_input(text: str, expected: str) -> None:
    assert entry_shape(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        '"As an AI language model, I cannot help with that" is a common refusal. We measure '
        "over-refusal in eight chat assistants and show that a small fine-tuning set halves it.",
        "Smith et al. (2021) showed that residual learning helps on tabular data. We extend "
        "their analysis to 40 datasets and find gains only with heavy regularisation.",
        "We propose a contrastive pre-training objective for tables that improves accuracy on "
        "12 benchmarks by 3.1 points on average, published at ICML 2025.",
    ],
)
def test_abstracts_that_quote_or_cite_are_abstracts(text: str) -> None:
    assert entry_shape(text) is None


ABSTRACT_LINES = [
    "We study disfluent speech and show that a curriculum over disfluency types",
    "improves recognition on three corpora by a wide margin.",
]


@pytest.mark.parametrize(
    ("above", "below"),
    [
        ([], ["Comments: 12 pages, 4 figures, accepted at NeurIPS 2026"]),
        ([], ["Keywords: speech recognition, disfluency, curriculum learning"]),
        (["TL;DR: A curriculum makes recognisers robust to disfluencies."], []),
        (["arXiv:2611.07777"], []),
        (["## [3] Curricula for Disfluent Speech", "**Authors:** A. Author, B. Author"], []),
        (["arXiv:2611.07777", "Authors: A. Author"], ["Comments: 9 pages", "---"]),
    ],
)
def test_metadata_lines_above_or_below_an_abstract_are_split_off(
    above: list[str], below: list[str]
) -> None:
    from paperwatch.ingest.shapes import split_metadata_lines

    lines = [*above, *ABSTRACT_LINES, *below]
    entry = parse_listing("\n".join(lines) + "\n").entries[0]
    body, breaks, metadata = split_metadata_lines(entry.text, entry.line_breaks)
    assert body == " ".join(ABSTRACT_LINES)
    assert breaks == (len(ABSTRACT_LINES[0]),)
    assert metadata == (*above, *below)
    assert entry_shape(body, breaks) is None


def test_a_metadata_line_inside_an_entry_keeps_it_whole() -> None:
    from paperwatch.ingest.shapes import split_metadata_lines

    text = "\n".join([ABSTRACT_LINES[0], "Authors: A. Author", ABSTRACT_LINES[1]])
    entry = parse_listing(text + "\n").entries[0]
    assert split_metadata_lines(entry.text, entry.line_breaks) == (
        entry.text,
        entry.line_breaks,
        (),
    )
    assert entry_shape(entry.text, entry.line_breaks) == "metadata"
