"""JSON Lines written as Python literals (tests/data/real-digests/python_literal_export.jsonl),
ingested alone by the real flow: the papers loaded (title, URL, abstract) and the
entries quarantined (line and reasons)."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from paperwatch.flows.ingest import ingest_listings
from paperwatch.ingest import readers

AS_OF = "2026-11-25T10:00:00+00:00"
DATA = Path(__file__).parent / "data" / "real-digests"

pytestmark = pytest.mark.usefixtures("prefect_harness")

Papers = list[tuple[int, str | None, str | None, str]]
Quarantined = list[tuple[int, list[str]]]


def ingest_alone(name: str, tmp_path: Path) -> tuple[Papers, Quarantined]:
    """``(line, title, url, abstract)`` of the papers loaded from the file ``name`` ingested
    alone, and ``(line, reasons)`` of its quarantined entries, in file order."""
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(DATA / name, folder / name)
    database = tmp_path / "pw.duckdb"
    ingest_listings(str(folder), str(database), AS_OF)
    with duckdb.connect(str(database), read_only=True) as con:
        papers = con.execute(
            "select o.line, o.title, o.url, p.abstract from paper_occurrences o "
            "join papers p using (paper_id) order by o.position"
        ).fetchall()
        quarantined = con.execute(
            "select line, reasons from quarantine order by position, line"
        ).fetchall()
    return papers, quarantined


SHORT = "the abstract is shorter than 80 or longer than 5,000 characters: {}"
FEW = "the abstract has fewer than 15 or more than 1,000 words: {}"
PYTHON = "a record as a Python program prints it ({'abstract': …}, Paper(title=…)), not an abstract"


def test_python_literal_jsonl_is_read_safely(tmp_path: Path) -> None:
    papers, quarantined = ingest_alone("python_literal_export.jsonl", tmp_path)
    assert [(p[0], p[1], p[2]) for p in papers] == [
        (1, "Pruning Routers in Mixture Models", "https://arxiv.org/abs/2611.04001"),
        (2, "Counting Birds From Audio", "https://arxiv.org/abs/2611.04002"),
        (5, "Spreadsheets as Graphs", None),
    ]
    assert papers[0][3].startswith("Mixture-of-experts models route every token")
    # the truncated line and the line holding a call are quarantined, never evaluated
    assert quarantined == [
        (3, [PYTHON, SHORT.format(79), FEW.format(12)]),
        (4, [PYTHON, FEW.format(12)]),
    ]
    with duckdb.connect(str(tmp_path / "pw.duckdb"), read_only=True) as con:
        assert con.execute("select format, format_reason from listing_files").fetchall() == [
            (
                "jsonl",
                "by extension (.jsonl); lines read as Python literals "
                "(ast.literal_eval, literals only)",
            )
        ]


def test_python_literal_line_not_a_dict_is_no_abstract() -> None:
    text = "{'abstract': 'x'}\nnot a record at all, just words\n"
    entries = readers.read(text.encode(), "p.jsonl").entries
    assert [(e.line, e.no_abstract) for e in entries] == [(1, False), (2, True)]


def test_oversized_python_literal_line_is_not_parsed() -> None:
    from paperwatch.ingest.readers.jsonrec import MAX_LITERAL_CHARS

    line = "{'abstract': '" + "a" * MAX_LITERAL_CHARS + "'}"
    entries = readers.read(f"{{'abstract': 'ok'}}\n{line}\n".encode(), "p.jsonl").entries
    assert [e.title for e in entries] == [None, None]
    assert entries[1].text == line
