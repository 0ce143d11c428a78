"""DuckDB access: connections that respect the file lock, and the schema from ``sql/``.

Layout of ``sql/`` (each file named exactly like the object it defines):

- ``sql/tables/<table>.sql``: ``create table if not exists`` (and its sequence);
- ``sql/migrations/NNNN_<name>.sql``: applied once each, in order, recorded by name and
  sha256 in ``schema_migrations``, so an older database upgrades in place;
- ``sql/views/<view>.sql``: ``create or replace view``, re-applied every time;
- ``sql/queries/<name>.sql``: read-only queries the code runs, with ``$name``
  parameters.

DuckDB allows one read-write process per file, and any other process holding the
file (even read-only) blocks a writer. A writer therefore opens the file briefly
and, when it is locked, retries with exponential backoff up to
``Settings.lock_timeout_s`` before raising :class:`DatabaseLockedError`, whose
message says which process holds the lock. People query a copy instead, which
paperwatch republishes after each run (:mod:`paperwatch.db.snapshot`).

A bulk load (a backfill) keeps one connection open instead (:func:`session`), not
checkpointing after every batch (docs/design.md, "Checkpoints of a bulk session").
"""

from __future__ import annotations

import errno
import hashlib
import importlib
import logging
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from paperwatch.resources import resource_dir

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

_log = logging.getLogger("paperwatch.db")

#: Storage format the database is created with, so that the ``duckdb`` CLI on
#: PyPI (1.5.x, which reads storage versions 64-68) can open it.
STORAGE_COMPATIBILITY = "v1.5.0"


#: WAL size at which a bulk :func:`session` checkpoints (DuckDB's ``checkpoint_threshold``;
#: its default is 16 MiB). Why 1 GB: docs/design.md, "Checkpoints of a bulk session".
SESSION_CHECKPOINT_THRESHOLD = "1GB"
#: DuckDB's memory limit per CPU core (it runs a thread per core, each with its own
#: buffers), and at least :data:`MIN_MEMORY_LIMIT_MB` in all; see :func:`memory_limit`.
MEMORY_LIMIT_PER_CORE_MB = 256
MIN_MEMORY_LIMIT_MB = 1024
#: The same for a bulk load's :func:`session`: half (see :func:`memory_limit`).
BULK_MEMORY_LIMIT_PER_CORE_MB = 128
MIN_BULK_MEMORY_LIMIT_MB = 512


def memory_limit(cores: int | None = None, bulk: bool = False) -> str:
    """DuckDB's memory limit on every connection paperwatch opens, e.g. ``'1024MB'``.

    ``max(1024 MB, 256 MB × cores)``, or for a bulk load's :func:`session` (``bulk=True``)
    ``max(512 MB, 128 MB × cores)``; DuckDB spills to ``<database>.tmp/`` beyond it. Why
    these sizes: docs/design.md, "DuckDB's memory limit".

    Args:
        cores: CPU cores (DuckDB's thread count); None for ``os.cpu_count()``.
        bulk: the limit of a bulk load's session rather than of any connection.
    """
    count = cores if cores is not None else (os.cpu_count() or 1)
    floor, per_core = (
        (MIN_BULK_MEMORY_LIMIT_MB, BULK_MEMORY_LIMIT_PER_CORE_MB)
        if bulk
        else (MIN_MEMORY_LIMIT_MB, MEMORY_LIMIT_PER_CORE_MB)
    )
    return f"{max(floor, per_core * count)}MB"


_SESSIONS: dict[Path, duckdb.DuckDBPyConnection] = {}


#: Any error DuckDB raises (``duckdb.Error``), for callers outside paperwatch.db.
DatabaseError = duckdb.Error


class DatabaseLockedError(RuntimeError):
    """The DuckDB file stayed locked by another process for the whole lock timeout."""


class DatabaseDamagedError(RuntimeError):
    """The DuckDB file is damaged (truncated, overwritten, failed checksums): paperwatch
    refuses to write to it. The message names the file and the way out."""


#: DuckDB's words for a damaged file (a block past the end, a bad checksum, a bad header).
_DAMAGE = re.compile(
    r"could not read enough bytes|corrupt|checksum|not a valid duckdb database"
    r"|failed to rollback|invalid database header|magic bytes",
    re.IGNORECASE,
)
#: Bytes before the first block of a DuckDB file: the main header and two database headers.
_FILE_HEADER_BYTES = 3 * 4096


