"""One writer at a time: a cross-process file lock beside the DuckDB file.

The lock file ``<database>.writer.lock`` (``fcntl.flock``/``LockFileEx`` through the
``filelock`` package) is held for a whole flow run (:func:`holds_writer_lock`) by every
writer: served and deployed flow runs, commands started by hand, ``watch --local``. The
operating system releases it when its process dies. :func:`paperwatch.db.writer` still
opens DuckDB only for the moments it writes. Why a file lock and not only Prefect's
concurrency limit: docs/design.md, "One writer at a time: a file lock".
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ParamSpec, TypeVar

from filelock import FileLock, Timeout

P = ParamSpec("P")
R = TypeVar("R")

_log = logging.getLogger("paperwatch.db.writer_lock")


class WriterLockTimeout(RuntimeError):
    """Another paperwatch run held the database's writer lock for the whole timeout."""


def lock_path(database: Path) -> Path:
    """The lock file of ``database``: ``<database>.writer.lock`` in the same folder."""
    return database.with_name(database.name + ".writer.lock")


def holder_path(database: Path) -> Path:
    """Who holds the writer lock: ``<database>.writer.lock.holder``, one line written by the
    holder once it has the lock (the lock file itself is truncated by every process that
    opens it, so it cannot say)."""
    return database.with_name(database.name + ".writer.lock.holder")


def this_process() -> str:
    """How the holder file names this process: ``PID <n> (<program> <first arguments>)``."""
    words = [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python", *sys.argv[1:3]]
    return f"PID {os.getpid()} ({' '.join(words)})"


def holder(database: Path) -> str:
    """The holder of ``database``'s writer lock as it wrote itself down, or "another
    paperwatch run" when that cannot be read."""
    try:
        text = holder_path(database).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        text = ""
    return text.splitlines()[0] if text else "another paperwatch run"


@contextmanager
def writer_lock(database: Path, timeout_s: float) -> Iterator[float]:
    """Hold the writer lock of ``database`` for the body of the ``with``.

    Args:
        database: the DuckDB file (need not exist; its folder is created).
        timeout_s: seconds to wait for another run to release the lock; a negative
            value waits forever.

    Yields:
        The seconds spent waiting for the lock.

    Raises:
        WriterLockTimeout: the lock stayed held for ``timeout_s``.
    """
    path = lock_path(database)
    path.parent.mkdir(parents=True, exist_ok=True)
    # thread_local=False and is_singleton=False: a plain per-call lock, so two
    # calls in one process (a served flow run and a CLI run in tests) exclude each
    # other exactly like two processes do.
    lock = FileLock(path, timeout=timeout_s, thread_local=False, is_singleton=False)
    started = time.monotonic()
    try:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            limit = "as long as it takes" if timeout_s < 0 else f"up to {timeout_s:.0f} s"
            _log.warning(
                "waiting for another paperwatch run to finish writing %s: the writer lock "
                "(%s) is held by %s; waiting %s",
                database,
                path,
                holder(database),
                limit,
            )
            lock.acquire(poll_interval=0.1)
    except Timeout:
        raise WriterLockTimeout(
            f"another paperwatch run has been writing {database} for over {timeout_s:.0f} s "
            f"(lock file {path}, held by {holder(database)}); setting "
            "schedule.writer_lock_timeout_s sets the wait"
        ) from None
    waited = time.monotonic() - started
    with contextlib.suppress(OSError):  # only a courtesy to whoever waits next
        holder_path(database).write_text(this_process() + "\n", encoding="utf-8")
    if waited > 0.5:
        _log.info("waited %.1f s for the writer lock of %s", waited, database)
    try:
        yield waited
    finally:
        with contextlib.suppress(OSError):  # names the holder only while there is one
            holder_path(database).unlink(missing_ok=True)
        lock.release()


def is_held(database: Path) -> bool:
    """True when another run holds the writer lock of ``database`` right now (a probe
    that takes the lock and gives it back at once; False when there is no lock file)."""
    path = lock_path(database)
    if not path.exists():
        return False
    lock = FileLock(path, timeout=0, thread_local=False, is_singleton=False)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True
    lock.release()
    return False


def holds_writer_lock(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorate a flow function so its whole run holds the writer lock of its database.

    Put it between ``@flow`` and the function. The database is the function's
    ``database`` argument, resolved through :func:`paperwatch.settings.load_settings`
    (so ``None`` means the configured one); the wait is
    ``Settings.schedule.writer_lock_timeout_s``. The signature, name and docstring
    are kept, so Prefect's parameter schema and entrypoint are unchanged.

    Raises:
        TypeError: ``fn`` has no ``database`` parameter.
        WriterLockTimeout: from :func:`writer_lock`.
    """
    signature = inspect.signature(fn)
    if "database" not in signature.parameters:
        raise TypeError(f"{fn.__qualname__} has no 'database' parameter to lock")

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from paperwatch.settings import load_settings

        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        settings = load_settings(database=bound.arguments["database"])
        with writer_lock(settings.database, settings.schedule.writer_lock_timeout_s):
            return fn(*args, **kwargs)

    return wrapper
