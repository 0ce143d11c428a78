"""The watcher's decisions (pure), the writer lock, the run artifacts, and the deployments.

Fast and offline: no Prefect server. The real server is exercised in test_server.py.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from paperwatch.db.runs import FileOutcome, IngestSummary
from paperwatch.db.writer_lock import (
    WriterLockTimeout,
    holds_writer_lock,
    lock_path,
    writer_lock,
)
from paperwatch.ingest.files import ListingFileStat, ScanResult
from paperwatch.ingest.watch import (
    ArrivalBatcher,
    FileState,
    folder_resource_id,
    hold_back_recent,
    ignore_reason,
    is_stable,
    watch_folder,
)
from paperwatch.report.artifacts import ingest_description, ingest_table, report_markdown

from .conftest import SEEDS

S1 = FileState(100, 1_000)
S2 = FileState(250, 2_000)


@pytest.mark.parametrize(
    ("rel", "ignored"),
    [
        ("000_5dc500fada0b6079.txt", False),
        ("sub/2026/001_x.txt", False),
        ("LISTING.TXT", False),
        (".hidden.txt", True),
        (".#000.txt", True),  # Emacs lock file
        ("#000.txt#", True),  # Emacs autosave
        (".000.txt.swp", True),  # vim swap
        ("000.txt~", True),  # backup
        ("000.txt.part", True),
        ("000.txt.crdownload", True),
        ("notes.pdf", True),
        ("notes.md", False),  # a Markdown digest is a listing
        (".git/objects/x.txt", True),
        ("sub/.cache/x.txt", True),
    ],
)
def test_ignore_reason(rel: str, ignored: bool) -> None:
    assert (ignore_reason(rel) is not None) is ignored


def test_is_stable_boundaries() -> None:
    assert not is_stable(since=10.0, now=11.9, quiet_s=2.0)
    assert is_stable(since=10.0, now=12.0, quiet_s=2.0)


def test_a_file_settles_after_the_quiet_period_and_is_handed_out_once() -> None:
    b = ArrivalBatcher(quiet_s=2.0)
    b.seen("a.txt", S1, now=0.0)
    assert b.due(1.9) == []
    assert b.due(2.0) == ["a.txt"]
    assert b.due(10.0) == []
    # The same state reported again (a late "modified" event) starts nothing.
    b.seen("a.txt", S1, now=11.0)
    assert b.pending() == [] and b.due(20.0) == []


def test_a_growing_file_waits_until_it_stops_changing() -> None:
    b = ArrivalBatcher(quiet_s=2.0)
    b.seen("a.txt", S1, now=0.0)
    b.seen("a.txt", S2, now=1.5)  # second half written 1.5 s later
    assert b.due(2.0) == []  # 2 s after the first half: not yet
    assert b.due(3.4) == []
    assert b.due(3.5) == ["a.txt"]


def test_a_rewritten_file_is_handed_out_again() -> None:
    b = ArrivalBatcher(quiet_s=1.0)
    b.seen("a.txt", S1, now=0.0)
    assert b.due(1.0) == ["a.txt"]
    b.seen("a.txt", S2, now=5.0)
    assert b.due(6.0) == ["a.txt"]


def test_a_burst_gives_one_batch() -> None:
    b = ArrivalBatcher(quiet_s=2.0)
    names = [f"{i:03d}_burst.txt" for i in range(50)]
    for i, name in enumerate(names):
        b.seen(name, FileState(1000 + i, i), now=i * 0.01)  # 50 files in 0.5 s
    batches = [b.due(t / 10) for t in range(0, 40)]
    assert [len(x) for x in batches if x] == [50]
    assert next(x for x in batches if x) == names


def test_settled_files_wait_for_one_being_written_up_to_max_wait() -> None:
    b = ArrivalBatcher(quiet_s=1.0, max_wait_s=5.0)
    b.seen("done.txt", S1, now=0.0)
    for t in range(0, 20):  # slow.txt keeps growing every second
        b.seen("slow.txt", FileState(t, t), now=float(t))
        batch = b.due(t + 0.5)
        if batch:
            break
    assert batch == ["done.txt"]
    assert t == 6  # settled at 1.0, handed out once it had waited 5 s
    assert b.pending() == ["slow.txt"]


def test_without_max_wait_nothing_goes_out_while_a_file_is_written() -> None:
    b = ArrivalBatcher(quiet_s=1.0, max_wait_s=None)
    b.seen("done.txt", S1, now=0.0)
    for t in range(0, 30):
        b.seen("slow.txt", FileState(t, t), now=float(t))
        assert b.due(t + 0.5) == []
    assert b.due(31.0) == ["done.txt", "slow.txt"]


def test_a_file_deleted_before_settling_is_forgotten() -> None:
    b = ArrivalBatcher(quiet_s=1.0)
    b.seen("a.txt", S1, now=0.0)
    b.gone("a.txt")
    assert b.due(5.0) == []


def _stat(rel: str, mtime_s: float) -> ListingFileStat:
    return ListingFileStat(path=Path(rel), rel=rel, size=10, mtime_ns=int(mtime_s * 1e9))


def test_hold_back_recent_passes_over_files_still_being_written() -> None:
    scan = ScanResult(
        files=(_stat("old.txt", 100.0), _stat("new.txt", 109.5)), ignored=(("x.md", "not"),)
    )
    held = hold_back_recent(scan, now_ns=110 * 10**9, quiet_s=2.0)
    assert [f.rel for f in held.files] == ["old.txt"]
    assert held.ignored == (
        ("x.md", "not"),
        ("new.txt", "modified 0.5 s ago, may still be written"),
    )
    assert hold_back_recent(scan, now_ns=110 * 10**9, quiet_s=0.0) is scan
    assert hold_back_recent(scan, now_ns=200 * 10**9, quiet_s=2.0) is scan


def test_folder_resource_id_is_absolute(tmp_path: Path) -> None:
    assert folder_resource_id(Path(".")) == f"paperwatch.folder.{tmp_path.resolve()}"


def test_watcher_reads_a_half_written_file_only_when_complete(tmp_path: Path) -> None:
    """Real watchdog, short quiet period: a file written in two parts is one batch, once whole."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / ".draft.txt").write_text("hidden", encoding="utf-8")
    text = (SEEDS / "000_5dc500fada0b6079.txt").read_bytes()
    seen: list[tuple[list[str], int]] = []
    stop = threading.Event()

    def on_batch(batch: list[str]) -> None:
        seen.append((batch, (folder / batch[0]).stat().st_size))
        stop.set()

    thread = threading.Thread(
        target=watch_folder, args=(folder, on_batch, 0.6), kwargs={"tick_s": 0.05, "stop": stop}
    )
    thread.start()
    try:
        time.sleep(0.3)
        with (folder / "000_a.txt").open("wb") as f:
            f.write(text[: len(text) // 2])
            f.flush()
            time.sleep(0.4)  # shorter than the quiet period
            f.write(text[len(text) // 2 :])
        (folder / "000_a.txt.swp").write_bytes(b"x")
        assert stop.wait(10)
    finally:
        stop.set()
        thread.join(10)
    assert seen == [(["000_a.txt"], len(text))]


def test_writer_lock_excludes_a_second_writer(tmp_path: Path) -> None:
    database = tmp_path / "db" / "pw.duckdb"
    with writer_lock(database, timeout_s=1) as waited:
        assert waited < 0.5
        assert lock_path(database) == tmp_path / "db" / "pw.duckdb.writer.lock"
        with pytest.raises(WriterLockTimeout, match="writing"), writer_lock(database, 0.2):
            pass
    with writer_lock(database, timeout_s=0.2):  # released
        pass


def test_a_report_waits_for_a_running_ingestion(tmp_path: Path, monkeypatch) -> None:
    database = tmp_path / "pw.duckdb"
    order: list[str] = []

    @holds_writer_lock
    def job(name: str, database: str | None = None, hold: float = 0.0) -> str:
        order.append(f"{name} start")
        time.sleep(hold)
        order.append(f"{name} end")
        return name

    first = threading.Thread(target=job, args=("ingest", str(database), 0.5))
    first.start()
    time.sleep(0.1)
    assert job("report", database=str(database)) == "report"
    first.join()
    assert order == ["ingest start", "ingest end", "report start", "report end"]
    assert job.__name__ == "job" and "hold" in job.__wrapped__.__code__.co_varnames  # type: ignore[attr-defined]


def test_holds_writer_lock_needs_a_database_parameter() -> None:
    with pytest.raises(TypeError, match="database"):
        holds_writer_lock(lambda folder: folder)


def test_ingest_artifact_rows_and_description() -> None:
    summary = IngestSummary(run_id="r", week="2026-W48", files_seen=3, files_unchanged=1)
    summary.add(
        FileOutcome(rel="000.txt", status="loaded", entries=19, entries_loaded=19, new_papers=19)
    )
    summary.add(FileOutcome(rel="bad.txt", status="quarantined", reason="not UTF-8"))
    assert ingest_table(summary) == [
        {
            "file": "000.txt",
            "status": "loaded",
            "entries": 19,
            "loaded": 19,
            "quarantined": 0,
            "new_papers": 19,
            "exact_duplicates": 0,
            "reason": "",
        },
        {
            "file": "bad.txt",
            "status": "quarantined",
            "entries": 0,
            "loaded": 0,
            "quarantined": 0,
            "new_papers": 0,
            "exact_duplicates": 0,
            "reason": "not UTF-8",
        },
    ]
    assert ingest_description(summary).startswith("**1** loaded, 1 unchanged, 0 duplicate")


def test_report_markdown_links_the_file(tmp_path: Path) -> None:
    md = report_markdown("2026-W48", tmp_path / "2026-W48.html", tmp_path / "2026-W48.txt", 54, 3)
    assert f"[2026-W48.html]({(tmp_path / '2026-W48.html').as_uri()})" in md
    assert "- new papers: 54\n" in md


def test_deployments_from_settings(tmp_path: Path) -> None:
    from prefect.client.schemas.objects import ConcurrencyLimitStrategy
    from prefect.events import DeploymentEventTrigger

    from paperwatch.flows.deployments import build_deployments
    from paperwatch.settings import load_settings

    settings = load_settings(
        watch_dir=tmp_path / "in", database=tmp_path / "pw.duckdb", timezone="Europe/Berlin"
    )
    ingest, report = build_deployments(settings)
    assert (ingest.name, report.name) == ("ingest-listings", "weekly-report")
    assert ingest.entrypoint == "paperwatch.flows.ingest.ingest_listings"
    assert ingest.parameters == {
        "folder": str(tmp_path / "in"),
        "database": str(tmp_path / "pw.duckdb"),
    }
    assert ingest.concurrency_limit == 1
    assert ingest.concurrency_options is not None
    assert ingest.concurrency_options.collision_strategy == ConcurrencyLimitStrategy.ENQUEUE
    assert ingest.schedules is not None
    assert ingest.schedules[0].schedule.interval.total_seconds() == 900  # type: ignore[union-attr]
    trigger = ingest.triggers[0]
    assert isinstance(trigger, DeploymentEventTrigger)
    assert trigger.expect == {"paperwatch.listing.arrived"}
    assert report.schedules is not None
    cron = report.schedules[0].schedule
    assert (cron.cron, cron.timezone) == ("0 8 * * 1", "Europe/Berlin")  # type: ignore[union-attr]
    assert report.parameters["last_completed_week"] is True


def test_the_watcher_shows_odd_file_names_escaped(tmp_path: Path) -> None:
    """Real watchdog: names with a non-UTF-8 byte, a newline and a right-to-left override are
    handed out as they are (so they can be opened) and shown escaped like the scan does."""
    import os

    from paperwatch.ingest.watch import describe_batch, event_files

    folder = tmp_path / "in"
    folder.mkdir()
    names = [os.fsdecode(b"bad\xff.txt"), "two\nlines.txt", "x\u202etxt.exe.txt"]
    for name in names:
        (folder / name).write_bytes(b"ICLR 2025 accepted papers\n")
    seen: list[list[str]] = []
    stop = threading.Event()

    def on_batch(batch: list[str]) -> None:
        assert all((folder / rel).is_file() for rel in batch)
        seen.append(batch)
        stop.set()

    thread = threading.Thread(
        target=watch_folder, args=(folder, on_batch, 0.2), kwargs={"tick_s": 0.05, "stop": stop}
    )
    thread.start()
    try:
        assert stop.wait(30)
    finally:
        stop.set()
        thread.join(10)
    assert seen == [sorted(names)]
    assert describe_batch(seen[0], "ingesting") == "3 file(s) settled, e.g. bad\\xff.txt: ingesting"
    assert event_files(seen[0]) == ["bad\\xff.txt", "two\\nlines.txt", "x\\u202etxt.exe.txt"]
    assert "\n" not in describe_batch(["two\nlines.txt"], "ingesting")
