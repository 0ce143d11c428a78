"""Files that are not listings and entries that are not abstracts, through the real ingestion
flow: each entry is loaded or quarantined with a reason that names what it looks like."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from paperwatch.flows.ingest import ingest_listings

AS_OF = "2026-11-25T10:00:00+00:00"
DATA = Path(__file__).parent / "data" / "lookalikes"
TODAY = "paperwatch has no reader for that format and read it as plain text"
METADATA = (
    "author, affiliation, link or other metadata lines (Authors:, Link:, arXiv:, Comments:, "
    "Keywords: …), not an abstract"
)
CHATBOT = (
    'a chatbot\'s reply, not an abstract ("As an AI language model…", "I\'m sorry, but I can\'t…", '
    '"Here is a summary of…")'
)
PLACEHOLDER = (
    'a placeholder, not an abstract ("No abstract", "Abstract not available", lorem ipsum)'
)
ARXIV_EMAIL = f"the file looks like an arXiv e-mail listing; {TODAY}"
DELIMITED = "rows of comma- or tab-separated values (a spreadsheet export), not an abstract"
PYTHON = "a record as a Python program prints it ({'abstract': …}, Paper(title=…)), not an abstract"


def chars(n: int) -> str:
    return f"the abstract is shorter than 80 or longer than 5,000 characters: {n}"


def words(n: int) -> str:
    return f"the abstract has fewer than 15 or more than 1,000 words: {n}"


pytestmark = pytest.mark.usefixtures("prefect_harness")


def rows(database: Path, sql: str, params: list[object] | None = None) -> list[tuple]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    folder = tmp_path_factory.mktemp("lookalikes") / "in"
    shutil.copytree(DATA, folder)
    database = tmp_path_factory.mktemp("db") / "pw.duckdb"
    return database, ingest_listings(str(folder), str(database), AS_OF)


def test_files_and_their_counts(ingested: tuple[Path, object]) -> None:
    database, summary = ingested
    assert rows(
        database,
        "select name, status, reason, venue, entry_count, entries_loaded, entries_quarantined "
        "from listing_files order by name",
    ) == [
        # Its abstract loads: the record's lines above and below it are split off.
        ("arxiv_email.txt", "loaded", None, None, 2, 1, 1),
        # Files in a format paperwatch reads, saved as .txt: read by that reader.
        ("atom_feed.txt", "loaded", None, None, 1, 1, 0),
        # The Authors: line above the first abstract is split off; the abstract loads.
        ("authors_lines.txt", "loaded", None, "CVPR", 2, 2, 0),
        ("bibtex_saved_as.txt", "loaded", None, None, 1, 1, 0),
        ("chatbot_replies.txt", "loaded", None, "EMNLP", 9, 0, 9),
        ("json_lines.txt", "loaded", None, None, 3, 3, 0),
        (
            "lfs_pointer.txt",
            "quarantined",
            "a Git LFS pointer, not the file: the listing (48,213,377 bytes, sha256 "
            "a4c123b1612d…) is in Git LFS storage: fetch it with git lfs pull",
            None,
            1,
            0,
            1,
        ),
        ("markdown_digest_saved_as.txt", "loaded", None, "Daily digest", 2, 2, 0),
        # A table of titles: two records without an abstract.
        ("markdown_table.txt", "loaded", None, "Daily papers", 2, 0, 2),
        ("one_paper_digest.txt", "loaded", None, None, 4, 1, 3),
        ("papers_csv.txt", "loaded", None, None, 1, 0, 1),
        ("papers_tsv.txt", "loaded", None, None, 1, 0, 1),
        ("python_dicts.txt", "loaded", None, "ACL", 2, 0, 2),
        ("real_lookalikes.txt", "loaded", None, "NeurIPS", 6, 6, 0),
        ("ris_export.txt", "loaded", None, None, 1, 0, 1),
        ("title_list.txt", "loaded", None, "ICML", 3, 0, 3),
    ]
    counts = (summary.files_seen, summary.files_loaded, summary.files_quarantined)  # type: ignore[attr-defined]
    assert counts == (16, 15, 1)
    entries = (summary.entries, summary.entries_loaded, summary.entries_quarantined)  # type: ignore[attr-defined]
    assert entries == (41, 17, 24)
    assert summary.new_papers == 17  # type: ignore[attr-defined]


def test_the_lfs_pointer_is_kept_whole_in_the_quarantine(ingested: tuple[Path, object]) -> None:
    assert rows(
        ingested[0],
        "select q.kind, q.raw_text = ?, q.reasons from quarantine q join listing_files f "
        "using (file_id) where f.name = 'lfs_pointer.txt'",
        [(DATA / "lfs_pointer.txt").read_text(encoding="utf-8")],
    ) == [
        (
            "file",
            True,
            [
                "a Git LFS pointer, not the file: the listing (48,213,377 bytes, sha256 "
                "a4c123b1612d…) is in Git LFS storage: fetch it with git lfs pull"
            ],
        )
    ]


def test_quarantined_entries_name_what_they_look_like(ingested: tuple[Path, object]) -> None:
    assert rows(
        ingested[0],
        "select f.name, q.position, q.reasons from quarantine q join listing_files f using (file_id) "
        "where q.kind = 'entry' order by 1, 2",
    ) == [
        ("arxiv_email.txt", 1, [f"{METADATA}: {ARXIV_EMAIL}", words(10)]),
        ("chatbot_replies.txt", 1, [CHATBOT]),
        ("chatbot_replies.txt", 2, [CHATBOT]),
        ("chatbot_replies.txt", 3, [CHATBOT]),
        ("chatbot_replies.txt", 4, [CHATBOT]),
        ("chatbot_replies.txt", 5, [PLACEHOLDER]),
        ("chatbot_replies.txt", 6, [PLACEHOLDER, chars(23), words(3)]),
        ("chatbot_replies.txt", 7, [PLACEHOLDER, chars(11), words(2)]),
        ("chatbot_replies.txt", 8, [PLACEHOLDER, chars(3), words(1)]),
        ("chatbot_replies.txt", 9, [CHATBOT]),
        ("markdown_table.txt", 1, ["no abstract"]),
        ("markdown_table.txt", 2, ["no abstract"]),
        ("one_paper_digest.txt", 1, ["a title, not an abstract", chars(65), words(8)]),
        ("one_paper_digest.txt", 2, [METADATA, words(14)]),
        ("one_paper_digest.txt", 3, [METADATA, words(14)]),
        ("papers_csv.txt", 1, [f"{DELIMITED}: the file looks like CSV (.csv); {TODAY}"]),
        ("papers_tsv.txt", 1, [f"{DELIMITED}: the file looks like TSV (.tsv); {TODAY}"]),
        ("python_dicts.txt", 1, [PYTHON]),
        ("python_dicts.txt", 2, [PYTHON]),
        (
            "ris_export.txt",
            1,
            [
                "an RIS citation record (TY  - …), not an abstract: the file looks like RIS (.ris); "
                + TODAY
            ],
        ),
        ("title_list.txt", 1, ["a list of titles, not an abstract"]),
        ("title_list.txt", 2, ["a list of titles, not an abstract"]),
        ("title_list.txt", 3, ["a title, not an abstract", chars(73), words(9)]),
    ]


def test_abstracts_load_without_their_label(ingested: tuple[Path, object]) -> None:
    loaded = rows(
        ingested[0],
        "select f.name, o.position, p.abstract from paper_occurrences o "
        "join papers p using (paper_id) join listing_files f using (file_id) order by 1, 2",
    )
    assert [(name, position, text.split()[:4]) for name, position, text in loaded] == [
        ("arxiv_email.txt", 2, ["Streaming", "speech", "recognisers", "must"]),
        ("atom_feed.txt", 1, ["Streaming", "speech", "recognisers", "must"]),
        ("authors_lines.txt", 1, ["Monocular", "depth", "estimators", "trained"]),
        ("authors_lines.txt", 2, ["Self-supervised", "video", "models", "learn"]),
        ("bibtex_saved_as.txt", 1, ["Streaming", "speech", "recognisers", "must"]),
        ("json_lines.txt", 1, ["We", "rank", "attention", "heads"]),
        ("json_lines.txt", 2, ["A", "graph", "network", "interpolates"]),
        ("json_lines.txt", 3, ["We", "distil", "a", "protein"]),
        ("markdown_digest_saved_as.txt", 1, ["Streaming", "speech", "recognisers", "must"]),
        ("markdown_digest_saved_as.txt", 2, ["Counting", "many", "small", "objects"]),
        ("one_paper_digest.txt", 4, ["We", "measure", "how", "the"]),
        ("real_lookalikes.txt", 1, ["Federated", "learning", "with", "stragglers"]),
        ("real_lookalikes.txt", 2, ["We", "revisit", "an", "earlier"]),
        ("real_lookalikes.txt", 3, ["We", "represent", "each", "program"]),
        ("real_lookalikes.txt", 4, ["Large", "Language", "Models", "often"]),
        ("real_lookalikes.txt", 5, ["Diffusion", "policies", "are", "slow"]),
        ("real_lookalikes.txt", 6, ["Quantum", "error", "correction", "needs"]),
    ]


def test_other_formats_are_named_once_per_file(ingested: tuple[Path, object]) -> None:
    assert rows(
        ingested[0],
        "select f.name, v.severity, v.reason from validation_results v join listing_files f "
        "using (file_id) where v.outcome = 'failed' and v.expectation = "
        "'expect_column_values_to_be_null(format_note)' order by 1",
    ) == [
        ("arxiv_email.txt", "warning", "not a plain-text listing"),
        ("papers_csv.txt", "warning", "not a plain-text listing"),
        ("papers_tsv.txt", "warning", "not a plain-text listing"),
        ("ris_export.txt", "warning", "not a plain-text listing"),
    ]
