"""Many small files: one entries frame per chunk of files (not one per file), the checks
dealt out to the files in one pass, and the same rows loaded as one file at a time."""

from __future__ import annotations

import os
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest

import paperwatch.ingest.prepare as prepare
from paperwatch import db
from paperwatch.allocator import ALLOCATOR_CONF_ENV, POLARS_OWN_ALLOCATOR_CONF, keep_freed_memory
from paperwatch.db import load as store
from paperwatch.db import runs, writes
from paperwatch.db.batches import (
    SPOOL_LOCK,
    PreparePool,
    check_batch,
    load_batch,
    merge_batches,
    prepare_batch,
    prepare_files,
    split_results,
)
from paperwatch.ingest.files import ListingFileStat, scan_folder
from paperwatch.ingest.frames import ENTRY_SCHEMA
from paperwatch.ingest.validate import ExpectationResult, SuiteResult
from paperwatch.ingest.workers import FAULT_ENV

MAX_BYTES = 1 << 20
RUN = runs.RunContext("r-many", datetime(2026, 11, 25, 10, tzinfo=UTC), "2026-W48")
GONE = "disappeared between scan and read; it is read when it comes back"


def many_files(seed_folder: Path, out: Path) -> list[ListingFileStat]:
    """Each entry of the seeds as a one-abstract file ``pNNN.txt`` (no sequence number, so
    no gaps are judged), a file that is not UTF-8 (``p900.txt``), a file whose entry is
    HTML (``p901.txt``), and ``p902.txt`` that vanishes after the scan. Returns the scan."""
    out.mkdir()
    count = 0
    for path in sorted(seed_folder.glob("*.txt")):
        header, _, body = path.read_text(encoding="utf-8").partition("\n\n")
        for entry in body.strip("\n").split("\n\n"):
            (out / f"p{count:03d}.txt").write_text(f"{header}\n\n{entry}\n", encoding="utf-8")
            count += 1
    assert count == 57
    (out / "p900.txt").write_bytes(b"NeurIPS 2026\n\n\xff\xfe bad\n")
    (out / "p901.txt").write_text(
        "NeurIPS 2026\n\n<html><body>not an abstract</body></html>\n", encoding="utf-8"
    )
    (out / "p902.txt").write_text("NeurIPS 2026\n\nGone before it is read.\n", encoding="utf-8")
    stats = list(scan_folder(out).files)
    (out / "p902.txt").unlink()
    return stats


