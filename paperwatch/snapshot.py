"""The analysts' read-only snapshot: a copy of the database republished after every run that wrote.

DuckDB lets one process write a file, and any other process holding it open (even
read-only, even the ``duckdb -readonly`` CLI) blocks that writer. Analysts therefore
query a copy, ``Settings.snapshot`` (default ``data/paperwatch.read.duckdb``), which
paperwatch never opens for writing once it is published:

1. the copy is written to a temporary file in the snapshot's folder
   (``.<name>.<pid>.tmp``), by the process that holds the database open for writing
   (so nothing changes underneath it): ``ATTACH`` in the v1.5 storage format (the
   ``duckdb`` CLI on PyPI reads it), one ``create table ... as`` per table of
   :func:`snapshot_tables`, the views of ``sql/views/``, ``DETACH``;
2. the temporary file is ``fsync``-ed, then :func:`os.replace`-d onto the snapshot
   path and the folder ``fsync``-ed.

Step 2 swaps the directory entry in one step: a reader that opened the old snapshot
keeps reading the old file (its inode stays valid until the reader closes it), a new
reader opens the new one, and nobody ever sees a half-written file at the snapshot
path. A run that dies mid-copy leaves the previous snapshot as it was and a temporary
file that the next publication removes.

Why a copy of the tables and not the file itself, nor Parquet files: measured in
``bench/RESULTS.md`` ("Analysts' snapshot").
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb

from paperwatch import db

#: Tables of the database that are not copied: the near-duplicate machinery's MinHash
#: signatures and LSH band keys (internal, about half of the file, of no use in SQL).
INTERNAL_TABLES: frozenset[str] = frozenset({"paper_minhash", "paper_lsh_bands"})

_ALIAS = "paperwatch_snapshot"


@dataclass(frozen=True, slots=True)
class PublishedSnapshot:
    """A snapshot that was published.

    Attributes:
        path: the snapshot file.
        size_bytes: its size on disk, in bytes.
        seconds: wall time of the copy, ``fsync`` and replace, in seconds.
        tables: the tables copied, by name, sorted.
        papers: rows of ``papers`` in it.
    """

    path: Path
    size_bytes: int
    seconds: float
    tables: tuple[str, ...]
    papers: int


def temp_path(snapshot: Path, pid: int | None = None) -> Path:
    """The temporary file a process writes the next snapshot to: ``.<name>.<pid>.tmp``
    in the snapshot's folder (the same file system, so :func:`os.replace` is atomic).

    Args:
        snapshot: the snapshot path.
        pid: the writing process (default: this one).
    """
    return snapshot.with_name(f".{snapshot.name}.{os.getpid() if pid is None else pid}.tmp")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temp_files(snapshot: Path) -> list[Path]:
    """Delete the temporary files (and their ``.wal``) that dead processes left beside the
    snapshot (a publication killed mid-copy); those of running processes stay.

    Returns:
        The files removed.
    """
    removed: list[Path] = []
    if not snapshot.parent.is_dir():
        return removed
    prefix = f".{snapshot.name}."
    for path in snapshot.parent.glob(f"{prefix}*.tmp*"):
        pid_text = path.name[len(prefix) :].split(".", 1)[0]
        if not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if pid != os.getpid() and _pid_alive(pid):
            continue
        path.unlink(missing_ok=True)
        removed.append(path)
    return sorted(removed)


def snapshot_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The tables of the connection's default database that a snapshot holds: all of
    schema ``main`` but :data:`INTERNAL_TABLES`, sorted by name."""
    rows = con.execute(
        "select table_name from duckdb_tables() "
        "where database_name = current_database() and schema_name = 'main' order by 1"
    ).fetchall()
    return [name for (name,) in rows if name not in INTERNAL_TABLES]


