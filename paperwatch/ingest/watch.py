"""Watching the listing folder: which paths count, when a file is complete, when to run.

The decisions are pure and take the clock as an argument, so they are tested
without watchdog, a file system or a Prefect server:

- :func:`ignore_reason`: dot files, editor/download temporary files and
  files of other extensions than the readers take (``.txt``, ``.md``, ``.json``, ``.jsonl``,
  ``.bib``, ``.xml``, ``.atom``, ``.rss``) are never listings (the same rules as the folder scan of
  :func:`paperwatch.ingest.files.scan_folder`).
- :class:`ArrivalBatcher`: a file is *settled* once its (size, mtime) has stayed
  the same for the quiet period; settled files are handed out in batches, one
  batch once nothing else is still being written (or a batch has waited
  ``max_wait_s``), so a burst of 50 files gives one or two runs, not 50.
- :func:`hold_back_recent`: the flow-side guard: a scheduled or triggered run
  leaves a file modified within the quiet period for the next run.

:func:`watch_folder` is the thin loop around watchdog that feeds the batcher;
``paperwatch watch`` passes it a callback that emits :data:`EVENT_NAME` (or runs
the ingestion flow in-process with ``--local``).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from paperwatch.ingest.files import ListingFileStat, ScanResult, name_ignore_reason, printable_name

#: The Prefect event the watcher emits and the ``ingest-listings`` deployment is triggered by.
EVENT_NAME = "paperwatch.listing.arrived"

#: Prefix of the event's resource id; the rest is the watched folder's absolute path.
RESOURCE_PREFIX = "paperwatch.folder."

_log = logging.getLogger("paperwatch.ingest.watch")


def folder_resource_id(folder: Path) -> str:
    """The event resource id of a watched folder: ``paperwatch.folder.<absolute path>``."""
    return RESOURCE_PREFIX + str(folder.resolve())


def ignore_reason(rel: str) -> str | None:
    """Why a path (relative to the watched folder, POSIX separators) is not a listing, or None.

    A path inside a hidden folder (``.git/x.txt``, ``.tmp/part.txt``) is ignored as
    hidden, like :func:`paperwatch.ingest.files.scan_folder` does; Emacs lock files
    (``.#x.txt``) and autosaves (``#x.txt#``), vim swap files (``.x.txt.swp``),
    ``x.txt~`` backups and ``.part``/``.crdownload`` downloads are temporary files.
    """
    parts = [p for p in rel.split("/") if p]
    if not parts:
        return "not a file name"
    if any(p.startswith(".") for p in parts[:-1]):
        return "hidden file"
    return name_ignore_reason(parts[-1])


@dataclass(frozen=True, slots=True)
class FileState:
    """What the watcher last saw of a file: size in bytes, mtime in ns since the epoch."""

    size: int
    mtime_ns: int


@dataclass(slots=True)
class _Pending:
    state: FileState
    since: float  # monotonic seconds at which ``state`` was first seen


@dataclass(slots=True)
class ArrivalBatcher:
    """Decide when files are complete and when to start a run for them (pure, clock injected).

    Feed it what the file system says (:meth:`seen`, :meth:`gone`) and ask
    :meth:`due` on every tick. Times are monotonic seconds (``time.monotonic()``).

    Args:
        quiet_s: a file is settled once its (size, mtime) stayed the same this long.
        max_wait_s: a settled batch is handed out after this long even while other
            files are still being written (so a never-ending trickle cannot starve
            the runs); ``None`` waits until nothing is being written (used by
            ``watch --local``, whose in-process runs have no other guard).
    """

    quiet_s: float
    max_wait_s: float | None = 30.0
    _pending: dict[str, _Pending] = field(default_factory=dict)
    _settled: dict[str, _Pending] = field(default_factory=dict)
    _handed_out: dict[str, FileState] = field(default_factory=dict)

    def seen(self, rel: str, state: FileState, now: float) -> None:
        """Record the current (size, mtime) of ``rel``; a change restarts its quiet period.

        A settled (or already handed out) file seen again unchanged stays as it is;
        one that changed goes back to pending (it is being rewritten) and is handed
        out again once it settles.
        """
        known = self._pending.get(rel) or self._settled.get(rel)
        if known is not None and known.state == state:
            return
        if known is None and self._handed_out.get(rel) == state:
            return
        self._settled.pop(rel, None)
        self._pending[rel] = _Pending(state, now)

    def gone(self, rel: str) -> None:
        """Forget ``rel`` (deleted or moved away)."""
        self._pending.pop(rel, None)
        self._settled.pop(rel, None)
        self._handed_out.pop(rel, None)

    def pending(self) -> list[str]:
        """Files seen but not settled yet, sorted."""
        return sorted(self._pending)

    def settle(self, now: float) -> list[str]:
        """Move the files quiet for ``quiet_s`` from pending to settled; return those, sorted."""
        newly = sorted(
            rel for rel, p in self._pending.items() if is_stable(p.since, now, self.quiet_s)
        )
        for rel in newly:
            self._settled[rel] = _Pending(self._pending.pop(rel).state, now)
        return newly

    def due(self, now: float) -> list[str]:
        """The batch of settled files to run for now (sorted), or ``[]`` to keep waiting.

        Settles what is quiet first. A batch goes out when something is settled and
        either nothing is still pending or the oldest settled file has waited
        ``max_wait_s``. The batch's states are remembered, so the same file seen
        again unchanged (a late event, the next catch-up) starts nothing.
        """
        self.settle(now)
        if not self._settled:
            return []
        if self._pending:
            oldest = min(p.since for p in self._settled.values())
            if self.max_wait_s is None or now - oldest < self.max_wait_s:
                return []
        batch = sorted(self._settled)
        self._handed_out.update({rel: p.state for rel, p in self._settled.items()})
        self._settled.clear()
        return batch


def is_stable(since: float, now: float, quiet_s: float) -> bool:
    """True when a state first seen at ``since`` is unchanged at ``now`` for ``quiet_s`` seconds."""
    return now - since >= quiet_s


def hold_back_recent(scan: ScanResult, now_ns: int, quiet_s: float) -> ScanResult:
    """Move the files modified less than ``quiet_s`` before ``now_ns`` from ``files`` to ``ignored``.

    The flow-side half of "never read a file half-way": a scheduled or triggered
    run may start while another file is still being written; that file is passed
    over ("modified 0.4 s ago, may still be written") and read by a later run
    (the watcher's event once it settles, or the interval schedule).

    Args:
        scan: the folder scan.
        now_ns: the wall clock in ns since the epoch (``time.time_ns()``), the clock of mtimes.
        quiet_s: the quiet period in seconds; 0 or less keeps every file.

    Returns:
        A new :class:`ScanResult` (``scan`` is not changed).
    """
    if quiet_s <= 0:
        return scan
    limit_ns = int(quiet_s * 1e9)
    kept: list[ListingFileStat] = []
    held: list[tuple[str, str]] = []
    for f in scan.files:
        age_ns = now_ns - f.mtime_ns
        if age_ns < limit_ns:
            held.append((f.rel, f"modified {max(age_ns, 0) / 1e9:.1f} s ago, may still be written"))
        else:
            kept.append(f)
    if not held:
        return scan
    return replace(scan, files=tuple(kept), ignored=(*scan.ignored, *held))


def _stat(path: Path) -> FileState | None:
    try:
        st = path.stat()
    except OSError:
        return None
    if not path.is_file():
        return None
    return FileState(st.st_size, st.st_mtime_ns)


def _listing_paths(folder: Path) -> Iterable[str]:
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            rel = (Path(root) / name).relative_to(folder).as_posix()
            if ignore_reason(rel) is None:
                yield rel


def describe_batch(batch: Sequence[str], what: str) -> str:
    """The watcher's line for a batch of settled files: ``"<n> file(s) settled, e.g. <first>:
    <what>"``, the name escaped as the scan shows it
    (:func:`paperwatch.ingest.files.printable_name`: non-UTF-8 bytes as ``\\xff``, newlines and
    bidirectional controls as ``\\n``, ``\\u202e``), so a name cannot break or disguise
    the line."""
    first = printable_name(batch[0]) if batch else "nothing"
    return f"{len(batch)} file(s) settled, e.g. {first}: {what}"


def event_files(batch: Sequence[str], limit: int = 100) -> list[str]:
    """The first ``limit`` names of a batch for the event's payload, escaped like
    :func:`describe_batch` (the payload is shown in the Prefect UI and logged)."""
    return [printable_name(rel) for rel in batch[:limit]]


def _queue_handler(folder: Path, events: queue.SimpleQueue[str]) -> Any:
    """A watchdog handler putting on ``events`` the relative path of each listing file
    created, modified or moved in under ``folder``."""
    from watchdog.events import FileSystemEvent, FileSystemEventHandler

    class _Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.is_directory or event.event_type not in ("created", "modified", "moved"):
                return
            raw = event.dest_path if event.event_type == "moved" else event.src_path
            path = Path(os.fsdecode(raw))
            try:
                rel = path.relative_to(folder).as_posix()
            except ValueError:
                return
            if ignore_reason(rel) is None:
                events.put(rel)

    return _Handler()


def _restat(
    folder: Path, batcher: ArrivalBatcher, events: queue.SimpleQueue[str], now: float
) -> None:
    """Stat the paths of the queued events and the batcher's pending files, and tell it."""
    touched: set[str] = set()
    while True:
        try:
            touched.add(events.get_nowait())
        except queue.Empty:
            break
    for rel in touched | set(batcher.pending()):
        state = _stat(folder / rel)
        if state is None:
            batcher.gone(rel)
        else:
            batcher.seen(rel, state, now)


def watch_folder(
    folder: Path,
    on_batch: Callable[[list[str]], None],
    quiet_s: float,
    *,
    max_wait_s: float | None = 30.0,
    tick_s: float = 0.2,
    stop: threading.Event | None = None,
    catch_up: bool = True,
) -> None:
    """Watch ``folder`` (recursively) and call ``on_batch(rels)`` for each batch of settled files.

    Runs until ``stop`` is set (or KeyboardInterrupt). watchdog reports created, modified
    and moved-in paths; every ``tick_s`` seconds the pending files are stat'ed (a writer
    that pauses is noticed without a new event) and :class:`ArrivalBatcher` decides, with
    ``quiet_s`` and ``max_wait_s``. ``on_batch`` (sorted relative paths) runs in this
    thread, so batches never overlap; an exception in it is logged and the loop goes on.
    ``catch_up``: the listing files already in the folder count as arrived (files that
    landed while the watcher was down are loaded).

    Raises:
        FileNotFoundError / NotADirectoryError: ``folder`` is missing or a file.
    """
    from watchdog.observers import Observer

    folder = folder.resolve()
    if not folder.exists():
        raise FileNotFoundError(f"watched folder {folder} does not exist")
    if not folder.is_dir():
        raise NotADirectoryError(f"watched folder {folder} is not a folder")
    stop = stop or threading.Event()
    events: queue.SimpleQueue[str] = queue.SimpleQueue()

    batcher = ArrivalBatcher(quiet_s=quiet_s, max_wait_s=max_wait_s)
    observer = Observer()
    observer.schedule(_queue_handler(folder, events), str(folder), recursive=True)
    observer.start()
    try:
        if catch_up:
            now = time.monotonic()
            for rel in _listing_paths(folder):
                state = _stat(folder / rel)
                if state is not None:
                    batcher.seen(rel, state, now)
        while not stop.is_set():
            now = time.monotonic()
            _restat(folder, batcher, events, now)
            batch = batcher.due(now)
            if batch:
                try:
                    on_batch(batch)
                except Exception:
                    _log.exception("handling %d arrived file(s) failed", len(batch))
            stop.wait(tick_s)
    finally:
        observer.stop()
        observer.join(timeout=5)