def rows(database: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_a_pool_sends_back_one_entries_frame_per_chunk(
    seed_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stats = many_files(seed_folder, tmp_path / "many")
    assert len(stats) == 60
    monkeypatch.setenv(FAULT_ENV, "p010.txt:raise")
    pool = PreparePool(2)
    spool = pool.spool
    try:
        pooled = prepare_batch(stats, MAX_BYTES, pool)
        # The chunks' frames came back through files, each read and deleted.
        assert spool is not None and [p.name for p in spool.iterdir()] == [SPOOL_LOCK]
    finally:
        pool.shutdown()
    assert not spool.exists()
    alone = merge_batches(prepare_files([stat], MAX_BYTES) for stat in stats)

    # 8 chunks of ~7 files, one frame each: the entries of 57 files (the one that raised,
    # the vanished one and the non-UTF-8 one have none).
    assert [f.stat.rel for f in pooled.prepared] == [f.stat.rel for f in alone.prepared]
    assert len(pooled.prepared) == 58
    assert pooled.entries.height == 57
    assert pooled.entries.schema == pl.Schema(ENTRY_SCHEMA)
    assert pooled.entries.equals(alone.entries)
    # The files come back without their entry objects (the frame holds them), counted.
    assert all(f.entries == () for f in pooled.prepared)
    assert [f.entry_count for f in pooled.prepared] == [f.entry_count for f in alone.prepared]
    assert sum(f.entry_count for f in pooled.prepared if f.is_text) == 57
    assert pooled.vanished == alone.vanished == [("p902.txt", GONE)]
    assert [(f.stat.rel, f.reason) for f in pooled.failed] == [
        ("p010.txt", f.reason) for f in alone.failed
    ]
    assert "RuntimeError: fault injected while preparing p010.txt" in pooled.failed[0].reason
    assert pooled.terms.sort(pl.all()).equals(alone.terms.sort(pl.all()))
    # The per-file view is the frame split by file: 0 rows for the file that is not text.
    heights = {
        f.stat.rel: frame.height for f, frame in zip(pooled.prepared, pooled.frames, strict=True)
    }
    assert heights["p900.txt"] == 0
    assert Counter(heights.values()) == {1: 57, 0: 1}


def test_a_file_whose_rows_cannot_be_built_fails_alone(
    seed_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stats = many_files(seed_folder, tmp_path / "many")
    real = prepare.entries_frame

    def fragile(files: object) -> pl.DataFrame:
        files = list(files)  # type: ignore[call-overload]
        if any(f.stat.rel in ("p003.txt", "p005.txt") for f in files):
            raise ValueError("simulated failure building rows")
        return real(files)

    monkeypatch.setattr(prepare, "entries_frame", fragile)
    monkeypatch.setenv(FAULT_ENV, "p004.txt:raise")
    batch = prepare_files(stats[:8], MAX_BYTES)
    # In file order, whichever step failed: p003 (rows), p004 (preparation), p005 (rows).
    assert [f.stat.rel for f in batch.failed] == ["p003.txt", "p004.txt", "p005.txt"]
    assert batch.failed[0].reason == batch.failed[2].reason.replace("p005", "p003")
    assert "ValueError: simulated failure building rows" in batch.failed[0].reason
    assert [f.stat.rel for f in batch.prepared] == [
        "p000.txt",
        "p001.txt",
        "p002.txt",
        "p006.txt",
        "p007.txt",
    ]
    assert batch.entries["file"].to_list() == [f.stat.rel for f in batch.prepared]
    assert batch.terms["key"].n_unique() == 5


def test_the_checks_are_dealt_out_to_files_in_one_pass(seed_folder: Path, tmp_path: Path) -> None:
    stats = many_files(seed_folder, tmp_path / "many")
    batch = prepare_files(stats, MAX_BYTES)
    checked = check_batch(batch, set())
    rels = [f.stat.rel for f in batch.prepared]
    per_file = checked.per_file(rels)
    assert len(per_file) == 59
    for index, (rel, split) in enumerate(zip(rels, per_file, strict=True)):
        one = checked.of(index, rel)
        assert split.file_row.equals(one.file_row)
        assert split.entries.equals(one.entries)
        assert split.file_checks == one.file_checks
        assert split.entry_checks == one.entry_checks
    failed_files = [
        rel for rel, s in zip(rels, per_file, strict=True) if s.file_checks.critical_failures()
    ]
    failed_entries = [
        rel for rel, s in zip(rels, per_file, strict=True) if s.entry_checks.critical_failures()
    ]
    assert failed_files == ["p900.txt"]
    assert failed_entries == ["p901.txt"]
    assert per_file[rels.index("p900.txt")].entries.height == 0
    with pytest.raises(ValueError, match="58 paths for 59 file rows"):
        checked.per_file(rels[:-1])


def test_split_results_renumbers_rows_and_keeps_examples() -> None:
    frame = pl.DataFrame({"abstract": ["a", "bb", "ccc", "dddd", "eeeee"]})

    suite = SuiteResult(
        "papers",
        (
            ExpectationResult(
                suite="papers",
                expectation="length",
                severity="critical",
                reason="too short",
                outcome="failed",
                element_count=5,
                unexpected_count=3,
                unexpected_examples=("a", "bb", "dddd"),
                failed_rows=(0, 1, 3),
                columns=("abstract",),
            ),
        ),
    )
    spans = [range(0, 2), range(2, 3), range(3, 5)]
    split = split_results(suite, spans, frame)
    assert split == [suite.for_rows(list(span), frame) for span in spans]
    assert [(r.results[0].outcome, r.results[0].failed_rows) for r in split] == [
        ("failed", (0, 1)),
        ("passed", ()),
        ("failed", (0,)),
    ]
    assert split[2].results[0].unexpected_examples == ("dddd",)
    assert [r.results[0].element_count for r in split] == [2, 1, 2]


@pytest.mark.slow
def test_many_one_entry_files_load_the_rows_of_one_file_at_a_time(
    seed_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stats = many_files(seed_folder, tmp_path / "many")
    monkeypatch.setenv(FAULT_ENV, "p010.txt:raise")

    batched_db = tmp_path / "batched.duckdb"
    batch = prepare_files(stats, MAX_BYTES)
    with db.writer(batched_db) as con:
        batched = load_batch(con, batch, check_batch(batch, set()), RUN, MAX_BYTES)

    single_db = tmp_path / "single.duckdb"
    single: list[runs.FileOutcome] = []
    vanished: list[tuple[str, str]] = []
    with db.writer(single_db) as con:
        for stat in stats:
            one = prepare_files([stat], MAX_BYTES)
            vanished += one.vanished
            single += load_batch(con, one, check_batch(one, set()), RUN, MAX_BYTES)

    assert batch.vanished == vanished == [("p902.txt", GONE)]
    # The failed file is quarantined after the batch's other files (as in any batch).
    assert [o.rel for o in batched][-1] == "p010.txt"
    assert sorted((o.rel, o.status, o.reason, o.new_paper_ids) for o in batched) == sorted(
        (o.rel, o.status, o.reason, o.new_paper_ids) for o in single
    )
    assert Counter(o.status for o in batched) == {"loaded": 54, "duplicate": 3, "quarantined": 2}
    assert sum(o.new_papers for o in batched) == 53
    assert sum(o.entries_quarantined for o in batched) == 1  # the HTML entry
    # By path: the failed file's id is last in the batch, in its place one file at a time.
    assert _by_path(batched_db) == _by_path(single_db)
    assert rows(batched_db, "select count(*) from validation_results") == rows(
        single_db, "select count(*) from validation_results"
    )


def _by_path(database: Path) -> dict[str, list[tuple]]:
    return {
        "listing_files": rows(
            database,
            "select f.path, f.sha256, f.status, o.path, f.reason, f.entry_count, "
            "f.entries_loaded, f.entries_quarantined, f.internal_error from listing_files f "
            "left join listing_files o on o.file_id = f.duplicate_of order by all",
        ),
        "papers": rows(
            database,
            "select p.paper_id, p.abstract, f.path, p.first_position from papers p "
            "join listing_files f on f.file_id = p.first_file_id order by all",
        ),
        "paper_occurrences": rows(
            database,
            "select f.path, o.position, o.line, o.paper_id, o.raw_text "
            "from paper_occurrences o join listing_files f using (file_id) order by all",
        ),
        "validation_results": rows(
            database,
            "select f.path, v.suite, v.expectation, v.outcome, v.element_count, "
            "v.unexpected_count, v.unexpected_examples from validation_results v "
            "join listing_files f using (file_id) order by all",
        ),
        "quarantine": rows(
            database,
            "select q.kind, q.path, q.position, q.line, q.reasons from quarantine q order by all",
        ),
    }


def test_the_validation_frame_is_the_frame_of_its_columns() -> None:
    stamp = datetime(2026, 11, 25, 10, tzinfo=UTC)
    columns: dict[str, list[object]] = {
        "run_id": ["r1", "r1", "r1"],
        "file_id": [7, 7, 8],
        "suite": ["papers", "papers", "listing_files"],
        "expectation": ["a", "b", "c"],
        "severity": ["critical", "warning", "critical"],
        "reason": ["empty", "odd", "not UTF-8"],
        "outcome": ["failed", "passed", "error"],
        "success": [False, True, False],
        "element_count": [1, 1, 1],
        "unexpected_count": [1, 0, 0],
        "unexpected_examples": [["x", "y"], [], []],
        "details": [None, None, "KeyError: 'c'"],
        "validated_at": [stamp, stamp, stamp],
    }
    expected = pl.DataFrame(columns, schema=writes.VALIDATION_SCHEMA)
    assert writes.validation_frame(columns).equals(expected)
    assert writes.validation_frame(columns)["unexpected_examples"].to_list() == [
        ["x", "y"],
        [],
        [],
    ]
    columns["validated_at"] = [stamp, stamp, datetime(2026, 12, 2, 10, tzinfo=UTC)]
    mixed = writes.validation_frame(columns)
    assert mixed.equals(pl.DataFrame(columns, schema=writes.VALIDATION_SCHEMA))
    assert mixed["validated_at"].n_unique() == 2
    empty = {name: [] for name in columns}
    assert writes.validation_frame(empty).equals(
        pl.DataFrame(empty, schema=writes.VALIDATION_SCHEMA)
    )


def test_workers_compute_the_signatures_the_loader_would(
    seed_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool MinHashes each distinct clean abstract once (by abstract key); the new
    papers of the load get exactly those signatures; a chunk whose signatures cannot be
    computed loses only the cache, not its files."""
    from paperwatch.analysis.duplicates import abstract_signatures
    from paperwatch.analysis.terms import abstract_key
    from paperwatch.db.batches import new_paper_signatures
    from paperwatch.settings import DedupSettings

    stats = many_files(seed_folder, tmp_path / "many")
    dedup = DedupSettings()
    pool = PreparePool(2)
    try:
        pooled = prepare_batch(stats, MAX_BYTES, pool, dedup)
    finally:
        pool.shutdown()
    texts: dict[str, str] = {}
    for abstract in pooled.entries["abstract"].drop_nulls():  # the clean abstracts, in order
        texts.setdefault(abstract_key(abstract), abstract)
    assert len(texts) == 55  # 57 entries: 2 repeat an abstract of the seeds
    assert pooled.signatures["key"].to_list() == list(texts)
    assert pooled.signatures.schema["signature"] == pl.Array(pl.UInt32, 128)
    expected = abstract_signatures(list(texts.values()), dedup)
    assert (pooled.signatures["signature"].to_numpy() == expected).all()
    assert prepare_batch(stats, MAX_BYTES).signatures.height == 0  # not asked for

    with db.writer(tmp_path / "w.duckdb") as con:
        outcomes = load_batch(con, pooled, check_batch(pooled, []), RUN, MAX_BYTES)
        stored = dict(con.execute("select paper_id, abstract from papers").fetchall())
    given = new_paper_signatures(pooled, outcomes)
    assert sorted(given) == sorted(stored) and len(given) == 54
    for pid, signature in given.items():
        assert (signature == expected[list(texts).index(abstract_key(stored[pid]))]).all()

    def broken(texts: dict[str, str], dedup: DedupSettings) -> pl.DataFrame:
        raise RuntimeError("no signatures")

    monkeypatch.setattr(prepare, "batch_signatures", broken)
    alone = prepare_files(stats[:5], MAX_BYTES, dedup)
    assert len(alone.prepared) == 5 and not alone.failed and alone.signatures.height == 0


def _listing(number: int, topic: str) -> tuple[str, str]:
    return (
        f"{number:03d}_{number:016x}.txt",
        "ICLR 2026 accepted papers\n\n"
        f"We study {topic} under a fixed compute budget and show that a small change to the "
        f"training schedule of {topic} models removes most of the gap to much larger ones.\n",
    )


def _gap_findings(database: Path) -> tuple[list[tuple], list[tuple]]:
    return rows(
        database,
        "select f.path, v.unexpected_examples from validation_results v "
        "join listing_files f using (file_id) "
        "where v.expectation like '%sequence_gap%' and v.outcome = 'failed' order by all",
    ), rows(database, "select * from sequence_gaps order by all")


def _load_in_batches(database: Path, batches: list[list[ListingFileStat]]) -> None:
    """Load ``batches`` as one run of the flow does: files whose bytes earlier runs recorded
    first (recognised by content, not parsed), then each batch of the others checked against
    the numbers and contents recorded before it."""
    with db.writer(database) as con:
        every = [s for stats in batches for s in stats]
        hashed = [(s, prepare_files([s], MAX_BYTES).prepared[0].sha256) for s in every]
        present = {s.rel for s in every}
        known = {o.rel for o in store.recognise_known_content(con, hashed, present, RUN)}
        numbers, contents = store.known_sequence_numbers(con), set[str]()
        for stats in ([s for s in b if s.rel not in known] for b in batches):
            batch = prepare_files(stats, MAX_BYTES)
            checked = check_batch(batch, numbers, contents)
            numbers |= store.recorded_sequence_numbers(
                load_batch(con, batch, checked, RUN, MAX_BYTES)
            )
            contents |= {f.sha256 for f in batch.prepared}


def test_a_copy_under_another_number_leaves_that_number_missing_in_every_batching(
    tmp_path: Path,
) -> None:
    """``003`` holds the bytes of ``001``: a copy, recorded as a duplicate, so 003 is missing
    (the view ``sequence_gaps`` says so) and ``004`` follows a gap, whether the copy was in
    the batch of its original, in a later batch of the run, or in a later run (a run killed
    half-way and run again). Before, a copy filled the gap when it was read in the same run."""
    folder = tmp_path / "listings"
    folder.mkdir()
    for number, topic in [(1, "sparse routing"), (2, "birdsong counting"), (4, "table parsing")]:
        name, text = _listing(number, topic)
        (folder / name).write_text(text, encoding="utf-8")
    (folder / _listing(3, "")[0]).write_bytes((folder / _listing(1, "")[0]).read_bytes())
    stats = list(scan_folder(folder).files)
    assert [s.name[:3] for s in stats] == ["001", "002", "003", "004"]

    batch = prepare_files(stats, MAX_BYTES)
    assert check_batch(batch, set()).files["sequence_gap"].to_list() == [None, None, None, "003"]
    later = prepare_files(stats[2:], MAX_BYTES)
    assert check_batch(later, {1, 2}).files["sequence_gap"].to_list() == [None, None]
    copy_of_001 = {prepare_files(stats[:1], MAX_BYTES).prepared[0].sha256}
    assert check_batch(later, {1, 2}, copy_of_001).files["sequence_gap"].to_list() == [None, "003"]
    with db.writer(tmp_path / "statuses.duckdb") as con:
        outcomes = load_batch(con, batch, check_batch(batch, set()), RUN, MAX_BYTES)
    assert [o.status for o in outcomes] == ["loaded", "loaded", "duplicate", "loaded"]
    assert store.recorded_sequence_numbers(outcomes) == {1, 2, 4}

    expected = ([("004_0000000000000004.txt", ["003"])], [(2, 4, 1)])
    cuts = {
        "one batch": [stats],
        "a batch per file": [[stat] for stat in stats],
        "the copy in a later batch with 004": [stats[:2], stats[2:]],
    }
    for name, batches in cuts.items():
        database = tmp_path / f"{name}.duckdb"
        _load_in_batches(database, batches)
        assert _gap_findings(database) == expected, name
    two_runs = tmp_path / "two-runs.duckdb"  # 001 and 002 in a run, the rest in the next
    _load_in_batches(two_runs, [stats[:2]])
    _load_in_batches(two_runs, [stats[2:]])
    assert _gap_findings(two_runs) == expected


def test_a_spooled_batch_reads_back_the_same_frames(seed_folder: Path, tmp_path: Path) -> None:
    """Entries (lists, nulls), terms and signatures (fixed-size arrays) go through the
    spool files unchanged; the files are deleted once read. Where no file can be written,
    the batch keeps its frames (they are pickled instead)."""
    from paperwatch.settings import DedupSettings

    stats = list(scan_folder(seed_folder).files)
    batch = prepare_files(stats, MAX_BYTES, DedupSettings())
    assert (batch.entries.height, batch.signatures.height) == (57, 54)  # 54 distinct
    assert batch.terms.height > 0
    expected = {name: getattr(batch, name).clone() for name in prepare.SPOOLED_FRAMES}
    spool = tmp_path / "spool"
    spool.mkdir()

    spooled = prepare.spool_batch(batch, spool)
    assert isinstance(spooled, prepare.SpooledBatch)
    assert sorted(name for name, _ in spooled.files) == sorted(prepare.SPOOLED_FRAMES)
    assert len(list(spool.iterdir())) == 3
    assert spooled.batch.entries.height == 0  # not pickled with the batch
    loaded = prepare.unspooled(spooled)
    assert list(spool.iterdir()) == []
    for name, frame in expected.items():
        assert getattr(loaded, name).schema == frame.schema, name
        assert getattr(loaded, name).equals(frame), name
    assert [f.stat.rel for f in loaded.prepared] == [s.rel for s in stats]

    # Without signatures (no dedup settings) that frame stays in the batch, as it was.
    unsigned = prepare_files(stats, MAX_BYTES)
    part = prepare.spool_batch(unsigned, spool)
    assert isinstance(part, prepare.SpooledBatch)
    assert [name for name, _ in part.files] == ["entries", "terms"]
    assert part.batch.signatures.height == 0
    assert part.batch.signatures.schema == pl.Schema(prepare.SIGNATURES_SCHEMA)
    assert part.load().entries.equals(expected["entries"])
    assert list(spool.iterdir()) == []

    gone = tmp_path / "gone"
    kept = prepare.spool_batch(loaded, gone)
    assert kept is loaded and kept.entries.equals(expected["entries"])
    assert not gone.exists()


def test_a_pool_removes_the_spool_folders_of_runs_that_died(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run killed with its workers leaves its spool folder unlocked; the next pool
    deletes it, not the folder whose lock a running pool holds, whatever process ids
    the names carry (another PID namespace reuses them)."""
    import tempfile

    from filelock import FileLock

    from paperwatch.db.batches import SPOOL_PREFIX
    from tests.conftest import dead_pid

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR is read again
    dead = tmp_path / f"{SPOOL_PREFIX}{os.getpid()}-x1"  # a live pid, yet unlocked
    dead.mkdir()
    (dead / SPOOL_LOCK).touch()
    (dead / "left.arrow").write_bytes(b"x")
    unlocked = tmp_path / f"{SPOOL_PREFIX}{dead_pid()}-x3"  # no lock file at all
    unlocked.mkdir()
    alive = tmp_path / f"{SPOOL_PREFIX}{dead_pid()}-x2"  # a dead pid, yet locked
    alive.mkdir()
    held = FileLock(alive / SPOOL_LOCK)
    held.acquire(timeout=0)
    other = tmp_path / "paperwatch-other"
    other.mkdir()
    try:
        pool = PreparePool(1)
        try:
            assert pool.spool is not None and pool.spool.parent == tmp_path
            assert (pool.spool / SPOOL_LOCK).is_file()
            assert not dead.exists() and not unlocked.exists()
            assert alive.is_dir() and other.is_dir()
            # A second pool leaves the first one's folder alone.
            second = PreparePool(1)
            try:
                assert pool.spool.is_dir() and second.spool != pool.spool
            finally:
                second.shutdown()
        finally:
            pool.shutdown()
        assert not pool.spool.exists()
    finally:
        held.release()


def test_a_spool_file_is_deleted_before_it_is_read(
    seed_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polars maps the file it reads: a file cut short meanwhile would end the run with
    SIGBUS, so no other process may reach it by name while it is read."""
    batch = prepare_files(list(scan_folder(seed_folder).files), MAX_BYTES)
    spool = tmp_path / "spool"
    spool.mkdir()
    spooled = prepare.spool_batch(batch, spool)
    assert isinstance(spooled, prepare.SpooledBatch)
    read_ipc = pl.read_ipc
    names_at_read: list[list[str]] = []

    def reading(source: object) -> pl.DataFrame:
        names_at_read.append(sorted(p.name for p in spool.iterdir()))
        return read_ipc(source)  # type: ignore[arg-type]

    monkeypatch.setattr(prepare.pl, "read_ipc", reading)
    loaded = spooled.load()
    first, second = (path.name for _, path in spooled.files)
    assert names_at_read == [[second], []]
    assert first != second and loaded.entries.height == 57


def test_without_a_writable_temporary_folder_results_are_pickled(
    seed_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    def no_folder() -> str:
        raise FileNotFoundError("No usable temporary directory found")

    monkeypatch.setattr(tempfile, "gettempdir", no_folder)
    stats = list(scan_folder(seed_folder).files)
    pool = PreparePool(1)
    try:
        assert pool.spool is None
        pooled = prepare_batch(stats, MAX_BYTES, pool)
    finally:
        pool.shutdown()
    assert pooled.entries.equals(prepare_files(stats, MAX_BYTES).entries)


#: What Polars hands its allocator when paperwatch's option follows Polars' own.
KEPT_LONGER = "dirty_decay_ms:500,muzzy_decay_ms:1000,dirty_decay_ms:30000"


def test_freed_memory_is_kept_longer_unless_the_user_chose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ALLOCATOR_CONF_ENV, raising=False)
    assert keep_freed_memory() is True
    assert os.environ[ALLOCATOR_CONF_ENV] == "dirty_decay_ms:30000"
    # Polars imported first wrote its own options: paperwatch's come after them.
    monkeypatch.setenv(ALLOCATOR_CONF_ENV, POLARS_OWN_ALLOCATOR_CONF)
    assert keep_freed_memory() is True
    assert os.environ[ALLOCATOR_CONF_ENV] == KEPT_LONGER
    monkeypatch.setenv(ALLOCATOR_CONF_ENV, "dirty_decay_ms:0")
    assert keep_freed_memory() is False
    assert os.environ[ALLOCATOR_CONF_ENV] == "dirty_decay_ms:0"


def allocator_options_of_polars() -> str:
    """In a worker: the options Polars gave its allocator (``polars/__init__.py`` writes
    them to the environment before it loads its library)."""
    import polars  # noqa: F401

    return os.environ[ALLOCATOR_CONF_ENV]


def test_a_worker_keeps_freed_memory_when_polars_was_imported_before_paperwatch_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A flow run outside the command line (a Prefect worker): the run's process imported
    # Polars with Polars' options only; its preparation workers still get paperwatch's.
    monkeypatch.setenv(ALLOCATOR_CONF_ENV, POLARS_OWN_ALLOCATOR_CONF)
    pool = PreparePool(1)
    try:
        options = pool.submit(allocator_options_of_polars).result()
    finally:
        pool.shutdown()
    assert options == f"{POLARS_OWN_ALLOCATOR_CONF},{KEPT_LONGER}"


@pytest.mark.parametrize("first", ["paperwatch.cli", "paperwatch.flows.ingest"])
def test_the_command_line_and_the_flows_ask_before_they_import_polars(first: str) -> None:
    # The command line; a flow run a Prefect worker starts (it imports the flow's module).
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != ALLOCATOR_CONF_ENV}
    code = f"import os, {first}, polars; print(os.environ['_RJEM_MALLOC_CONF'])"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == KEPT_LONGER
