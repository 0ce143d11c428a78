"""The command line: --help text, the documented commands, and the main job on a folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperwatch.cli import app

from .conftest import ROOT

runner = CliRunner()


def commands() -> list[str]:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    return re.findall(r"^│ (\w[\w-]*)\s", result.output, flags=re.MULTILINE)


def test_help_lists_the_commands() -> None:
    assert {"run", "ingest", "report"} <= set(commands())


@pytest.mark.parametrize("command", ["run", "ingest", "report"])
def test_every_command_has_help_and_options(command: str) -> None:
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert "--as-of" in result.output and "--database" in result.output


def test_every_command_is_documented_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [c for c in commands() if f"paperwatch {c}" not in readme]
    assert missing == []


def test_bad_as_of_is_a_clear_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["ingest", "--folder", str(tmp_path), "--as-of", "next tuesday"])
    assert result.exit_code == 1
    assert "is not an ISO 8601 date" in result.output


def test_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["ingest", "--folder", str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert f"watched folder {tmp_path / 'nope'} does not exist" in result.output


@pytest.mark.usefixtures("prefect_harness")
def test_run_twice(seed_folder: Path, tmp_path: Path) -> None:
    args = [
        "run",
        "--folder",
        str(seed_folder),
        "--database",
        str(tmp_path / "pw.duckdb"),
        "--report-dir",
        str(tmp_path / "out"),
        "--as-of",
        "2026-11-25T10:00",
    ]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "files: 3 seen, 3 loaded, 0 unchanged, 0 duplicate copies, 0 quarantined" in first.output
    assert (
        "entries: 57 read, 57 loaded, 0 quarantined; new papers: 54; exact duplicates: 3"
        in first.output
    )
    assert f"report of 2026-W48: {tmp_path / 'out' / '2026-W48.html'}" in first.output
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert "files: 3 seen, 0 loaded, 3 unchanged" in second.output
    assert "nothing new:" in second.output
