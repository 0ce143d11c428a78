"""The quarantine: what was rejected, and releasing an entry after a person looked at it.

Nothing is dropped: a rejected file keeps its bytes (``raw_bytes``) or text, a
rejected entry its raw text, with plain-language reasons and the failed
expectations. Releasing an entry loads it as if it had passed (a paper, an
occurrence at its original file and position) and records who approved it, when
and why, on the quarantine row. A whole file cannot be released: fix it and drop
it into the folder again (it is then read as a new version of the listing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from paperwatch import db
from paperwatch.ingest.clean import CleanAbstract, clean_abstract


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
    rows = db.query(con, "quarantined_item", quarantine_id=quarantine_id)
    if not rows:
        raise QuarantineError(
            f"no quarantined item #{quarantine_id} (see `paperwatch quarantine list`)"
        )
    item = rows[0]
    cleaned = _releasable(quarantine_id, item)
    entry = {"file_id": item["file_id"], "position": item["position"]}
    fields = _record_fields(item["record_fields"])
    with db.transaction(con):
        new_paper = db.query(
            con,
            "release_paper",
            **entry,
            paper_id=cleaned.paper_id,
            abstract=cleaned.abstract,
            abstract_raw=item["raw_text"],
            method_name=cleaned.method_name,
            first_sentence=cleaned.first_sentence,
            word_count=cleaned.word_count,
            code_urls=list(cleaned.code_urls),
            venue=item["venue"],
            year=item["year"],
            at=at,
            week=week,
            **fields,
        )
        db.query(
            con,
            "release_occurrence",
            **entry,
            line=item["line"],
            paper_id=cleaned.paper_id,
            raw_text=item["raw_text"],
            run_id=f"release-{quarantine_id}",
            listed_number=cleaned.listed_number,
            **fields,
        )
        db.query(con, "mark_released", quarantine_id=quarantine_id, at=at, by=by, note=note)
        db.query(con, "count_released_entry", file_id=item["file_id"])
    return Release(quarantine_id, item["path"], item["position"], cleaned.paper_id, bool(new_paper))


def _record_fields(kept: str | None) -> dict[str, Any]:
    """``quarantine.record_fields`` (JSON, or None) as the ``title``, ``authors``, ``url``
    and ``external_id`` parameters of a release (None where it kept none)."""
    fields = json.loads(kept) if kept else {}
    return {name: fields.get(name) for name in ("title", "authors", "url", "external_id")}


def _releasable(quarantine_id: int, item: dict[str, Any]) -> CleanAbstract:
    """The cleaned abstract of a quarantine row that can be released.

    Raises:
        QuarantineError: already released, a whole file, a record without an abstract,
            or no text left once markup is removed.
    """
    path, line, reasons = item["path"], item["line"], item["reasons"] or []
    if item["released_at"] is not None:
        raise QuarantineError(
            f"#{quarantine_id} was already released by {item['released_by']} on "
            f"{item['released_at']:%Y-%m-%d %H:%M}"
        )
    if item["kind"] != "entry":
        raise QuarantineError(
            f"#{quarantine_id} is a whole file ({path}: {'; '.join(reasons)}); fix the file and "
            "put it in the watched folder again: it is then loaded as a new version of the listing"
        )
    if "no abstract" in reasons:
        raise QuarantineError(
            f"#{quarantine_id} ({path}:{line}) is a record without an abstract: there is no "
            "abstract to load (its title alone is not a paper); add the abstract to the "
            "listing and put the file in the watched folder again"
        )
    cleaned = clean_abstract(item["raw_text"] or "")
    if not cleaned.abstract:
        raise QuarantineError(
            f"#{quarantine_id} ({path}:{line}) has no text left once markup is removed"
        )
    return cleaned
