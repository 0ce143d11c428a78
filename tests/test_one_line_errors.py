"""One error, one line: a command that fails ends with a single ``error:`` line on the
terminal, with no Prefect failure lines or tracebacks before it (they go to the log file);
a wait for a program holding the database is said once.

These run the real ``paperwatch`` command in a process of its own (Prefect's log lines go
to the process's stderr, which an in-process runner does not capture), against the
session's Prefect test server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from .conftest import SEEDS, SEEDS_WEEK, Server, free_port

pytestmark = pytest.mark.usefixtures("prefect_harness")


def paperwatch(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    from prefect.settings import PREFECT_API_URL

    environ = {k: v for k, v in os.environ.items() if not k.startswith("PAPERWATCH_")}
    environ.update(
        PREFECT_API_URL=str(PREFECT_API_URL.value()),
        PAPERWATCH_CONFIG="",
        PYTHONUNBUFFERED="1",
        **{f"PAPERWATCH_{k}": v for k, v in env.items()},
    )
    return subprocess.run(
        [sys.executable, "-m", "paperwatch", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
    )


def assert_one_error_line(result: subprocess.CompletedProcess[str], code: int) -> str:
    """The run's terminal output ends with exactly one ``error:`` line and holds no Prefect
    failure line or traceback; returns that line."""
    terminal = (result.stdout + result.stderr).splitlines()
    assert result.returncode == code, result.stdout + result.stderr
    errors = [line for line in terminal if line.startswith("error:")]
    assert len(errors) == 1, terminal
    assert result.stderr.rstrip("\n").splitlines()[-1] == errors[0]
    for noise in ("Traceback", "Finished in state Failed", "| ERROR", "Encountered exception"):
        assert not any(noise in line for line in terminal), (noise, terminal)
    return errors[0]


def smtp_env(port: int, **extra: str) -> dict[str, str]:
    return {
        "SMTP__HOST": "127.0.0.1",
        "SMTP__PORT": str(port),
        "SMTP__SECURITY": "none",
        "SMTP__SENDER": "paperwatch@example.org",
        "SMTP__RECIPIENTS": '["reader@example.org"]',
        "SMTP__RETRIES": "0",
        "SMTP__TIMEOUT_S": "3",
        **extra,
    }


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never says anything (not an SMTP server)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield int(listener.getsockname()[1])


def report_args(database: Path, tmp_path: Path) -> list[str]:
    return [
        "report",
        "--week",
        SEEDS_WEEK,
        "--database",
        str(database),
        "--report-dir",
        str(tmp_path / "out"),
        "--send",
    ]


@pytest.mark.parametrize("case", ["refused", "no STARTTLS", "wrong port"])
def test_a_failed_send_is_one_error_line_and_the_details_are_in_the_log_file(
    case: str,
    seeded_database: Path,
    tmp_path: Path,
    smtp_server: Server,
    silent_port: int,
) -> None:
    if case == "refused":
        port = free_port()
        env, expected = smtp_env(port), f"cannot connect to SMTP server 127.0.0.1:{port}"
    elif case == "no STARTTLS":
        port = smtp_server.port
        env = smtp_env(port, SMTP__SECURITY="starttls")
        expected = f"SMTP server 127.0.0.1:{port} does not offer STARTTLS"
    else:
        env, expected = smtp_env(silent_port), f"127.0.0.1:{silent_port}"
    result = paperwatch(tmp_path, *report_args(seeded_database, tmp_path), **env)
    line = assert_one_error_line(result, 1)
    assert line.startswith(f"error: weekly report {SEEDS_WEEK} not sent (")
    assert expected in line
    # The report itself was written, and said so; the failure's details are in the log.
    assert "report of 2026-W48 written to" in result.stderr
    log = (seeded_database.parent / "paperwatch.log").read_text(encoding="utf-8")
    assert "Finished in state Failed" in log
    assert "Traceback (most recent call last)" in log
    assert smtp_server.handler.received == []


def test_with_debug_the_failure_lines_are_shown(seeded_database: Path, tmp_path: Path) -> None:
    port = free_port()
    result = paperwatch(
        tmp_path, "--debug", *report_args(seeded_database, tmp_path), **smtp_env(port)
    )
    assert result.returncode == 1
    assert "Finished in state Failed" in result.stderr
    assert result.stderr.rstrip("\n").splitlines()[-1].startswith("error: weekly report")


@pytest.mark.slow
def test_a_run_waiting_for_a_reader_says_so_once_then_fails_in_one_line(
    seeded_database: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "listings"
    folder.mkdir()
    (folder / "a.txt").write_bytes((SEEDS / "000_5dc500fada0b6079.txt").read_bytes())
    with duckdb.connect(str(seeded_database), read_only=True):  # an analyst's session
        result = paperwatch(
            tmp_path,
            "ingest",
            "--folder",
            str(folder),
            "--database",
            str(seeded_database),
            LOCK_TIMEOUT_S="3",
        )
    line = assert_one_error_line(result, 3)
    assert line.startswith(f"error: {seeded_database} is locked by ")
    assert f"(PID {os.getpid()})" in line
    waits = [x for x in result.stderr.splitlines() if "waiting up to 3 s for" in x]
    assert len(waits) == 1, result.stderr
    assert "it is held open by" in waits[0] and f"(PID {os.getpid()})" in waits[0]


def test_a_report_folder_that_is_a_file_is_named_as_the_report_folder(
    seeded_database: Path, tmp_path: Path
) -> None:
    """``-o`` naming an existing file beside the database: the error is about the report
    folder (``--report-dir``), not the database's folder."""
    from typer.testing import CliRunner

    from paperwatch.cli import app

    database = tmp_path / "pw.duckdb"
    database.write_bytes(seeded_database.read_bytes())
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    result = CliRunner().invoke(
        app, ["report", "--week", SEEDS_WEEK, "-d", str(database), "-o", str(blocker)]
    )
    assert result.exit_code == 1
    assert result.output.startswith(f"error: cannot write the report (File exists: {blocker}); ")
    assert "--report-dir" in result.output and "database's folder" not in result.output


