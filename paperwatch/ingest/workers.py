"""Worker processes that prepare listing files: a memory ceiling, no orphans, and a way to
tell which file killed a worker.

- :func:`init_worker` runs first in every preparation worker (the process pool of
  :func:`paperwatch.db.batches.prepare_pool`, and :class:`IsolatedWorker`): it sets the
  memory ceiling (``RLIMIT_DATA``, setting ``prepare_memory_limit_bytes``) and starts a
  thread that ends the worker when the process that started it is gone, so a killed run
  leaves no worker behind.
- :class:`IsolatedWorker` prepares files one at a time in a process of its own; when the
  process dies, the file it was preparing is the one that killed it.
- :func:`internal_error_reason` is the quarantine reason of such a file, naming the
  paperwatch version (a new version retries it).
- :func:`start_server_guard` makes sure Prefect's temporary API server of a command-line
  run stops when the run is killed.

The ceiling is ``RLIMIT_DATA`` (Linux 4.7 and later: private writable mappings), not
``RLIMIT_AS``: docs/design.md, "Worker memory ceiling".
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from paperwatch import __version__
from paperwatch.allocator import keep_freed_memory

#: How often a worker checks that the process that started it is still there (seconds).
PARENT_POLL_S = 0.5

#: Fault injection for tests: ``<file name>:<kind>[,<file name>:<kind>...]`` makes preparing
#: that file exit the process (``exit``), abort it (``abort``), raise (``raise``), allocate
#: twice the memory ceiling (``memory``) or never finish (``hang``). Read in the process
#: that prepares the file.
FAULT_ENV = "PAPERWATCH_TEST_PREPARE_FAULT"

#: The memory ceiling set in this process by :func:`init_worker` (bytes; 0: none).
_ceiling = 0

#: How often the run checks that no worker has been preparing one file for too long (s).
OVERDUE_POLL_S = 0.25


class Heartbeats:
    """When each worker of a pool started preparing its current file, in shared memory.

    Slot ``i`` holds the ``time.monotonic()`` (system-wide on Linux: ``CLOCK_MONOTONIC``)
    at which worker ``i`` started preparing the file it is on, 0.0 while it is between
    files. A worker takes the next free slot when it starts (:func:`init_worker`). The run
    reads the slots to find a worker that has been on one file for longer than the time
    limit (setting ``prepare_timeout_s``): a file that hangs rather than crashes.
    """

    def __init__(self, slots: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.started = context.Array("d", max(1, slots))
        self.taken = context.Value("i", 0)

    def overdue(self, limit_s: float, now: float | None = None) -> bool:
        """True when a worker has been preparing one file for over ``limit_s`` seconds."""
        if limit_s <= 0:
            return False
        moment = time.monotonic() if now is None else now
        return any(0.0 < started < moment - limit_s for started in self.started[:])


#: This worker's slot: (the shared array, its index); None outside a worker.
_beat: tuple[Any, int] | None = None


def _claim_slot(heartbeats: Heartbeats | None) -> None:
    global _beat
    if heartbeats is None:
        return
    with heartbeats.taken.get_lock():
        index = heartbeats.taken.value
        heartbeats.taken.value += 1
    if index < len(heartbeats.started):
        _beat = (heartbeats.started, index)


def file_started() -> None:
    """Record in this worker's slot that it starts preparing a file (no-op outside a worker)."""
    if _beat is not None:
        _beat[0][_beat[1]] = time.monotonic()


def file_done() -> None:
    """Record that this worker finished its file (no-op outside a worker)."""
    if _beat is not None:
        _beat[0][_beat[1]] = 0.0


def timeout_summary(limit_s: float) -> str:
    """What a file that hung its worker gets as the summary of its quarantine reason."""
    return (
        f"preparation took longer than {limit_s:g} s, the worker was stopped "
        "(setting prepare_timeout_s)"
    )


