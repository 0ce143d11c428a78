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
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import accumulate
from pathlib import PurePath
from typing import cast

import duckdb
import polars as pl
import pyarrow as pa

from paperwatch import __version__, db
from paperwatch.analysis.terms import abstract_key
from paperwatch.ingest.files import (
    ListingFileStat,
    PreparedFile,
    ScanResult,
    prepare_file,
    read_listing_file,
    select_changed,
)
from paperwatch.ingest.parse import sequence_number
from paperwatch.ingest.validate import SuiteResult, failure_reasons


@dataclass(frozen=True, slots=True)
class CheckedFile:
    """One file's rows of the suite batches and the suite results restricted to them.

    ``file_row`` is its one-row slice of :func:`paperwatch.ingest.files.files_frame`;
    ``entries`` its rows of :func:`paperwatch.ingest.files.entries_frame` (position order).
    """

    file_row: pl.DataFrame
    file_checks: SuiteResult
    entries: pl.DataFrame
    entry_checks: SuiteResult


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
    transaction (content, not paths: a moved or copied folder costs reading and hashing).

    For each ``(stat, sha256)`` of ``hashed``, in order:

    - the latest version recorded at ``stat.rel`` has these bytes: ``unchanged``, its
      size and mtime refreshed (a folder copied or moved as a whole and watched at its
      new place: the paths relative to it are the same);
    - the bytes are recorded at another path that is in ``present`` (the scan's
      paths): a ``duplicate`` row pointing at that file (``same bytes as …``), as a
      copy found after parsing would be;
    - the bytes are recorded at another path that is no longer there: a ``moved`` row
      pointing at the file (``duplicate_of``, reason ``moved from …``), which adds no
      entries, papers or listing files to the report;
    - otherwise the file is not recognised (returned nothing for it): it is prepared.

    Venue, year, header, entry count, format and its reason of a new row are the
    original's (same bytes, same parse), as when the copy is found after parsing. Files recorded by a paperwatch version whose preparation failed
    (``internal_error``) are not originals: those files are read again.

    Args:
        con: a read-write connection with the schema applied.
        hashed: files and their sha256 (:func:`paperwatch.ingest.files.hash_listing_files`).
        present: the ``rel`` of every file of this scan.
        run: the run's id and clock.

    Returns:
        A :class:`FileOutcome` per recognised file (status ``unchanged``, ``duplicate`` or
        ``moved``), in the order of ``hashed``.

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
        details: dict[int, tuple[object, ...]] = {}
        if found:
            ids = sorted({original[0] for _, _, original in found})
            details = {
                int(r[0]): tuple(r[1:])
                for r in con.execute(
                    "select file_id, venue, year, header, coalesce(entry_count, 0), format, "
                    "format_reason from listing_files where list_contains(?, file_id)",
                    [ids],
                ).fetchall()
            }
        for stat, sha, (original_id, original_path) in found:
            venue, year, header, entry_count, file_format, format_reason = details[original_id]
            moved = original_path not in present
            reason = f"moved from {original_path}" if moved else f"same bytes as {original_path}"
            row = {
                "sha256": sha,
                "path": stat.rel,
                "name": stat.name,
                "sequence_number": sequence_number(stat.name),
                "size_bytes": stat.size,
                "mtime_ns": stat.mtime_ns,
                "venue": venue,
                "year": year,
                "header": header,
                "first_seen": run.as_of,
                "first_seen_week": run.week,
                "run_id": run.run_id,
                "paperwatch_version": __version__,
                "supersedes": w.previous_loaded(stat.rel),
                "status": "moved" if moved else "duplicate",
                "duplicate_of": original_id,
                "reason": reason,
                "entry_count": entry_count,
                "entries_loaded": 0,
                "entries_quarantined": 0,
                "format": file_format,
                "format_reason": format_reason,
            }
            file_id = w.insert_file_row(row)
            outcomes.append(
                FileOutcome(rel=stat.rel, status=str(row["status"]), file_id=file_id, reason=reason)
            )
        w.flush()
    order = {stat.rel: i for i, (stat, _) in enumerate(hashed)}
    outcomes.sort(key=lambda o: order[o.rel])
    return outcomes


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
        _insert_frame(con, "ignored_paths", frame)
    return fresh