def copy_tables(con: duckdb.DuckDBPyConnection, target: Path) -> list[str]:
    """Write a new DuckDB file ``target`` holding :func:`snapshot_tables` and the views.

    ``con`` is a connection to the database (read-write: DuckDB then lets no other
    process change it during the copy). ``target`` is created in the v1.5 storage
    format (:data:`paperwatch.db.STORAGE_COMPATIBILITY`) and is complete and closed
    when this returns; the copy is one transaction, so it shows one state of the
    database.

    Args:
        con: connection whose default database is copied.
        target: a path that does not exist yet.

    Returns:
        The tables copied, sorted by name.

    Raises:
        FileExistsError: ``target`` exists.
        duckdb.Error: the copy failed (``target`` may be left half-written: the caller
            removes it).
    """
    if target.exists():
        raise FileExistsError(f"{target} exists")
    source = con.execute("select current_database()").fetchall()[0][0]
    tables = snapshot_tables(con)
    path = str(target).replace("'", "''")
    con.execute(f"attach '{path}' as {_ALIAS} (storage_version '{db.STORAGE_COMPATIBILITY}')")
    try:
        with db.transaction(con):
            for table in tables:
                copy_table(con, source, table)
        con.execute(f"use {_ALIAS}")
        try:
            db.create_views(con)
        finally:
            con.execute(f'use "{source}"')
    finally:
        con.execute(f"detach {_ALIAS}")
    return tables


def copy_table(con: duckdb.DuckDBPyConnection, source: str, table: str) -> None:
    """``create table <snapshot>.main.<table> as`` all rows of ``<source>.main.<table>``."""
    con.execute(f'create table {_ALIAS}.main."{table}" as select * from "{source}".main."{table}"')


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish_snapshot(database: Path, snapshot: Path, timeout_s: float = 60.0) -> PublishedSnapshot:
    """Copy ``database`` to ``snapshot`` atomically (see the module's docstring).

    Opens ``database`` for writing (waiting for another process's lock like
    :func:`paperwatch.db.writer`), copies it to :func:`temp_path`, ``fsync``-s the copy,
    replaces ``snapshot`` with it and ``fsync``-s the folder. Readers of the previous
    snapshot are never waited for and keep reading it. On any failure the temporary
    file is removed and ``snapshot`` is left as it was.

    Args:
        database: the paperwatch DuckDB file; it must exist.
        snapshot: where the copy goes; its folder is created when missing. Must not be
            ``database`` itself.
        timeout_s: seconds to wait for another process's lock on ``database``.

    Returns:
        What was published.

    Raises:
        FileNotFoundError: ``database`` does not exist.
        ValueError: ``snapshot`` is ``database``.
        paperwatch.db.DatabaseLockedError: ``database`` stayed locked for ``timeout_s``.
        duckdb.Error, OSError: the copy or the replace failed.
    """
    if not database.is_file():
        raise FileNotFoundError(f"{database} does not exist yet: run `paperwatch ingest` first")
    if snapshot.resolve() == database.resolve():
        raise ValueError(f"the snapshot {snapshot} cannot be the database itself")
    started = time.monotonic()
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temp_files(snapshot)
    temp = temp_path(snapshot)
    wal = temp.with_name(temp.name + ".wal")
    temp.unlink(missing_ok=True)
    wal.unlink(missing_ok=True)
    try:
        with db.writer(database, timeout_s) as con:
            tables = copy_tables(con, temp)
            papers = int(con.execute("select count(*) from papers").fetchall()[0][0])
        # DuckDB checkpointed and closed the copy on detach: no WAL is left to it.
        _fsync(temp)
        os.replace(temp, snapshot)
    except BaseException:
        temp.unlink(missing_ok=True)
        wal.unlink(missing_ok=True)
        raise
    _fsync(snapshot.parent)
    return PublishedSnapshot(
        path=snapshot,
        size_bytes=snapshot.stat().st_size,
        seconds=time.monotonic() - started,
        tables=tuple(tables),
        papers=papers,
    )
