"""The command line: --help text, the documented commands, and the main job on a folder."""

from __future__ import annotations

import itertools
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
    listed = result.output.split("Commands:", 1)[1]
    return re.findall(r"^  (\w[\w-]*)\s", listed, flags=re.MULTILINE)


HELP_PAGES = [
    [],
    ["run"],
    ["ingest"],
    ["report"],
    ["quarantine"],
    ["quarantine", "list"],
    ["quarantine", "release"],
    ["sql"],
    ["docs"],
    ["serve"],
    ["watch"],
]


@pytest.mark.parametrize("words", HELP_PAGES, ids=lambda w: " ".join(w) or "paperwatch")
def test_help_reads_well_at_80_columns(words: list[str]) -> None:
    result = runner.invoke(app, [*words, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    # Flags show no "<bool>"; no box drawing that a narrow terminal breaks.
    assert "<bool>" not in result.output and "│" not in result.output
    # Prose is re-wrapped as paragraphs: no line of a paragraph stops short of the width
    # while its sentence goes on in the next line (what the hard-wrapped docstrings did).
    description = re.split(r"^(?:Options|Arguments):", result.output, flags=re.M)[0].splitlines()
    for line, following in itertools.pairwise(description):
        if line.strip() and following.strip() and not line.startswith("Usage"):
            assert len(line) + len(following.split()[0]) >= 78 - 2, (line, following)


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
    assert result.exit_code == 2
    assert "is not an ISO 8601 date" in result.output


@pytest.mark.parametrize(
    ("week", "reason"),
    [
        ("2026-W48\n", "is not an ISO week like 2026-W48"),
        ("2026-W48 ", "is not an ISO week like 2026-W48"),
        (" 2026-W48", "is not an ISO week like 2026-W48"),
        ("0001-W01", "is outside the ISO years 1900-9998 paperwatch reports on"),
        ("9999-W52", "is outside the ISO years 1900-9998 paperwatch reports on"),
    ],
)
def test_a_week_the_report_cannot_name_or_cover_is_refused(
    tmp_path: Path, week: str, reason: str
) -> None:
    out = tmp_path / "out"
    args = ["report", "--database", str(tmp_path / "p.duckdb"), "--report-dir", str(out)]
    result = runner.invoke(app, [*args, "--week", week])
    assert result.exit_code == 2
    assert f"error: week {week!r} {reason}" in result.output
    assert not out.exists()


@pytest.mark.parametrize("as_of", ["0001-01-01", "9999-12-31T23:00-05:00"])
def test_an_as_of_outside_the_reported_years_is_refused(tmp_path: Path, as_of: str) -> None:
    result = runner.invoke(app, ["ingest", "--folder", str(tmp_path), "--as-of", as_of])
    assert result.exit_code == 2
    assert f"--as-of {as_of!r} is outside the years 1900-9998" in result.output


def test_a_variable_that_names_no_setting_is_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAPERWATCH_DATABSE", str(tmp_path / "elsewhere.duckdb"))
    monkeypatch.setenv("PAPERWATCH_SMTP__HOTS", "mail.example.org")
    monkeypatch.setenv("PAPERWATCH_XYZZY", "1")
    monkeypatch.setenv("PAPERWATCH_TIMEZONE", "UTC")  # a setting: no warning
    result = runner.invoke(app, ["ingest", "--folder", str(tmp_path / "nope")])
    assert result.exit_code == 1
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: PAPERWATCH_DATABSE names no setting and is ignored "
        "(did you mean PAPERWATCH_DATABASE?)",
        "warning: PAPERWATCH_SMTP__HOTS names no setting and is ignored "
        "(did you mean PAPERWATCH_SMTP__HOST?)",
        "warning: PAPERWATCH_XYZZY names no setting and is ignored",
    ]


def test_a_list_setting_that_is_not_json_names_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAPERWATCH_SMTP__RECIPIENTS", "a@example.org,b@example.org")
    result = runner.invoke(app, ["ingest", "--folder", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        "error: PAPERWATCH_SMTP__RECIPIENTS is not JSON: a list or table setting is written "
        "as JSON in the environment, e.g. "
        'PAPERWATCH_SMTP__RECIPIENTS=\'["a@example.org", "b@example.org"]\''
    )


def test_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["ingest", "--folder", str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert f"watched folder {tmp_path / 'nope'} does not exist" in result.output


def _fresh_prefect_console() -> None:
    """Point Prefect's console log handler at the current stderr again: it keeps the
    stream of the CliRunner invocation that first ran a flow, closed once that ended (a
    real process runs one command, with one stderr)."""
    from prefect.logging.configuration import setup_logging

    setup_logging(incremental=False)


@pytest.mark.slow
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
    _fresh_prefect_console()
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert "files: 3 seen, 0 loaded, 3 unchanged" in second.output
    assert "nothing new:" in second.output
    # Nothing new and the files hold what the week renders: no report flow runs.
    html = tmp_path / "out" / "2026-W48.html"
    written = html.read_bytes()
    import paperwatch.flows.report

    def no_flow(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report flow ran")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(paperwatch.flows.report, "weekly_report", no_flow)
        _fresh_prefect_console()
        third = runner.invoke(app, args)
    assert third.exit_code == 0, third.output
    assert "report of 2026-W48 unchanged: its files hold what it renders now" in third.output
    assert f"report of 2026-W48: {html}" in third.output
    assert html.read_bytes() == written
    # A file that differs is rendered again through the flow, which says why.
    html.write_bytes(written + b"<!-- edited -->")
    _fresh_prefect_console()
    fourth = runner.invoke(app, args)
    assert fourth.exit_code == 0, fourth.output
    assert "report of 2026-W48 differs from its files: rendering it again" in fourth.output
    assert html.read_bytes() == written


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_nothing_new_is_decided_without_a_flow(
    seed_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import duckdb

    import paperwatch.flows.ingest

    database = tmp_path / "pw.duckdb"
    args = ["ingest", "--folder", str(seed_folder), "--database", str(database)]
    first = runner.invoke(app, [*args, "--as-of", "2026-11-25T10:00"])
    assert first.exit_code == 0, first.output

    flow_runs: list[tuple[object, ...]] = []
    real_flow = paperwatch.flows.ingest.ingest_listings
    monkeypatch.setattr(
        paperwatch.flows.ingest, "ingest_listings", lambda *a: flow_runs.append(a) or real_flow(*a)
    )
    quick = runner.invoke(app, args)
    assert quick.exit_code == 0, quick.output
    assert "files: 3 seen, 0 loaded, 3 unchanged" in quick.output
    assert f"nothing new: {database} is up to date" in quick.output
    assert flow_runs == []  # no flow, no Prefect server

    # Derived data missing (a run killed before near-duplicates): the flow runs.
    with duckdb.connect(str(database)) as con:
        con.execute(
            "delete from paper_minhash where paper_id in (select min(paper_id) from papers)"
        )
    repaired = runner.invoke(app, args)
    assert repaired.exit_code == 0, repaired.output
    assert len(flow_runs) == 1
    # A new file: the flow runs.
    (seed_folder / "extra.txt").write_text(
        (seed_folder / "000_5dc500fada0b6079.txt").read_text(encoding="utf-8") + "\n",
        encoding="utf-8",
    )
    loaded = runner.invoke(app, args)
    assert loaded.exit_code == 0, loaded.output
    assert len(flow_runs) == 2
    assert "files: 4 seen, 1 loaded, 3 unchanged" in loaded.output


def test_invalid_settings_are_one_line_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAPERWATCH_TIMEZONE", "Mars/Olympus")
    result = runner.invoke(app, ["quarantine", "list", "--database", str(tmp_path / "x.duckdb")])
    assert result.exit_code == 2
    assert result.output.strip() == (
        "error: invalid settings: timezone (PAPERWATCH_TIMEZONE or paperwatch.toml): "
        "unknown IANA time zone 'Mars/Olympus' (given 'Mars/Olympus')"
    )


_EXIT_PROBE = """
import atexit, sys
import paperwatch.cli as cli

marker, how = sys.argv[1], sys.argv[2]


class Freed:
    def __del__(self):  # runs in the interpreter's teardown, which main() skips
        open(marker + ".freed", "w").write("teardown ran")


kept = Freed()

def command(prog_name):
    atexit.register(lambda: open(marker, "w").write("handler ran"))
    print("output without a newline", end="")
    if how == "exit":
        raise SystemExit(3)
    if how == "message":
        raise SystemExit("refused")
    if how == "interrupt":
        raise KeyboardInterrupt
    if how == "crash":
        raise RuntimeError("boom")
    if how == "terminate":
        import os, signal, time
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(60)  # the handler raises in this thread at once

cli.app = command
cli.main()
"""


@pytest.mark.parametrize(
    ("how", "status"),
    [("exit", 3), ("message", 1), ("interrupt", 130), ("terminate", 143), ("crash", 1), ("ok", 0)],
)
def test_the_command_exits_without_teardown_but_with_its_status_and_handlers(
    tmp_path: Path, how: str, status: int
) -> None:
    """``paperwatch`` (:func:`paperwatch.cli.main`) skips the interpreter's teardown, and
    nothing else: the command's exit status, its exit handlers (registered while it ran)
    and its unflushed output all survive."""
    import subprocess
    import sys

    marker = tmp_path / "marker"
    done = subprocess.run(
        [sys.executable, "-c", _EXIT_PROBE, str(marker), how],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == status, done.stderr
    assert done.stdout == "output without a newline"
    assert marker.read_text() == "handler ran"
    assert not Path(f"{marker}.freed").exists()  # the module's objects were not freed one by one
    if how == "message":
        assert done.stderr.strip().endswith("refused")
    if how == "crash":
        assert "RuntimeError: boom" in done.stderr
    if how in ("interrupt", "terminate"):
        by = "Ctrl-C" if how == "interrupt" else "SIGTERM"
        assert (
            f"error: stopped by {by} before it finished; what it committed stays (an "
            "ingestion keeps the batches it loaded): run it again to finish"
        ) in done.stderr.splitlines()
