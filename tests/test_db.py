"""DuckDB access: schema idempotence, the file lock, and the CLI-readable storage format."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from paperwatch import db

TABLES = {
    "ingest_runs",
    "listing_files",
    "paper_occurrences",
    "papers",
    "quarantine",
    "reports",
    "schema_migrations",
    "validation_results",
}


def test_schema_is_idempotent(database: Path) -> None:
    with db.writer(database) as con:
        con.execute(
            "insert into ingest_runs (run_id, started_at, as_of, week, folder) "
            "values ('r1', now(), now(), '2026-W48', 'x')"
        )
    with db.writer(database) as con:
        tables = {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()}
        assert tables >= TABLES
        assert con.execute("select count(*) from ingest_runs").fetchone() == (1,)
        assert con.execute("select count(*) from new_papers_by_week").fetchone() == (0,)


def test_writer_waits_then_names_the_lock_holder(database: Path) -> None:
    with db.writer(database):
        pass
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, time; c = duckdb.connect({str(database)!r}); print('ready', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        started = time.monotonic()
        with pytest.raises(db.DatabaseLockedError) as info, db.writer(database, timeout_s=1.0):
            pass
        assert time.monotonic() - started >= 1.0
        message = str(info.value)
        assert str(database) in message and f"PID {holder.pid}" in message
    finally:
        holder.kill()
        holder.wait()
    # Once the holder is gone the writer gets in.
    with db.writer(database, timeout_s=5.0) as con:
        assert con.execute("select 1").fetchone() == (1,)


def test_reader_on_missing_database_says_what_to_do(tmp_path: Path) -> None:
    with (
        pytest.raises(FileNotFoundError, match="run `paperwatch ingest` first"),
        db.reader(tmp_path / "none.duckdb"),
    ):
        pass


def test_database_opens_in_the_duckdb_cli(database: Path) -> None:
    cli = shutil.which("duckdb", path=str(Path(sys.executable).parent))
    if cli is None:
        pytest.skip("duckdb CLI not installed (pip install duckdb-cli)")
    with db.writer(database) as con:
        con.execute(
            "insert into ingest_runs (run_id, started_at, as_of, week, folder) "
            "values ('r1', now(), now(), '2026-W48', 'x')"
        )
    out = subprocess.run(
        [cli, "-readonly", "-csv", str(database), "-c", "select run_id, week from ingest_runs"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.splitlines() == ["run_id,week", "r1,2026-W48"]
    assert duckdb.__version__.startswith("2.")