def set_memory_ceiling(limit: int) -> None:
    """Cap this process's data segment (``RLIMIT_DATA`` soft limit) at ``limit`` bytes.

    0 leaves the limit as it is. A limit above the hard limit is lowered to it.

    Raises:
        ValueError: ``limit`` is negative.
    """
    global _ceiling
    if limit < 0:
        raise ValueError(f"memory ceiling must be 0 (none) or positive, got {limit}")
    if limit == 0:
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    _ceiling = limit


def _exit_with_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def init_worker(memory_limit: int, parent_pid: int, heartbeats: Heartbeats | None = None) -> None:
    """Set up a preparation worker: the memory ceiling (:func:`set_memory_ceiling`), and a
    daemon thread that exits the process within :data:`PARENT_POLL_S` once ``parent_pid``
    is no longer its parent (the run was killed; polling works whichever thread of the
    parent started the worker, unlike ``PR_SET_PDEATHSIG``). Ctrl-C in a terminal reaches
    the whole process group: the worker leaves it to the parent, which shuts the pool down.
    With ``heartbeats``, the worker takes a slot of it (:func:`file_started`).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    keep_freed_memory()  # before it imports Polars, in case the run's process imported it first
    set_memory_ceiling(memory_limit)
    _claim_slot(heartbeats)
    threading.Thread(
        target=_exit_with_parent, args=(parent_pid,), name="exit-with-parent", daemon=True
    ).start()


def inject_fault(name: str) -> None:
    """Test hook (:data:`FAULT_ENV`): fail in the way asked for when preparing file ``name``."""
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    kinds = dict(item.rsplit(":", 1) for item in spec.split(",") if ":" in item)
    kind = kinds.get(name)
    if kind == "exit":
        os._exit(3)
    elif kind == "abort":
        os.abort()
    elif kind == "raise":
        raise RuntimeError(f"fault injected while preparing {name}")
    elif kind == "memory":
        bytearray(2 * (_ceiling or 1 << 40))
    elif kind == "hang":
        while True:  # neither crashes nor ends: only the time limit stops it
            time.sleep(1)


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MiB"


def exception_summary(exc: BaseException) -> str:
    """One line naming an exception raised while preparing a file (type: first line, at most
    300 characters); a ``MemoryError`` under a ceiling names the ceiling and its setting."""
    if isinstance(exc, MemoryError) and _ceiling:
        return (
            f"MemoryError: over the memory ceiling of {_mib(_ceiling)} "
            "(setting prepare_memory_limit_bytes)"
        )
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text if len(text) <= 300 else text[:299] + "…"


def exit_summary(exitcode: int | None, memory_limit: int) -> str:
    """What the death of a worker process with ``exitcode`` means, in one line."""
    ceiling = (
        f"; e.g. an allocation over the memory ceiling of {_mib(memory_limit)} "
        "(setting prepare_memory_limit_bytes)"
        if memory_limit
        else ""
    )
    if exitcode is None:
        return "the worker process died"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        if -exitcode == signal.SIGABRT:
            return f"the worker process aborted ({name}{ceiling})"
        if -exitcode == signal.SIGKILL:
            return f"the worker process was killed ({name}; out of memory?)"
        return f"the worker process was killed by {name}"
    return f"the worker process exited with status {exitcode}"


def internal_error_reason(summary: str) -> str:
    """The quarantine reason of a file whose preparation failed: the summary and this
    paperwatch's version (files quarantined so are retried by another version only)."""
    return f"internal error while preparing: {summary} (paperwatch {__version__})"


class WorkerDied(Exception):
    """The isolated worker process died while preparing a file; ``summary`` says how."""

    def __init__(self, summary: str) -> None:
        super().__init__(summary)
        self.summary = summary


def _isolated_loop(
    conn: Connection,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    memory_limit: int,
    heartbeats: Heartbeats | None = None,
) -> None:
    init_worker(memory_limit, os.getppid(), heartbeats)
    while True:
        item = conn.recv()
        if item is None:
            return
        conn.send(fn([item], *args))