#: Columns of ``listing_files`` as :class:`BatchWrites` inserts them.
LISTING_FILES_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "file_id": pl.Int32,
    "sha256": pl.String,
    "path": pl.String,
    "name": pl.String,
    "sequence_number": pl.Int32,
    "size_bytes": pl.Int64,
    "mtime_ns": pl.Int64,
    "venue": pl.String,
    "year": pl.Int32,
    "header": pl.String,
    "entry_count": pl.Int32,
    "entries_loaded": pl.Int32,
    "entries_quarantined": pl.Int32,
    "status": pl.String,
    "duplicate_of": pl.Int32,
    "supersedes": pl.Int32,
    "reason": pl.String,
    "internal_error": pl.Boolean,
    "paperwatch_version": pl.String,
    "format": pl.String,
    "format_reason": pl.String,
    "first_seen": pl.Datetime("us", "UTC"),
    "first_seen_week": pl.String,
    "loaded_at": pl.Datetime("us", "UTC"),
    "run_id": pl.String,
}

#: Columns of the ``validation_results`` rows of one file.
VALIDATION_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "run_id": pl.String,
    "file_id": pl.Int32,
    "suite": pl.String,
    "expectation": pl.String,
    "severity": pl.String,
    "reason": pl.String,
    "outcome": pl.String,
    "success": pl.Boolean,
    "element_count": pl.Int64,
    "unexpected_count": pl.Int64,
    "unexpected_examples": pl.List(pl.String),
    "details": pl.String,
    "validated_at": pl.Datetime("us", "UTC"),
}


class _Writes:
    """Where :func:`load_file` reads what is recorded and writes its rows: straight to the
    connection, one statement each (this class), or buffered for a whole batch
    (:class:`BatchWrites`). Both give the same rows in the same order."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def latest(self, rel: str) -> tuple[int, str, bool] | None:
        """(file_id, sha256, retry) of the latest version recorded at ``rel``."""
        rows = db.query(self.con, "latest_file_version", path=rel, version=__version__)
        if not rows:
            return None
        return int(rows[0]["file_id"]), str(rows[0]["sha256"]), bool(rows[0]["retry"])

    def refresh_stat(self, file_id: int, size: int, mtime_ns: int) -> None:
        self.con.execute(
            "update listing_files set size_bytes = ?, mtime_ns = ? where file_id = ?",
            [size, mtime_ns, file_id],
        )

    def previous_loaded(self, rel: str) -> int | None:
        return _previous_loaded(self.con, rel)

    def original(self, sha256: str, rel: str) -> tuple[int, str] | None:
        """(file_id, path) of the first recorded file with these bytes at another path."""
        row = self.con.execute(
            "select file_id, path from listing_files where sha256 = ? "
            "and status not in ('duplicate', 'moved') and path <> ? and not (internal_error and paperwatch_version is distinct from ?) "
            "order by file_id limit 1",
            [sha256, rel, __version__],
        ).fetchone()
        return (int(row[0]), str(row[1])) if row else None

    def insert_file_row(self, values: dict[str, object]) -> int:
        return _insert_file_row(self.con, values)

    def insert_frame(self, table: str, frame: pl.DataFrame) -> None:
        _insert_frame(self.con, table, frame)

    def insert_validation(self, columns: dict[str, list[object]]) -> None:
        """Rows of ``validation_results`` (columns of :data:`VALIDATION_SCHEMA`)."""
        self.insert_frame("validation_results", pl.DataFrame(columns, schema=VALIDATION_SCHEMA))

    def papers_by_external_id(self, external_ids: pl.Series) -> dict[str, str]:
        """``{external_id: paper_id}`` of the ids already loaded (:func:`papers_by_external_id`)."""
        return papers_by_external_id(self.con, external_ids)

    def fill_record_fields(self, good: pl.DataFrame) -> None:
        """Give known papers without a title the first title, authors, URL and external id
        of ``good``'s rows (:func:`_fill_record_fields`)."""
        _fill_record_fields(self.con, good)

    def insert_entries(
        self,
        good: pl.DataFrame,
        first: list[bool],
        file_id: int,
        venue: object,
        year: object,
        run: RunContext,
    ) -> None:
        """The ``papers`` (entries marked ``first``) and ``paper_occurrences`` rows of a
        loaded file's ``good`` entries."""
        n = good.height
        papers, occurrences = _entry_frames(
            good, first, [file_id] * n, [venue] * n, [year] * n, run
        )
        self.insert_frame("papers", papers)
        self.insert_frame("paper_occurrences", occurrences)


