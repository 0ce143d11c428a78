"""The analysts' snapshot: published atomically after every run that wrote, read by the PyPI
``duckdb`` CLI, never blocking a run, opened by ``paperwatch sql``; and every SQL example of
the README run against a snapshot of the seeds."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from paperwatch import db
from paperwatch.cli import app
from paperwatch.db import snapshot
from paperwatch.db.snapshot import publish_snapshot, temp_path
from paperwatch.settings import load_settings

from .conftest import ROOT, SEEDS_AS_OF, SEEDS_WEEK, Server

BIN = Path(sys.executable).parent
DUCKDB_CLI = BIN / "duckdb"
runner = CliRunner()


def cli_rows(path: Path, sql: str) -> list[str]:
    """Rows of ``sql`` on ``path`` through the PyPI DuckDB CLI, read-only, as CSV lines."""
    result = subprocess.run(
        [str(DUCKDB_CLI), "-readonly", "-csv", "-noheader", str(path), "-c", sql],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line]


def temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# ------------------------------------------------------------------ settings


def test_snapshot_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().snapshot_path == Path("data/paperwatch.read.duckdb")
    assert load_settings(database=Path("x/lab.duckdb")).snapshot_path == Path("x/lab.read.duckdb")
    assert load_settings(snapshot="/srv/read.duckdb").snapshot_path == Path("/srv/read.duckdb")
    assert load_settings(snapshot="").snapshot_path is None
    monkeypatch.setenv("PAPERWATCH_SNAPSHOT", "")
    assert load_settings().snapshot_path is None


# ------------------------------------------------------------------ publishing


def test_snapshot_of_the_seeds_has_tables_and_views(seeded_database: Path) -> None:
    target = seeded_database.with_name("paperwatch.read.duckdb")
    published = publish_snapshot(seeded_database, target)
    assert (published.path, published.papers) == (target, 54)
    assert published.size_bytes == target.stat().st_size
    # The PyPI CLI (storage versions 64-68) reads it, views included.
    assert cli_rows(
        target,
        "select (select count(*) from papers), (select count(*) from new_papers_by_week), "
        "(select count(*) from duplicates_by_week), (select count(*) from sequence_gaps)",
    ) == ["54,54,3,1"]
    views = cli_rows(target, "select view_name from duckdb_views() where not internal order by 1")
    assert views == [
        "duplicates_by_week",
        "listing_revisions",
        "new_papers_by_week",
        "sequence_gaps",
        "weekly_term_counts",
    ]
    assert temp_files(target.parent) == []


def test_snapshot_must_not_be_the_database(seeded_database: Path) -> None:
    with pytest.raises(ValueError, match="cannot be the database itself"):
        publish_snapshot(seeded_database, seeded_database)
    with pytest.raises(FileNotFoundError, match="run `paperwatch ingest` first"):
        publish_snapshot(seeded_database.with_name("none.duckdb"), seeded_database)


def add_marker(database: Path) -> None:
    with db.writer(database) as con:
        con.execute("create table marker as select 42 as answer")


def test_failed_copy_leaves_the_previous_snapshot(
    seeded_database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = seeded_database.with_name("paperwatch.read.duckdb")
    publish_snapshot(seeded_database, target)
    before = target.read_bytes()
    add_marker(seeded_database)

    def disk_full(source: Path, temp: Path) -> None:
        temp.write_bytes(source.read_bytes()[:4096])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snapshot, "copy_file", disk_full)
    with pytest.raises(OSError, match="No space left"):
        publish_snapshot(seeded_database, target)
    assert target.read_bytes() == before
    assert temp_files(target.parent) == []


CRASH_MID_COPY = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from paperwatch.db import snapshot

    def crash(source, temp):
        data = Path(source).read_bytes()
        with open(temp, "wb") as f:
            f.write(data[: len(data) // 2])
            f.flush()
            os.fsync(f.fileno())
        os.kill(os.getpid(), signal.SIGKILL)

    snapshot.copy_file = crash
    snapshot.publish_snapshot(Path(sys.argv[1]), Path(sys.argv[2]), 5)
    """
)


