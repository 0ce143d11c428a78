"""Prefect's temporary API server for a command-line flow run: started early, started once
per home at a time, and started from a migrated database.

Without ``PREFECT_API_URL`` every flow run needs Prefect's temporary server
(``SubprocessASGIServer``: uvicorn in a process of its own, with a SQLite database in
``PREFECT_HOME``). Measured with ``bench/prefect_start.py`` on a quiet 2-core machine,
its start took 18 s in a fresh home, of which about 12 s is Alembic migrating the new
database, and 6 s in a home whose database exists. This module removes what it can of
that cost from a command's critical path:

- :func:`seed_database`: a fresh home gets a copy of a database already migrated by
  this Prefect version (:func:`template_path`, in the user's cache folder) instead of
  migrating its own; the first start of each Prefect version writes that copy
  (:func:`keep_template`), with SQLite's online backup, so a copy is never half-written;
- :func:`start_in_background`: the server starts in a thread while the command imports
  what its flow needs (the flow modules, Great Expectations) in the main thread.

Each home still has a database of its own (``<database folder>/.prefect``, see
:func:`paperwatch.cli.prefect_home`): nothing is shared between projects but the
read-only template. The template holds what every new database of that Prefect version
holds after its first start (the schema and the registered block types), no flow runs.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: The file name of the SQLite database in a Prefect home (Prefect's default connection URL
#: is ``sqlite+aiosqlite:///<PREFECT_HOME>/prefect.db``).
DATABASE_NAME = "prefect.db"


def cache_dir() -> Path:
    """The user's cache folder for paperwatch: ``$XDG_CACHE_HOME/paperwatch``, by default
    ``~/.cache/paperwatch`` (XDG Base Directory Specification)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base) / "paperwatch"


def template_path(prefect_version: str) -> Path:
    """Where the migrated database of ``prefect_version`` (e.g. ``"3.9.1"``) is kept:
    ``<cache_dir()>/prefect-<version>.db``. One per version, because each version
    migrates to its own schema head."""
    safe = "".join(c if c.isalnum() or c in ".-_" else "_" for c in prefect_version)
    return cache_dir() / f"prefect-{safe}.db"


def uses_default_database(home: Path, connection_url: str) -> bool:
    """True when Prefect's database is the default SQLite file of ``home`` (the only case
    a template is used for: a user-chosen database is left to Prefect)."""
    return connection_url in (
        f"sqlite+aiosqlite:///{home}/{DATABASE_NAME}",
        f"sqlite+aiosqlite:///{home.resolve()}/{DATABASE_NAME}",
    )


def seed_database(home: Path, template: Path) -> bool:
    """Copy ``template`` to ``home/prefect.db`` when the home has no database yet.

    Call it with the home's start lock held. The copy is written to a temporary name and
    renamed into place, so Prefect never sees part of it; any failure (no template, a
    read-only cache, a full disk) leaves the home as it was and Prefect migrates a new
    database itself.

    Returns:
        True when the home got the copy.
    """
    target = home / DATABASE_NAME
    if target.exists() or not template.is_file():
        return False
    partial = home / f".{DATABASE_NAME}.{os.getpid()}.partial"
    try:
        _backup(template, partial, live=False)
        os.replace(partial, target)
    except (OSError, sqlite3.Error):
        with contextlib.suppress(OSError):
            partial.unlink()
        return False
    return True


def keep_template(home: Path, template: Path) -> bool:
    """After a server started in a fresh home (it migrated ``home/prefect.db``), keep a
    copy of that database as ``template`` for the next fresh home, unless one exists.

    The copy is SQLite's online backup of the live database (consistent while the
    server has it open), written to a temporary name and renamed into place: two
    processes doing this at once each write a whole copy and the last rename wins.
    Failures are ignored (the next fresh home migrates again).

    Returns:
        True when the template was written.
    """
    source = home / DATABASE_NAME
    if template.exists() or not source.is_file():
        return False
    partial = template.with_name(f".{template.name}.{os.getpid()}.partial")
    try:
        template.parent.mkdir(parents=True, exist_ok=True)
        _backup(source, partial, live=True)
        os.replace(partial, template)
    except (OSError, sqlite3.Error):
        with contextlib.suppress(OSError):
            partial.unlink()
        return False
    return True


def _backup(source: Path, target: Path, *, live: bool) -> None:
    """Copy the SQLite database ``source`` to ``target`` with the online backup API; a
    ``live`` source may be written meanwhile (a running server's), the template is not
    (read as immutable: no ``-shm``/``-wal`` files appear beside it)."""
    mode = "ro" if live else "ro&immutable=1"
    src = sqlite3.connect(f"file:{source}?mode={mode}", uri=True)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
            # A rollback journal, not WAL: reading the copy leaves no -wal/-shm files
            # beside it (Prefect turns WAL on again when it opens its database).
            dst.execute("pragma journal_mode=delete")
        finally:
            dst.close()
    finally:
        src.close()


class BackgroundStart:
    """Start Prefect's temporary server in a thread: ``start()`` it, do other work, then
    ``wait()`` for the server (which re-raises what the start raised)."""

    def __init__(self, start: Any) -> None:
        self._start = start
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="prefect-server-start", daemon=True)

    def _run(self) -> None:
        try:
            self._start()
        except BaseException as exc:  # re-raised in the main thread by wait()
            self._error = exc

    def start(self) -> BackgroundStart:
        """Begin the start in the thread; returns self."""
        self._thread.start()
        return self

    def wait(self) -> None:
        """Block until the server answers; raise the start's exception, if any."""
        self._thread.join()
        if self._error is not None:
            raise self._error


def warm_imports(modules: Iterable[str]) -> None:
    """Import ``modules`` (dotted names) now, so that the flow does not pay for them later;
    a module that fails to import is left for the flow to report."""
    for name in modules:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
