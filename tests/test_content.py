"""Content, not paths: files whose bytes are recorded are recognised before they are parsed;
many small files load in one transaction per batch, with the same rows as one per file."""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from paperwatch import db
from paperwatch.db import load as store
from paperwatch.db import runs, writes
from paperwatch.db.batches import check_batch, load_batch, prepare_files
from paperwatch.flows.ingest import ingest_listings
from paperwatch.ingest.files import ListingFileStat, PreparedFile, hash_listing_files, scan_folder

AS_OF = "2026-11-25T10:00:00+00:00"  # ISO week 2026-W48
NEXT_WEEK = "2026-12-02T10:00:00+00:00"  # ISO week 2026-W49

pytestmark = pytest.mark.usefixtures("prefect_harness")

#: ``select count(*) from validation_results`` after the seeds: (11 file + 32 entry
#: expectations) x 3 files (tests/test_ingest_flow.py).
SEED_CHECKS = 129

NEW_LISTING = (
    "ICLR 2026 accepted papers\n\n"
    "We study sparse attention for long contexts and propose SPARQ, a sparse query "
    "routing method that halves the memory of the key-value cache at equal accuracy.\n\n"
    "We introduce a benchmark of 400 tasks for tool-using agents and find that planning "
    "errors, not tool errors, cause most failures of current language models.\n"
)