class BatchWrites(_Writes):
    """The writes of a batch of files, for one transaction: what is recorded about the
    batch's paths and contents is read in three queries up front, and the rows of
    ``listing_files``, ``validation_results``, ``quarantine``, ``papers`` and
    ``paper_occurrences`` (and the refreshed stats) are inserted once per table by
    :meth:`flush`. ``listing_files`` ids come from its sequence in file order, as one insert
    per file would give them: the first is drawn when the first row is added, the rest
    when the rows are flushed (checked to follow on; this process holds the writer lock).

    Args:
        con: a read-write connection inside a transaction (the lookups see it).
        files: the batch's files (``rel`` and ``sha256``).
    """

    _TABLES = ("validation_results", "quarantine", "papers", "paper_occurrences")

    def __init__(self, con: duckdb.DuckDBPyConnection, files: list[tuple[str, str]]) -> None:
        super().__init__(con)
        keys = pl.DataFrame(
            {"rel": [r for r, _ in files], "sha256": [h for _, h in files]},
            schema={"rel": pl.String, "sha256": pl.String},
        )
        con.register("_pw_batch", keys.to_arrow())
        try:
            self._latest = {
                str(r[0]): (int(r[1]), str(r[2]), bool(r[3]))
                for r in con.execute(
                    "select path, file_id, sha256, "
                    "internal_error and paperwatch_version is distinct from ? "
                    "from listing_files where path in (select rel from _pw_batch) "
                    "qualify row_number() over "
                    "(partition by path order by first_seen desc, file_id desc) = 1",
                    [__version__],
                ).fetchall()
            }
            self._previous = {
                str(r[0]): int(r[1])
                for r in con.execute(
                    "select path, file_id from listing_files "
                    "where status = 'loaded' and path in (select rel from _pw_batch) "
                    "qualify row_number() over "
                    "(partition by path order by first_seen desc, file_id desc) = 1"
                ).fetchall()
            }
            self._originals: dict[str, list[tuple[int, str]]] = {}
            for sha, file_id, path in con.execute(
                "select sha256, file_id, path from listing_files "
                "where sha256 in (select sha256 from _pw_batch) "
                "and status not in ('duplicate', 'moved') "
                "and not (internal_error and paperwatch_version is distinct from ?) "
                "order by file_id",
                [__version__],
            ).fetchall():
                self._originals.setdefault(str(sha), []).append((int(file_id), str(path)))
        finally:
            con.unregister("_pw_batch")
        self._frames: dict[str, list[pl.DataFrame]] = {t: [] for t in self._TABLES}
        self._stats: list[tuple[int, int, int]] = []
        self._file_rows: list[dict[str, object]] = []
        self._first_id: int | None = None
        self._validation: dict[str, list[object]] = {c: [] for c in VALIDATION_SCHEMA}
        self._entries: list[pl.DataFrame] = []
        self._first: list[bool] = []
        self._entry_file_ids: list[int] = []
        self._venues: list[object] = []
        self._years: list[object] = []
        self._run: RunContext | None = None
        self._external: dict[str, str] = {}  # external id -> paper id, of buffered entries
        self._fills: list[pl.DataFrame] = []  # rows for fill_record_fields, after the inserts

    def latest(self, rel: str) -> tuple[int, str, bool] | None:
        return self._latest.get(rel)

    def refresh_stat(self, file_id: int, size: int, mtime_ns: int) -> None:
        self._stats.append((file_id, size, mtime_ns))

    def previous_loaded(self, rel: str) -> int | None:
        return self._previous.get(rel)

    def original(self, sha256: str, rel: str) -> tuple[int, str] | None:
        return next((o for o in self._originals.get(sha256, ()) if o[1] != rel), None)

    def insert_file_row(self, values: dict[str, object]) -> int:
        if self._first_id is None:
            self._first_id = int(
                self.con.execute("select nextval('listing_files_seq')").fetchall()[0][0]
            )
        file_id = self._first_id + len(self._file_rows)
        self._file_rows.append(values | {"file_id": file_id})
        if values["status"] not in ("duplicate", "moved"):
            self._originals.setdefault(str(values["sha256"]), []).append(
                (file_id, str(values["path"]))
            )
        return file_id

    def insert_frame(self, table: str, frame: pl.DataFrame) -> None:
        if frame.height:
            self._frames[table].append(frame)

    def insert_validation(self, columns: dict[str, list[object]]) -> None:
        for name, values in columns.items():
            self._validation[name].extend(values)

    def papers_by_external_id(self, external_ids: pl.Series) -> dict[str, str]:
        """As :meth:`_Writes.papers_by_external_id`, and the external ids of the batch's
        entries buffered so far (an id loaded before the batch wins: it is earlier)."""
        if external_ids.null_count() == external_ids.len():
            return {}
        found = papers_by_external_id(self.con, external_ids)
        for ext in external_ids.drop_nulls().unique().to_list():
            if ext not in found and ext in self._external:
                found[ext] = self._external[ext]
        return found

    def fill_record_fields(self, good: pl.DataFrame) -> None:
        if good.height:
            self._fills.append(good)

    def insert_entries(
        self,
        good: pl.DataFrame,
        first: list[bool],
        file_id: int,
        venue: object,
        year: object,
        run: RunContext,
    ) -> None:
        if good.height:
            n = good.height
            self._entries.append(good)
            self._first.extend(first)
            self._entry_file_ids.extend([file_id] * n)
            self._venues.extend([venue] * n)
            self._years.extend([year] * n)
            self._run = run
            for ext, pid in zip(
                good["external_id"].to_list(), good["paper_id"].to_list(), strict=True
            ):
                if ext is not None:
                    self._external.setdefault(ext, pid)

    def flush(self) -> None:
        """Insert what was buffered (one statement per table).

        Raises:
            duckdb.SequenceException: the ``listing_files`` ids drawn meanwhile by another
                connection (the batch's transaction is then rolled back by the caller).
        """
        if self._file_rows:
            assert self._first_id is not None
            last = self._first_id + len(self._file_rows) - 1
            if len(self._file_rows) > 1:
                drawn = self.con.execute(
                    "select max(nextval('listing_files_seq')) from range(?)",
                    [len(self._file_rows) - 1],
                ).fetchall()
                if int(drawn[0][0]) != last:
                    raise duckdb.SequenceException(
                        "listing_files_seq was advanced by another writer during the batch"
                    )
            columns = {c: [r.get(c) for r in self._file_rows] for c in LISTING_FILES_SCHEMA}
            files = pl.DataFrame(columns, schema=LISTING_FILES_SCHEMA).with_columns(
                pl.col("internal_error").fill_null(False)
            )
            _insert_frame(self.con, "listing_files", files)
            self._file_rows, self._first_id = [], None
        if self._entries and self._run is not None:
            papers, occurrences = _entry_frames(
                pl.concat(self._entries, how="vertical_relaxed"),
                self._first,
                self._entry_file_ids,
                self._venues,
                self._years,
                self._run,
            )
            self._frames["papers"].append(papers)
            self._frames["paper_occurrences"].append(occurrences)
            self._entries, self._first, self._entry_file_ids = [], [], []
            self._venues, self._years = [], []
        if self._validation["run_id"]:
            self._frames["validation_results"].insert(0, validation_frame(self._validation))
            self._validation = {c: [] for c in VALIDATION_SCHEMA}
        if self._stats:
            stats = pl.DataFrame(
                self._stats,
                schema={"file_id": pl.Int32, "size_bytes": pl.Int64, "mtime_ns": pl.Int64},
                orient="row",
            )
            self.con.register("_pw_stats", stats.to_arrow())
            try:
                self.con.execute(
                    "update listing_files set size_bytes = s.size_bytes, mtime_ns = s.mtime_ns "
                    "from _pw_stats s where listing_files.file_id = s.file_id"
                )
            finally:
                self.con.unregister("_pw_stats")
            self._stats = []
        for table in self._TABLES:
            frames = self._frames[table]
            if frames:
                _insert_frame(self.con, table, pl.concat(frames, how="diagonal_relaxed"))
            self._frames[table] = []
        for good in self._fills:  # papers inserted above may get fields from later files
            _fill_record_fields(self.con, good)
        self._fills = []


