"""Listing formats through the real ingestion flow: each format's fixture loads with exact
counts, titles and ids; the same papers in seven formats are one paper each, recorded as
exact duplicates; an edited abstract with the same arXiv id is a revision of its paper;
records without an abstract, Python literals and ambiguous files are quarantined."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from paperwatch.flows.ingest import ingest_listings

AS_OF = "2026-11-25T10:00:00+00:00"
LATER = "2026-12-02T10:00:00+00:00"
DATA = Path(__file__).parent / "data" / "formats"
#: The three papers of the fixtures: text identity (paper_id) and arXiv id.
ROUTERS, BIRDS, SHEETS = "80e45c64b6324e99", "5302f766e5b0d977", "4339e55a095e6ba4"
ROUTERS_TITLE = "Sparse Routers Forget Less"
BIRDS_TITLE = "Counting Birds from Sound with Weak Labels"
SHEETS_TITLE = "A Benchmark for Tabular Question Answering in Spreadsheets"
#: The reason of a Markdown digest's own prose outside any paper (expectations/papers.json).
OUTSIDE_PAPER = (
    "the digest's own prose outside any paper (an introduction, a notice, a section's lead-in), "
    "not a paper's abstract"
)
POSITION_TITLE = "Position: Reviewers Should See the Code"
AMBIGUOUS_REASON = (
    "the file cannot be read in its format: ambiguous: the content could be BibTeX or a "
    "Markdown digest (bibtex, markdown); pin the format with the formats setting"
)

pytestmark = pytest.mark.usefixtures("prefect_harness")


def rows(database: Path, sql: str, params: list[object] | None = None) -> list[tuple]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, object]:
    folder = tmp_path_factory.mktemp("formats") / "in"
    shutil.copytree(DATA, folder)
    database = tmp_path_factory.mktemp("db") / "pw.duckdb"
    return folder, database, ingest_listings(str(folder), str(database), AS_OF)


def test_each_format_loads_with_exact_counts(ingested: tuple[Path, Path, object]) -> None:
    _, database, summary = ingested
    assert rows(
        database,
        "select name, format, format_reason, status, venue, year, entry_count, "
        "entries_loaded, entries_quarantined from listing_files order by name",
    ) == [
        (
            "abstracts.txt",
            "lines",
            "by content: one abstract per line",
            "loaded",
            "NeurIPS",
            2026,
            3,
            3,
            0,
        ),
        (
            "ambiguous.txt",
            None,
            "ambiguous: the content could be BibTeX or a Markdown digest (bibtex, markdown); "
            "pin the format with the formats setting",
            "quarantined",
            None,
            None,
            0,
            0,
            0,
        ),
        ("arxiv_api.atom", "feed", "by extension (.atom)", "loaded", None, None, 2, 2, 0),
        ("arxiv_new.rss", "feed", "by extension (.rss)", "loaded", None, None, 1, 1, 0),
        # Its introduction line is an entry of its own, quarantined as too short.
        ("digest.md", "markdown", "by extension (.md)", "loaded", "NeurIPS", 2026, 5, 3, 2),
        ("papers.bib", "bibtex", "by extension (.bib)", "loaded", "NeurIPS", 2026, 4, 3, 1),
        ("papers.json", "json", "by extension (.json)", "loaded", "NeurIPS", 2026, 3, 3, 0),
        ("papers.jsonl", "jsonl", "by extension (.jsonl)", "loaded", None, None, 4, 3, 1),
        # Python-literal lines are read with ast.literal_eval; both abstracts are too short.
        (
            "python_repr.jsonl",
            "jsonl",
            "by extension (.jsonl); lines read as Python literals (ast.literal_eval, literals only)",
            "loaded",
            None,
            None,
            2,
            0,
            2,
        ),
    ]
    assert (summary.new_papers, summary.exact_duplicates) == (3, 15)  # type: ignore[attr-defined]
    assert (summary.entries_loaded, summary.entries_quarantined) == (18, 6)  # type: ignore[attr-defined]


def test_same_papers_in_every_format_are_one_paper(ingested: tuple[Path, Path, object]) -> None:
    _, database, _ = ingested
    assert rows(
        database, "select paper_id, title, authors, url, external_id from papers order by title"
    ) == [
        (
            SHEETS,
            SHEETS_TITLE,
            ["Priya Raman", "Oliver Stein"],
            "https://arxiv.org/abs/2611.06002",
            "arXiv:2611.06002",
        ),
        (
            BIRDS,
            BIRDS_TITLE,
            ["Lena Brandt", "Kofi Mensah", "Yu Han"],
            "http://arxiv.org/abs/2611.05873v1",
            "arXiv:2611.05873",
        ),
        (
            ROUTERS,
            ROUTERS_TITLE,
            ["Mira Okafor", "Tomás Lindqvist"],
            "http://arxiv.org/abs/2611.04521v2",
            "arXiv:2611.04521",
        ),
    ]
    # Every format's occurrence of each paper, with the title and id that format gave.
    assert rows(
        database,
        "select f.name, o.position, o.line, o.paper_id, o.title, o.external_id "
        "from paper_occurrences o join listing_files f using (file_id) order by f.name, o.position",
    ) == [
        ("abstracts.txt", 1, 2, ROUTERS, None, None),
        ("abstracts.txt", 2, 3, BIRDS, None, None),
        ("abstracts.txt", 3, 4, SHEETS, None, None),
        ("arxiv_api.atom", 1, 6, ROUTERS, ROUTERS_TITLE, "arXiv:2611.04521"),
        ("arxiv_api.atom", 2, 20, BIRDS, BIRDS_TITLE, "arXiv:2611.05873"),
        ("arxiv_new.rss", 1, 7, SHEETS, SHEETS_TITLE, "arXiv:2611.06002"),
        ("digest.md", 2, 5, ROUTERS, ROUTERS_TITLE, "arXiv:2611.04521"),
        ("digest.md", 3, 24, BIRDS, BIRDS_TITLE, "arXiv:2611.05873"),
        ("digest.md", 4, 36, SHEETS, SHEETS_TITLE, "arXiv:2611.06002"),
        ("papers.bib", 1, 10, ROUTERS, ROUTERS_TITLE, "arXiv:2611.04521"),
        ("papers.bib", 2, 24, BIRDS, BIRDS_TITLE, "arXiv:2611.05873"),
        ("papers.bib", 3, 33, SHEETS, SHEETS_TITLE, "arXiv:2611.06002"),
        ("papers.json", 1, 4, ROUTERS, ROUTERS_TITLE, "arXiv:2611.04521"),
        ("papers.json", 2, 11, BIRDS, BIRDS_TITLE, "openreview:Hb3xYq9LmT"),
        ("papers.json", 3, 21, SHEETS, SHEETS_TITLE, "arXiv:2611.06002"),
        ("papers.jsonl", 1, 1, ROUTERS, ROUTERS_TITLE, "arXiv:2611.04521"),
        ("papers.jsonl", 2, 2, BIRDS, BIRDS_TITLE, "arXiv:2611.05873"),
        ("papers.jsonl", 3, 4, SHEETS, SHEETS_TITLE, "arXiv:2611.06002"),
    ]
    assert rows(
        database,
        "select kind, method, count(*) from duplicates_by_week group by all order by all",
    ) == [("exact", "paper_id", 15)]


def test_records_without_abstract_and_unreadable_files_are_quarantined(
    ingested: tuple[Path, Path, object],
) -> None:
    _, database, _ = ingested
    assert rows(
        database,
        "select kind, path, position, line, reasons, left(raw_text, 40) from quarantine "
        "order by path, position",
    ) == [
        (
            "file",
            "ambiguous.txt",
            None,
            None,
            [AMBIGUOUS_REASON],
            "@misc{digest2026, note = {kept with the ",
        ),
        (
            "entry",
            "digest.md",
            1,
            3,
            [OUTSIDE_PAPER],
            "Papers our group picked this week, newes",
        ),
        ("entry", "digest.md", 5, 49, ["no abstract"], POSITION_TITLE),
        ("entry", "papers.bib", 4, 46, ["no abstract"], POSITION_TITLE),
        ("entry", "papers.jsonl", 4, 5, ["no abstract"], POSITION_TITLE),
        (
            "entry",
            "python_repr.jsonl",
            1,
            1,
            ["the abstract has fewer than 15 or more than 1,000 words: 13"],
            "Mixture-of-experts models lose earlier s",
        ),
        (
            "entry",
            "python_repr.jsonl",
            2,
            2,
            [
                "the abstract is shorter than 80 or longer than 5,000 characters: 67",
                "the abstract has fewer than 15 or more than 1,000 words: 9",
            ],
            "Acoustic monitoring stations record thou",
        ),
    ]


def test_a_record_without_an_abstract_cannot_be_released_as_a_paper(
    ingested: tuple[Path, Path, object],
) -> None:
    from paperwatch.db.quarantine import QuarantineError, release_entry

    _, database, _ = ingested
    with duckdb.connect(str(database)) as con:
        (qid,) = con.execute(
            "select quarantine_id from quarantine where path = 'papers.jsonl' and position = 4"
        ).fetchone()
        papers_before = con.execute("select count(*) from papers").fetchone()
        with pytest.raises(QuarantineError) as caught:
            release_entry(con, qid, by="ana", note="", at=datetime.now(UTC), week="2026-W48")
        assert str(caught.value) == (
            f"#{qid} (papers.jsonl:5) is a record without an abstract: there is no abstract to "
            "load (its title alone is not a paper); add the abstract to the listing and put the "
            "file in the watched folder again"
        )
        assert con.execute("select count(*) from papers").fetchone() == papers_before
        assert con.execute(
            "select released_at from quarantine where quarantine_id = ?", [qid]
        ).fetchone() == (None,)


def test_report_shows_titles_and_lists_no_abstract_once_per_file(
    ingested: tuple[Path, Path, object],
) -> None:
    from paperwatch import db
    from paperwatch.db.report_data import collect_report
    from paperwatch.report.render import render_report
    from paperwatch.settings import Settings

    _, database, _ = ingested
    with db.reader(database) as con:
        report = render_report(collect_report(con, "2026-W48", Settings(), persist=False))
    # The title of each new paper, linked to the URL its first record gave.
    assert report.html.count('href="http://arxiv.org/abs/2611.04521v2"') == 1
    assert ">Sparse Routers Forget Less</a>" in report.html
    assert (
        "* Counting Birds from Sound with Weak Labels (NeurIPS 2026 · listing “abstracts” · #2)\n"
        in report.text
    )
    # Three records without an abstract in three files: one line per file, 3 entries.
    assert report.text.count("no abstract: 1 record of this file") == 3
    assert "Quarantined this week: 6 entries and 1 whole file" in report.text
    rows_csv = report.csv.decode("utf-8-sig").splitlines()
    assert rows_csv[0] == (
        "paper_id,method_name,first_sentence,code_urls,source_file,position,"
        "title,authors,url,external_id"
    )
    assert rows_csv[1].startswith(f"{ROUTERS},GateLock,")
    assert rows_csv[1].endswith(
        f",abstracts.txt,1,{ROUTERS_TITLE},Mira Okafor; Tomás Lindqvist,"
        "http://arxiv.org/abs/2611.04521v2,arXiv:2611.04521"
    )


def test_edited_abstract_with_the_same_arxiv_id_is_a_revision(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(DATA / "papers.jsonl", folder / "papers.jsonl")
    database = tmp_path / "pw.duckdb"
    ingest_listings(str(folder), str(database), AS_OF)
    edited = (
        '{"arxiv_id": "2611.04521v4", "title": "Sparse Routers Forget Less", "abstract": '
        '"Mixture-of-experts models lose earlier skills when they are fine-tuned on a narrow '
        "task. We propose GateLock, a router penalty that keeps the expert assignment of old "
        "inputs close to its value before tuning. On ten continual-learning benchmarks "
        'GateLock cuts forgetting by 44% while adding under 2% training time."}\n'
    )
    (folder / "update.jsonl").write_text(edited, encoding="utf-8")
    summary = ingest_listings(str(folder), str(database), LATER)
    assert (summary.new_papers, summary.exact_duplicates, summary.entries_loaded) == (0, 1, 1)
    [(paper_id, text_id, external)] = rows(
        database,
        "select o.paper_id, o.text_paper_id, o.external_id from paper_occurrences o "
        "join listing_files f using (file_id) where f.name = 'update.jsonl'",
    )
    assert (paper_id, external) == (ROUTERS, "arXiv:2611.04521")
    assert text_id != ROUTERS and len(text_id) == 16
    assert rows(
        database,
        "select kind, method, is_revision, paper_id, file_name from duplicates_by_week "
        "where week = '2026-W49'",
    ) == [("exact", "external_id", True, ROUTERS, "update.jsonl")]
    assert rows(database, "select count(*) from papers") == [(3,)]


def test_a_pinned_format_wins_over_extension_and_content(tmp_path: Path) -> None:
    from paperwatch.ingest.files import prepare_file, scan_folder

    folder = tmp_path / "in"
    (folder / "exports").mkdir(parents=True)
    shutil.copy(DATA / "papers.jsonl", folder / "exports" / "week48.txt")
    shutil.copy(DATA / "abstracts.txt", folder / "abstracts.txt")
    scan = scan_folder(folder, {"exports": "jsonl", "*.txt": "text"})
    decided = {
        stat.rel: (prepared.format, prepared.format_reason, len(prepared.entries))
        for stat in scan.files
        for prepared in [prepare_file(stat, stat.path.read_bytes())]
    }
    assert decided == {
        "abstracts.txt": ("text", "pinned by the formats setting ('*.txt')", 1),
        "exports/week48.txt": ("jsonl", "pinned by the formats setting ('exports')", 4),
    }