def rows(database: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(sql).fetchall()


def never_prepared(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every file the run prepares (in this process: no worker pool)."""
    monkeypatch.setenv("PAPERWATCH_PREPARE_MEMORY_LIMIT_BYTES", "0")
    monkeypatch.setenv("PAPERWATCH_PREPARE_TIMEOUT_S", "0")
    import paperwatch.ingest.prepare as prepare

    seen: list[str] = []
    real = prepare.prepare_file

    def spy(stat: ListingFileStat, data: bytes | None, max_bytes: int = 0) -> PreparedFile:
        seen.append(stat.rel)
        return real(stat, data, max_bytes)

    monkeypatch.setattr(prepare, "prepare_file", spy)
    return seen


@pytest.mark.slow
def test_copied_folder_costs_hashing_only(
    seed_folder: Path, database: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest_listings(str(seed_folder), str(database), AS_OF)
    copy = tmp_path / "elsewhere" / "listings"
    shutil.copytree(seed_folder, copy)  # new mtimes: the stat-first scan reads them
    for path in copy.iterdir():
        path.touch()
    (copy / "004_00000000000000aa.txt").write_text(NEW_LISTING, encoding="utf-8")
    prepared = never_prepared(monkeypatch)

    summary = ingest_listings(str(copy), str(database), NEXT_WEEK)

    assert prepared == ["004_00000000000000aa.txt"]
    assert (summary.files_seen, summary.files_unchanged, summary.files_loaded) == (4, 3, 1)
    assert (summary.files_duplicate, summary.files_moved, summary.new_papers) == (0, 0, 2)
    assert (summary.entries, summary.entries_loaded) == (2, 2)
    # The known files got no new row and no new validation: only the new file's 11 + 30.
    assert rows(database, "select count(*) from listing_files") == [(4,)]
    assert rows(database, "select count(*) from validation_results") == [(SEED_CHECKS + 43,)]
    assert rows(database, "select path, mtime_ns from listing_files order by path") == [
        (path.name, path.stat().st_mtime_ns) for path in sorted(copy.glob("*.txt"))
    ]
    # The next run reads nothing.
    again = ingest_listings(str(copy), str(database), NEXT_WEEK)
    assert (again.files_unchanged, again.changed_anything) == (4, False)


def test_moved_file_is_not_a_new_listing(
    seed_folder: Path, database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest_listings(str(seed_folder), str(database), AS_OF)
    (seed_folder / "archive").mkdir()
    moved = seed_folder / "archive" / "000_5dc500fada0b6079.txt"
    (seed_folder / "000_5dc500fada0b6079.txt").rename(moved)
    moved.touch()
    prepared = never_prepared(monkeypatch)

    summary = ingest_listings(str(seed_folder), str(database), NEXT_WEEK)

    assert prepared == []
    assert (summary.files_unchanged, summary.files_moved, summary.files_loaded) == (3, 1, 0)
    assert (summary.entries, summary.new_papers, summary.changed_anything) == (0, 0, True)
    assert rows(
        database,
        "select m.path, m.status, m.duplicate_of = o.file_id, m.reason, m.entry_count, "
        "m.venue, m.year, m.sequence_number, m.first_seen_week from listing_files m "
        "join listing_files o on o.path = '000_5dc500fada0b6079.txt' where m.status = 'moved'",
    ) == [
        (
            "archive/000_5dc500fada0b6079.txt",
            "moved",
            True,
            "moved from 000_5dc500fada0b6079.txt",
            19,
            "NeurIPS",
            2026,
            0,
            "2026-W49",
        )
    ]
    with db.reader(database) as con:
        figures = db.query(con, "report_figures", week="2026-W49")[0]
    assert (figures["files"], figures["files_duplicate"], figures["entries"]) == (0, 0, 0)
    assert rows(database, "select count(*) from paper_occurrences") == [(57,)]


def test_copy_in_the_folder_is_a_duplicate_without_parsing(
    seed_folder: Path, database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest_listings(str(seed_folder), str(database), AS_OF)
    (seed_folder / "copies").mkdir()
    shutil.copy(seed_folder / "002_bf103a832150c832.txt", seed_folder / "copies" / "b.txt")
    prepared = never_prepared(monkeypatch)

    summary = ingest_listings(str(seed_folder), str(database), NEXT_WEEK)

    assert prepared == []
    assert (summary.files_duplicate, summary.files_moved, summary.entries) == (1, 0, 0)
    assert rows(
        database,
        "select path, status, reason, entry_count, venue, header from listing_files "
        "where status = 'duplicate'",
    ) == [
        (
            "copies/b.txt",
            "duplicate",
            "same bytes as 002_bf103a832150c832.txt",
            19,
            "NeurIPS",
            "NeurIPS 2026 论文列表",
        )
    ]


def test_recognise_known_content_leaves_unknown_files_and_restored_versions(
    seed_folder: Path, database: Path
) -> None:
    ingest_listings(str(seed_folder), str(database), AS_OF)
    first = seed_folder / "000_5dc500fada0b6079.txt"
    original = first.read_bytes()
    first.write_bytes(original + b"\nA short abstract added to the listing later on.\n")
    ingest_listings(str(seed_folder), str(database), NEXT_WEEK)  # version 2 at the same path
    first.write_bytes(original)  # version 1 restored: a new version, not unchanged
    (seed_folder / "005_00000000000000bb.txt").write_text(NEW_LISTING, encoding="utf-8")
    scan = scan_folder(seed_folder)
    hashed = hash_listing_files(scan.files, 1 << 20)
    assert [(stat.rel, sha) for stat, sha in hashed] == [
        (path.name, hashlib.sha256(path.read_bytes()).hexdigest())
        for path in sorted(seed_folder.glob("*.txt"))
    ]
    run = runs.RunContext("r-test", datetime(2026, 12, 2, 10, tzinfo=UTC), "2026-W49")
    with db.writer(database) as con:
        outcomes = store.recognise_known_content(con, hashed, {f.rel for f in scan.files}, run)
    assert [(o.rel, o.status) for o in outcomes] == [
        ("002_bf103a832150c832.txt", "unchanged"),
        ("003_13ddc4bea7a17f78.txt", "unchanged"),
    ]


def test_a_copy_has_the_same_row_found_by_content_or_after_parsing(
    seed_folder: Path, tmp_path: Path
) -> None:
    """A copy loaded in the run of its original is found after parsing; one that arrives in a
    later run (or in the run after a killed one) is recognised by content without parsing.
    Both rows carry the same format and reason (the content path left them empty)."""
    shutil.copy(seed_folder / "002_bf103a832150c832.txt", seed_folder / "zz_copy.txt")
    stats = list(scan_folder(seed_folder).files)
    assert [s.rel for s in stats][-1] == "zz_copy.txt"
    run = runs.RunContext("r-copy", datetime(2026, 11, 25, 10, tzinfo=UTC), "2026-W48")
    copy_row = (
        "select status, reason, entry_count, venue, year, header, format, format_reason "
        "from listing_files where path = 'zz_copy.txt'"
    )

    same_run = tmp_path / "same-run.duckdb"
    with db.writer(same_run) as con:
        batch = prepare_files(stats, 1 << 20)
        load_batch(con, batch, check_batch(batch, set()), run, 1 << 20)

    later_run = tmp_path / "later-run.duckdb"
    with db.writer(later_run) as con:
        batch = prepare_files(stats[:-1], 1 << 20)
        load_batch(con, batch, check_batch(batch, set()), run, 1 << 20)
        hashed = hash_listing_files(stats[-1:], 1 << 20)
        present = {s.rel for s in stats}
        assert [o.status for o in store.recognise_known_content(con, hashed, present, run)] == [
            "duplicate"
        ]

    expected = (
        "duplicate",
        "same bytes as 002_bf103a832150c832.txt",
        19,
        "NeurIPS",
        2026,
        "NeurIPS 2026 论文列表",
        "text",
        "by content: paragraphs of text",
    )
    assert rows(same_run, copy_row) == rows(later_run, copy_row) == [expected]


def split_seeds(seed_folder: Path, out: Path) -> int:
    """Each entry of the seeds as a one-abstract listing of its own (header kept)."""
    out.mkdir()
    count = 0
    for path in sorted(seed_folder.glob("*.txt")):
        header, _, body = path.read_text(encoding="utf-8").partition("\n\n")
        for entry in body.strip("\n").split("\n\n"):
            (out / f"{count:03d}_{count:016x}.txt").write_text(
                f"{header}\n\n{entry}\n", encoding="utf-8"
            )
            count += 1
    return count


TABLES = {
    "listing_files": "file_id, path, sha256, status, duplicate_of, reason, entry_count, "
    "entries_loaded, entries_quarantined, venue, year",
    "papers": "paper_id, abstract, first_file_id, first_position, word_count",
    "paper_occurrences": "file_id, position, line, paper_id",
    "validation_results": "file_id, suite, expectation, outcome, element_count, "
    "unexpected_count, unexpected_examples",
    "quarantine": "quarantine_id, kind, file_id, path, position, reasons",
}


def snapshot_tables(database: Path) -> dict[str, list[tuple]]:
    return {
        table: rows(database, f"select {columns} from {table} order by all")
        for table, columns in TABLES.items()
    }


#: The same tables with files named by path (ids drawn in a rolled-back transaction are
#: not given back by DuckDB's sequence, so the ids after a failed batch differ).
BY_PATH = {
    "listing_files": "select f.path, f.sha256, f.status, o.path, f.reason, f.entry_count, "
    "f.entries_loaded, f.entries_quarantined from listing_files f "
    "left join listing_files o on o.file_id = f.duplicate_of",
    "papers": "select p.paper_id, p.abstract, f.path, p.first_position from papers p "
    "join listing_files f on f.file_id = p.first_file_id",
    "paper_occurrences": "select f.path, o.position, o.line, o.paper_id "
    "from paper_occurrences o join listing_files f using (file_id)",
    "validation_results": "select f.path, v.suite, v.expectation, v.outcome, v.element_count, "
    "v.unexpected_count from validation_results v join listing_files f using (file_id)",
}


def snapshot_by_path(database: Path) -> dict[str, list[tuple]]:
    return {table: rows(database, f"{sql} order by all") for table, sql in BY_PATH.items()}


def load_directly(folder: Path, database: Path, per_file: bool) -> list[runs.FileOutcome]:
    """Prepare, check and load every file of ``folder`` as one batch: in one transaction
    (:func:`load_batch`) or one transaction per file (:func:`store.load_file`)."""
    batch = prepare_files(list(scan_folder(folder).files), 1 << 20)
    checked = check_batch(batch, set())
    run = runs.RunContext("r-test", datetime(2026, 11, 25, 10, tzinfo=UTC), "2026-W48")
    with db.writer(database) as con:
        if not per_file:
            return load_batch(con, batch, checked, run, 1 << 20)
        return [
            store.load_file(con, file, checked.of(index, file.stat.rel), run)
            for index, file in enumerate(batch.prepared)
        ]


def test_one_transaction_per_batch_gives_the_rows_of_one_per_file(
    seed_folder: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "single"
    assert split_seeds(seed_folder, folder) == 57
    (folder / "900_00000000000000ff.txt").write_bytes(b"NeurIPS 2026\n\n\xff\xfe bad\n")
    (folder / "901_00000000000000fe.txt").write_text(
        "NeurIPS 2026\n\n<html><body>not an abstract</body></html>\n", encoding="utf-8"
    )
    batched_db = tmp_path / "batched.duckdb"
    batched = load_directly(folder, batched_db, per_file=False)
    statuses = Counter(outcome.status for outcome in batched)
    # The seeds' three repeated abstracts are byte-identical one-entry files: copies.
    assert statuses == {"loaded": 55, "duplicate": 3, "quarantined": 1}
    # 54 distinct abstracts; the HTML entry fails the papers suite and is quarantined.
    assert sum(o.new_papers for o in batched) == 54
    assert sum(o.entries_quarantined for o in batched) == 1  # the HTML entry

    single_db = tmp_path / "single.duckdb"
    single = load_directly(folder, single_db, per_file=True)
    assert [(o.rel, o.status, o.file_id, o.new_paper_ids) for o in batched] == [
        (o.rel, o.status, o.file_id, o.new_paper_ids) for o in single
    ]
    assert snapshot_tables(batched_db) == snapshot_tables(single_db)


def test_a_failing_batch_transaction_loads_file_by_file(
    seed_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "single"
    split_seeds(seed_folder, folder)
    expected_db = tmp_path / "expected.duckdb"
    load_directly(folder, expected_db, per_file=True)

    def broken(self: writes.BatchWrites) -> None:
        raise duckdb.ConstraintException("simulated failure of the batch insert")

    monkeypatch.setattr(writes.BatchWrites, "flush", broken)
    fallback_db = tmp_path / "fallback.duckdb"
    outcomes = load_directly(folder, fallback_db, per_file=False)
    assert Counter(o.status for o in outcomes) == {"loaded": 54, "duplicate": 3}
    assert sum(o.new_papers for o in outcomes) == 54
    assert snapshot_by_path(fallback_db) == snapshot_by_path(expected_db)
    assert rows(fallback_db, "select count(*) from listing_files") == [(57,)]
