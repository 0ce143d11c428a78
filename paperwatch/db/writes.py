"""The rows a load writes, straight to the connection (:class:`Writes`) or buffered for a
batch of files in one transaction (:class:`BatchWrites`): ``listing_files``,
``validation_results``, ``quarantine``, ``papers`` and ``paper_occurrences``."""

from __future__ import annotations

from datetime import datetime
from itertools import accumulate
from typing import cast

import duckdb
import polars as pl
import pyarrow as pa

from paperwatch import __version__, db
from paperwatch.db.runs import RunContext

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


class Writes:
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
        return previous_loaded(self.con, rel)

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
        return insert_file_row(self.con, values)

    def insert_frame(self, table: str, frame: pl.DataFrame) -> None:
        insert_frame(self.con, table, frame)

    def insert_validation(self, columns: dict[str, list[object]]) -> None:
        """Rows of ``validation_results`` (columns of :data:`VALIDATION_SCHEMA`)."""
        self.insert_frame("validation_results", pl.DataFrame(columns, schema=VALIDATION_SCHEMA))

    def papers_by_external_id(self, external_ids: pl.Series) -> dict[str, str]:
        """``{external_id: paper_id}`` of the ids already loaded (:func:`papers_by_external_id`)."""
        return papers_by_external_id(self.con, external_ids)

    def fill_record_fields(self, good: pl.DataFrame) -> None:
        """Give known papers without a title the first title, authors, URL and external id
        of ``good``'s rows (:func:`fill_record_fields`)."""
        fill_record_fields(self.con, good)

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
        papers, occurrences = entry_frames(good, first, [file_id] * n, [venue] * n, [year] * n, run)
        self.insert_frame("papers", papers)
        self.insert_frame("paper_occurrences", occurrences)


class BatchWrites(Writes):
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
        """As :meth:`Writes.papers_by_external_id`, and the external ids of the batch's
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
            insert_frame(self.con, "listing_files", files)
            self._file_rows, self._first_id = [], None
        if self._entries and self._run is not None:
            papers, occurrences = entry_frames(
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
                insert_frame(self.con, table, pl.concat(frames, how="diagonal_relaxed"))
            self._frames[table] = []
        for good in self._fills:  # papers inserted above may get fields from later files
            fill_record_fields(self.con, good)
        self._fills = []


def validation_frame(columns: dict[str, list[object]]) -> pl.DataFrame:
    """``pl.DataFrame(columns, schema=VALIDATION_SCHEMA)``, built faster for many rows: a
    ``validated_at`` of one value is repeated, and ``unexpected_examples`` becomes one Arrow
    list array (docs/design.md, "Building the validation frame").

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


def insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    if frame.height == 0:
        return
    con.register("_frame", db.arrow_view(frame))
    try:
        columns = ", ".join(frame.columns)
        con.execute(f"insert into {table} ({columns}) select {columns} from _frame")
    finally:
        con.unregister("_frame")


def insert_file_row(con: duckdb.DuckDBPyConnection, values: dict[str, object]) -> int:
    columns = ", ".join(values)
    placeholders = ", ".join("?" for _ in values)
    row = con.execute(
        f"insert into listing_files ({columns}) values ({placeholders}) returning file_id",
        list(values.values()),
    ).fetchone()
    assert row is not None
    return int(row[0])


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


def fill_record_fields(con: duckdb.DuckDBPyConnection, good: pl.DataFrame) -> None:
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


def previous_loaded(con: duckdb.DuckDBPyConnection, rel: str) -> int | None:
    """The file_id of the latest loaded version at path ``rel`` (what a new one supersedes)."""
    previous = con.execute(
        "select file_id from listing_files where path = ? and status = 'loaded' "
        "order by first_seen desc, file_id desc limit 1",
        [rel],
    ).fetchone()
    return int(previous[0]) if previous else None


def entry_frames(
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
