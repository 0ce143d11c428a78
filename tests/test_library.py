"""A reader's library, followed authors and exclusions (issue 47): the settings, reading a
library file, the ranking of a hand-built week against a 30-paper BibTeX library (exact ids
and order, each with its reason), followed authors, exclusions, and bad library files."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from paperwatch import db
from paperwatch.analysis.library import excluded_papers, followed_in, name_key, recency_weights
from paperwatch.db.library import reader_picks, week_papers
from paperwatch.db.report_data import collect_report, topic_matches
from paperwatch.db.trends import update_paper_terms
from paperwatch.ingest.library import LibraryError, LibraryItem, read_library, reader_library
from paperwatch.report.email_safety import check_email_safety
from paperwatch.report.render import for_reader, render_report
from paperwatch.settings import Reader, Settings, SmtpSettings

from .library_week import EXPECTED_TOP_FIVE, LIBRARY, WEEK, build_week
from .report_weeks import add_week

# ------------------------------------------------------------ settings


def test_reader_library_authors_and_exclusions_from_toml() -> None:
    toml = """
[[smtp.readers]]
address = "ann@example.org"
library = "libraries/ann.bib"
authors = ["  Ann   Lee ", "J. Núñez", "Ann Lee"]
exclude = ["Reinforcement  Learning", "reinforcement learning"]

[[smtp.readers]]
address = "cy@example.org"
"""
    ann, cy = SmtpSettings(**tomllib.loads(toml)["smtp"]).readers
    assert ann.library == Path("libraries/ann.bib")  # relative to the working directory
    assert ann.authors == ["Ann Lee", "J. Núñez"]
    assert ann.exclude == ["reinforcement learning"]
    assert ann.library_picks == 10
    assert (cy.library, cy.authors, cy.exclude) == (None, [], [])
    home = Reader(address="x@example.org", library="~/lib.bib")  # type: ignore[arg-type]
    assert home.library == Path.home() / "lib.bib"
    with pytest.raises(ValueError, match="an author is empty"):
        Reader(address="x@example.org", authors=[" "])
    with pytest.raises(ValueError, match="an excluded term is empty"):
        Reader(address="x@example.org", exclude=[""])


# ------------------------------------------------------------ the week against the library


@pytest.fixture(scope="module")
def week_database(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    database = tmp_path_factory.mktemp("library") / "week.duckdb"
    return database, build_week(database)


def for_you(
    week_database: tuple[Path, dict[str, str]], reader: Reader
) -> tuple[dict[str, Any], dict[str, str]]:
    """The reader's "For you" section of :data:`WEEK` and paper_id → label."""
    database, ids = week_database
    library = reader_library(reader)
    with db.reader(database) as con:
        data = collect_report(con, WEEK, Settings(), persist=False)
        matches = topic_matches(con, WEEK, reader.topics)
        picks = reader_picks(con, week_papers(con, WEEK), reader, library, 2026)
    mine = for_reader(data, reader, matches, picks).for_you
    assert mine is not None
    return mine, {paper_id: label for label, paper_id in ids.items()}


def test_the_five_closest_papers_in_the_hand_labelled_order(
    week_database: tuple[Path, dict[str, str]],
) -> None:
    reader = Reader(address="ann@example.org", library=LIBRARY, library_picks=5)
    mine, label = for_you(week_database, reader)
    ranked = [(label[p["paper_id"]], p["closest"]["title"]) for p in mine["papers"]]
    assert ranked == EXPECTED_TOP_FIVE
    assert [(p["closest"]["year"], p["closest"]["shared"]) for p in mine["papers"]] == [
        (2026, ["region", "attention map", "background", "chosen"]),
        (2026, ["video", "frame", "consistent", "image diffusion"]),
        (2024, ["transcribed", "language", "speech", "low-resource"]),
        (2025, ["molecular property", "equivariant", "graph neural", "carry"]),
        (2025, ["text-driven", "prompt", "image", "editing"]),
    ]
    assert [round(p["closest"]["similarity"], 2) for p in mine["papers"]] == [
        0.79, 0.6, 0.89, 0.64, 0.28,
    ]  # fmt: skip
    assert mine["library"] == {"size": 30, "missing": 0} and mine["total"] == 5
    assert all(p["followed"] == [] and p["matched"] == [] for p in mine["papers"])