@pytest.mark.parametrize("name", ["index.html", f"{SEEDS_WEEK}.html"])
def test_a_folder_in_the_way_of_a_report_file_is_named_and_nothing_is_left(
    seeded_database: Path, tmp_path: Path, name: str
) -> None:
    from typer.testing import CliRunner

    from paperwatch.cli import app

    database = tmp_path / "pw.duckdb"
    database.write_bytes(seeded_database.read_bytes())
    out = tmp_path / "out"
    (out / name).mkdir(parents=True)
    result = CliRunner().invoke(
        app, ["report", "--week", SEEDS_WEEK, "-d", str(database), "-o", str(out)]
    )
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        f"error: cannot write the report (a folder is in the way of the file: {out / name}); "
        "move the folder aside, or give --report-dir"
    )
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


def test_an_unexpected_failure_of_the_report_flow_is_one_error_line(
    seeded_database: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault of paperwatch itself in the report flow ends in the one ``unexpected …``
    line. (typer.Exit is a RuntimeError: the report's own RuntimeError handler used to
    catch that exit too and print a second, empty ``error:`` line.)"""
    from typer.testing import CliRunner

    import paperwatch.flows.report as report_flow
    from paperwatch.cli import app

    def broken(**_: object) -> None:
        raise ZeroDivisionError("a fault of paperwatch")

    monkeypatch.setattr(report_flow, "weekly_report", broken)
    for key, value in smtp_env(1).items():
        monkeypatch.setenv(f"PAPERWATCH_{key}", value)
    database = tmp_path / "pw.duckdb"
    database.write_bytes(seeded_database.read_bytes())
    result = CliRunner().invoke(
        app,
        ["report", "--week", SEEDS_WEEK, "-d", str(database), "-o", str(tmp_path / "out"),
         "--dry-run"],
    )  # fmt: skip
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1
    assert lines[0].startswith("error: unexpected ZeroDivisionError: a fault of paperwatch (")
