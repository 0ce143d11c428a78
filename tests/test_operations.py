"""Files that change under a run, and names no listing should have: each fault of the
operator's attack on the ingestion, as a test."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb
import pytest

from paperwatch.flows.ingest import ingest_listings
from paperwatch.ingest import prepare
from paperwatch.ingest.clean import extract_urls
from paperwatch.ingest.files import (
    ListingFileStat,
    name_ignore_reason,
    printable_name,
    read_listing_file,
    scan_folder,
)

SEEDS = Path(__file__).resolve().parent.parent / "seeds"
SEED = "000_5dc500fada0b6079.txt"
AS_OF = "2026-11-25T10:00:00+00:00"


def rows(database: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(sql).fetchall()


def _one_seed(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "listings"
    folder.mkdir()
    shutil.copy(SEEDS / SEED, folder / SEED)
    secret = tmp_path / "outside" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n" * 3, encoding="utf-8")
    return folder, secret


def test_a_listing_swapped_for_a_link_after_the_scan_is_not_read(tmp_path: Path) -> None:
    folder, secret = _one_seed(tmp_path)
    (stat,) = scan_folder(folder).files
    (folder / SEED).unlink()
    (folder / SEED).symlink_to(secret)
    with pytest.raises(FileNotFoundError, match="replaced by a symbolic link"):
        read_listing_file(stat, 1 << 20)
    batch = prepare.prepare_files([stat], 1 << 20)
    assert batch.prepared == []
    assert batch.vanished == [
        (
            SEED,
            "replaced by a symbolic link between scan and read: not read; "
            "the folder is scanned again on the next run",
        )
    ]


def test_a_listing_replaced_by_another_file_after_the_scan_is_not_read(tmp_path: Path) -> None:
    folder, secret = _one_seed(tmp_path)
    (stat,) = scan_folder(folder).files
    other = folder / "other.tmp"
    shutil.copy(secret, other)
    os.replace(other, folder / SEED)  # same path, another inode
    with pytest.raises(FileNotFoundError, match="replaced by another file"):
        read_listing_file(stat, 1 << 20)


def test_a_link_inside_the_folder_is_read_at_its_scanned_target(tmp_path: Path) -> None:
    folder, _ = _one_seed(tmp_path)
    (folder / "alias.txt").symlink_to(folder / SEED)
    scanned = {s.rel: s for s in scan_folder(folder).files}
    assert read_listing_file(scanned["alias.txt"], 1 << 20) == (SEEDS / SEED).read_bytes()


@pytest.mark.usefixtures("prefect_harness")
def test_a_swap_during_a_run_loads_nothing_from_outside(
    tmp_path: Path, database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, secret = _one_seed(tmp_path)
    monkeypatch.setenv("PAPERWATCH_PREPARE_MEMORY_LIMIT_BYTES", "0")  # prepared in this process
    monkeypatch.setenv("PAPERWATCH_PREPARE_TIMEOUT_S", "0")
    real_read = prepare.read_listing_file

    def swap_then_read(stat: ListingFileStat, max_bytes: int) -> bytes | None:
        (folder / SEED).unlink()
        (folder / SEED).symlink_to(secret)
        return real_read(stat, max_bytes)

    monkeypatch.setattr(prepare, "read_listing_file", swap_then_read)
    summary = ingest_listings(str(folder), str(database), AS_OF)
    assert (summary.files_loaded, summary.entries, summary.files_vanished) == (0, 0, 1)
    assert rows(database, "select count(*) from papers") == [(0,)]
    assert rows(database, "select count(*) from paper_occurrences") == [(0,)]


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("plain_name.txt", "plain_name.txt"),
        ("论文 列表.txt", "论文 列表.txt"),
        ("bad\udcff.txt", "bad\\xff.txt"),  # the byte 0xff, as os.listdir gives it
        ("two\nlines.txt", "two\\nlines.txt"),
        ("x\u202etxt.exe", "x\\u202etxt.exe"),
        ("esc\x1b[31m.txt", "esc\\x1b[31m.txt"),
    ],
)
def test_printable_name(name: str, shown: str) -> None:
    assert printable_name(name) == shown


@pytest.mark.usefixtures("prefect_harness")
def test_odd_file_names_load_and_are_shown_escaped(tmp_path: Path, database: Path) -> None:
    folder = tmp_path / "listings"
    folder.mkdir()
    data = (SEEDS / SEED).read_bytes()
    (folder / os.fsdecode(b"bad\xff.txt")).write_bytes(data)
    (folder / "two\nlines.txt").write_bytes(data.replace(b"NeurIPS", b"ICML"))
    summary = ingest_listings(str(folder), str(database), AS_OF)
    assert (summary.files_loaded, summary.new_papers, summary.exact_duplicates) == (2, 19, 19)
    assert rows(database, "select path, name, status from listing_files order by path") == [
        ("bad\\xff.txt", "bad\\xff.txt", "loaded"),
        ("two\\nlines.txt", "two\\nlines.txt", "loaded"),
    ]
    again = ingest_listings(str(folder), str(database), "2026-11-26T10:00:00+00:00")
    assert (again.files_unchanged, again.files_loaded) == (2, 0)


def test_office_lock_files_are_passed_over() -> None:
    assert name_ignore_reason("~$draft.txt") == "an office program's lock file"
    assert name_ignore_reason(".~lock.draft.txt#") is not None
    assert name_ignore_reason("draft.txt") is None


def test_a_url_with_a_bidi_override_is_not_linked() -> None:
    raw = "Code: https://example.org/a/\u202egpj.exe and https://example.org/ok."
    assert extract_urls(raw) == ("https://example.org/ok",)


def test_an_as_of_past_tomorrow_is_refused_unless_allowed(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from paperwatch.cli import app

    folder, _ = _one_seed(tmp_path)
    database = tmp_path / "db" / "paperwatch.duckdb"
    args = ["ingest", "--folder", str(folder), "--database", str(database)]
    result = CliRunner().invoke(app, [*args, "--as-of", "2099-12-31"])
    assert result.exit_code == 2
    assert "--as-of 2099-12-31 is in the future: its papers would belong to 2099-W53" in (
        result.output
    )
    assert "--allow-future" in result.output
    assert not database.exists()


def test_as_of_is_refused_from_the_day_after_tomorrow_in_the_configured_zone() -> None:
    """The README's rule ("later than tomorrow"): tomorrow 09:00 was refused when run before
    09:00 (the bound was 24 hours from now), with a message that called the current
    week one no report shows."""
    from datetime import UTC, date, datetime
    from zoneinfo import ZoneInfo

    from paperwatch.clock import after_tomorrow

    now = datetime(2026, 12, 1, 5, 30, tzinfo=UTC)  # a Tuesday of 2026-W49
    assert after_tomorrow(datetime(2026, 12, 2, 9, tzinfo=UTC), now, UTC) is None
    assert after_tomorrow(datetime(2026, 12, 2, 23, 59, tzinfo=UTC), now, UTC) is None
    assert after_tomorrow(datetime(2026, 12, 3, tzinfo=UTC), now, UTC) == date(2026, 12, 2)
    assert after_tomorrow(datetime(2026, 11, 1, tzinfo=UTC), now, UTC) is None
    berlin = ZoneInfo("Europe/Berlin")
    late = datetime(2026, 12, 1, 23, 30, tzinfo=UTC)  # already 2 December in Berlin
    assert after_tomorrow(datetime(2026, 12, 3, 20, tzinfo=UTC), late, berlin) is None
    assert after_tomorrow(datetime(2026, 12, 3, 20, tzinfo=UTC), late, UTC) == date(2026, 12, 2)
    assert after_tomorrow(datetime(2026, 12, 3, 23, tzinfo=UTC), late, berlin) == date(2026, 12, 3)


def test_a_report_started_during_the_first_ingestion_waits_instead_of_failing(
    tmp_path: Path,
) -> None:
    import typer

    from paperwatch.cli.jobs import preflight
    from paperwatch.db.writer_lock import is_held, writer_lock
    from paperwatch.settings import Settings

    database = tmp_path / "db" / "paperwatch.duckdb"
    settings = Settings(database=database)
    with pytest.raises(typer.Exit):  # nothing ingested, nobody ingesting: refused
        preflight(settings, database_exists=True)
    assert not is_held(database)
    with writer_lock(database, timeout_s=5):  # the first ingestion holds the lock
        assert is_held(database)
        preflight(settings, database_exists=True)  # no error: the report flow will wait
    assert not is_held(database)


def test_a_run_waiting_for_the_writer_lock_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging
    import threading

    from paperwatch.db.writer_lock import this_process, writer_lock

    database = tmp_path / "db" / "paperwatch.duckdb"
    acquired = threading.Event()
    with caplog.at_level(logging.WARNING, logger="paperwatch.db.writer_lock"):
        with writer_lock(database, timeout_s=5):

            def second() -> None:
                with writer_lock(database, timeout_s=-1):
                    acquired.set()

            waiter = threading.Thread(target=second)
            waiter.start()
            while not any(
                "waiting for another paperwatch run" in r.message for r in caplog.records
            ):
                assert waiter.is_alive()
                threading.Event().wait(0.05)
            assert not acquired.is_set()
        waiter.join()
    assert acquired.is_set()
    waits = [r.getMessage() for r in caplog.records if "waiting for" in r.getMessage()]
    assert waits == [
        f"waiting for another paperwatch run to finish writing {database}: the writer lock "
        f"({database}.writer.lock) is held by {this_process()}; waiting as long as it takes"
    ]
    assert this_process().startswith(f"PID {os.getpid()} (")
    # Released, the lock names no holder: only the lock file stays beside the database.
    assert sorted(p.name for p in database.parent.iterdir()) == ["paperwatch.duckdb.writer.lock"]


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _damage(database: Path, how: str) -> None:
    data = bytearray(database.read_bytes())
    if how == "truncated":
        database.write_bytes(bytes(data[: len(data) // 2]))
    else:  # flipped bytes inside the data blocks (after the 12 KiB of headers)
        for offset in range(20_000, len(data), 50_000):
            data[offset] ^= 0xFF
        database.write_bytes(bytes(data))


@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize(
    ("how", "found"),
    [
        ("truncated", "bytes where its header accounts for"),
        ("flipped", "Corrupt database file: computed checksum"),
    ],
)
def test_a_damaged_database_is_refused_in_one_line_and_left_as_it_was(
    seed_folder: Path, tmp_path: Path, how: str, found: str
) -> None:
    from typer.testing import CliRunner

    from paperwatch.cli import app
    from paperwatch.exits import EXIT_DAMAGED

    database = tmp_path / "db" / "paperwatch.duckdb"
    ingest_listings(str(seed_folder), str(database), AS_OF)
    _damage(database, how)
    before = _sha256(database)
    (seed_folder / "new.txt").write_bytes((SEEDS / SEED).read_bytes().replace(b"We ", b"Here we "))
    runner = CliRunner()
    for args in (
        ["ingest", "--folder", str(seed_folder)],
        ["report", "--week", "2026-W48", "--report-dir", str(tmp_path / "out")],
    ):
        result = runner.invoke(app, [*args, "--database", str(database)])
        assert result.exit_code == EXIT_DAMAGED, result.output
        errors = [line for line in result.output.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, result.output
        assert errors[0].startswith(f"error: the database {database} is damaged (")
        assert found in errors[0]
        assert errors[0].endswith(
            "Restore it from a backup, or rebuild it from the listing folder with "
            "`paperwatch rebuild` (every listing file is read again; the damaged file is kept)"
        )
        assert "Traceback" not in result.output
        assert _sha256(database) == before


def test_a_folder_past_the_path_limit_is_passed_over_and_the_rest_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = _one_seed(tmp_path)
    monkeypatch.chdir(folder)
    depth = 0
    while len(str(folder)) + depth * 61 < 4200:  # beyond PATH_MAX (4,096 bytes)
        name = f"level{depth:03d}_" + "d" * 52
        os.mkdir(name)
        os.chdir(name)
        depth += 1
    Path("deep.txt").write_text("x", encoding="utf-8")
    scan = scan_folder(folder)
    assert [s.rel for s in scan.files] == [SEED]
    reasons = {reason for _, reason in scan.ignored}
    assert reasons == {"cannot read this folder: File name too long"}


@pytest.mark.usefixtures("prefect_harness")
def test_an_entry_mostly_removed_by_cleaning_is_quarantined_and_shown_inert(
    tmp_path: Path, database: Path
) -> None:
    from typer.testing import CliRunner

    from paperwatch.cli import app

    folder = tmp_path / "listings"
    folder.mkdir()
    sentence = "We propose a method for robust estimation of sparse graphs from few noisy samples."
    backslashes = "\\" * 25_000
    (folder / "a.txt").write_text(
        f"ICML 2027 accepted papers\n\n{sentence} {backslashes}\n\nShort RED\x07\x08 text.\n",
        encoding="utf-8",
    )
    summary = ingest_listings(str(folder), str(database), AS_OF)
    assert (summary.entries, summary.entries_loaded, summary.entries_quarantined) == (2, 0, 2)
    reasons = rows(database, "select position, reasons from quarantine order by position")
    assert reasons[0][0] == 1 and any(
        r.startswith("cleaning removed over 15,000 characters of markup") for r in reasons[0][1]
    )
    listed = CliRunner().invoke(app, ["quarantine", "list", "--database", str(database)])
    assert listed.exit_code == 0, listed.output
    assert "Short RED\ufffd\ufffd text." in listed.output
    assert "\x07" not in listed.output and "\x08" not in listed.output