def test_crash_mid_copy_leaves_the_previous_snapshot(seeded_database: Path) -> None:
    target = seeded_database.with_name("paperwatch.read.duckdb")
    publish_snapshot(seeded_database, target)
    before = target.read_bytes()
    add_marker(seeded_database)

    crashed = subprocess.run(
        [sys.executable, "-c", CRASH_MID_COPY, str(seeded_database), str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    # The previous snapshot is intact at its path; the half copy is a temporary file.
    assert target.read_bytes() == before
    assert cli_rows(target, "select count(*) from papers") == ["54"]
    assert cli_rows(target, "select count(*) from duckdb_tables() where table_name = 'marker'") == [
        "0"
    ]
    left = temp_path(target, crashed_pid := _only_pid(target.parent))
    assert left.stat().st_size == seeded_database.stat().st_size // 2

    # The next publication removes the dead process's temporary file and publishes.
    published = publish_snapshot(seeded_database, target)
    assert (published.papers, temp_files(target.parent)) == (54, [])
    assert cli_rows(target, "select answer from marker") == ["42"]
    assert crashed_pid != os.getpid()


def _only_pid(folder: Path) -> int:
    (name,) = temp_files(folder)
    match = re.fullmatch(r"\.paperwatch\.read\.duckdb\.(\d+)\.tmp", name)
    assert match, name
    return int(match.group(1))


# ------------------------------------------------------------------ a reader never blocks a run

READER = textwrap.dedent(
    """
    import sys, duckdb
    con = duckdb.connect(sys.argv[1], read_only=True)
    for line in sys.stdin:
        print(con.execute("select count(*) from papers").fetchall()[0][0], flush=True)
    """
)


@pytest.fixture
def reader_process() -> Iterator[Any]:
    """Factory: a separate process holding a read-only DuckDB connection on a file open
    until the test ends; ``ask()`` makes it count ``papers`` on that connection."""
    started: list[subprocess.Popen[str]] = []

    def start(path: Path) -> Any:
        process = subprocess.Popen(
            [sys.executable, "-c", READER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(process)

        def ask() -> int:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write("count\n")
            process.stdin.flush()
            return int(process.stdout.readline())

        return ask

    yield start
    for process in started:
        process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_reader_of_the_snapshot_never_blocks_a_run(
    seed_folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    reader_process: Any,
) -> None:
    from paperwatch.flows.ingest import ingest_listings
    from paperwatch.flows.report import weekly_report

    held_back = tmp_path / "later"
    held_back.mkdir()
    shutil.move(seed_folder / "003_13ddc4bea7a17f78.txt", held_back)
    database = tmp_path / "data" / "paperwatch.duckdb"
    target = tmp_path / "data" / "paperwatch.read.duckdb"
    first = ingest_listings(str(seed_folder), str(database), SEEDS_AS_OF)
    assert (first.new_papers, first.exact_duplicates) == (38, 0)
    assert cli_rows(target, "select count(*) from papers") == ["38"]
    old_inode = target.stat().st_ino

    ask = reader_process(target)
    assert ask() == 38
    # No waiting for any lock: a run that had to wait for one would fail at once.
    monkeypatch.setenv("PAPERWATCH_LOCK_TIMEOUT_S", "0")
    shutil.move(held_back / "003_13ddc4bea7a17f78.txt", seed_folder)
    second = ingest_listings(str(seed_folder), str(database), SEEDS_AS_OF)
    assert (second.new_papers, second.exact_duplicates) == (16, 3)
    outcome = weekly_report(
        as_of=SEEDS_AS_OF,
        database=str(database),
        report_dir=str(tmp_path / "out"),
        last_completed_week=False,
    )
    assert outcome.week == SEEDS_WEEK

    assert target.stat().st_ino != old_inode  # replaced, not rewritten in place
    assert ask() == 38  # the old reader still reads its old rows
    assert cli_rows(
        target, "select (select count(*) from papers), (select count(*) from reports)"
    ) == ["54,1"]  # a new reader sees the new run and the report
    assert ask() == 38
    assert temp_files(target.parent) == []


@pytest.mark.usefixtures("prefect_harness")
def test_nothing_new_does_not_republish(seed_folder: Path, tmp_path: Path) -> None:
    from paperwatch.flows.ingest import ingest_listings

    database = tmp_path / "data" / "paperwatch.duckdb"
    target = database.with_name("paperwatch.read.duckdb")
    ingest_listings(str(seed_folder), str(database), SEEDS_AS_OF)
    inode = target.stat().st_ino
    again = ingest_listings(str(seed_folder), str(database), SEEDS_AS_OF)
    assert (again.new_papers, target.stat().st_ino) == (0, inode)
    target.unlink()  # no snapshot yet (a database from before snapshots): published
    ingest_listings(str(seed_folder), str(database), SEEDS_AS_OF)
    assert cli_rows(target, "select count(*) from papers") == ["54"]


# ------------------------------------------------------------------ paperwatch sql


@pytest.fixture
def seeds_in_data(seeded_database_file: Path, tmp_path: Path) -> Path:
    """data/paperwatch.duckdb in the test's working folder: the seeds, with no snapshot yet."""
    database = tmp_path / "data" / "paperwatch.duckdb"
    database.parent.mkdir()
    shutil.copy(seeded_database_file, database)
    return database


def test_paperwatch_sql_prints_the_count_of_the_seeds(seeds_in_data: Path, tmp_path: Path) -> None:
    publish_snapshot(seeds_in_data, seeds_in_data.with_name("paperwatch.read.duckdb"))
    result = subprocess.run(
        [str(BIN / "paperwatch"), "sql", "-c", "select count(*) from papers"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    cells = [line.strip("│ ") for line in result.stdout.splitlines() if line.startswith("│")]
    assert cells == ["count_star()", "int64", "54"]


def test_paperwatch_sql_takes_d_for_the_database_like_every_command(
    seeds_in_data: Path, tmp_path: Path
) -> None:
    # `-d` was passed on to the DuckDB CLI ("Unrecognized option '-d'").
    publish_snapshot(seeds_in_data, seeds_in_data.with_name("paperwatch.read.duckdb"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    query = "select count(*) as n from papers"
    result = subprocess.run(
        [str(BIN / "paperwatch"), "sql", "-d", "../data/paperwatch.duckdb", "-csv", "-c", query],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["n", "54"]


def test_paperwatch_sql_without_a_snapshot(seeds_in_data: Path) -> None:
    result = runner.invoke(app, ["sql", "-c", "select 1"])
    assert result.exit_code == 1
    assert "data/paperwatch.read.duckdb does not exist yet: run `paperwatch ingest` first" in (
        result.output
    )
    result = runner.invoke(app, ["sql", "--snapshot", ""])
    assert result.exit_code == 1
    assert "the snapshot is disabled" in result.output


def test_paperwatch_sql_without_the_duckdb_cli(
    seeds_in_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish_snapshot(seeds_in_data, seeds_in_data.with_name("paperwatch.read.duckdb"))
    monkeypatch.setattr("paperwatch.cli.jobs.duckdb_cli", lambda: None)
    result = runner.invoke(app, ["sql"])
    assert result.exit_code == 1
    assert "the DuckDB CLI is not installed: `pip install duckdb-cli`" in result.output


def test_paperwatch_sql_help() -> None:
    result = runner.invoke(app, ["sql", "--help"])
    assert result.exit_code == 0
    words = " ".join(result.output.split())
    assert "in the DuckDB CLI (duckdb -readonly)" in words and "--snapshot" in words


# ------------------------------------------------------------------ the README's SQL


def sql_docs() -> str:
    """The pages whose SQL examples are run: the README and docs/sql.md."""
    return "\n".join(
        (ROOT / name).read_text(encoding="utf-8") for name in ("README.md", "docs/sql.md")
    )


def readme_sql() -> list[str]:
    """Every SQL statement of README.md and docs/sql.md: ``D`` lines of console blocks
    (with their indented continuation lines), ``sql`` blocks, and ``con.sql("…")`` in
    Python blocks (but those with parameters, which the Python example itself runs)."""
    text = sql_docs()
    found: list[str] = []
    for kind, body in re.findall(r"```(\w+)\n(.*?)```", text, flags=re.S):
        if kind == "console":
            statement: list[str] = []
            for line in body.splitlines():
                if line.startswith("D "):
                    statement = [line[2:]]
                elif statement and line.startswith("  "):
                    statement.append(line.strip())
                else:
                    continue
                if statement[-1].endswith(";"):
                    sql = " ".join(statement)
                    if not sql.startswith("--"):
                        found.append(sql)
                    statement = []
        elif kind == "sql":
            found += [s.strip() + ";" for s in body.split(";") if s.strip()]
        elif kind == "python":
            found += [q for q in re.findall(r'con\.sql\("(.+?)"', body) if "?" not in q]
    return found


def test_readme_has_the_sql_examples() -> None:
    examples = readme_sql()
    assert len(examples) == 7
    assert all("'2026-W" not in sql for sql in examples)  # no week written in


@pytest.mark.usefixtures("prefect_harness")
def test_every_readme_sql_example_returns_rows(
    seeds_in_data: Path, smtp_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from paperwatch.flows.report import weekly_report

    from .test_report_email import configure_smtp

    # The seeds, and their report sent (the README queries the sends too); the flow
    # publishes the snapshot the examples read.
    configure_smtp(monkeypatch, smtp_server.port)
    weekly_report(
        week=SEEDS_WEEK,
        database=str(seeds_in_data),
        report_dir=str(tmp_path / "out"),
        send=True,
    )
    snapshot_file = Path("data/paperwatch.read.duckdb")
    for sql in readme_sql():
        if "from related_papers" in sql:
            # Related papers are earlier papers: the seeds are one week, so there are none
            # (the query runs; tests/test_related.py fills an earlier week).
            assert cli_rows(snapshot_file, sql) == [], sql
            continue
        assert cli_rows(snapshot_file, sql), sql
    # The Python example, verbatim.
    text = sql_docs()
    (python,) = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "duckdb" in b]
    *setup, last = python.strip().splitlines()
    namespace: dict[str, Any] = {}
    exec("\n".join(setup), namespace)
    frame = eval(last, namespace)
    assert frame.height == 54
    namespace["con"].close()
    with duckdb.connect(str(snapshot_file), read_only=True) as con:
        assert con.execute("select count(*) from reports where kind = 'sent'").fetchall() == [(1,)]


@pytest.mark.usefixtures("prefect_harness")
def test_quarantine_release_republishes(tmp_path: Path) -> None:
    from paperwatch.flows.ingest import ingest_listings

    from .test_quarantine import GOOD

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "016_0000000000000007.txt").write_text(
        f"ICLR 2025 accepted papers\n\n{GOOD}\n\nThree words only.\n", encoding="utf-8"
    )
    database = tmp_path / "data" / "paperwatch.duckdb"
    target = database.with_name("paperwatch.read.duckdb")
    ingest_listings(str(folder), str(database), SEEDS_AS_OF)
    assert cli_rows(target, "select count(*) from quarantine where released_at is null") == ["1"]
    released = runner.invoke(
        app, ["quarantine", "release", "1", "--by", "ana", "--database", str(database)]
    )
    assert released.exit_code == 0, released.output
    assert cli_rows(
        target,
        "select (select count(*) from papers), "
        "(select released_by from quarantine where quarantine_id = 1)",
    ) == ["2,ana"]


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_a_reader_holding_the_snapshot_for_the_whole_of_make_run_delays_nothing(
    seed_folder: Path, tmp_path: Path, reader_process: Any
) -> None:
    """``make run`` is ``paperwatch run`` with the defaults (seeds/ into data/): run in the
    project layout, with an analyst's session open on the snapshot from before it starts
    until after it ends, and no wait for any lock allowed (lock timeouts 0)."""
    from prefect.settings import PREFECT_API_URL

    project = tmp_path / "project"
    project.mkdir()
    seeds = project / "seeds"
    shutil.copytree(seed_folder, seeds)
    held_back = tmp_path / "later"
    held_back.mkdir()
    shutil.move(seeds / "003_13ddc4bea7a17f78.txt", held_back)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PAPERWATCH_")}
    environ.update(
        PREFECT_API_URL=str(PREFECT_API_URL.value()),
        PAPERWATCH_CONFIG="",
        PAPERWATCH_LOCK_TIMEOUT_S="0",
        PAPERWATCH_SCHEDULE__WRITER_LOCK_TIMEOUT_S="0",
    )

    def make_run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "paperwatch", "run", "--as-of", SEEDS_AS_OF],
            cwd=project,
            env=environ,
            capture_output=True,
            text=True,
            timeout=600,
        )

    first = make_run()
    assert first.returncode == 0, first.stderr
    target = project / "data" / "paperwatch.read.duckdb"
    ask = reader_process(target)
    assert ask() == 38
    shutil.move(held_back / "003_13ddc4bea7a17f78.txt", seeds)
    second = make_run()
    assert second.returncode == 0, second.stderr
    assert "new papers: 16; exact duplicates: 3" in second.stdout
    assert "report of 2026-W48: reports/out/2026-W48.html" in second.stdout
    assert "waiting" not in second.stdout + second.stderr
    assert ask() == 38  # the session, open all along, still reads the data it opened
    assert cli_rows(target, "select count(*) from papers") == ["54"]
