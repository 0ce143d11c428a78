"""The real flows on the seeds, into a temporary database (one Prefect harness per session)."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from paperwatch import db
from paperwatch.flows.ingest import ingest_listings
from paperwatch.flows.report import weekly_report
from tests.conftest import write_revised_seed

AS_OF = "2026-11-25T10:00:00+00:00"  # Wednesday of ISO week 2026-W48

pytestmark = pytest.mark.usefixtures("prefect_harness")


def rows(database: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(sql).fetchall()


def assert_keys_unique(database: Path) -> None:
    with db.reader(database) as con:
        assert set(db.key_violations(con).values()) == {0}


def test_seeds_end_to_end(seed_folder: Path, database: Path, tmp_path: Path) -> None:
    summary = ingest_listings(str(seed_folder), str(database), AS_OF)
    assert (summary.files_seen, summary.files_loaded, summary.files_quarantined) == (3, 3, 0)
    assert (summary.entries, summary.entries_loaded, summary.entries_quarantined) == (57, 57, 0)
    assert (summary.new_papers, summary.exact_duplicates) == (54, 3)
    assert summary.week == "2026-W48"

    assert rows(database, "select count(*) from papers") == [(54,)]
    assert rows(database, "select count(*) from paper_occurrences") == [(57,)]
    assert rows(database, "select count(*) from quarantine") == [(0,)]
    repeated = rows(
        database,
        "select p.method_name, list(f.name order by f.name), list(o.position order by f.name) "
        "from paper_occurrences o join papers p using (paper_id) join listing_files f using (file_id) "
        "group by p.paper_id, p.method_name having count(*) > 1 order by 1",
    )
    assert repeated == [
        ("SOL-ExecBench", ["002_bf103a832150c832.txt", "003_13ddc4bea7a17f78.txt"], [16, 19]),
        ("SOLAR", ["002_bf103a832150c832.txt", "003_13ddc4bea7a17f78.txt"], [14, 18]),
        ("SP-CACW", ["002_bf103a832150c832.txt", "003_13ddc4bea7a17f78.txt"], [10, 17]),
    ]
    files = rows(
        database,
        "select name, sequence_number, venue, year, entry_count, status, first_seen_week "
        "from listing_files order by name",
    )
    assert files == [
        ("000_5dc500fada0b6079.txt", 0, "NeurIPS", 2026, 19, "loaded", "2026-W48"),
        ("002_bf103a832150c832.txt", 2, "NeurIPS", 2026, 19, "loaded", "2026-W48"),
        ("003_13ddc4bea7a17f78.txt", 3, "NeurIPS", 2026, 19, "loaded", "2026-W48"),
    ]
    checks = rows(
        database,
        "select count(*), count(*) filter (where outcome = 'passed') from validation_results",
    )
    assert checks == [(129, 128)]  # (11 file + 32 entry expectations) x 3 files
    failed = rows(
        database,
        "select f.name, v.suite, v.expectation, v.severity, v.unexpected_examples "
        "from validation_results v join listing_files f using (file_id) where v.outcome <> 'passed'",
    )
    assert failed == [
        (
            "002_bf103a832150c832.txt",
            "listing_files",
            "expect_column_values_to_be_null(sequence_gap)",
            "warning",
            ["001"],
        ),
    ]
    assert rows(database, "select status, files_loaded, new_papers from ingest_runs") == [
        ("completed", 3, 54)
    ]

    # Second run: nothing read, nothing new.
    again = ingest_listings(str(seed_folder), str(database), "2026-11-26T10:00:00+00:00")
    assert (again.files_seen, again.files_unchanged, again.files_loaded, again.new_papers) == (
        3,
        3,
        0,
        0,
    )
    assert not again.changed_anything
    assert rows(database, "select count(*) from paper_occurrences") == [(57,)]
    assert_keys_unique(database)

    # The report of the week.
    outcome = weekly_report(
        week="2026-W48", database=str(database), report_dir=str(tmp_path / "out")
    )
    html = outcome.html_path.read_text(encoding="utf-8")
    assert (outcome.new_papers, outcome.exact_duplicates) == (54, 3)
    assert "paperwatch — week 2026-W48" in html
    # new papers + both places of each repeat, as a reader places them (file names: CSV)
    assert html.count("NeurIPS 2026 · listing 00") == 54 + 3 * 2
    assert ".txt #" not in html
    assert "SpectralKV" in html and "https://anonymous.4open.science/r/spectralKV-2FF7" in html
    assert "<script" not in html.lower()
    text = outcome.text_path.read_text(encoding="utf-8")
    assert (
        "54 new papers, 3 duplicates (3 exact, 0 near), 3 listing files, 0 entries quarantined."
        in text
    )
    # Same week, same database: same bytes.
    first = outcome.html_path.read_bytes()
    weekly_report(week="2026-W48", database=str(database), report_dir=str(tmp_path / "out"))
    assert outcome.html_path.read_bytes() == first


def test_copy_under_new_name_adds_no_occurrence(seed_folder: Path, database: Path) -> None:
    ingest_listings(str(seed_folder), str(database), AS_OF)
    shutil.copy(seed_folder / "002_bf103a832150c832.txt", seed_folder / "copy of 002.txt")
    summary = ingest_listings(str(seed_folder), str(database), AS_OF)
    assert (summary.files_seen, summary.files_duplicate, summary.files_loaded) == (4, 1, 0)
    assert rows(database, "select count(*) from paper_occurrences") == [(57,)]
    dup = rows(
        database,
        "select d.status, o.name, d.reason from listing_files d join listing_files o on o.file_id = d.duplicate_of "
        "where d.name = 'copy of 002.txt'",
    )
    assert dup == [
        ("duplicate", "002_bf103a832150c832.txt", "same bytes as 002_bf103a832150c832.txt")
    ]


def test_non_utf8_file_is_quarantined_and_others_load(seed_folder: Path, database: Path) -> None:
    latin1 = (
        "ICLR 2025 accepted papers\n\nA study of caf\xe9 recommendation with many words in it.\n"
    )
    (seed_folder / "004_0123456789abcdef.txt").write_bytes(latin1.encode("latin-1"))
    summary = ingest_listings(str(seed_folder), str(database), AS_OF)
    assert (summary.files_loaded, summary.files_quarantined, summary.new_papers) == (3, 1, 54)
    q = rows(database, "select kind, path, line, reasons, octet_length(raw_bytes) from quarantine")
    offset = latin1.index("\xe9")
    assert q == [
        (
            "file",
            "004_0123456789abcdef.txt",
            3,
            [
                f"not UTF-8 text: invalid byte at {offset} (line 3); looks like Windows-1252/Latin-1 "
                "text (…pers A study of café recommendation wit…); save it as UTF-8"
            ],
            len(latin1),
        )
    ]
    assert rows(
        database, "select status from listing_files where name = '004_0123456789abcdef.txt'"
    ) == [("quarantined",)]


def test_script_in_abstract_is_escaped_in_report(tmp_path: Path, database: Path) -> None:
    folder = tmp_path / "evil"
    folder.mkdir()
    evil = (
        "We propose EvilNet, a method <script>alert('x')</script> with an "
        "<img src=x onerror=alert(1)> image and enough words to pass the length checks of the suite."
    )
    (folder / "010_aaaaaaaaaaaaaaaa.txt").write_text(
        f"ICLR 2025 accepted papers\n\n{evil}\n", encoding="utf-8"
    )
    ingest_listings(str(folder), str(database), AS_OF)
    outcome = weekly_report(
        week="2026-W48", database=str(database), report_dir=str(tmp_path / "out")
    )
    html = outcome.html_path.read_text(encoding="utf-8")
    assert "<script>" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert('x')&lt;/script&gt;" in html
    assert "EvilNet" in html


def test_revised_abstract_in_a_later_week_is_a_near_duplicate(
    seed_folder: Path, database: Path, tmp_path: Path
) -> None:
    ingest_listings(str(seed_folder), str(database), AS_OF)
    write_revised_seed(seed_folder)
    summary = ingest_listings(str(seed_folder), str(database), "2026-12-02T10:00:00+00:00")
    assert (summary.week, summary.new_papers, summary.near_duplicates) == ("2026-W49", 1, 1)
    pairs = rows(
        database,
        "select n.method, p.method_name, q.method_name, round(n.similarity, 4) from near_duplicates n "
        "join papers p on p.paper_id = n.paper_id join papers q on q.paper_id = n.duplicate_of",
    )
    assert pairs == [("minhash-lsh", "SPIRIT", "SPIRIT", 0.9741)]
    outcome = weekly_report(
        week="2026-W49", database=str(database), report_dir=str(tmp_path / "out")
    )
    html = outcome.html_path.read_text(encoding="utf-8")
    assert "near-duplicate of" in html and "similarity 0.97" in html
    assert '<del class="del" style="' in html and ">route</del>" in html and ">path</ins>" in html
    text = outcome.text_path.read_text(encoding="utf-8")
    assert "changes: -[route] +[path]" in text


def test_reissued_listing_reports_revisions_and_removals(
    seed_folder: Path, database: Path, tmp_path: Path
) -> None:
    ingest_listings(str(seed_folder), str(database), AS_OF)
    path = seed_folder / "000_5dc500fada0b6079.txt"
    header, *entries = path.read_text(encoding="utf-8").rstrip("\n").split("\n\n")
    edited = entries[0].replace(
        "central to large language model evaluation", "central to LLM evaluation", 1
    )
    assert edited != entries[0]
    # Entry 1 edited, entry 19 removed, the other 17 unchanged.
    path.write_text("\n\n".join([header, edited, *entries[1:18]]) + "\n", encoding="utf-8")
    summary = ingest_listings(str(seed_folder), str(database), "2026-12-02T10:00:00+00:00")
    assert (
        summary.files_loaded,
        summary.new_papers,
        summary.exact_duplicates,
        summary.near_duplicates,
    ) == (1, 1, 0, 1)
    versions = rows(
        database,
        "select n.status, n.supersedes = o.file_id from listing_files n join listing_files o using (path) "
        "where n.first_seen_week = '2026-W49' and o.first_seen_week = '2026-W48'",
    )
    assert versions == [("loaded", True)]
    revisions = rows(
        database,
        "select unchanged, len(added_paper_ids), len(revised_paper_ids), len(removed_paper_ids) from listing_revisions",
    )
    assert revisions == [(17, 1, 1, 1)]
    exact_in_w49 = rows(
        database,
        "select count(*) from duplicates_by_week where week = '2026-W49' and kind = 'exact'",
    )
    assert exact_in_w49 == [(0,)]
    outcome = weekly_report(
        week="2026-W49", database=str(database), report_dir=str(tmp_path / "out")
    )
    text = outcome.text_path.read_text(encoding="utf-8")
    assert (
        "* 000_5dc500fada0b6079.txt replaced its earlier version: 17 unchanged, 1 revised, 0 added, 1 removed."
        in text
    )
    assert "removed: Merging with Directional Alignment: Model merging has emerged" in text
    assert "revised in a re-issued listing of HJA" in text
    assert_keys_unique(database)


@pytest.mark.slow
def test_restoring_an_earlier_version_is_a_new_version(seed_folder: Path, database: Path) -> None:
    path = seed_folder / "000_5dc500fada0b6079.txt"
    original = path.read_bytes()
    ingest_listings(str(seed_folder), str(database), AS_OF)
    path.write_bytes(original.replace(b"central to large language model", b"central to LLM", 1))
    edited = ingest_listings(str(seed_folder), str(database), "2026-11-26T10:00:00+00:00")
    path.write_bytes(original)
    restored = ingest_listings(str(seed_folder), str(database), "2026-11-27T10:00:00+00:00")
    assert (edited.files_loaded, edited.new_papers, edited.exact_duplicates) == (1, 1, 0)
    assert (restored.files_loaded, restored.new_papers, restored.exact_duplicates) == (1, 0, 0)
    versions = rows(
        database,
        "select v.file_id, v.supersedes, v.status from listing_files v "
        "where v.name = '000_5dc500fada0b6079.txt' order by v.file_id",
    )
    assert [(s, st) for _, s, st in versions] == [
        (None, "loaded"),
        (versions[0][0], "loaded"),
        (versions[1][0], "loaded"),
    ]
    again = ingest_listings(str(seed_folder), str(database), "2026-11-28T10:00:00+00:00")
    assert (again.files_loaded, again.files_unchanged) == (0, 3)
    assert_keys_unique(database)
