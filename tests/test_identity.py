"""Separators and identity: blank-looking lines, list numbers, typographic quotes, PDF
ligature damage, and the migration that re-keys a database made under the earlier rules."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import duckdb
import pytest

from paperwatch import db
from paperwatch.flows.ingest import ingest_listings
from paperwatch.ingest import clean
from paperwatch.ingest.clean import (
    clean_abstract,
    paper_id_of,
    split_listed_number,
)
from paperwatch.ingest.ligatures import repair_ligatures
from paperwatch.ingest.parse import is_blank, parse_listing

CASES = Path(__file__).parent / "data" / "input-robustness"
SEEDS = Path(__file__).resolve().parent.parent / "seeds"
AS_OF = "2026-11-25T10:00:00+00:00"


def entries_of(name: str) -> list[str]:
    return [e.text for e in parse_listing((CASES / name).read_text(encoding="utf-8")).entries]


def test_a_line_of_nbsp_and_zero_width_space_separates_abstracts() -> None:
    listing = parse_listing((CASES / "invisible_blank_line.txt").read_text(encoding="utf-8"))
    assert [(e.position, e.line) for e in listing.entries] == [(1, 3), (2, 5)]
    assert listing.entries[0].text.startswith("We propose a curriculum")
    assert listing.entries[1].text.startswith("Graph transformers scale poorly")


@pytest.mark.parametrize(
    "line",
    ["", " ", "\t", "\xa0", "\u200b", "\xa0\u200b\xa0", "\u2060\ufeff", "\u3164", "\u2800 \u200d"],
)
def test_blank_looking_lines(line: str) -> None:
    assert is_blank(line)


@pytest.mark.parametrize("line", ["x", "\u200bx", "图", "\xa0.", "—"])
def test_lines_with_a_visible_character_are_not_blank(line: str) -> None:
    assert not is_blank(line)


def test_numbered_entries_are_the_same_papers_as_unnumbered_ones() -> None:
    numbered = [clean_abstract(t) for t in entries_of("numbered_entries.txt")]
    plain = [clean_abstract(t) for t in entries_of("invisible_blank_line.txt")]
    assert [c.paper_id for c in numbered] == [c.paper_id for c in plain]
    assert [c.listed_number for c in numbered] == [1, 2]
    assert [c.listed_number for c in plain] == [None, None]
    assert numbered[0].abstract == plain[0].abstract


@pytest.mark.parametrize(
    ("raw", "number", "rest"),
    [
        ("1. We propose X.", 1, "We propose X."),
        ("2) Text", 2, "Text"),
        ("[3] Text", 3, "Text"),
        ("(12) Text", 12, "Text"),
        ("#4 Text", 4, "Text"),
        ("5、我们提出", 5, "我们提出"),
        ("  17.  Text", 17, "Text"),
        ("1.5 billion parameters are enough.", None, "1.5 billion parameters are enough."),
        ("3D scenes are hard.", None, "3D scenes are hard."),
        ("(a) Text", None, "(a) Text"),
        ("12.", None, "12."),
        ("We cite [3] here.", None, "We cite [3] here."),
        ("- Text", None, "Text"),
        ("• Text", None, "Text"),
        ("* Text", None, "Text"),
        ("> Text", None, "Text"),
        ("① Text", 1, "Text"),
        ("❿ Text", 10, "Text"),
        ("-5% of the text", None, "-5% of the text"),
        ("*Italic* text", None, "*Italic* text"),
    ],
)
def test_split_listed_number(raw: str, number: int | None, rest: str) -> None:
    assert split_listed_number(raw) == (number, rest)


def test_typographic_quotes_dashes_and_apostrophes_are_one_identity() -> None:
    curly, straight = entries_of("curly_quotes.txt")[0], entries_of("straight_quotes.txt")[0]
    assert clean_abstract(curly).paper_id == clean_abstract(straight).paper_id
    # The text keeps what was written; only the identity folds it.
    assert "“chain of thought”" in clean_abstract(curly).abstract
    assert paper_id_of("a 2–3× gain — “x” ‘y’") == paper_id_of("a 2-3× gain - \"x\" 'y'")
    assert paper_id_of("a b") != paper_id_of("a-b")


def test_pdf_ligature_damage_is_repaired_into_known_words_and_the_rest_reported() -> None:
    first, second = entries_of("ligature_damage.txt")
    text, left = repair_ligatures(first)
    assert left == ()
    assert (
        "different sampling schedules are efficient only when the noise is classified first; "
        "a flow-based sampler offers" in text
    )
    assert clean_abstract(first).paper_id == paper_id_of(clean_abstract(text).abstract)
    text, left = repair_ligatures(second)
    assert left == ("zq®uxt",)
    assert text == second  # 25°C and ±0.5 are not words; an unknown word is left as written
    assert clean_abstract(second).ligature_damage == ("zq®uxt",)


def test_ligature_repair_of_a_long_entry_judges_each_word_once() -> None:
    raw = "We show that. " + "di®erent e±cient " * 10_000 + "zq®uxt."
    text, left = repair_ligatures(raw)
    assert text == "We show that. " + "different efficient " * 10_000 + "zq®uxt."
    assert left == ("zq®uxt",)


def test_the_seeds_hold_no_ligature_damage_and_no_list_numbers() -> None:
    for path in sorted(SEEDS.glob("*.txt")):
        for entry in parse_listing(path.read_text(encoding="utf-8")).entries:
            assert repair_ligatures(entry.text) == (entry.text, ())
            assert split_listed_number(entry.text) == (None, entry.text)


# --- The database, end to end ----------------------------------------------------------

#: Derived columns that carry the clock of the run that wrote them, not content.
_CLOCK_COLUMNS = {"run_id", "loaded_at", "detected_at", "computed_at", "extracted_at"}
_COMPARED = (
    "papers",
    "paper_occurrences",
    "near_duplicates",
    "paper_minhash",
    "paper_lsh_bands",
    "paper_lsh_pending",
    "paper_terms",
    "paper_terms_extracted",
    "listing_files",
    "quarantine",
)


def _identity_folder(root: Path) -> Path:
    folder = root / "listings"
    shutil.copytree(SEEDS, folder)
    for name in (
        "invisible_blank_line.txt",
        "numbered_entries.txt",
        "curly_quotes.txt",
        "straight_quotes.txt",
        "ligature_damage.txt",
        "labelled_abstract.txt",
    ):
        shutil.copy(CASES / name, folder / name)
    return folder


def _table(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple]:
    """Every row of ``table``, its columns by name (an upgraded table may have added
    columns in another order than a fresh one)."""
    columns = [
        r[0]
        for r in con.execute(
            "select column_name from duckdb_columns() where table_name = ? order by column_name",
            [table],
        ).fetchall()
        if r[0] not in _CLOCK_COLUMNS
    ]
    listed = ", ".join(columns)
    return con.execute(f"select {listed} from {table} order by all").fetchall()


def _counts(database: Path) -> tuple[int, int, int]:
    with db.reader(database) as con:
        row = con.execute(
            "select (select count(*) from papers), (select count(*) from paper_occurrences), "
            "(select count(*) from near_duplicates)"
        ).fetchone()
    assert row is not None
    return row


@pytest.mark.usefixtures("prefect_harness")
def test_cases_load_with_the_right_identities(tmp_path: Path, database: Path) -> None:
    folder = _identity_folder(tmp_path)
    for seed in SEEDS.glob("*.txt"):
        (folder / seed.name).unlink()
    summary = ingest_listings(str(folder), str(database), AS_OF)
    # 2 + 2 (the same two papers, numbered) + 1 + 1 (curly = straight) + 2 entries
    # + 1 (the first paper again, behind an "Abstract:" label).
    assert (summary.entries, summary.entries_loaded, summary.entries_quarantined) == (9, 9, 0)
    assert (summary.new_papers, summary.exact_duplicates) == (5, 4)
    with db.reader(database) as con:
        numbers = con.execute(
            "select f.name, o.position, o.listed_number from paper_occurrences o "
            "join listing_files f using (file_id) where f.name = 'numbered_entries.txt' "
            "order by o.position"
        ).fetchall()
        pairs = con.execute("select count(*) from near_duplicates").fetchone()
        warned = con.execute(
            "select f.name, v.unexpected_examples from validation_results v "
            "join listing_files f using (file_id) "
            "where v.expectation = 'expect_column_values_to_be_null(ligature_damage)' "
            "and v.outcome = 'failed'"
        ).fetchall()
        repaired = con.execute(
            "select count(*) from papers where abstract like '%different sampling schedules "
            "are efficient only when the noise is classified first; a flow-based sampler offers%'"
        ).fetchone()
    assert numbers == [("numbered_entries.txt", 1, 1), ("numbered_entries.txt", 2, 2)]
    assert pairs == (0,)
    assert warned == [("ligature_damage.txt", ["zq®uxt"])]
    assert repaired == (1,)


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_a_database_made_under_the_earlier_rules_upgrades_to_a_fresh_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _identity_folder(tmp_path)
    old = tmp_path / "old" / "paperwatch.duckdb"
    fresh = tmp_path / "fresh" / "paperwatch.duckdb"

    # Files are prepared in this process (no worker), so that the earlier rules patched in
    # below are the ones that prepare them.
    monkeypatch.setenv("PAPERWATCH_PREPARE_MEMORY_LIMIT_BYTES", "0")
    monkeypatch.setenv("PAPERWATCH_PREPARE_TIMEOUT_S", "0")
    with monkeypatch.context() as rules_v1:  # the identity rules before migration 0003
        rules_v1.setattr(clean, "split_listed_number", lambda raw: (None, raw))
        rules_v1.setattr(clean, "repair_ligatures", lambda raw: (raw, ()))
        rules_v1.setattr(clean, "_TYPOGRAPHIC_CHAR", re.compile("(?!)"))  # folds nothing
        rules_v1.setattr(clean, "strip_abstract_label", lambda abstract: abstract)
        ingest_listings(str(folder), str(old), AS_OF)
    # Under the earlier rules: curly and straight quotes, numbered and plain are apart.
    assert _counts(old)[0] == 54 + 2 + 2 + 2 + 2 + 1
    with duckdb.connect(str(old)) as con:  # the schema before migration 0003
        con.execute("alter table paper_occurrences drop column listed_number")
        # and so before 0005 too: its columns come after listed_number
        for column in ("title", "authors", "url", "external_id", "text_paper_id"):
            con.execute(f"alter table paper_occurrences drop column {column}")
        con.execute("delete from schema_migrations where version in (3, 5)")

    ingest_listings(str(folder), str(old), "2026-11-26T10:00:00+00:00")  # upgrades, catches up
    ingest_listings(str(folder), str(fresh), AS_OF)
    assert _counts(fresh) == _counts(old)
    assert _counts(fresh)[0] == 54 + 2 + 1 + 2
    with db.reader(old) as a, db.reader(fresh) as b:
        for table in _COMPARED:
            assert _table(a, table) == _table(b, table), table
        assert set(db.key_violations(a).values()) == {0}


#: A database the build 95be666 (2026-11-30) made from the seeds, exported with DuckDB's
#: ``export database`` (tests/data/upgrade/README.md). Its ``schema_migrations`` records
#: ``0003_listing_files_internal_error``, which is ``0004`` now; ``0003`` is the re-key.
_UPGRADE = Path(__file__).parent / "data" / "upgrade"
_UPGRADE_COMPARED = (
    "papers",
    "paper_occurrences",
    "near_duplicates",
    "paper_minhash",
    "paper_lsh_bands",
    "paper_terms",
)


@pytest.mark.slow
def test_a_database_of_an_earlier_build_with_another_0003_gets_every_migration(
    tmp_path: Path,
) -> None:
    upgraded = tmp_path / "upgraded" / "paperwatch.duckdb"
    fresh = tmp_path / "fresh" / "paperwatch.duckdb"
    upgraded.parent.mkdir()
    with duckdb.connect(str(upgraded), config={"storage_compatibility_version": "v1.5.0"}) as con:
        con.execute(f"import database '{_UPGRADE / 'db-95be666'}'")
        assert con.execute("select version, name from schema_migrations order by 1").fetchall() == [
            (1, "0001_unindexed_bulk_tables"),
            (2, "0002_paper_terms_week"),
            (3, "0003_listing_files_internal_error"),
        ]
    seeds = tmp_path / "seeds"
    shutil.copytree(SEEDS, seeds)
    relisted = tmp_path / "relisted"
    shutil.copytree(SEEDS, relisted)
    shutil.copy(_UPGRADE / "013_dddddddddddddddd.txt", relisted)
    later = "2026-12-05T10:00:00+00:00"

    summary = ingest_listings(str(relisted), str(upgraded), later)
    ingest_listings(str(seeds), str(fresh), "2026-11-25")  # as the fixture was made
    expected = ingest_listings(str(relisted), str(fresh), later)

    # The re-listed seed abstract is a duplicate of its paper, as in a fresh database.
    assert (summary.new_papers, summary.exact_duplicates) == (1, 1)
    assert (expected.new_papers, expected.exact_duplicates) == (1, 1)
    with db.reader(upgraded) as a, db.reader(fresh) as b:
        keys = a.execute("select migration from schema_migrations order by 1").fetchall()
        assert [k for (k,) in keys] == sorted(m.key for m in db.migrations())
        for table in _UPGRADE_COMPARED:
            assert _table(a, table) == _table(b, table), table


def test_a_migration_file_changed_since_it_was_applied_is_refused(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with db.writer(database) as con:
        db.apply_schema(con)
        con.execute(
            "update schema_migrations set checksum = repeat('0', 64) "
            "where migration = 'identity_rules_v2'"
        )
        with pytest.raises(db.MigrationMismatchError) as refused:
            db.apply_schema(con)
        assert str(refused.value).startswith(
            "migration 0003_identity_rules_v2 changed since it was applied to this database"
        )
        assert not db.schema_is_current(con)
        con.execute(
            "insert into schema_migrations (migration, version, name) "
            "values ('from_a_newer_build', 99, '0099_from_a_newer_build')"
        )
        con.execute("delete from schema_migrations where migration = 'identity_rules_v2'")
        with pytest.raises(db.MigrationMismatchError, match="records migration 0099_from_a_newer"):
            db.apply_schema(con)


def test_font_switches_are_dropped_and_migration_0012_re_keys_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``{\\em X}`` is X: a BibTeX-style abstract with a font switch is the paper of the same
    text without it, and a database loaded before becomes what a fresh load gives."""
    plain = (SEEDS / "002_bf103a832150c832.txt").read_text(encoding="utf-8").split("\n\n")[1]
    words = plain.split()
    switched = " ".join([*words[:3], "{\\em", words[3] + "}", *words[4:]])
    small = " ".join(["{\\small", words[0] + "}", *words[1:6], "{\\sc extra}", *words[6:]])
    assert clean.clean_abstract(switched).paper_id == clean.clean_abstract(plain).paper_id
    assert "sc" not in clean.clean_abstract(small).abstract.split()
    folder = tmp_path / "listings"
    folder.mkdir()
    (folder / "a.txt").write_text(f"ICLR 2026 papers\n\n{plain}\n\n{small}\n", encoding="utf-8")
    (folder / "b.txt").write_text(f"ICLR 2026 papers\n\n{switched}\n", encoding="utf-8")
    old = tmp_path / "old" / "paperwatch.duckdb"
    fresh = tmp_path / "fresh" / "paperwatch.duckdb"
    monkeypatch.setenv("PAPERWATCH_PREPARE_MEMORY_LIMIT_BYTES", "0")  # prepared here
    monkeypatch.setenv("PAPERWATCH_PREPARE_TIMEOUT_S", "0")
    with monkeypatch.context() as before:  # the cleaner before migration 0012
        kept = {k: v for k, v in clean._SYMBOLS.items() if k not in clean.FONT_SWITCHES}
        before.setattr(clean, "_SYMBOLS", kept)
        ingest_listings(str(folder), str(old), AS_OF)
    assert _counts(old)[:2] == (3, 3)  # the switched copy was a paper of its own
    with duckdb.connect(str(old)) as con:
        con.execute("delete from schema_migrations where version = 12")

    ingest_listings(str(folder), str(old), "2026-11-26T10:00:00+00:00")  # upgrades, catches up
    ingest_listings(str(folder), str(fresh), AS_OF)
    assert _counts(old)[:2] == _counts(fresh)[:2] == (2, 3)
    with db.reader(old) as a, db.reader(fresh) as b:
        for table in _COMPARED:
            assert _table(a, table) == _table(b, table), table
