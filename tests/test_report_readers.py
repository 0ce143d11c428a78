"""Readers with topics, for real: the ``weekly-report`` flow sends the plain recipients one
message and each reader of ``smtp.readers`` their own (starting with "For you"), once per
reader and week, to an aiosmtpd server on 127.0.0.1; and rewrites the archive page."""

from __future__ import annotations

import json
import re
from email.message import EmailMessage
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from paperwatch.cli import app
from paperwatch.db.sends import AlreadySentError
from paperwatch.flows.report import weekly_report

from .conftest import SEEDS_WEEK, Server
from .test_report_email import SENT_AT, configure_smtp

pytestmark = pytest.mark.usefixtures("prefect_harness")

WEEK = SEEDS_WEEK
ANN = {"address": "Ann Lee <ann@example.org>", "topics": ["quantization", "diffusion"]}
CY = {"address": "cy@example.org", "topics": ["federated continual learning"]}


def text_of(message: EmailMessage) -> str:
    part = message.get_body(("plain",))
    assert part is not None
    return str(part.get_content()).replace("\r\n", "\n")


def sends(database: Path) -> list[tuple[str, str | None, list[str]]]:
    with duckdb.connect(str(database), read_only=True) as con:
        return [
            (kind, reader, list(recipients))
            for kind, reader, recipients in con.execute(
                "select kind, reader, recipients from reports "
                "where kind in ('sent', 'failed', 'dry_run') order by report_id"
            ).fetchall()
        ]


def test_each_reader_gets_their_own_message_once(
    seeded_database: Path, smtp_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ann is a plain recipient too: she gets her own message only.
    configure_smtp(
        monkeypatch,
        smtp_server.port,
        RECIPIENTS='["bob@example.org", "ann@example.org"]',
        READERS=json.dumps([ANN]),
    )
    out = tmp_path / "out"
    args = {
        "week": WEEK,
        "as_of": SENT_AT,
        "database": str(seeded_database),
        "report_dir": str(out),
    }
    outcome = weekly_report(**args, send=True)

    assert outcome.email is not None and outcome.email.recipients == ["bob@example.org"]
    assert [o.recipients for o in outcome.reader_emails] == [["ann@example.org"]]
    bob, ann = smtp_server.handler.received
    assert (bob.rcpt_tos, ann.rcpt_tos) == (["bob@example.org"], ["ann@example.org"])
    assert bob.message["Subject"] == ann.message["Subject"]
    assert bob.message["Message-ID"] != ann.message["Message-ID"]
    shared, own = text_of(bob.message), text_of(ann.message)
    assert "FOR YOU" not in shared
    assert own.split("\n")[3:6] == [
        "FOR YOU",
        "=======",
        "Papers of this week on your topics: quantization, diffusion.",
    ]
    assert re.findall(r"^\* (\S+) \(", own.split("\n\n54 new papers")[0], flags=re.M)[:3] == [
        "SemanticDialect",
        "SPA-Q",  # ties (score 8) in report order: listing 002 before 003
        "SnapMLA",
    ]
    # The HTML written to disk is the plain recipients' message.
    assert (out / f"{WEEK}.html").read_text(encoding="utf-8") == str(
        bob.message.get_body(("html",)).get_content()  # type: ignore[union-attr]
    ).replace("\r\n", "\n")
    assert sends(seeded_database) == [
        ("sent", None, ["bob@example.org"]),
        ("sent", "Ann Lee <ann@example.org>", ["ann@example.org"]),
    ]

    # Sent once per reader and week: everybody had it.
    with pytest.raises(AlreadySentError, match="was already sent"):
        weekly_report(**args, send=True)
    assert len(smtp_server.handler.received) == 2

    # A reader added later gets the week; the others are not sent it again.
    monkeypatch.setenv("PAPERWATCH_SMTP__READERS", json.dumps([ANN, CY]))
    again = weekly_report(**args, send=True)
    assert again.email is None
    assert [o.recipients for o in again.reader_emails] == [["cy@example.org"]]
    assert again.already_sent == (None, "Ann Lee <ann@example.org>")
    assert [m.rcpt_tos for m in smtp_server.handler.received[2:]] == [["cy@example.org"]]
    assert "federated continual learning" in text_of(smtp_server.handler.received[2].message)


def test_dry_run_writes_one_message_per_reader(
    seeded_database: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure_smtp(monkeypatch, 1, READERS=json.dumps([ANN, CY]))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["report", "--week", WEEK, "--database", str(seeded_database), "--report-dir", str(out),
         "--as-of", SENT_AT, "--dry-run"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in out.glob("*.eml"))
    assert names == [
        "2026-W48.eml",
        "2026-W48.for-ann@example.org.eml",
        "2026-W48.for-cy@example.org.eml",
    ]
    assert result.output.count("dry run: message for ") == 3
    assert [kind for kind, _, _ in sends(seeded_database)] == ["dry_run"] * 3
    assert "index.html" in {p.name for p in out.iterdir()}


def test_a_missing_library_stops_the_send_before_anything_is_written(
    seeded_database: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The readers' library files are checked with the other mail settings, before a
    flow runs: exit 2 naming the file and the reader; no report file, no message."""
    missing = tmp_path / "gone.bib"
    configure_smtp(monkeypatch, 1, READERS=json.dumps([ANN, {**CY, "library": str(missing)}]))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["report", "--week", WEEK, "--database", str(seeded_database), "--report-dir", str(out),
         "--as-of", SENT_AT, "--dry-run"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert f"library file {missing}" in result.output
    assert "(the library of reader cy@example.org)" in result.output
    assert not out.exists()
    assert sends(seeded_database) == []


def test_each_report_run_rewrites_the_archive(seeded_database: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    for week in (WEEK, "2026-W49"):
        weekly_report(week=week, as_of=SENT_AT, database=str(seeded_database), report_dir=str(out))
    index = (out / "index.html").read_text(encoding="utf-8")
    weeks = re.findall(r">week (\d{4}-W\d\d)</a>", index)
    assert weeks == ["2026-W49", "2026-W48"]
    assert "54 new papers · 3 duplicates · 3 listing files · 0 entries quarantined" in index
    assert "no new listings" in index
    assert 'href="2026-W48-new-papers.csv"' in index and 'href="2026-W49.txt"' in index