def validation_frame(columns: dict[str, list[object]]) -> pl.DataFrame:
    """``pl.DataFrame(columns, schema=VALIDATION_SCHEMA)``, built faster for a batch of many
    files (about 40 rows per file: 820,000 rows for 20,000 files): a ``validated_at``
    column of one value is repeated rather than converted datetime by datetime, and the
    ``unexpected_examples`` lists (nearly all empty) become one Arrow list array from
    their flattened values and offsets (5.5 CPU-s down to about 0.3 for 820,000 rows).

    Args:
        columns: one list per column of :data:`VALIDATION_SCHEMA`, all the same length;
            ``unexpected_examples`` holds lists of strings (never None).

    Returns:
        The frame (columns and types of :data:`VALIDATION_SCHEMA`).
    """
    n = len(columns["run_id"])
    stamps = cast("list[datetime]", columns["validated_at"])
    plain = {
        name: values
        for name, values in columns.items()
        if name not in ("validated_at", "unexpected_examples")
    }
    frame = pl.DataFrame(plain, schema={name: VALIDATION_SCHEMA[name] for name in plain})
    if n and all(stamp == stamps[0] for stamp in stamps):
        validated_at = pl.repeat(stamps[0], n, dtype=VALIDATION_SCHEMA["validated_at"], eager=True)
    else:
        validated_at = pl.Series(values=stamps, dtype=VALIDATION_SCHEMA["validated_at"])
    lists = cast("list[list[str]]", columns["unexpected_examples"])
    offsets = [0, *accumulate(len(values) for values in lists)]
    flat = [value for values in lists for value in values]
    examples = pl.Series(
        values=pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(flat, pa.string()))
    ).cast(VALIDATION_SCHEMA["unexpected_examples"])
    return frame.with_columns(
        examples.alias("unexpected_examples"), validated_at.alias("validated_at")
    ).select(list(VALIDATION_SCHEMA))