def test_an_old_library_paper_counts_less_and_unrelated_papers_are_left_out(
    week_database: tuple[Path, dict[str, str]],
) -> None:
    reader = Reader(address="ann@example.org", library=LIBRARY, library_picks=20)
    mine, label = for_you(week_database, reader)
    ranked = [label[p["paper_id"]] for p in mine["papers"]]
    # "topics" restates a 2011 paper (cosine 0.98) but weighs 0.5 ** (15 / 3): sixth.
    assert ranked == [x for x, _ in EXPECTED_TOP_FIVE] + ["topics"]
    sixth = mine["papers"][5]["closest"]
    assert (sixth["title"], sixth["year"]) == ("Topic Models for Large News Archives", 2011)
    assert round(sixth["similarity"], 2) == 0.98


def test_recency_weights_halve_every_three_years() -> None:
    assert recency_weights([2026, 2023, 2020, 2027, None], 2026) == [1.0, 0.5, 0.25, 1.0, 0.5]


def test_followed_authors_are_listed_first_and_say_so(
    week_database: tuple[Path, dict[str, str]],
) -> None:
    reader = Reader(address="ann@example.org", authors=["Lee, Ann", "Etienne MOREAU"])
    mine, label = for_you(week_database, reader)
    listed = [(label[p["paper_id"]], p["followed"]) for p in mine["papers"]]
    # Report order; "A. Lee" is an initial of Ann, "Ann Lée" the same name with an accent.
    assert listed == [
        ("edit", ["Ann Lee"]),
        ("database", ["A. Lee"]),
        ("topics", ["Étienne Moreau"]),
        ("birds", ["Ann Lée"]),
    ]


def test_name_matching_rule() -> None:
    assert followed_in(["Ann Lee"], ["Anna Lee", "Ann Leeds", "A. Lee", "Lee"]) == ["A. Lee"]
    assert followed_in(["J. Núñez"], ["José Nunez", "Juan NÚÑEZ", "Maria Nunez"]) == [
        "José Nunez",
        "Juan NÚÑEZ",
    ]
    assert followed_in(["Lee"], ["Ann Lee", "Bo Lee", "Lee Ann"]) == ["Ann Lee", "Bo Lee"]
    assert followed_in(["Martin Luther King Jr."], ["M. L. King"]) == ["M. L. King"]
    assert name_key("  ") is None and name_key("Lee, Ann") == ("lee", "ann")


def test_excluded_papers_never_appear_whatever_picked_them(
    week_database: tuple[Path, dict[str, str]],
) -> None:
    reader = Reader(
        address="ann@example.org",
        library=LIBRARY,
        library_picks=5,
        authors=["Jonas Weber"],  # the author of "robot", a reinforcement-learning paper
        topics=["diffusion", "reinforcement learning"],
        exclude=["reinforcement learning", "follower graphs"],  # a term; a title's words
    )
    mine, label = for_you(week_database, reader)
    listed = [label[p["paper_id"]] for p in mine["papers"]]
    # rlhf-edit (closest to the library), robot (followed, on a topic) and social (on a
    # topic, "Follower Graphs" in its title) are gone; the next closest moves up.
    assert listed == ["edit", "video", "speech", "molecule", "topics"]
    assert not {"rlhf-edit", "robot", "social"} & set(label[p["paper_id"]] for p in mine["papers"])
    assert mine["exclude"] == ["reinforcement learning", "follower graphs"]


def test_exclusions_match_terms_in_any_case_and_title_words() -> None:
    terms = pl.DataFrame({"paper_id": ["a", "b", "c"], "term": ["KV cache", "cache", "x"]})
    titles = {"a": None, "b": "Caching", "c": "On KV  Cache reuse", "d": "kv-cache"}
    assert excluded_papers(terms, titles, ["kv cache"]) == {"a", "c"}
    assert excluded_papers(terms, titles, []) == set()