def damaged_error(path: Path, detail: str, before_write: bool = True) -> DatabaseDamagedError:
    """The error for a damaged database at ``path``, with what was found and what to do.

    ``before_write``: found when the file was opened, before anything was written (else
    found by a query: the transaction it was part of was rolled back).
    """
    done = (
        "paperwatch did not write to it"
        if before_write
        else "paperwatch stopped there (that transaction was rolled back)"
    )
    return DatabaseDamagedError(
        f"the database {path} is damaged ({detail}); {done}. "
        "Restore it from a backup, or rebuild it from the listing folder with "
        "`paperwatch rebuild` (every listing file is read again; the damaged file is kept)"
    )


#: The operating system's words for a write that found no room (ENOSPC, EDQUOT, EFBIG).
_DISK_FULL = re.compile(
    r"no space left on device|disk quota exceeded|file too large|not enough space", re.IGNORECASE
)


def is_disk_full(exc: BaseException) -> bool:
    """True when a write failed for lack of room: the disk (``ENOSPC``), a quota (``EDQUOT``)
    or the file-size limit (``EFBIG``), whether DuckDB or the OS raised it."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return True
    return bool(_DISK_FULL.search(str(exc)))


def is_damage(exc: BaseException) -> bool:
    """True when a DuckDB error says the file is damaged (not locked, not a bad query)."""
    return isinstance(exc, duckdb.Error) and bool(_DAMAGE.search(str(exc)))


def check_intact(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Refuse a database file shorter than the blocks its header says are in use.

    DuckDB reads a block only when a query needs it, so a truncated file opens and
    fails half-way through a run; this compares the file's size with the header's
    block count (``pragma database_size``) first: one header read, no data read.
    Damage inside a block (flipped bytes) is found by DuckDB's block checksums when
    the block is read, and reported as :class:`DatabaseDamagedError` too.

    Raises:
        DatabaseDamagedError: the file is shorter than its header says.
    """
    row = con.execute("select block_size, used_blocks from pragma_database_size()").fetchone()
    if row is None or not row[1]:
        return
    # Used blocks only: free blocks at the end of the file need not be on disk (DuckDB
    # counts them in total_blocks), so this is a lower bound and never a false alarm.
    expected = _FILE_HEADER_BYTES + int(row[0]) * int(row[1])
    actual = path.stat().st_size
    if actual < expected:
        raise damaged_error(
            path, f"{actual:,} bytes where its header accounts for {expected:,}: truncated"
        )


def arrow_view(frame: pl.DataFrame) -> pa.Table:
    """``frame`` as an Arrow table to ``register`` with DuckDB, without copying its strings.

    String columns stay Arrow string views (``utf8_view``, Polars' own layout) instead of
    the ``large_string`` copy ``frame.to_arrow()`` makes; columns of other types are as
    ``to_arrow()`` gives them (docs/design.md, "Arrow string views for DuckDB").

    Args:
        frame: any Polars data frame.

    Returns:
        A ``pyarrow.Table`` with the same columns and rows, sharing ``frame``'s buffers.
    """
    import polars as pl

    return frame.to_arrow(compat_level=pl.CompatLevel.newest())


@cache
def read_sql(kind: str, name: str) -> str:
    """Return the text of ``sql/<kind>/<name>.sql``.

    Raises:
        FileNotFoundError: no such file.
    """
    return (resource_dir("sql") / kind / f"{name}.sql").read_text(encoding="utf-8")


def _sql_files(kind: str) -> list[Path]:
    return sorted((resource_dir("sql") / kind).glob("*.sql"))


def _holder(message: str) -> str:
    match = re.search(r"Conflicting lock is held in (.+?) \(PID (\d+)\)", message)
    if match:
        return f"{match.group(1).strip()} (PID {match.group(2)})"
    return "another process"


