"""Digests as people publish them (tests/data/real-digests/README.md): each kind is read
by its structure, with exact papers and quarantine reasons."""

from __future__ import annotations

from pathlib import Path

from paperwatch.ingest.clean import clean_abstract, text_length
from paperwatch.ingest.parse import Listing
from tests.digests import read_digest

DATA = Path(__file__).parent / "data" / "real-digests"


def _read(name: str) -> tuple[str, Listing]:
    return read_digest(DATA / name)


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


def test_a_weekly_digest_gives_one_paper_per_bold_title_item() -> None:
    fmt, listing = _read("zh_weekly_digest.md")
    assert fmt == "markdown"
    assert [(e.line, e.title, e.url) for e in listing.entries] == [
        (
            5,
            "Sparse Mixture Routing for Streaming Recommenders",
            "https://arxiv.org/abs/2611.01001",
        ),
        (
            7,
            "Counting Tokens Is Not Enough: Length Bias in Reward Models",
            "https://arxiv.org/abs/2611.01002",
        ),
        (
            12,
            "Depth Priors for Monocular Scene Flow in Rainy Weather",
            "https://arxiv.org/abs/2611.01003",
        ),
        (15, None, None),  # the apology between the items: an entry of its own
        (17, "Learning to Grasp Deformable Bags from Few Demonstrations", None),
    ]
    assert listing.entries[0].text.startswith("本文提出一种面向流式推荐的稀疏专家路由方法")
    assert listing.entries[3].text.startswith("非常抱歉")
    # Chinese is measured by characters, a CJK one counting as two: the summaries pass
    # the 80-character floor, the one-line apology does not.
    lengths = [text_length(clean_abstract(e.text).abstract) for e in listing.entries]
    assert [n >= 80 for n in lengths] == [True, True, True, False, True]


def test_a_list_of_titles_and_links_gives_no_paper() -> None:
    fmt, listing = _read("titles_links_readme_zh.md")
    assert fmt == "markdown"
    assert [(e.title, e.url, e.no_abstract) for e in listing.entries] == [
        (None, None, False),  # the README's introduction: an entry of its own
        (
            "Anchor-Free Detection of Tiny Objects in Aerial Video",
            "https://arxiv.org/abs/2611.03001",
            True,
        ),
        (
            "Open-Vocabulary Detection with Region Captions",
            "https://arxiv.org/abs/2611.03002",
            True,
        ),
        (
            "Boundary-Aware Panoptic Segmentation for Street Scenes",
            "https://arxiv.org/abs/2611.03003",
            True,
        ),
        ("Few-Shot Medical Segmentation with Shape Priors", None, True),
    ]


def test_each_kind_ingests_to_the_right_papers(tmp_path: Path, prefect_harness: None) -> None:
    import shutil

    from paperwatch import db
    from paperwatch.flows.ingest import ingest_listings

    folder = tmp_path / "listings"
    shutil.copytree(DATA, folder, ignore=shutil.ignore_patterns("README.md"))
    database = tmp_path / "db" / "paperwatch.duckdb"
    summary = ingest_listings(str(folder), str(database), "2026-11-25T10:00:00+00:00")
    with db.reader(database) as con:
        per_file = con.execute(
            "select f.name, count(distinct p.paper_id) from listing_files f "
            "left join paper_occurrences p using (file_id) group by 1 order by 1"
        ).fetchall()
        quarantined = con.execute(
            "select f.name, q.reasons[1] from quarantine q join listing_files f using (file_id) "
            "order by 1, q.line"
        ).fetchall()
    assert per_file == [
        ("mixed_tldr_hardwrapped.md", 2),
        ("one_per_line_with_split.txt", 12),
        ("python_literal_export.jsonl", 3),
        ("refer_X_prefix.txt", 10),
        ("titles_links_readme_zh.md", 0),
        ("zh_weekly_digest.md", 4),
    ]
    python = (
        "a record as a Python program prints it ({'abstract': …}, Paper(title=…)), not an abstract"
    )
    assert quarantined == [
        ("python_literal_export.jsonl", python),
        ("python_literal_export.jsonl", python),
        (
            "titles_links_readme_zh.md",
            "the digest's own prose outside any paper (an introduction, a notice, a section's "
            "lead-in), not a paper's abstract",
        ),
        ("titles_links_readme_zh.md", "no abstract"),
        ("titles_links_readme_zh.md", "no abstract"),
        ("titles_links_readme_zh.md", "no abstract"),
        ("titles_links_readme_zh.md", "no abstract"),
        (
            "zh_weekly_digest.md",
            "the abstract is shorter than 80 or longer than 5,000 characters: 67",
        ),
    ]
    # The Refer file holds ten of the one-per-line file's abstracts: exact duplicates.
    assert (summary.new_papers, summary.exact_duplicates) == (21, 10)
