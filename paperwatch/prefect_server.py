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
- :class:`TemporaryServer`: the server process starts before Prefect is imported in the
  command, so that it boots while the command imports what its flow needs (Prefect, the
  flow modules, Great Expectations).

Each home still has a database of its own (``<database folder>/.prefect``, see
:func:`paperwatch.cli.prefect_home`): nothing is shared between projects but the
read-only template. The template holds what every new database of that Prefect version
holds after its first start (the schema and the registered block types), no flow runs.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import socket
import sqlite3
import subprocess
import sys
import time
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
    return _copy_into_place(template, target, live=False)


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
    return _copy_into_place(source, template, live=True)


def _copy_into_place(source: Path, target: Path, *, live: bool) -> bool:
    """Back ``source`` up to a temporary name beside ``target`` (its folder created), then
    rename it to ``target``; on any failure remove the partial copy and return False."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _backup(source, partial, live=live)
        os.replace(partial, target)
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


#: What the command line of Prefect's API server process holds (the ASGI app factory that
#: Prefect's own ``SubprocessASGIServer`` runs under uvicorn).
SERVER_APP = "prefect.server.api.server:create_app"


class TemporaryServer:
    """Prefect's API server for this command, started before Prefect is imported here.

    It is the process Prefect's own temporary server runs (uvicorn serving
    :data:`SERVER_APP` with the UI off, as ``SubprocessASGIServer`` starts it), on a
    socket bound here to a free port of 127.0.0.1 and handed to uvicorn as a file
    descriptor (no port race). Starting it first lets the server import and migrate on
    one core while this process imports Prefect, the flow and Great Expectations on the
    other: about 5 s less before the first flow on the 2-core machine
    (``bench/cli.py``), and Prefect's server modules are never imported here.

    :meth:`start` returns at once, holding the home's start lock (one start at a time
    per home: the server migrates the home's SQLite database as it starts); set
    ``PREFECT_API_URL`` to :attr:`api_url` before Prefect is imported; :meth:`wait`
    returns when the API answers ``/health`` and releases the lock; :meth:`stop` ends
    the process (SIGTERM, SIGKILL after 5 s).
    """

    def __init__(self, home: Path, template: Path | None, timeout_s: float) -> None:
        """``home``: the ``PREFECT_HOME`` (created); ``template``: the migrated database a
        fresh home starts from (None: Prefect migrates); ``timeout_s``: how long
        :meth:`wait` waits for the API."""
        self.home = home
        self.template = template
        self.timeout_s = timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self.api_url = ""
        self._lock: Any = None
        self._fresh = False

    def start(self) -> None:
        """Start the server process (see the class); raises ``OSError`` when the home or
        the socket cannot be made."""
        from filelock import FileLock

        self.home.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(self.home / "paperwatch-server-start.lock", thread_local=False)
        self._lock.acquire()
        try:
            seeded = self.template is not None and seed_database(self.home, self.template)
            self._fresh = not seeded and not (self.home / DATABASE_NAME).exists()
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind(("127.0.0.1", 0))
                sock.listen(128)
                port = sock.getsockname()[1]
                spec = importlib.util.find_spec("prefect")
                if spec is None or spec.origin is None:
                    raise OSError("Prefect is not installed")
                site = str(Path(spec.origin).parent.parent)
                command = [sys.executable, "-m", "uvicorn", "--app-dir", site]
                command += ["--factory", SERVER_APP, "--fd", str(sock.fileno())]
                command += ["--log-level", "error", "--lifespan", "on"]
                self.process = subprocess.Popen(
                    command,
                    pass_fds=[sock.fileno()],
                    env={
                        **os.environ,
                        "PREFECT_UI_ENABLED": "0",
                        "PREFECT__SERVER_EPHEMERAL": "1",
                        "PREFECT__SERVER_FINAL": "1",
                    },
                )
            self.api_url = f"http://127.0.0.1:{port}/api"
        except BaseException:
            self._lock.release()
            raise

    def wait(self) -> None:
        """Block until the API answers ``GET /health`` with 200.

        Raises:
            RuntimeError: the server exited, or did not answer within ``timeout_s``.
        """
        import urllib.error
        import urllib.request

        assert self.process is not None, "start() first"
        try:
            deadline = time.monotonic() + self.timeout_s
            while True:
                code = self.process.poll()
                if code is not None:
                    raise RuntimeError(f"it exited with code {code}")
                try:
                    with urllib.request.urlopen(f"{self.api_url}/health", timeout=5) as answer:
                        if answer.status == 200:
                            break
                except (urllib.error.URLError, OSError):
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"it did not answer within {self.timeout_s:.0f} s")
                time.sleep(0.1)
            if self._fresh and self.template is not None:
                keep_template(self.home, self.template)
        finally:
            self._lock.release()

    def stop(self) -> None:
        """End the server process, if it runs (SIGTERM, then SIGKILL after 5 s)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def warm_imports(modules: Iterable[str]) -> None:
    """Import ``modules`` (dotted names) now, so that the flow does not pay for them later;
    a module that fails to import is left for the flow to report."""
    for name in modules:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