def _connect_with_retry(path: Path, read_only: bool, timeout_s: float) -> duckdb.DuckDBPyConnection:
    # No extension is ever fetched at run time (a file of another format must not make
    # DuckDB download a scanner over the network).
    config: dict[str, str | bool | int | float | list[str]] = {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "memory_limit": memory_limit(),
    }
    if not read_only:
        config["storage_compatibility_version"] = STORAGE_COMPATIBILITY
    deadline = time.monotonic() + timeout_s
    delay = 0.05
    told = False
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only, config=config)
        except duckdb.IOException as exc:
            message = str(exc)
            if "lock" not in message.lower():
                if is_damage(exc):
                    raise damaged_error(path, message.splitlines()[0]) from exc
                raise
            if not told and timeout_s > 0:
                told = True
                _log.warning(
                    "waiting up to %.0f s for %s: it is held open by %s",
                    timeout_s,
                    path,
                    _holder(message),
                )
            if time.monotonic() >= deadline:
                raise DatabaseLockedError(
                    f"{path} is locked by {_holder(message)}; waited {timeout_s:.0f} s. "
                    "Close that program (a DuckDB CLI or notebook holding the file); for SQL "
                    "open the snapshot instead (`paperwatch sql`), which never blocks a run."
                ) from exc
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 2.0)
            continue
        try:
            # DuckDB would otherwise draw a progress bar on our stdout during long queries.
            con.execute("set enable_progress_bar = false")
            check_intact(con, path)
        except BaseException:
            con.close()
            raise
        return con


@contextmanager
def writer(path: Path, timeout_s: float = 60.0) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the database for writing, create/upgrade its schema, close it on exit.

    Args:
        path: the DuckDB file; its folder is created when missing.
        timeout_s: seconds to wait for another process's lock (backoff 50 ms doubling to 2 s).

    Raises:
        DatabaseLockedError: the file stayed locked for ``timeout_s``.
        duckdb.Error: the schema could not be applied.
    """
    shared = _SESSIONS.get(path.resolve())
    if shared is not None:  # inside a bulk session: a cursor on its connection, no checkpoint
        cursor = shared.cursor()
        try:
            yield cursor
        finally:
            cursor.close()
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    con = _connect_with_retry(path, read_only=False, timeout_s=timeout_s)
    try:
        apply_schema(con)
        yield con
        con.execute("checkpoint")
    finally:
        con.close()


@contextmanager
def session(path: Path, timeout_s: float = 60.0, memory_mb: int = 0) -> Iterator[None]:
    """Keep the database open for writing until the block ends (a bulk load).

    Inside the block, :func:`writer` for the same ``path`` (in this process) hands out
    cursors on one shared connection and does not checkpoint; DuckDB checkpoints
    only when the write-ahead log reaches :data:`SESSION_CHECKPOINT_THRESHOLD`, and
    once when the block ends; its memory limit is ``memory_mb`` MB (the setting
    ``bulk_memory_limit_mb``), or a bulk load's (:func:`memory_limit`) when 0.
    Other processes cannot open the file meanwhile. Nested sessions on the same path are
    one session.

    Raises:
        DatabaseLockedError: the file stayed locked for ``timeout_s``.
    """
    key = path.resolve()
    if key in _SESSIONS:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    con = _connect_with_retry(path, read_only=False, timeout_s=timeout_s)
    try:
        apply_schema(con)
        limit = f"{memory_mb}MB" if memory_mb > 0 else memory_limit(bulk=True)
        con.execute(f"set memory_limit = '{limit}'")
        con.execute(f"set checkpoint_threshold = '{SESSION_CHECKPOINT_THRESHOLD}'")
        # Large commits (terms, LSH bands) would otherwise checkpoint instead of logging.
        con.execute("set auto_checkpoint_skip_wal_threshold = 1000000000000")
        _SESSIONS[key] = con
        yield
        con.execute("checkpoint")
    finally:
        _SESSIONS.pop(key, None)
        con.close()


@contextmanager
def reader(path: Path, timeout_s: float = 60.0) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open an existing database read-only (waits for a writer's lock like :func:`writer`).

    Raises:
        FileNotFoundError: the database does not exist yet (nothing was ingested).
        DatabaseLockedError: the file stayed locked for ``timeout_s``.
    """
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist yet: run `paperwatch ingest` first")
    con = _connect_with_retry(path, read_only=True, timeout_s=timeout_s)
    try:
        yield con
    finally:
        con.close()


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """``begin``; ``commit`` when the block ends, ``rollback`` when it raises (then re-raise)."""
    con.execute("begin transaction")
    try:
        yield
    except BaseException:
        con.execute("rollback")
        raise
    con.execute("commit")


