"""The quarantine: what was rejected, and releasing an entry after a person looked at it.

Nothing is dropped: a rejected file keeps its bytes (``raw_bytes``) or text, a
rejected entry its raw text, with plain-language reasons and the failed
expectations. Releasing an entry loads it as if it had passed (a paper, an
occurrence at its original file and position) and records who approved it, when
and why, on the quarantine row. A whole file cannot be released: fix it and drop
it into the folder again (it is then read as a new version of the listing).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from paperwatch import db
from paperwatch.ingest.clean import clean_abstract


class QuarantineError(ValueError):
    """The quarantine row does not exist, is a whole file, or was already released."""


@dataclass(frozen=True, slots=True)
class Release:
    """What releasing an entry did: the paper it became, and whether that paper is new."""

    quarantine_id: int
    path: str
    position: int
    paper_id: str
    new_paper: bool


def list_quarantine(
    con: duckdb.DuckDBPyConnection, include_released: bool = False
) -> list[dict[str, Any]]:
    """Quarantined items, oldest first: id, kind, path, position, line, reasons, when, release."""
    return db.query(con, "quarantine_items", include_released=include_released)


def release_entry(
    con: duckdb.DuckDBPyConnection,
    quarantine_id: int,
    *,
    by: str,
    note: str | None,
    at: datetime,
    week: str,
) -> Release:
    """Load a quarantined entry, recording who released it.

    Args:
        con: a read-write connection.
        quarantine_id: ``quarantine.quarantine_id`` of an entry (not a file).
        by: who approved the release (recorded in ``released_by``).
        note: why (recorded in ``release_note``).
        at: the release time, aware UTC (the paper's ``first_seen`` if it is new).
        week: ISO week of ``at`` in the configured time zone.

    Raises:
        QuarantineError: no such row, a whole file, already released, a record without
            an abstract, or nothing left of the entry once markup is removed.
    """
    row = con.execute(
        "select kind, file_id, path, position, line, raw_text, released_at, released_by, reasons "
        "from quarantine where quarantine_id = ?",
        [quarantine_id],
    ).fetchone()
    if row is None:
        raise QuarantineError(
            f"no quarantined item #{quarantine_id} (see `paperwatch quarantine list`)"
        )
    kind, file_id, path, position, line, raw_text, released_at, released_by, reasons = row
    if released_at is not None:
        raise QuarantineError(
            f"#{quarantine_id} was already released by {released_by} on {released_at:%Y-%m-%d %H:%M}"
        )
    if kind != "entry":
        raise QuarantineError(
            f"#{quarantine_id} is a whole file ({path}: {'; '.join(reasons)}); fix the file and "
            "put it in the watched folder again: it is then loaded as a new version of the listing"
        )
    if "no abstract" in (reasons or []):
        raise QuarantineError(
            f"#{quarantine_id} ({path}:{line}) is a record without an abstract: there is no "
            "abstract to load (its title alone is not a paper); add the abstract to the "
            "listing and put the file in the watched folder again"
        )
    cleaned = clean_abstract(raw_text or "")
    if not cleaned.abstract:
        raise QuarantineError(
            f"#{quarantine_id} ({path}:{line}) has no text left once markup is removed"
        )
    header = con.execute(
        "select venue, year from listing_files where file_id = ?", [file_id]
    ).fetchone()
    venue, year = header if header else (None, None)
    with db.transaction(con):
        exists = con.execute(
            "select 1 from papers where paper_id = ?", [cleaned.paper_id]
        ).fetchone()
        if exists is None:
            con.execute(
                "insert into papers (paper_id, abstract, abstract_raw, method_name, first_sentence, "
                "word_count, code_urls, venue, year, first_file_id, first_position, first_seen, "
                "first_seen_week) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    cleaned.paper_id,
                    cleaned.abstract,
                    raw_text,
                    cleaned.method_name,
                    cleaned.first_sentence,
                    cleaned.word_count,
                    list(cleaned.code_urls),
                    venue,
                    year,
                    file_id,
                    position,
                    at,
                    week,
                ],
            )
        con.execute(
            "insert into paper_occurrences (file_id, position, line, paper_id, raw_text, run_id, "
            "listed_number) values (?, ?, ?, ?, ?, ?, ?)",
            [
                file_id,
                position,
                line,
                cleaned.paper_id,
                raw_text,
                f"release-{quarantine_id}",
                cleaned.listed_number,
            ],
        )
        con.execute(
            "update quarantine set released_at = ?, released_by = ?, release_note = ? where quarantine_id = ?",
            [at, by, note, quarantine_id],
        )
        con.execute(
            "update listing_files set entries_loaded = entries_loaded + 1, "
            "entries_quarantined = entries_quarantined - 1 where file_id = ?",
            [file_id],
        )
    return Release(quarantine_id, path, position, cleaned.paper_id, exists is None)