def _insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    if frame.height == 0:
        return
    con.register("_frame", db.arrow_view(frame))
    try:
        columns = ", ".join(frame.columns)
        con.execute(f"insert into {table} ({columns}) select {columns} from _frame")
    finally:
        con.unregister("_frame")


def _insert_file_row(con: duckdb.DuckDBPyConnection, values: dict[str, object]) -> int:
    columns = ", ".join(values)
    placeholders = ", ".join("?" for _ in values)
    row = con.execute(
        f"insert into listing_files ({columns}) values ({placeholders}) returning file_id",
        list(values.values()),
    ).fetchone()
    assert row is not None
    return int(row[0])


def _validation_rows(
    w: _Writes, file_id: int | None, run: RunContext, *suites: SuiteResult
) -> None:
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


def _unchanged(w: _Writes, stat: ListingFileStat, sha256: str) -> int | None:
    """The file_id of the latest version at ``stat.rel`` when it has these bytes (its stat
    is refreshed), else None. A version whose preparation failed under another paperwatch
    is not unchanged: the file is tried again."""
    latest = w.latest(stat.rel)
    if latest is None or latest[1] != sha256 or latest[2]:
        return None
    w.refresh_stat(latest[0], stat.size, stat.mtime_ns)
    return latest[0]


def existing_paper_ids(con: duckdb.DuckDBPyConnection, paper_ids: pl.Series) -> set[str]:
    """The ids of ``paper_ids`` (a String series) already in ``papers``: one scan of the
    ``paper_id`` column, however many ids are asked for."""
    if paper_ids.is_empty():
        return set()
    con.register("_pw_ids", pl.DataFrame({"paper_id": paper_ids.unique()}).to_arrow())
    try:
        rows = con.execute(
            "select paper_id from papers semi join _pw_ids using (paper_id)"
        ).fetchall()
    finally:
        con.unregister("_pw_ids")
    return {r[0] for r in rows}