def test_the_reasons_are_in_both_parts_and_escaped(
    week_database: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    hostile = tmp_path / "hostile.bib"
    hostile.write_text(
        LIBRARY.read_text(encoding="utf-8").replace(
            "Mask-Guided Diffusion for Local Image Editing",
            "Mask-Guided Diffusion <script>alert(1)</script> for Local Image Editing\\\\"
            " Bcc: eve@example.org",
        ),
        encoding="utf-8",
    )
    database, _ = week_database
    reader = Reader(
        address="ann@example.org", library=hostile, library_picks=2, authors=["Bao Nguyen"]
    )
    with db.reader(database) as con:
        data = collect_report(con, WEEK, Settings(), persist=False)
        picks = reader_picks(con, week_papers(con, WEEK), reader, reader_library(reader), 2026)
    report = render_report(for_reader(data, reader, [], picks))
    assert check_email_safety(report.html) == []
    assert (
        "<script>alert" not in report.html
        and "&lt;script&gt;alert(1)&lt;/script&gt;" in report.html
    )
    assert "by Bao Nguyen, whom you follow" in report.html
    assert "Closest to your library of 30 papers (recent ones count more)" in report.text
    text = report.text.split("\n\n13 new papers")[0]
    assert "close to your “Temporally Consistent Video Editing with Image Diffusion\n" in text
    assert (
        "  Models” (2026), similarity 0.60 · shared: video, frame, consistent, image\n  diffusion"
        in text
    )
    assert "\nBcc:" not in report.text and "Bcc: eve@example.org" in text  # inert, in a line
    assert report.subject.startswith("paperwatch")


# ------------------------------------------------------------ library files


def test_a_bad_library_path_is_a_clear_error_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "library.bib"
    reader = Reader(address="ann@example.org", library=missing)
    with pytest.raises(LibraryError) as caught:
        reader_library(reader)
    assert str(caught.value) == (
        f"library file {missing}: not found (the library of reader ann@example.org)"
    )
    folder = tmp_path / "lib.bib"
    folder.mkdir()
    with pytest.raises(LibraryError, match=r"lib\.bib: is a folder, not a file"):
        read_library(folder)
    for name, body, detail in [
        ("library.docx", "x", "unknown extension '.docx' (one of .bib, .json, .ris, .txt)"),
        ("empty.bib", "% nothing\n", "holds no paper (read as bibtex)"),
        ("broken.json", '[{"title": "x"', "not valid JSON: line 1: Expecting ',' delimiter"),
        (
            "ids.txt",
            "2611.01234\nnot an id\n",
            "line 2: 'not an id' is neither an arXiv id nor a DOI",
        ),
        (
            "cut.ris",
            "TY  - JOUR\nTI  - A title\n",
            "the last record has no ER line (not RIS, or cut short)",
        ),
        ("latin1.bib", "@article{a, title={Caf\xe9}}", "not UTF-8 (byte 22, line 1)"),
    ]:
        path = tmp_path / name
        path.write_bytes(body.encode("latin-1"))
        with pytest.raises(LibraryError) as caught:
            read_library(path)
        assert str(caught.value) == f"library file {path}: {detail}"
    unreadable = tmp_path / "locked.bib"
    unreadable.write_text("@article{a, title={A}}", encoding="utf-8")
    unreadable.chmod(0)
    try:
        if not os.access(unreadable, os.R_OK):  # root reads everything
            with pytest.raises(
                LibraryError, match=r"locked\.bib: cannot be read: Permission denied"
            ):
                read_library(unreadable)
    finally:
        unreadable.chmod(0o600)


def test_csl_json_ris_and_id_lists_are_read(tmp_path: Path) -> None:
    csl = tmp_path / "zotero.json"
    csl.write_text(
        """[{"id": "x1", "type": "article-journal", "title": "Mask-Guided Diffusion",
            "author": [{"family": "Lee", "given": "Ann"}, {"literal": "The Lab"}],
            "issued": {"date-parts": [[2025, 3]]}, "abstract": "We edit images.",
            "DOI": "10.5555/ABC.1"},
           {"title": "No year", "author": [], "URL": "https://arxiv.org/abs/2611.01234v2"}]""",
        encoding="utf-8",
    )
    ris = tmp_path / "mendeley.ris"
    ris.write_text(
        "TY  - JOUR\nTI  - Speech Recognition for\n  Low-Resource Languages\nAU  - Mbeki, Thandi\n"
        "AU  - Ortiz, Luis\nPY  - 2024/05/01\nAB  - Few hours of speech.\nDO  - 10.5555/xyz\n"
        "ER  - \nTY  - CONF\nT1  - Second\nER  - \n",
        encoding="utf-8",
    )
    ids = tmp_path / "ids.txt"
    ids.write_text("# my papers\narXiv:2611.01234v3\nhttps://doi.org/10.5555/ABC.1  # a DOI\n\n")
    assert read_library(csl) == [
        LibraryItem("Mask-Guided Diffusion", ("Ann Lee", "The Lab"), 2025,
                    "Mask-Guided Diffusion. We edit images.", "doi:10.5555/abc.1"),
        LibraryItem("No year", (), None, "No year", "arXiv:2611.01234"),
    ]  # fmt: skip
    assert read_library(ris) == [
        LibraryItem("Speech Recognition for Low-Resource Languages", ("Thandi Mbeki", "Luis Ortiz"),
                    2024, "Speech Recognition for Low-Resource Languages. Few hours of speech.",
                    "doi:10.5555/xyz"),
        LibraryItem("Second", (), None, "Second", None),
    ]  # fmt: skip
    assert read_library(ids) == [
        LibraryItem(None, (), None, "", "arXiv:2611.01234"),
        LibraryItem(None, (), None, "", "doi:10.5555/abc.1"),
    ]
    bib = read_library(LIBRARY)
    assert len(bib) == 30 and bib[0].authors == ("Ann Lee", "Chidi Okafor")
    assert bib[4] == LibraryItem(
        "A Benchmark for Local Image Editing", ("Ann Lee", "Marta Ruiz", "Wei Chen"), 2024,
        "A Benchmark for Local Image Editing", None,
    )  # fmt: skip


def test_an_id_list_library_is_found_in_the_database(tmp_path: Path) -> None:
    database = tmp_path / "ids.duckdb"
    ids = build_week(database)
    earlier = (
        "Editing a real photograph with a text-guided diffusion model: a user mask restricts "
        "the denoising steps to one region and an attention map keeps the background."
    )
    with db.writer(database) as con:
        (earlier_id,) = add_week(con, "2026-W40", [earlier], name="000_" + "c" * 16 + ".txt")
        con.execute(
            "update papers set external_id = 'arXiv:2609.00001', title = 'Masks for Editing' "
            "where paper_id = $id",
            {"id": earlier_id},
        )
        update_paper_terms(con)
    library = tmp_path / "ids.txt"
    library.write_text("arXiv:2609.00001v2\n10.5555/not-here\n", encoding="utf-8")
    reader = Reader(address="ann@example.org", library=library, library_picks=3)
    mine, label = for_you((database, ids), reader)
    assert mine["library"] == {"size": 1, "missing": 1}
    first = mine["papers"][0]
    assert (label[first["paper_id"]], first["closest"]["title"], first["closest"]["year"]) == (
        "edit", "Masks for Editing", 2026,
    )  # fmt: skip


def test_the_flow_renders_each_reader_with_their_library_or_names_the_bad_file(
    week_database: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    from paperwatch.flows.report import render_reader_reports

    database, _ = week_database
    with db.reader(database) as con:
        data = collect_report(con, WEEK, Settings(), persist=False)
    ann = {"address": "ann@example.org", "library": str(LIBRARY), "library_picks": 5}
    bad = {"address": "cy@example.org", "library": str(tmp_path / "gone.ris")}
    settings = Settings(database=database, smtp=SmtpSettings(readers=[Reader(**ann)]))
    ((address, report),) = render_reader_reports.fn(settings, data)
    assert address == "ann@example.org"
    assert report.html.index("Mask-Guided Diffusion for Local Image Editing") < report.html.index(
        ">New papers</h2>"
    )
    broken = Settings(database=database, smtp=SmtpSettings(readers=[Reader(**ann), Reader(**bad)]))
    with pytest.raises(LibraryError, match=r"gone\.ris: not found \(the library of reader cy@"):
        render_reader_reports.fn(broken, data)
