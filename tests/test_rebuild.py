"""``paperwatch rebuild``: the folder re-ingested into a new file, swapped in only when it
completed, the old file kept, and what the folder cannot give back carried over."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from paperwatch.cli import app
from paperwatch.db.quarantine import release_entry
from paperwatch.db.writer_lock import this_process, writer_lock
from paperwatch.exits import EXIT_LOCKED
from paperwatch.flows.ingest import ingest_listings

from .conftest import SEEDS

AS_OF = "2026-11-25T10:00:00+00:00"
RELEASED_AT = datetime(2026, 11, 26, 9, 30, tzinfo=UTC)
SHORT = "Three words only."

pytestmark = pytest.mark.usefixtures("prefect_harness")

#: Columns compared between a rebuilt database and a fresh ingestion (run ids and wall
#: clock times differ by nature).
COMPARED = {
    "listing_files": "file_id, sha256, path, name, sequence_number, size_bytes, venue, year, "
    "header, entry_count, entries_loaded, entries_quarantined, status, duplicate_of, "
    "supersedes, reason, first_seen, first_seen_week",
    "papers": "paper_id, abstract, abstract_raw, method_name, first_sentence, word_count, "
    "code_urls, venue, year, first_file_id, first_position, first_seen, first_seen_week",
    "paper_occurrences": "file_id, position, line, paper_id, raw_text, listed_number",
    "near_duplicates": "paper_id, duplicate_of, similarity, detected_at",
    "paper_terms": "paper_id, term, n, first_seen_week",
    "quarantine": "kind, file_id, path, position, line, raw_text, reasons, expectations, "
    "week, released_at, released_by, release_note",
    "ignored_paths": "path, reason",
    "reports": "week, kind, recipients, message_id, happened_at",
}


def table(database: Path, name: str) -> list[tuple]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(f"select {COMPARED[name]} from {name} order by all").fetchall()


def build_folder(tmp_path: Path) -> Path:
    """The seeds, a listing with one good and one short entry, and a non-listing file."""
    folder = tmp_path / "listings"
    shutil.copytree(SEEDS, folder)
    good = (SEEDS / "002_bf103a832150c832.txt").read_text(encoding="utf-8").split("\n\n")[1]
    (folder / "016_0000000000000007.txt").write_text(
        f"ICLR 2025 accepted papers\n\n{good} Extended.\n\n{SHORT}\n", encoding="utf-8"
    )
    (folder / "notes.docx").write_text("not a listing\n", encoding="utf-8")
    return folder


def release_short_entry(database: Path) -> None:
    with duckdb.connect(str(database)) as con:
        (qid,) = con.execute("select quarantine_id from quarantine where kind = 'entry'").fetchone()
        release_entry(
            con, qid, by="ana", note="erratum notice, keep it", at=RELEASED_AT, week="2026-W48"
        )


def record_sent_report(database: Path) -> None:
    with duckdb.connect(str(database)) as con:
        con.execute(
            "insert into reports (week, kind, recipients, message_id, happened_at) values "
            "('2026-W48', 'sent', ['reader@example.org'], '<paperwatch.2026-W48.1@test>', ?)",
            [RELEASED_AT],
        )


def used_database(tmp_path: Path, folder: Path) -> Path:
    database = tmp_path / "db" / "paperwatch.duckdb"
    summary = ingest_listings(str(folder), str(database), AS_OF)
    assert (summary.new_papers, summary.entries_quarantined, len(summary.ignored)) == (55, 1, 1)
    release_short_entry(database)
    record_sent_report(database)
    return database


def fresh_reference(tmp_path: Path, folder: Path) -> Path:
    reference = tmp_path / "reference" / "paperwatch.duckdb"
    ingest_listings(str(folder), str(reference), AS_OF)
    release_short_entry(reference)
    record_sent_report(reference)
    return reference


def rebuild(folder: Path, database: Path) -> object:
    return CliRunner().invoke(
        app, ["rebuild", "--folder", str(folder), "--database", str(database), "--as-of", AS_OF]
    )


@pytest.mark.slow
def test_a_readable_database_is_rebuilt_equal_to_a_fresh_ingest_and_kept_aside(
    tmp_path: Path,
) -> None:
    folder = build_folder(tmp_path)
    database = used_database(tmp_path, folder)
    old_bytes = database.read_bytes()
    result = rebuild(folder, database)
    assert result.exit_code == 0, result.output
    (aside,) = database.parent.glob("paperwatch.duckdb.previous-*")
    assert aside.read_bytes() == old_bytes  # kept, byte for byte
    assert f"the old database (readable) is kept as {aside}" in result.output
    assert (
        "carried over from the old database (quarantine releases: 1 row; ignored paths: "
        "1 row; report history: 1 row)" in result.output
    )
    assert "not carried over" not in result.output
    assert not (database.parent / "paperwatch.duckdb.rebuilding").exists()
    assert not list(database.parent.glob("paperwatch.duckdb.rebuilding*"))  # nor its lock files
    reference = fresh_reference(tmp_path, folder)
    for name in COMPARED:
        assert table(database, name) == table(reference, name), name
    assert [len(table(database, n)) for n in ("listing_files", "papers", "paper_occurrences")] == [
        4,
        56,
        59,
    ]
    assert table(database, "quarantine")[0][-3:] == (RELEASED_AT, "ana", "erratum notice, keep it")
    # The snapshot shows the rebuilt database.
    with duckdb.connect(str(database.with_name("paperwatch.read.duckdb")), read_only=True) as con:
        assert con.execute("select count(*) from papers").fetchone() == (56,)


@pytest.mark.slow
def test_a_rebuild_names_the_loaded_files_it_did_not_find_in_the_folder(
    tmp_path: Path,
) -> None:
    folder = build_folder(tmp_path)
    database = used_database(tmp_path, folder)
    gone = sorted(p.name for p in folder.glob("0*.txt"))[0]
    (folder / gone).unlink()  # loaded before, not in the folder now
    result = rebuild(folder, database)
    assert result.exit_code == 0, result.output
    not_carried = [line for line in result.output.splitlines() if line.startswith("not carried")]
    assert not_carried[-1] == (
        f"not carried over: listing files: 1 loaded into the old database are not in the "
        f"folder ({gone}); their papers are not in the rebuilt one (ingest their folder "
        "into it to add them)"
    )


@pytest.mark.slow
def test_a_damaged_database_is_rebuilt_and_says_what_it_could_not_carry_over(
    tmp_path: Path,
) -> None:
    folder = build_folder(tmp_path)
    database = used_database(tmp_path, folder)
    data = bytearray(database.read_bytes())
    for offset in range(20_000, len(data), 50_000):  # flipped bytes in the data blocks
        data[offset] ^= 0xFF
    database.write_bytes(bytes(data))
    result = rebuild(folder, database)
    assert result.exit_code == 0, result.output
    (aside,) = database.parent.glob("paperwatch.duckdb.damaged-*")
    assert aside.read_bytes() == bytes(data)
    assert "carried over from the old database (quarantine releases: 0 rows;" in result.output
    not_carried = [line for line in result.output.splitlines() if line.startswith("not carried")]
    assert [line.split(":", 2)[1] for line in not_carried] == [
        " quarantine releases",
        " ignored paths",
        " report history",
    ]
    assert all("Corrupt database file" in line for line in not_carried)
    reference = tmp_path / "reference" / "paperwatch.duckdb"
    ingest_listings(str(folder), str(reference), AS_OF)
    for name in ("listing_files", "papers", "paper_occurrences", "near_duplicates", "quarantine"):
        assert table(database, name) == table(reference, name), name
    assert table(database, "reports") == []
    # The rebuilt file is a healthy database: the next ingestion finds nothing new.
    again = CliRunner().invoke(
        app, ["ingest", "--folder", str(folder), "--database", str(database), "--as-of", AS_OF]
    )
    assert again.exit_code == 0, again.output
    assert "is up to date" in again.output


def test_a_rebuild_is_refused_while_another_run_writes(tmp_path: Path) -> None:
    folder = build_folder(tmp_path)
    database = tmp_path / "db" / "paperwatch.duckdb"
    with writer_lock(database, timeout_s=5):
        result = rebuild(folder, database)
    assert result.exit_code == EXIT_LOCKED
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: {this_process()} is writing {database} (lock file {database}.writer.lock); "
        "a rebuild does not wait: run it again when that run has finished"
    ]
    assert not database.exists()
    assert sorted(p.name for p in database.parent.iterdir()) == ["paperwatch.duckdb.writer.lock"]


def test_a_rebuild_that_fails_leaves_the_database_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import paperwatch.flows.rebuild

    folder = build_folder(tmp_path)
    database = used_database(tmp_path, folder)
    before = database.read_bytes()

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(paperwatch.flows.rebuild, "swap_into_place", fail)
    result = rebuild(folder, database)
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: the rebuild of {database} did not complete ([Errno 28] No space left on "
        f"device); {database} is as it was. Fix the cause and run `paperwatch rebuild` again"
    ]
    assert "Traceback" not in result.output
    assert database.read_bytes() == before
    assert list(database.parent.glob("paperwatch.duckdb.previous-*")) == []


def test_rebuild_help_explains() -> None:
    result = CliRunner().invoke(app, ["rebuild", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    for phrase in (
        "Rebuild the database from the listing folder",
        "quarantine releases",
        "damaged-",
        "never deleted",
        "exit 3",
    ):
        assert phrase in text, phrase