def papers_by_external_id(
    con: duckdb.DuckDBPyConnection, external_ids: pl.Series
) -> dict[str, str]:
    """``{external_id: paper_id}`` for the ids of ``external_ids`` (a String series, nulls
    ignored) that a loaded occurrence already carries: the paper of its earliest occurrence."""
    ids = external_ids.drop_nulls().unique()
    if ids.is_empty():
        return {}
    con.register("_pw_ext", pl.DataFrame({"external_id": ids}).to_arrow())
    try:
        rows = con.execute(
            "select external_id, arg_min(paper_id, (file_id, position)) from paper_occurrences "
            "semi join _pw_ext using (external_id) group by external_id"
        ).fetchall()
    finally:
        con.unregister("_pw_ext")
    return {r[0]: r[1] for r in rows}


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


def _fill_record_fields(con: duckdb.DuckDBPyConnection, good: pl.DataFrame) -> None:
    """Give papers that have no title yet (first seen in a format without one) the title,
    authors, URL and external id of the first of ``good``'s rows (entries of known papers)
    that has a title or an external id: a paper's first-seen values, field by field."""
    having = good.filter(pl.col("title").is_not_null() | pl.col("external_id").is_not_null())
    if having.is_empty():
        return
    fields = having.unique("paper_id", keep="first", maintain_order=True).select(
        "paper_id", "title", "authors", "url", "external_id"
    )
    con.register("_pw_fields", fields.to_arrow())
    try:
        con.execute(
            "update papers set title = f.title, authors = f.authors, url = f.url, "
            "external_id = coalesce(papers.external_id, f.external_id) from _pw_fields f "
            "where papers.paper_id = f.paper_id and papers.title is null and papers.url is null "
            "and papers.external_id is null"
        )
    finally:
        con.unregister("_pw_fields")


def _previous_loaded(con: duckdb.DuckDBPyConnection, rel: str) -> int | None:
    """The file_id of the latest loaded version at path ``rel`` (what a new one supersedes)."""
    previous = con.execute(
        "select file_id from listing_files where path = ? and status = 'loaded' "
        "order by first_seen desc, file_id desc limit 1",
        [rel],
    ).fetchone()
    return int(previous[0]) if previous else None


