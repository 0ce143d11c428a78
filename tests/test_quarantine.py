"""Quarantine: list, release (recorded), the report's data-quality section, Data Docs."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from paperwatch import db
from paperwatch.cli import app
from paperwatch.flows.ingest import ingest_listings
from paperwatch.flows.report import weekly_report

from .conftest import SEEDS

AS_OF = "2026-11-25T10:00:00+00:00"
GOOD = (SEEDS / "002_bf103a832150c832.txt").read_text(encoding="utf-8").split("\n\n")[1]
runner = CliRunner()

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "016_0000000000000007.txt").write_text(
        f"ICLR 2025 accepted papers\n\n{GOOD}\n\nThree words only.\n", encoding="utf-8"
    )
    (folder / "017_0000000000000008.txt").write_bytes(b"")
    return folder


def test_list_release_and_report(folder: Path, database: Path, tmp_path: Path) -> None:
    ingest_listings(str(folder), str(database), AS_OF)
    listed = runner.invoke(app, ["quarantine", "list", "--database", str(database)])
    assert listed.exit_code == 0, listed.output
    assert listed.output.splitlines() == [
        "#1  016_0000000000000007.txt:5  (entry 2, 2026-W48)",
        "    reason: the abstract is shorter than 80 or longer than 5,000 characters: 17",
        "    reason: the abstract has fewer than 15 or more than 1,000 words: 3",
        "    text:   Three words only.",
        "#2  017_0000000000000008.txt  (file, 2026-W48)",
        "    reason: no entries: the file is empty or holds only a header",
    ]

    outcome = weekly_report(
        week="2026-W48", database=str(database), report_dir=str(tmp_path / "out")
    )
    text = outcome.text_path.read_text(encoding="utf-8")
    assert "Files: 20 checks passed, 1 failed (rejecting), 1 warning, 0 broken." in text
    assert "Entries: 30 checks passed, 2 failed (rejecting), 0 warnings, 0 broken." in text
    assert "Warning: sequence gap" not in text
    assert (
        "* #2 017_0000000000000008.txt (whole file): no entries: the file is empty or holds only a header"
        in text
    )

    refused = runner.invoke(app, ["quarantine", "release", "2", "--database", str(database)])
    assert refused.exit_code == 2  # refused: a whole file cannot be released
    assert "is a whole file" in refused.output and "fix the file" in refused.output

    released = runner.invoke(
        app,
        [
            "quarantine",
            "release",
            "1",
            "--by",
            "ana",
            "--note",
            "an erratum",
            "--database",
            str(database),
            "--as-of",
            "2026-11-26T09:00:00+00:00",
        ],
    )
    assert released.exit_code == 0, released.output
    assert released.output.startswith(
        "released #1 (016_0000000000000007.txt, entry 2) as a new paper "
    )
    with duckdb.connect(str(database), read_only=True) as con:
        assert con.execute(
            "select released_by, release_note, released_at is not null from quarantine where quarantine_id = 1"
        ).fetchall() == [("ana", "an erratum", True)]
        assert con.execute(
            "select position, line from paper_occurrences o join listing_files f using (file_id) "
            "where f.name = '016_0000000000000007.txt' order by position"
        ).fetchall() == [(1, 3), (2, 5)]
        assert con.execute(
            "select entry_count, entries_loaded, entries_quarantined from listing_files "
            "where name = '016_0000000000000007.txt'"
        ).fetchall() == [(2, 2, 0)]
        assert set(db.key_violations(con).values()) == {0}
    again = runner.invoke(app, ["quarantine", "release", "1", "--database", str(database)])
    assert again.exit_code == 2 and "was already released by ana" in again.output
    assert (
        "the quarantine is empty"
        not in runner.invoke(app, ["quarantine", "list", "--database", str(database)]).output
    )
    everything = runner.invoke(
        app, ["quarantine", "list", "--all", "--database", str(database)]
    ).output
    assert "    released by ana on 2026-11-26 09:00: an erratum" in everything


def test_data_docs(folder: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["docs", "--folder", str(folder), "--report-dir", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    index = tmp_path / "out" / "data_docs" / "index.html"
    assert f"Data Docs for 2 files, 2 entries: {index}" in result.output
    assert index.is_file()
    pages = sorted(p.name for p in (tmp_path / "out" / "data_docs" / "expectations").glob("*.html"))
    assert pages == ["listing_files.html", "papers.html"]


def test_a_released_entry_keeps_its_record_fields(tmp_path: Path, database: Path) -> None:
    folder = tmp_path / "news"
    folder.mkdir()
    ad = GOOD  # an abstract-like text under a sponsor headline: quarantined, releasable
    (folder / "news.txt").write_text(f"Try Acme free for 30 days (Sponsor)\n\n{ad}\n")
    ingest_listings(str(folder), str(database), AS_OF)
    with duckdb.connect(str(database), read_only=True) as con:
        assert con.execute("select record_fields from quarantine").fetchall() == [
            ('{"title": "Try Acme free for 30 days"}',)
        ]
    released = runner.invoke(
        app, ["quarantine", "release", "1", "--by", "ana", "--database", str(database)]
    )
    assert released.exit_code == 0, released.output
    with duckdb.connect(str(database), read_only=True) as con:
        assert con.execute("select title, authors from paper_occurrences").fetchall() == [
            ("Try Acme free for 30 days", None)
        ]
        assert con.execute("select title from papers").fetchall() == [
            ("Try Acme free for 30 days",)
        ]


def test_a_json_record_without_a_readable_abstract_is_kept_as_read(
    tmp_path: Path, database: Path
) -> None:
    """Keys in other case are read (a spreadsheet export's ``Title``/``Abstract``); a
    record whose abstract is not text is quarantined with the record as read."""
    folder = tmp_path / "export"
    folder.mkdir()
    records = [
        {"Title": "Capital keys", "ABSTRACT": GOOD},
        {"title": "By language", "abstract": {"en": "Trees of many kinds, studied."}},
    ]
    (folder / "export.json").write_text(json.dumps(records), encoding="utf-8")
    ingest_listings(str(folder), str(database), AS_OF)
    with duckdb.connect(str(database), read_only=True) as con:
        assert con.execute("select title from papers").fetchall() == [("Capital keys",)]
        kept = con.execute("select position, raw_text, record_fields from quarantine").fetchall()
    assert [(p, t, json.loads(f)) for p, t, f in kept] == [
        (2, "By language", {"title": "By language", "as_written": records[1]})
    ]
