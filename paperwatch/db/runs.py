"""Ingestion runs: their id and clock, what loading a file did, and the ``ingest_runs`` rows."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

import duckdb

from paperwatch import db


@dataclass(frozen=True, slots=True)
class RunContext:
    """The ingestion run: id, its clock (aware UTC) and that clock's ISO week."""

    run_id: str
    as_of: datetime
    week: str


@dataclass(slots=True)
class FileOutcome:
    """What loading one file did. ``status``: loaded | quarantined | duplicate | moved |
    unchanged | vanished."""

    rel: str
    status: str
    file_id: int | None = None
    entries: int = 0
    entries_loaded: int = 0
    entries_quarantined: int = 0
    new_papers: int = 0
    exact_duplicates: int = 0
    reason: str | None = None
    new_paper_ids: list[str] = field(default_factory=list)
    #: :func:`paperwatch.analysis.terms.abstract_key` of each new paper's abstract (same order).
    new_paper_keys: list[str] = field(default_factory=list)


def start_run(
    con: duckdb.DuckDBPyConnection, run: RunContext, folder: str, started_at: datetime
) -> list[str]:
    """Record a run as ``running``, and earlier runs still ``running`` as ``interrupted``.

    Call it holding the writer lock (:mod:`paperwatch.db.writer_lock`): then no other run
    can be going, and a run still ``running`` ended without finishing (killed, crashed).
    Its counts are taken from the rows it wrote (``sql/queries/mark_interrupted_runs.sql``).

    Returns:
        The ids of the runs marked ``interrupted``.
    """
    con.execute(
        "insert into ingest_runs (run_id, started_at, as_of, week, folder) values (?, ?, ?, ?, ?)",
        [run.run_id, started_at, run.as_of, run.week, folder],
    )
    marked = db.query(con, "mark_interrupted_runs", run_id=run.run_id, now=started_at)
    return [row["run_id"] for row in marked]


def finish_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    counts: dict[str, int],
    finished_at: datetime,
    status: str = "completed",
    error: str | None = None,
) -> None:
    """Record a run's counts (keys are ``ingest_runs`` columns) and final status."""
    assignments = ", ".join(f"{column} = ?" for column in counts)
    con.execute(
        f"update ingest_runs set {assignments}{', ' if counts else ''}finished_at = ?, status = ?, "
        "error = ? where run_id = ?",
        [*counts.values(), finished_at, status, error, run_id],
    )


@dataclass(slots=True)
class IngestSummary:
    """The counts of one ingestion run, as printed by ``paperwatch ingest``."""

    run_id: str
    week: str
    files_seen: int = 0
    files_loaded: int = 0
    files_unchanged: int = 0
    files_duplicate: int = 0
    files_quarantined: int = 0
    files_vanished: int = 0
    #: Files whose bytes were recorded at a path no longer there (also counted unchanged).
    files_moved: int = 0
    entries: int = 0
    entries_loaded: int = 0
    entries_quarantined: int = 0
    new_papers: int = 0
    exact_duplicates: int = 0
    near_duplicates: int = 0
    ignored: list[tuple[str, str]] = field(default_factory=list)
    files: list[FileOutcome] = field(default_factory=list)

    def add(self, outcome: FileOutcome) -> None:
        """Count one file's outcome.

        The summary keeps the outcome without its ``new_paper_ids`` and
        ``new_paper_keys``: the flow uses those per batch and nothing reads them from the
        summary, while the summary is the flow's return value, which Prefect walks
        object by object when the run ends (two strings per new paper: about a second
        of a 100k first ingest in a py-spy profile of the flow process, growing with the
        papers).
        """
        if outcome.new_paper_ids or outcome.new_paper_keys:
            outcome = replace(outcome, new_paper_ids=[], new_paper_keys=[])
        self.files.append(outcome)
        attribute = {
            "loaded": "files_loaded",
            "unchanged": "files_unchanged",
            "duplicate": "files_duplicate",
            "quarantined": "files_quarantined",
            "vanished": "files_vanished",
            "moved": "files_unchanged",
        }[outcome.status]
        setattr(self, attribute, getattr(self, attribute) + 1)
        if outcome.status == "moved":
            self.files_moved += 1
        self.entries += outcome.entries
        self.entries_loaded += outcome.entries_loaded
        self.entries_quarantined += outcome.entries_quarantined
        self.new_papers += outcome.new_papers
        self.exact_duplicates += outcome.exact_duplicates

    @property
    def changed_anything(self) -> bool:
        """True when the run recorded a new file (loaded, duplicate, moved or quarantined)."""
        return bool(
            self.files_loaded or self.files_duplicate or self.files_quarantined or self.files_moved
        )

    def run_counts(self) -> dict[str, int]:
        """The ``ingest_runs`` columns of this summary."""
        return {
            "files_seen": self.files_seen,
            "files_loaded": self.files_loaded,
            "files_unchanged": self.files_unchanged,
            "files_duplicate": self.files_duplicate,
            "files_quarantined": self.files_quarantined,
            "entries": self.entries,
            "entries_loaded": self.entries_loaded,
            "entries_quarantined": self.entries_quarantined,
            "new_papers": self.new_papers,
            "exact_duplicates": self.exact_duplicates,
            "near_duplicates": self.near_duplicates,
        }