def _quarantine_whole_file(
    w: _Writes,
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
    w = _Writes(con)
    with db.transaction(con):
        unchanged = _unchanged(w, stat, prepared.sha256)
        if unchanged is not None:
            return FileOutcome(rel=stat.rel, status="unchanged", file_id=unchanged)
        row = _base_row(prepared, run) | {
            "supersedes": _previous_loaded(con, stat.rel),
            "status": "quarantined",
            "reason": reason,
            "internal_error": True,
            "entry_count": None,
            "entries_loaded": 0,
            "entries_quarantined": 0,
        }
        file_id = _insert_file_row(con, row)
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
        return _load_file(con, prepared, checked, run, known, _Writes(con))


def _load_file(
    con: duckdb.DuckDBPyConnection,
    prepared: PreparedFile,
    checked: CheckedFile,
    run: RunContext,
    known: set[str] | None,
    w: _Writes,
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
        return FileOutcome(rel=rel, status="duplicate", file_id=file_id, reason=reason)

    file_failures = checked.file_checks.critical_failures().get(0, [])
    if file_failures:
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
        _quarantine_whole_file(
            w,
            file_id,
            prepared,
            reasons,
            [f"{r.suite}.{r.expectation}" for r in file_failures],
            run,
        )
        return FileOutcome(
            rel=rel,
            status="quarantined",
            file_id=file_id,
            reason="; ".join(reasons),
            entries=prepared.entry_count,
            entries_quarantined=prepared.entry_count,
        )

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
        bad = entries[failed_index]
        quarantined = pl.DataFrame(
            {
                "kind": ["entry"] * bad.height,
                "file_id": [file_id] * bad.height,
                "path": [rel] * bad.height,
                "position": bad["position"],
                "line": bad["line"],
                "raw_text": bad["abstract_raw"],
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

    good = (
        entries.with_row_index("_row").filter(~pl.col("_row").is_in(failed_index)).drop("_row")
        if failed_index
        else entries
    )
    if known is None:
        existing = existing_paper_ids(con, good["paper_id"])
    else:
        existing = known.intersection(good["paper_id"].to_list())
    known_external = w.papers_by_external_id(good["external_id"])
    good = join_external_ids(good, existing, known_external)
    paper_ids = good["paper_id"].to_list()
    existing |= set(known_external.values()) & set(paper_ids)
    if row["supersedes"] is not None:
        # Entries carried over from earlier versions of this listing are not repeats.
        carried = {
            r[0]
            for r in con.execute(
                "select distinct o.paper_id from paper_occurrences o "
                "join listing_files f using (file_id) where f.path = ?",
                [rel],
            ).fetchall()
        }
        existing_elsewhere = existing - carried
    else:
        existing_elsewhere = existing
    seen_in_file: set[str] = set()
    exact_duplicates = 0
    first: list[bool] = []  # the entry is a new paper (its first occurrence, not recorded)
    for pid in paper_ids:
        if pid in existing_elsewhere or pid in seen_in_file:
            exact_duplicates += 1
        first.append(pid is not None and pid not in existing and pid not in seen_in_file)
        seen_in_file.add(pid)
    new_ids = [pid for pid, new in zip(paper_ids, first, strict=True) if new]
    new_keys = (
        [
            abstract_key(text)
            for text, new in zip(good["abstract"].to_list(), first, strict=True)
            if new
        ]
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


def _entry_frames(
    good: pl.DataFrame,
    first: list[bool],
    file_ids: list[int],
    venues: list[object],
    years: list[object],
    run: RunContext,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The ``papers`` rows (the entries marked ``first``) and the ``paper_occurrences`` rows
    (every entry) of loaded entries; ``file_ids``, ``venues``, ``years``: one per entry."""
    rows = good.with_columns(
        pl.Series("_file_id", file_ids, dtype=pl.Int32),
        pl.Series("_venue", venues, dtype=pl.String),
        pl.Series("_year", years, dtype=pl.Int32),
        pl.Series("_first", first, dtype=pl.Boolean),
    )
    occurrences = rows.select(
        pl.col("_file_id").alias("file_id"),
        "position",
        "line",
        "paper_id",
        pl.col("abstract_raw").alias("raw_text"),
        pl.lit(run.run_id).alias("run_id"),
        "listed_number",
        "title",
        "authors",
        "url",
        "external_id",
        "text_paper_id",
        "field_faults",
        "raw_fields",
    )
    papers = rows.filter(pl.col("_first")).select(
        "paper_id",
        "abstract",
        "abstract_raw",
        "method_name",
        "first_sentence",
        "word_count",
        "code_urls",
        pl.col("_venue").alias("venue"),
        pl.col("_year").alias("year"),
        pl.col("_file_id").alias("first_file_id"),
        pl.col("position").alias("first_position"),
        pl.lit(run.as_of).alias("first_seen"),
        pl.lit(run.week).alias("first_seen_week"),
        "title",
        "authors",
        "url",
        "external_id",
    )
    return papers, occurrences


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