#: Keys the loader keeps unique without a primary key (see ``sql/tables/papers.sql``).
UNIQUE_KEYS: dict[str, tuple[str, ...]] = {
    "papers": ("paper_id",),
    "paper_occurrences": ("file_id", "position"),
    "paper_minhash": ("paper_id",),
    "paper_terms_extracted": ("paper_id",),
}


def key_violations(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Rows beyond the first per key of each table of :data:`UNIQUE_KEYS` (all 0 when the
    loader kept its promise): ``{table: count(*) - count(distinct key)}``."""
    found: dict[str, int] = {}
    for table, columns in UNIQUE_KEYS.items():
        key = ", ".join(columns)
        row = con.execute(
            f"select count(*) - (select count(*) from (select distinct {key} from {table})) "
            f"from {table}"
        ).fetchone()
        found[table] = int(row[0]) if row else 0
    return found


#: A migration that renames a table to this prefix + its name asks for the table to be
#: rebuilt from its current ``sql/tables/`` definition, its rows copied by column name.
REBUILD_PREFIX = "_rebuild_"


#: A migration line ``-- python: package.module.function`` runs that function with the
#: connection after the migration's SQL, in the same transaction (a step SQL cannot do,
#: such as recomputing ids with the cleaning rules).
_PYTHON_STEP = re.compile(r"^-- python: ([\w.]+)\s*$", re.MULTILINE)


def _python_step(dotted: str) -> Any:
    module, _, function = dotted.rpartition(".")
    return getattr(importlib.import_module(module), function)


class MigrationMismatchError(ValueError):
    """The database records a migration this build does not have, or one whose file has
    changed since it was applied: ``str()`` is the one line to show."""


@dataclass(frozen=True, slots=True)
class Migration:
    """A file of ``sql/migrations/``: ``NNNN_<key>.sql``. ``key`` (the name without its
    number) identifies it; ``checksum`` is the sha256 (hex) of its text."""

    version: int
    name: str
    key: str
    checksum: str
    text: str


def migrations() -> list[Migration]:
    """The migrations of ``sql/migrations/``, in file order.

    Raises:
        ValueError: two files share a key (a migration must have one name).
    """
    found = []
    for file in _sql_files("migrations"):
        number, _, key = file.stem.partition("_")
        text = file.read_text(encoding="utf-8")
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        found.append(Migration(int(number), file.stem, key, digest, text))
    keys = [m.key for m in found]
    if len(set(keys)) != len(keys):
        raise ValueError(f"two migration files share a name: {sorted(keys)}")
    return found


def _recorded(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, str | None]]:
    """migration key → (name when applied, checksum or None), converting a table of the
    earlier layout (numbers only) in place first."""
    columns = {
        row[0]
        for row in con.execute(
            "select column_name from duckdb_columns() where table_name = 'schema_migrations' "
            "and schema_name = current_schema()"
        ).fetchall()
    }
    if "migration" not in columns:
        with transaction(con):
            con.execute("alter table schema_migrations rename to _old_schema_migrations")
            con.execute(read_sql("tables", "schema_migrations"))
            con.execute(
                "insert into schema_migrations by name "
                + read_sql("queries", "schema_migrations_by_name")
            )
            con.execute("drop table _old_schema_migrations")
    rows = con.execute("select migration, name, checksum from schema_migrations").fetchall()
    return {key: (name, checksum) for key, name, checksum in rows}


def _check_recorded(recorded: dict[str, tuple[str, str | None]], files: list[Migration]) -> None:
    by_key = {m.key: m for m in files}
    for key, (name, checksum) in sorted(recorded.items()):
        migration = by_key.get(key)
        if migration is None:
            raise MigrationMismatchError(
                f"the database records migration {name}, which this build of paperwatch "
                "does not have: it was made by a newer or another build; use that build"
            )
        if checksum is not None and checksum != migration.checksum:
            raise MigrationMismatchError(
                f"migration {migration.name} changed since it was applied to this database "
                f"(recorded sha256 {checksum[:12]}…, file {migration.checksum[:12]}…); "
                "restore the file, or add a new migration for the change"
            )


def apply_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create missing tables, apply pending migrations, and (re)create views. Idempotent.

    A migration is applied unless ``schema_migrations`` records its name (without the
    number: renumbering at a merge does not skip or repeat it). Each runs in one
    transaction with its bookkeeping (name, number, sha256) and the Python steps it names
    (``-- python: paperwatch.db.rekey.rekey_papers``). DuckDB cannot drop a constraint in
    place, so a migration that changes one renames the table to ``_rebuild_<table>``; the
    table is then created again from ``sql/tables/<table>.sql`` and the rows copied.

    Raises:
        MigrationMismatchError: a recorded migration is unknown here, or its file changed.
        duckdb.Error: a statement failed (the failing migration is rolled back).
    """
    for file in _sql_files("tables"):
        con.execute(file.read_text(encoding="utf-8"))
    files = migrations()
    recorded = _recorded(con)
    _check_recorded(recorded, files)
    for migration in files:
        if migration.key in recorded:
            continue
        with transaction(con):
            con.execute(migration.text)
            _rebuild_renamed_tables(con)
            for step in _PYTHON_STEP.findall(migration.text):
                _python_step(step)(con)
            con.execute(
                "insert into schema_migrations (migration, version, name, checksum) "
                "values (?, ?, ?, ?)",
                [migration.key, migration.version, migration.name, migration.checksum],
            )
    create_views(con)


def schema_is_current(con: duckdb.DuckDBPyConnection) -> bool:
    """True when every migration of ``sql/migrations/`` is recorded as applied, by name
    (a read-only connection can then use the database as it is; otherwise a writer must
    upgrade it, or refuse it with :class:`MigrationMismatchError`)."""
    try:
        rows = con.execute("select migration, checksum from schema_migrations").fetchall()
    except duckdb.Error:  # missing, or the earlier layout (no migration column)
        return False
    recorded = dict(rows)
    return all(
        m.key in recorded and recorded[m.key] in (None, m.checksum) for m in migrations()
    ) and len(recorded) == len(migrations())


def _rebuild_renamed_tables(con: duckdb.DuckDBPyConnection) -> None:
    renamed = con.execute(
        "select table_name from duckdb_tables() where starts_with(table_name, ?) order by 1",
        [REBUILD_PREFIX],
    ).fetchall()
    for (old,) in renamed:
        table = old.removeprefix(REBUILD_PREFIX)
        con.execute(read_sql("tables", table))
        con.execute(f"insert into {table} by name select * from {old}")
        con.execute(f"drop table {old}")


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """(Re)create every view of ``sql/views/`` in the current catalog (``use``).

    Raises:
        duckdb.CatalogException: a view refers to something missing.
    """
    # Views may select from other views: create in passes until no progress.
    pending = _sql_files("views")
    while pending:
        failed: list[Path] = []
        errors: list[str] = []
        for file in pending:
            try:
                con.execute(file.read_text(encoding="utf-8"))
            except duckdb.CatalogException as exc:
                failed.append(file)
                errors.append(f"{file.name}: {exc}")
        if len(failed) == len(pending):
            raise duckdb.CatalogException("cannot create views: " + "; ".join(errors))
        pending = failed


def query_frame(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> pl.DataFrame:
    """Run ``sql/queries/<name>.sql`` with named ``$params`` and return its rows as a Polars
    frame, through Arrow (no Python object per value: a week's 100,000 new papers as
    dicts took 0.5 s, as a frame 0.07 s)."""
    return con.sql(read_sql("queries", name), params=params or None).pl()


def query(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> list[dict[str, Any]]:
    """Run ``sql/queries/<name>.sql`` with named ``$params`` and return rows as dicts."""
    cursor = con.execute(read_sql("queries", name), params or None)
    columns = [d[0] for d in cursor.description or []]
    rows: list[dict[str, Any]] = []
    while chunk := cursor.fetchmany(10_000):  # never all rows as tuples and as dicts at once
        rows.extend(dict(zip(columns, row, strict=True)) for row in chunk)
    return rows