class IsolatedWorker:
    """A process of its own (``spawn``) that calls ``fn([item], *args)`` for one item at a
    time, under the memory ceiling and watching its parent (:func:`init_worker`).

    With ``timeout_s`` (setting ``prepare_timeout_s``; 0: none), a file that ``fn`` has
    been preparing for longer (``fn`` marks it with :func:`file_started`) makes
    :meth:`run` kill the process and raise :class:`WorkerDied`.

    Use it as a context manager; after :class:`WorkerDied` start a new one.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        memory_limit: int,
        timeout_s: float = 0.0,
    ) -> None:
        self.memory_limit = memory_limit
        self.timeout_s = timeout_s
        self.heartbeats = Heartbeats(1) if timeout_s > 0 else None
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_isolated_loop,
            args=(child, fn, args, memory_limit, self.heartbeats),
            name="paperwatch-isolated-prepare",
            daemon=True,
        )
        self._process.start()
        child.close()

    def __enter__(self) -> IsolatedWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, item: Any) -> Any:
        """``fn([item], *args)`` in the worker.

        Raises:
            WorkerDied: the process died before it answered (the item killed it), or it
                was killed because the item took longer than ``timeout_s``.
        """
        poll = OVERDUE_POLL_S if self.heartbeats is not None else None
        try:
            self._conn.send(item)
            while True:
                ready = wait([self._conn, self._process.sentinel], timeout=poll)
                if self._conn in ready:
                    return self._conn.recv()
                if self._process.sentinel in ready:
                    break
                if self.heartbeats is not None and self.heartbeats.overdue(self.timeout_s):
                    self._process.kill()
                    self._process.join()
                    raise WorkerDied(timeout_summary(self.timeout_s))
        except (EOFError, BrokenPipeError, ConnectionResetError):
            pass
        self._process.join()
        raise WorkerDied(exit_summary(self._process.exitcode, self.memory_limit))

    def close(self) -> None:
        """Stop the worker (asks it to end, kills it after 5 s)."""
        if self._process.is_alive():
            with contextlib.suppress(OSError):  # BrokenPipeError: it just died
                self._conn.send(None)
            self._process.join(5)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
        self._conn.close()


# --- the temporary Prefect server of a command-line run --------------------------------

#: What the command line of Prefect's temporary API server holds (checked before killing a pid).
_SERVER_MARK = b"prefect.server.api.server:create_app"


def guard(parent_pid: int, child_pid: int, poll_s: float = PARENT_POLL_S) -> None:
    """Wait until ``parent_pid`` or ``child_pid`` is gone; when the parent went first, stop
    the child (SIGTERM, SIGKILL after 5 s) if it is still Prefect's temporary server.

    Run as ``python -m paperwatch.ingest.workers <parent pid> <child pid>`` by
    :func:`start_server_guard`: Prefect stops its temporary server at the exit of the
    process that started it (``atexit``), which does not happen when that process is
    killed (``SIGKILL``, the out-of-memory killer).
    """
    cmdline = Path(f"/proc/{child_pid}/cmdline")
    while _alive(parent_pid) and _alive(child_pid):
        time.sleep(poll_s)
    if _alive(parent_pid) or not _alive(child_pid):
        return
    try:
        if _SERVER_MARK not in cmdline.read_bytes():
            return  # the pid was reused
        os.kill(child_pid, signal.SIGTERM)
        for _ in range(50):
            time.sleep(0.1)
            if not _alive(child_pid):
                return
        os.kill(child_pid, signal.SIGKILL)
    except (OSError, ProcessLookupError):
        return


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie has exited


def start_server_guard(server_pid: int) -> subprocess.Popen[bytes]:
    """Start :func:`guard` for this process and Prefect's temporary server ``server_pid``,
    in a session of its own (Ctrl-C in the terminal does not reach it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "paperwatch.ingest.workers", str(os.getpid()), str(server_pid)],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


if __name__ == "__main__":
    guard(int(sys.argv[1]), int(sys.argv[2]))
