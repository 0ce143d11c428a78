"""Loading prepared listing files into DuckDB: one transaction per file.

Every input byte ends up loaded or quarantined with a reason:

- a file whose (path, sha256) is already recorded is unchanged (its stat is refreshed);
- a file whose bytes equal a recorded file at another path is a ``duplicate``
  row pointing at the original, and adds no occurrences;
- a file that cannot be read as a listing (not UTF-8, NUL bytes, too large) is
  ``quarantined`` whole, its bytes kept in ``quarantine.raw_bytes``;
- a file whose preparation failed (paperwatch raised, or its worker died or went over
  the memory ceiling) is ``quarantined`` whole with ``internal_error`` and the
  paperwatch version (:func:`quarantine_unprepared`); it is read again only when its
  bytes change or another version runs;
- otherwise the file is ``loaded``: entries that fail a critical expectation go
  to ``quarantine`` with their raw text and reasons, the others become
  ``paper_occurrences`` (and ``papers`` rows for abstracts not seen before).

A failure part-way through a file rolls its transaction back: no half-loaded file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import duckdb
import polars as pl

from paperwatch import __version__, db
from paperwatch.analysis.terms import abstract_key
from paperwatch.db.runs import FileOutcome, RunContext
from paperwatch.db.writes import (
    BatchWrites,
    Writes,
    existing_paper_ids,
    insert_file_row,
    insert_frame,
    previous_loaded,
)
from paperwatch.ingest.files import (
    ListingFileStat,
    PreparedFile,
    ScanResult,
    prepare_file,
    read_listing_file,
    select_changed,
)
from paperwatch.ingest.parse import sequence_number
from paperwatch.ingest.validate import ExpectationResult, SuiteResult, failure_reasons


@dataclass(frozen=True, slots=True)
class CheckedFile:
    """One file's rows of the suite batches and the suite results restricted to them.

    ``file_row`` is its one-row slice of :func:`paperwatch.ingest.frames.files_frame`;
    ``entries`` its rows of :func:`paperwatch.ingest.frames.entries_frame` (position order).
    """

    file_row: pl.DataFrame
    file_checks: SuiteResult
    entries: pl.DataFrame
    entry_checks: SuiteResult


def known_stats(con: duckdb.DuckDBPyConnection) -> set[tuple[str, int, int]]:
    """(path, size, mtime_ns) of the latest version recorded at each path, for the
    stat-first scan (an earlier version restored with its old mtime is still read; a
    file whose preparation failed under another paperwatch version is read again)."""
    rows = db.query(con, "known_file_stats", version=__version__)
    return {(str(r["path"]), int(r["size_bytes"]), int(r["mtime_ns"])) for r in rows}


def nothing_to_ingest(con: duckdb.DuckDBPyConnection, scan: ScanResult) -> bool:
    """True when an ingestion run over ``scan`` would change nothing in the database.

    That is: the schema is current; every scanned file is recorded with its size and
    mtime (:func:`known_stats`); every passed-over path was mentioned before; no
    paper lacks its signature, comparison or terms and no run is left ``running`` (a run would
    complete those). Reads only; a read-only connection will do.
    """
    if not db.schema_is_current(con):
        return False
    if select_changed(scan.files, known_stats(con)):
        return False
    if scan.ignored:
        known = {r[0] for r in con.execute("select path from ignored_paths").fetchall()}
        if any(path not in known for path, _ in scan.ignored):
            return False
    pending = db.query(con, "pending_derived_work")[0]
    if pending["unsketched"] or pending["uncompared"] or pending["unextracted"]:
        return False
    running = con.execute("select count(*) from ingest_runs where status = 'running'").fetchone()
    return not (running and running[0])


def known_sequence_numbers(con: duckdb.DuckDBPyConnection) -> set[int]:
    """Sequence numbers of the listing files recorded so far (copies and moves excluded)."""
    rows = con.execute(
        "select distinct sequence_number from listing_files "
        "where sequence_number is not null and status not in ('duplicate', 'moved')"
    ).fetchall()
    return {int(r[0]) for r in rows}


def recorded_sequence_numbers(outcomes: Iterable[FileOutcome]) -> set[int]:
    """Sequence numbers that ``outcomes`` (of :func:`load_batch`) added to the listings
    :func:`known_sequence_numbers` reads back: those of files loaded or quarantined, not
    of copies, moves or files that vanished (so a run's later batches see the numbers a
    later run would)."""
    numbers = (
        sequence_number(PurePath(o.rel).name)
        for o in outcomes
        if o.status in ("loaded", "quarantined")
    )
    return {n for n in numbers if n is not None}


def known_content_sizes(con: duckdb.DuckDBPyConnection) -> set[int]:
    """The sizes (bytes) of the files recorded so far: a file of another size cannot have
    recorded bytes, so :func:`recognise_known_content` need not read it."""
    return {
        int(r[0]) for r in con.execute("select distinct size_bytes from listing_files").fetchall()
    }


def recognise_known_content(
    con: duckdb.DuckDBPyConnection,
    hashed: list[tuple[ListingFileStat, str]],
    present: set[str],
    run: RunContext,
) -> list[FileOutcome]:
    """Record, without parsing them, the files whose bytes are recorded already, in one
    transaction (a moved or copied folder costs reading and hashing, not parsing).

    Each ``(stat, sha256)`` of ``hashed`` is ``unchanged`` (the latest version at its path
    has these bytes; stat refreshed), a ``duplicate`` (the bytes are recorded at another
    path in ``present``, the scan's paths), ``moved`` (recorded at a path no longer there),
    or not recognised (nothing returned: it is prepared). New rows take venue, year,
    header, entry count and format from the original; files whose preparation failed
    (``internal_error``) are no originals. Rules: docs/design.md, "Files known by content".

    Returns:
        A :class:`FileOutcome` per recognised file, in the order of ``hashed``.

    Raises:
        duckdb.Error: the transaction failed and was rolled back (nothing recorded).
    """
    if not hashed:
        return []
    outcomes: list[FileOutcome] = []
    with db.transaction(con):
        w = BatchWrites(con, [(stat.rel, sha) for stat, sha in hashed])
        found: list[tuple[ListingFileStat, str, tuple[int, str]]] = []
        for stat, sha in hashed:
            unchanged = _unchanged(w, stat, sha)
            if unchanged is not None:
                outcomes.append(FileOutcome(rel=stat.rel, status="unchanged", file_id=unchanged))
                continue
            original = w.original(sha, stat.rel)
            if original is not None:
                found.append((stat, sha, original))
        details = _original_details(con, sorted({original[0] for _, _, original in found}))
        for stat, sha, (original_id, original_path) in found:
            moved = original_path not in present
            reason = f"moved from {original_path}" if moved else f"same bytes as {original_path}"
            row = details[original_id] | {
                "sha256": sha,
                "path": stat.rel,
                "name": stat.name,
                "sequence_number": sequence_number(stat.name),
                "size_bytes": stat.size,
                "mtime_ns": stat.mtime_ns,
                "first_seen": run.as_of,
                "first_seen_week": run.week,
                "run_id": run.run_id,
                "paperwatch_version": __version__,
                "supersedes": w.previous_loaded(stat.rel),
                "status": "moved" if moved else "duplicate",
                "duplicate_of": original_id,
                "reason": reason,
                "entries_loaded": 0,
                "entries_quarantined": 0,
            }
            file_id = w.insert_file_row(row)
            outcomes.append(
                FileOutcome(rel=stat.rel, status=str(row["status"]), file_id=file_id, reason=reason)
            )
        w.flush()
    order = {stat.rel: i for i, (stat, _) in enumerate(hashed)}
    outcomes.sort(key=lambda o: order[o.rel])
    return outcomes


def _original_details(
    con: duckdb.DuckDBPyConnection, file_ids: list[int]
) -> dict[int, dict[str, object]]:
    """``listing_files`` fields a copy takes from its original (same bytes, same parse):
    venue, year, header, entry count (0 when unset), format and its reason, by file_id."""
    if not file_ids:
        return {}
    return {
        int(r.pop("file_id")): r for r in db.query(con, "listing_file_details", file_ids=file_ids)
    }


def record_ignored(
    con: duckdb.DuckDBPyConnection, ignored: list[tuple[str, str]], run: RunContext
) -> list[tuple[str, str]]:
    """Record passed-over paths; return those not recorded before (to mention once)."""
    if not ignored:
        return []
    known = {r[0] for r in con.execute("select path from ignored_paths").fetchall()}
    fresh = [(path, reason) for path, reason in ignored if path not in known]
    if fresh:
        frame = pl.DataFrame(
            {
                "path": [p for p, _ in fresh],
                "reason": [r for _, r in fresh],
                "first_seen": [run.as_of] * len(fresh),
                "run_id": [run.run_id] * len(fresh),
            }
        )
        insert_frame(con, "ignored_paths", frame)
    return fresh


def _validation_rows(w: Writes, file_id: int | None, run: RunContext, *suites: SuiteResult) -> None:
    """Insert the results of ``suites`` for one file (one insert, or buffered)."""
    results = [r for suite in suites for r in suite.results]
    w.insert_validation(
        {
            "run_id": [run.run_id] * len(results),
            "file_id": [file_id] * len(results),
            "suite": [r.suite for r in results],
            "expectation": [r.expectation for r in results],
            "severity": [r.severity for r in results],
            "reason": [r.reason for r in results],
            "outcome": [r.outcome for r in results],
            "success": [r.outcome == "passed" for r in results],
            "element_count": [r.element_count for r in results],
            "unexpected_count": [r.unexpected_count for r in results],
            "unexpected_examples": [list(r.unexpected_examples) for r in results],
            "details": [r.details or None for r in results],
            "validated_at": [run.as_of] * len(results),
        }
    )


def _base_row(prepared: PreparedFile, run: RunContext) -> dict[str, object]:
    header = prepared.header
    return {
        "sha256": prepared.sha256,
        "path": prepared.stat.rel,
        "name": prepared.stat.name,
        "sequence_number": prepared.sequence_number,
        "size_bytes": prepared.stat.size,
        "mtime_ns": prepared.stat.mtime_ns,
        "venue": header.venue if header else None,
        "year": header.year if header else None,
        "header": header.text if header else None,
        "first_seen": run.as_of,
        "first_seen_week": run.week,
        "run_id": run.run_id,
        "paperwatch_version": __version__,
        "format": prepared.format,
        "format_reason": prepared.format_reason,
    }


def _unchanged(w: Writes, stat: ListingFileStat, sha256: str) -> int | None:
    """The file_id of the latest version at ``stat.rel`` when it has these bytes (its stat
    is refreshed), else None. A version whose preparation failed under another paperwatch
    is not unchanged: the file is tried again."""
    latest = w.latest(stat.rel)
    if latest is None or latest[1] != sha256 or latest[2]:
        return None
    w.refresh_stat(latest[0], stat.size, stat.mtime_ns)
    return latest[0]


def join_external_ids(
    good: pl.DataFrame, existing: set[str], known_external: dict[str, str]
) -> pl.DataFrame:
    """``good`` (entry rows) with ``text_paper_id`` (the id of an entry's own text, where it
    differs from its ``paper_id``; else null) and
    ``paper_id`` joined on ``external_id``: an entry whose text is a paper not seen before
    (not in ``existing``, not earlier in the file) but whose external id names a paper
    already loaded (``known_external``) or an earlier entry of the file is an occurrence
    of that paper (an edited abstract of the same arXiv paper is a revision, not a new
    paper). Text identity wins: an entry whose text is a known paper keeps it. An id the
    file gives to two different texts (a volume's DOI on every record) joins nothing.
    """
    if good["external_id"].null_count() == good.height:
        # No external ids (a plain-text listing): nothing joins, every text is its own.
        return good.with_columns(pl.lit(None, pl.String).alias("text_paper_id"))
    text_ids = good["paper_id"].to_list()
    externals = good["external_id"].to_list()
    # An id that the file itself gives to different texts names no single paper (a
    # proceedings volume's DOI on every record): it joins nothing.
    texts_by_id: dict[str, set[str]] = {}
    for pid, ext in zip(text_ids, externals, strict=True):
        if ext is not None:
            texts_by_id.setdefault(ext, set()).add(pid)
    shared = {ext for ext, texts in texts_by_id.items() if len(texts) > 1}
    mapping = dict(known_external)
    seen = set(existing)
    joined = []
    for pid, ext in zip(text_ids, externals, strict=True):
        target = pid
        if ext is not None and ext not in shared:
            if pid not in seen and ext in mapping:
                target = mapping[ext]
            else:
                mapping.setdefault(ext, pid)
        seen.add(pid)
        joined.append(target)
    text_ids_joined = [
        pid if target != pid else None for pid, target in zip(text_ids, joined, strict=True)
    ]
    return good.with_columns(
        pl.Series("text_paper_id", text_ids_joined, pl.String),
        pl.Series("paper_id", joined, pl.String),
    )


def _quarantine_whole_file(
    w: Writes,
    file_id: int,
    prepared: PreparedFile,
    reasons: list[str],
    expectations: list[str],
    run: RunContext,
) -> None:
    """The ``quarantine`` row of a whole file: its text when it was decoded, its bytes when
    they were kept (not text, or not prepared)."""
    row = pl.DataFrame(
        {
            "kind": ["file"],
            "file_id": [file_id],
            "path": [prepared.stat.rel],
            "line": [prepared.error_line],
            "raw_text": [prepared.text],
            "raw_bytes": [prepared.data],  # the bytes of a file that is not text, or not prepared
            "reasons": [reasons],
            "expectations": [expectations],
            "quarantined_at": [run.as_of],
            "week": [run.week],
            "run_id": [run.run_id],
        },
        schema={
            "kind": pl.String,
            "file_id": pl.Int32,
            "path": pl.String,
            "line": pl.Int32,
            "raw_text": pl.String,
            "raw_bytes": pl.Binary,
            "reasons": pl.List(pl.String),
            "expectations": pl.List(pl.String),
            "quarantined_at": pl.Datetime("us", "UTC"),
            "week": pl.String,
            "run_id": pl.String,
        },
    )
    w.insert_frame("quarantine", row)


#: ``quarantine.expectations`` of a file whose preparation failed (no suite judged it).
PREPARE_FAILED = "paperwatch.prepare_file"


def quarantine_unprepared(
    con: duckdb.DuckDBPyConnection,
    stat: ListingFileStat,
    reason: str,
    run: RunContext,
    max_bytes: int,
) -> FileOutcome:
    """Quarantine whole, in one transaction, a file whose preparation failed (see
    :attr:`paperwatch.db.batches.PreparedBatch.failed`): its bytes are read again here and
    kept in ``quarantine.raw_bytes``; its ``listing_files`` row has ``internal_error``
    and this paperwatch's version, so the stat-first scan skips it until its bytes change
    or another version runs (:func:`known_stats`).

    Args:
        con: a read-write connection with the schema applied.
        stat: the file as scanned.
        reason: the quarantine reason (:func:`paperwatch.ingest.workers.internal_error_reason`).
        run: the run's id and clock.
        max_bytes: ``Settings.max_file_bytes``: a file that grew past it keeps no bytes.

    Returns:
        A :class:`FileOutcome`: ``quarantined`` (no entries counted: it was not parsed);
        ``unchanged`` when this version already quarantined these bytes at this path;
        ``vanished`` when the file can no longer be read.

    Raises:
        duckdb.Error: the insert failed; the transaction was rolled back.
    """
    try:
        data = read_listing_file(stat, max_bytes)
    except OSError as exc:
        detail = exc.strerror or type(exc).__name__
        return FileOutcome(rel=stat.rel, status="vanished", reason=f"cannot be read: {detail}")
    if data is None:
        prepared = prepare_file(stat, None, max_bytes)  # hashes it without reading it whole
    else:
        prepared = PreparedFile(stat=stat, sha256=hashlib.sha256(data).hexdigest(), data=data)
    w = Writes(con)
    with db.transaction(con):
        unchanged = _unchanged(w, stat, prepared.sha256)
        if unchanged is not None:
            return FileOutcome(rel=stat.rel, status="unchanged", file_id=unchanged)
        row = _base_row(prepared, run) | {
            "supersedes": previous_loaded(con, stat.rel),
            "status": "quarantined",
            "reason": reason,
            "internal_error": True,
            "entry_count": None,
            "entries_loaded": 0,
            "entries_quarantined": 0,
        }
        file_id = insert_file_row(con, row)
        _quarantine_whole_file(w, file_id, prepared, [reason], [PREPARE_FAILED], run)
    return FileOutcome(rel=stat.rel, status="quarantined", file_id=file_id, reason=reason)


def load_file(
    con: duckdb.DuckDBPyConnection,
    prepared: PreparedFile,
    checked: CheckedFile,
    run: RunContext,
    known: set[str] | None = None,
    writes: BatchWrites | None = None,
) -> FileOutcome:
    """Load one prepared file in one transaction (or, with ``writes``, as part of the
    batch's transaction that the caller holds: see :class:`BatchWrites`).

    Args:
        con: a read-write connection with the schema applied.
        prepared: the file (from :func:`paperwatch.ingest.files.prepare_file`).
        checked: its rows and suite results (``listing_files`` and ``papers``).
        run: the run's id and clock.
        known: the ids among this file's entries that are in ``papers`` already (the
            batch loader looks them up once per batch, :func:`existing_paper_ids`);
            None to look them up here.
        writes: the batch's :class:`BatchWrites` (the caller opened the transaction and
            calls :meth:`BatchWrites.flush` before committing); None: this file's own
            transaction, its rows written at once.

    Returns:
        A :class:`FileOutcome` with the counts.

    Raises:
        duckdb.Error: the load failed; the transaction was rolled back.
    """
    if writes is not None:
        return _load_file(con, prepared, checked, run, known, writes)
    with db.transaction(con):
        return _load_file(con, prepared, checked, run, known, Writes(con))


def _load_file(
    con: duckdb.DuckDBPyConnection,
    prepared: PreparedFile,
    checked: CheckedFile,
    run: RunContext,
    known: set[str] | None,
    w: Writes,
) -> FileOutcome:
    rel = prepared.stat.rel
    entries, validation = checked.entries, checked.entry_checks
    # The latest version recorded at this path: the same bytes again are unchanged; other
    # bytes (including an earlier version restored) are a new version of the listing.
    unchanged = _unchanged(w, prepared.stat, prepared.sha256)
    if unchanged is not None:
        return FileOutcome(rel=rel, status="unchanged", file_id=unchanged)

    row = _base_row(prepared, run)
    row["supersedes"] = w.previous_loaded(rel)
    original = w.original(prepared.sha256, rel)
    if original is not None:
        return _record_duplicate(w, prepared, row, original)
    file_failures = checked.file_checks.critical_failures().get(0, [])
    if file_failures:
        return _quarantine_failed_file(w, prepared, checked, row, file_failures, run)

    failures = validation.critical_failures()
    file_id = w.insert_file_row(
        row
        | {
            "status": "loaded",
            "entry_count": entries.height,
            "loaded_at": run.as_of,
            "entries_quarantined": len(failures),
            "entries_loaded": entries.height - len(failures),
        },
    )
    _validation_rows(w, file_id, run, checked.file_checks, validation)
    failed_index = sorted(failures)
    if failed_index:
        _quarantine_entries(w, entries, failures, file_id, rel, run)
    good = (
        entries.with_row_index("_row").filter(~pl.col("_row").is_in(failed_index)).drop("_row")
        if failed_index
        else entries
    )
    good, existing, first, exact_duplicates = _first_occurrences(
        con, w, good, known, rel, carried_over=row["supersedes"] is not None
    )
    new_ids = [pid for pid, new in zip(good["paper_id"].to_list(), first, strict=True) if new]
    new_keys = (
        [abstract_key(t) for t, new in zip(good["abstract"].to_list(), first, strict=True) if new]
        if new_ids
        else []
    )
    w.insert_entries(good, first, file_id, row["venue"], row["year"], run)
    if existing:  # known papers may get a title or an external id from this file
        w.fill_record_fields(good.filter(pl.col("paper_id").is_in(list(existing))))
    return FileOutcome(
        rel=rel,
        status="loaded",
        file_id=file_id,
        entries=entries.height,
        entries_loaded=good.height,
        entries_quarantined=len(failed_index),
        new_papers=len(new_ids),
        exact_duplicates=exact_duplicates,
        new_paper_ids=new_ids,
        new_paper_keys=new_keys,
    )


def _record_duplicate(
    w: Writes, prepared: PreparedFile, row: dict[str, object], original: tuple[int, str]
) -> FileOutcome:
    """The ``duplicate`` row of a file whose bytes equal ``original`` (file_id, path)."""
    reason = f"same bytes as {original[1]}"
    file_id = w.insert_file_row(
        row
        | {
            "status": "duplicate",
            "duplicate_of": int(original[0]),
            "reason": reason,
            "entry_count": prepared.entry_count,
            "entries_loaded": 0,
            "entries_quarantined": 0,
        },
    )
    # Its entries are the original's: not counted again as read, loaded or quarantined.
    return FileOutcome(rel=prepared.stat.rel, status="duplicate", file_id=file_id, reason=reason)


def _quarantine_failed_file(
    w: Writes,
    prepared: PreparedFile,
    checked: CheckedFile,
    row: dict[str, object],
    file_failures: list[ExpectationResult],
    run: RunContext,
) -> FileOutcome:
    """Quarantine whole a file that failed a critical ``listing_files`` expectation."""
    reasons = failure_reasons(checked.file_row, 0, file_failures)
    file_id = w.insert_file_row(
        row
        | {
            "status": "quarantined",
            "reason": "; ".join(reasons),
            "entry_count": prepared.entry_count if prepared.is_text else None,
            "entries_loaded": 0,
            "entries_quarantined": prepared.entry_count if prepared.is_text else 0,
        },
    )
    _validation_rows(w, file_id, run, checked.file_checks)
    expectations = [f"{r.suite}.{r.expectation}" for r in file_failures]
    _quarantine_whole_file(w, file_id, prepared, reasons, expectations, run)
    return FileOutcome(
        rel=prepared.stat.rel,
        status="quarantined",
        file_id=file_id,
        reason="; ".join(reasons),
        entries=prepared.entry_count,
        entries_quarantined=prepared.entry_count,
    )


def _quarantine_entries(
    w: Writes,
    entries: pl.DataFrame,
    failures: dict[int, list[ExpectationResult]],
    file_id: int,
    rel: str,
    run: RunContext,
) -> None:
    """The ``quarantine`` rows of the entries (by row index) that failed a critical check."""
    failed_index = sorted(failures)
    bad = entries[failed_index]
    quarantined = pl.DataFrame(
        {
            "kind": ["entry"] * bad.height,
            "file_id": [file_id] * bad.height,
            "path": [rel] * bad.height,
            "position": bad["position"],
            "line": bad["line"],
            "raw_text": bad["abstract_raw"],
            "record_fields": record_fields(bad),
            "reasons": [failure_reasons(entries, i, failures[i]) for i in failed_index],
            "expectations": [
                [f"{r.suite}.{r.expectation}" for r in failures[i]] for i in failed_index
            ],
            "quarantined_at": [run.as_of] * bad.height,
            "week": [run.week] * bad.height,
            "run_id": [run.run_id] * bad.height,
        }
    )
    w.insert_frame("quarantine", quarantined)


def record_fields(entries: pl.DataFrame) -> list[str | None]:
    """Per row of ``entries`` (an :func:`~paperwatch.ingest.frames.entries_frame`): its
    ``title``, ``authors``, ``url`` and ``external_id`` that are set, and ``as_written``
    (its ``raw_fields``: the record as read, or its fields before they were made safe)
    when set, as a JSON object (UTF-8 text, keys in that order), or None when none is:
    what the quarantine keeps beside the entry's text (``quarantine.record_fields``)."""
    names = ("title", "authors", "url", "external_id")
    out: list[str | None] = []
    for *row, raw in entries.select(*names, "raw_fields").iter_rows():
        fields: dict[str, Any] = {
            name: value for name, value in zip(names, row, strict=True) if value
        }
        if raw:
            fields["as_written"] = json.loads(raw)
        out.append(json.dumps(fields, ensure_ascii=False) if fields else None)
    return out


def _first_occurrences(
    con: duckdb.DuckDBPyConnection,
    w: Writes,
    good: pl.DataFrame,
    known: set[str] | None,
    rel: str,
    *,
    carried_over: bool,
) -> tuple[pl.DataFrame, set[str], list[bool], int]:
    """Which of a file's ``good`` entries are new papers.

    Returns ``(good, existing, first, exact_duplicates)``: ``good`` with ids joined on
    external ids (:func:`join_external_ids`); the ids already in ``papers``; per entry,
    whether it is a paper's first occurrence; and the count of entries repeating a paper
    seen elsewhere or earlier in the file (with ``carried_over``, entries carried from
    earlier versions of this path's listing are not repeats).
    """
    if known is None:
        existing = existing_paper_ids(con, good["paper_id"])
    else:
        existing = known.intersection(good["paper_id"].to_list())
    known_external = w.papers_by_external_id(good["external_id"])
    good = join_external_ids(good, existing, known_external)
    paper_ids = good["paper_id"].to_list()
    existing |= set(known_external.values()) & set(paper_ids)
    existing_elsewhere = existing
    if carried_over:
        carried = {r["paper_id"] for r in db.query(con, "paper_ids_at_path", path=rel)}
        existing_elsewhere = existing - carried
    seen_in_file: set[str] = set()
    exact_duplicates = 0
    first: list[bool] = []
    for pid in paper_ids:
        if pid in existing_elsewhere or pid in seen_in_file:
            exact_duplicates += 1
        first.append(pid is not None and pid not in existing and pid not in seen_in_file)
        seen_in_file.add(pid)
    return good, existing, first, exact_duplicates
