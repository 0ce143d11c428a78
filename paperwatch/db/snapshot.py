"""The analysts' read-only snapshot: a copy of the database republished after every run that wrote.

``Settings.snapshot`` (default ``data/paperwatch.read.duckdb``) is never opened for writing
once published. The writer copies the database file right after a ``checkpoint`` to
``.<name>.<pid>.tmp`` in the snapshot's folder, ``fsync``-s it, :func:`os.replace`-s it onto
the snapshot path and ``fsync``-s the folder: readers see the old or the new file, never a
half-written one; a copy cut short leaves the previous snapshot and a temporary file the next
publication removes. Why a file copy: docs/design.md, "Analysts' snapshot".
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from paperwatch import db


@dataclass(frozen=True, slots=True)
class PublishedSnapshot:
    """A snapshot that was published.

    Attributes:
        path: the snapshot file.
        size_bytes: its size, in bytes (as large as the database).
        seconds: wall time of the copy, ``fsync`` and replace, in seconds.
        papers: rows of ``papers`` in it.
    """

    path: Path
    size_bytes: int
    seconds: float
    papers: int


def temp_path(snapshot: Path, pid: int | None = None) -> Path:
    """The temporary file a process writes the next snapshot to: ``.<name>.<pid>.tmp``
    in the snapshot's folder (the same file system, so :func:`os.replace` is atomic).

    Args:
        snapshot: the snapshot path.
        pid: the writing process (default: this one).
    """
    return snapshot.with_name(f".{snapshot.name}.{os.getpid() if pid is None else pid}.tmp")


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` exists (``os.kill(pid, 0)``; a process of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temp_files(snapshot: Path) -> list[Path]:
    """Delete the temporary files that dead processes (a publication killed mid-copy) and
    this one left beside the snapshot; those of other running processes stay.

    Returns:
        The files removed.
    """
    removed: list[Path] = []
    if not snapshot.parent.is_dir():
        return removed
    prefix = f".{snapshot.name}."
    for path in snapshot.parent.glob(f"{prefix}*.tmp"):
        pid_text = path.name[len(prefix) :].split(".", 1)[0]
        if not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if pid != os.getpid() and pid_alive(pid):
            continue
        path.unlink(missing_ok=True)
        removed.append(path)
    return sorted(removed)


def copy_file(source: Path, target: Path) -> None:
    """Copy the bytes of ``source`` to a new file ``target`` (``copy_file_range``/``sendfile``
    where the kernel has them) and ``fsync`` it.

    Raises:
        OSError: the copy failed (``target`` may be left partial: the caller removes it).
    """
    shutil.copyfile(source, target)
    fsync_path(target)


def fsync_path(path: Path) -> None:
    """``fsync`` a file or a folder (a folder: its entries, e.g. after :func:`os.replace`).

    Raises:
        OSError: it cannot be opened or synced.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish_snapshot(database: Path, snapshot: Path, timeout_s: float = 60.0) -> PublishedSnapshot:
    """Copy ``database`` to ``snapshot`` atomically (see the module's docstring).

    Opens ``database`` for writing (waiting for another process's lock like
    :func:`paperwatch.db.writer`), checkpoints it, copies the file to :func:`temp_path`
    (:func:`copy_file`, which ``fsync``-s the copy), closes it,
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
    temp.unlink(missing_ok=True)
    try:
        with db.writer(database, timeout_s) as con:
            # Everything committed goes into the file; while this connection is open no
            # other process can write it, and this one writes nothing more.
            con.execute("checkpoint")
            wal = database.with_name(database.name + ".wal")
            if wal.is_file() and wal.stat().st_size:  # a transaction of this process was open
                con.execute("force checkpoint")
            papers = int(con.execute("select count(*) from papers").fetchall()[0][0])
            copy_file(database, temp)
        os.replace(temp, snapshot)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_path(snapshot.parent)
    return PublishedSnapshot(
        path=snapshot,
        size_bytes=snapshot.stat().st_size,
        seconds=time.monotonic() - started,
        papers=papers,
    )
