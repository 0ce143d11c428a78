"""Prefect's temporary API server for a command-line flow run: started early, started once
per home at a time, and started from a migrated database.

- :func:`seed_database`: a fresh home gets a copy of a database migrated by an earlier
  start of the same Prefect installation (:func:`template_path`, keyed by
  :func:`setup_key`, in the user's cache folder); the first start of an installation
  writes it (:func:`keep_template`);
- a home set up by a start of the same installation (:func:`set_up_for`) starts without
  Prefect's migration check and block-type registration (:data:`SETUP_SKIPS`);
- :class:`TemporaryServer`: the server starts before Prefect is imported in the command,
  and boots while the command imports what its flow needs.

Nothing here reads Prefect's sources: the key is the installed distributions' names, and
a database's revision is read from its ``alembic_version`` table. Why, and what each step
saves: docs/design.md, "Prefect's temporary server".
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
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


def cache_dir() -> Path | None:
    """The user's cache folder for paperwatch: ``$XDG_CACHE_HOME/paperwatch``, by default
    ``~/.cache/paperwatch`` (XDG Base Directory Specification: a relative
    ``XDG_CACHE_HOME`` is ignored). None when there is no home to find (``HOME`` unset and
    the user not in the password database): the template is then not used."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        # os.path.expanduser leaves "~" as it is when there is no home to find (where
        # Path.expanduser raises RuntimeError or, on Python 3.11, KeyError).
        base = os.path.expanduser("~/.cache")
        if not os.path.isabs(base):
            return None
    return Path(base) / "paperwatch"


def template_path(key: str) -> Path | None:
    """Where the migrated database of the Prefect installation ``key`` (:func:`setup_key`)
    is kept: ``<cache_dir()>/prefect-<version>-<hash of key>.db``, None without a cache
    folder. One per installation: each Prefect version migrates to its own schema, and
    its collections register their own block types."""
    folder = cache_dir()
    if folder is None:
        return None
    version = next((n[8:-10] for n in key.split() if n.startswith("prefect-")), "unknown")
    safe = "".join(c if c.isalnum() or c in ".-_" else "_" for c in version)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return folder / f"prefect-{safe}-{digest}.db"


def seed_database(home: Path, template: Path) -> bool:
    """Copy ``template`` to ``home/prefect.db`` when the home has no database yet.

    Call it with the home's start lock held. The copy is written to a temporary name,
    checked (:func:`usable_template`: SQLite's ``quick_check``, migrated, no flow runs)
    and only then renamed into place, so Prefect never sees part of it, nor a damaged
    template (cut short, or another file put there). Any
    failure (no template, a read-only cache, a full disk, a bad template) leaves the home
    as it was and Prefect migrates a new database itself. Journal files left beside a
    deleted ``prefect.db`` (``-wal``, ``-shm``, ``-journal``) are removed first: SQLite
    would apply them to the copy.

    Args:
        home: the ``PREFECT_HOME`` folder (exists).
        template: the migrated database of this installation, :func:`template_path`.

    Returns:
        True when the home got the copy.
    """
    target = home / DATABASE_NAME
    if target.exists() or not template.is_file():
        return False
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            (home / f"{DATABASE_NAME}{suffix}").unlink()
    return _copy_into_place(template, target, live=False)


def keep_template(home: Path, template: Path) -> bool:
    """After a server started in a fresh home (it migrated ``home/prefect.db``), keep a
    copy of that database as ``template`` for the next fresh home, unless a usable one
    exists (:func:`usable_template`: one that is damaged, empty or holding runs is
    replaced).

    The copy is SQLite's online backup of the live database (consistent while the
    server has it open), written to a temporary name, checked like the template it
    becomes, and renamed into place: two processes doing this at once each write a whole
    copy and the last rename wins; a process killed meanwhile leaves a temporary file
    that the next copy into that folder removes. Failures are ignored (the next fresh
    home migrates again).

    Returns:
        True when the template was written.
    """
    source = home / DATABASE_NAME
    if not source.is_file() or usable_template(template):
        return False
    return _copy_into_place(source, template, live=True)


def usable_template(path: Path) -> bool:
    """True when ``path`` is a whole SQLite database (``pragma quick_check`` answers
    ``ok``) that Alembic migrated (one ``alembic_version`` row) and that holds no flow
    run: what a new Prefect home may start from. Read as immutable (nothing is written
    beside it)."""
    if not path.is_file():
        return False
    try:
        con = sqlite3.connect(_sqlite_uri(path, "ro&immutable=1"), uri=True)
        try:
            if con.execute("pragma quick_check").fetchall() != [("ok",)]:
                return False
            if len(con.execute("select version_num from alembic_version").fetchall()) != 1:
                return False
            return con.execute("select count(*) from flow_run").fetchone() == (0,)
        finally:
            con.close()
    except sqlite3.Error:
        return False


def migration_version(database: Path) -> str | None:
    """The Alembic revision ``database`` (a Prefect SQLite database) is at, read-only;
    None when it cannot be read or holds no single revision."""
    try:
        con = sqlite3.connect(_sqlite_uri(database, "ro"), uri=True, timeout=5)
        try:
            rows = con.execute("select version_num from alembic_version").fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return str(rows[0][0]) if len(rows) == 1 else None


def _sqlite_uri(path: Path, mode: str) -> str:
    """SQLite's ``file:`` URI of ``path`` (absolute, percent-encoded: a folder named with
    ``?``, ``#``, ``%`` or spaces stays one path) with ``?mode=<mode>``."""
    return f"{path.resolve().as_uri()}?mode={mode}"


def _copy_into_place(source: Path, target: Path, *, live: bool) -> bool:
    """Back ``source`` up to a temporary name beside ``target`` (its folder created), check
    it (:func:`usable_template`), then rename it to ``target``; on any failure, or when
    the command is interrupted, remove the partial copy (and return False)."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_orphaned_partials(target)
        _backup(source, partial, live=live)
        if not usable_template(partial):
            raise sqlite3.DatabaseError(f"{source} is not a usable migrated database")
        os.replace(partial, target)
    except (OSError, sqlite3.Error):
        with contextlib.suppress(OSError):
            partial.unlink()
        return False
    except BaseException:  # Ctrl-C, SIGTERM: no partial copy left behind
        with contextlib.suppress(OSError):
            partial.unlink()
        raise
    return True


def _remove_orphaned_partials(target: Path) -> None:
    """Remove the temporary copies beside ``target`` whose writing process is gone (it was
    killed while copying)."""
    for partial in target.parent.glob(f".{target.name}.*.partial"):
        pid = partial.name[len(target.name) + 2 : -len(".partial")]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                partial.unlink()


def _backup(source: Path, target: Path, *, live: bool) -> None:
    """Copy the SQLite database ``source`` to ``target`` with the online backup API; a
    ``live`` source may be written meanwhile (a running server's), the template is not
    (read as immutable: no ``-shm``/``-wal`` files appear beside it)."""
    mode = "ro" if live else "ro&immutable=1"
    src = sqlite3.connect(_sqlite_uri(source, mode), uri=True)
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


#: The name of the server's output file in its Prefect home (appended; each start begins
#: with a line naming the time and the command's pid).
SERVER_LOG = "server.log"

#: A start that finds the server's output file this big (bytes) starts it anew.
SERVER_LOG_MAX = 1 << 20


def _size(path: Path) -> int:
    """The size of ``path`` in bytes (0 when it does not exist)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) used so far by process ``pid``, from
    ``/proc/<pid>/stat`` (fields 14 and 15, in clock ticks: proc(5)); None when it cannot be
    read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


#: The file in a Prefect home that says its database was set up by a start of the
#: installed Prefect (see :func:`set_up_for`).
SETUP_MARKER = "paperwatch-setup"

#: What a start skips in a home set up for the installed Prefect: the Alembic migration
#: check, block-type registration and Prefect's memo of it (what it saves:
#: docs/design.md, "Prefect's temporary server").
SETUP_SKIPS = {
    "PREFECT_API_DATABASE_MIGRATE_ON_START": "false",
    "PREFECT_API_BLOCKS_REGISTER_ON_START": "false",
    "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false",
}


def setup_key(prefect_dir: Path | None = None) -> str | None:
    """What a home's set-up depends on: the installed Prefect distributions
    (``prefect*.dist-info`` beside the package ``prefect_dir``, default the installed one:
    Prefect and its collections, which bring block types), e.g.
    ``"prefect-3.9.1.dist-info prefect_dask-0.3.6.dist-info"``. Read from one folder
    listing, without importing Prefect; None when Prefect or its metadata is not found."""
    if prefect_dir is None:
        spec = importlib.util.find_spec("prefect")
        if spec is None or spec.origin is None:
            return None
        prefect_dir = Path(spec.origin).parent
    try:
        names = sorted(
            n
            for n in os.listdir(prefect_dir.parent)
            if n.lower().startswith("prefect") and n.endswith(".dist-info")
        )
    except OSError:
        return None
    return " ".join(names) or None


def set_up_for(home: Path, key: str) -> bool:
    """True when ``home``'s database was migrated and had its block types registered by a
    start under the same :func:`setup_key` and is still at the revision that start left
    (the :data:`SETUP_MARKER` file holds both): a start may then skip those steps
    (:data:`SETUP_SKIPS`). False on any doubt (no marker, another Prefect or collection,
    a database missing, unreadable or at another revision)."""
    marker = _read(home / SETUP_MARKER)
    if marker is None:
        return False
    recorded, _, version = marker.rpartition("\n")
    database = home / DATABASE_NAME
    return (
        recorded == key
        and bool(version)
        and database.is_file()
        and migration_version(database) == version
    )


def _read(path: Path | None) -> str | None:
    """The text of ``path``, or None when there is none or it cannot be read."""
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _write(path: Path | None, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary name and a rename (a reader sees the
    old text or the new, never part of it). Failures are ignored: the next start sets up
    again, as Prefect would."""
    if path is None:
        return
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink()


class ServerExited(RuntimeError):
    """The temporary server exited before it answered (a damaged database, a migration
    that failed): waiting longer would not help."""


class TemporaryServer:
    """Prefect's API server for this command, started before Prefect is imported here.

    It is the process Prefect's own temporary server runs (uvicorn serving
    :data:`SERVER_APP` with the UI off, as ``SubprocessASGIServer`` starts it), on a
    socket bound here to a free port of 127.0.0.1 and handed to uvicorn as a file
    descriptor (no port race). Starting it first lets the server import and migrate on
    one core while this process imports Prefect, the flow and Great Expectations on the
    other: about 5 s less before the first flow on the 2-core machine
    (``bench/cli.py``), and Prefect's server modules are never imported here.

    The server never outlives this process: Linux sends it SIGTERM when the thread that
    called :meth:`start` ends, however it ends (:func:`run_server`; call :meth:`start` from
    the main thread), besides :meth:`stop` and the guard process of the command line. It
    runs in a process group of its own, so that Ctrl-C in the terminal reaches only the
    command. Its output (errors only) goes to ``<home>/server.log``, not to the terminal.

    :meth:`start` returns at once, holding the home's start lock (one start at a time
    per home: the server migrates the home's SQLite database as it starts); set
    ``PREFECT_API_URL`` to :attr:`api_url` before Prefect is imported; :meth:`wait`
    returns when the API answers ``/health`` and releases the lock; :meth:`stop` ends
    the process (SIGTERM, SIGKILL after 5 s).
    """

    def __init__(self, home: Path, template: Path | None, timeout_s: float) -> None:
        """``home``: the ``PREFECT_HOME`` (created); ``template``: the migrated database a
        fresh home starts from (None: Prefect migrates); ``timeout_s``: how long (wall
        seconds) :meth:`wait` waits while the server makes no progress (uses no CPU)."""
        self.home = home
        self.template = template
        self.timeout_s = timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self.api_url = ""
        self.log_path = home / SERVER_LOG
        self._lock: Any = None
        self._fresh = False
        self._setup_key: str | None = None

    def start(self) -> None:
        """Start the server process (see the class); raises ``OSError`` when the home, its
        log or the socket cannot be made, or Prefect is not installed."""
        from filelock import FileLock

        spec = importlib.util.find_spec("prefect")
        if spec is None or spec.origin is None:
            raise OSError("Prefect is not installed")
        package = Path(spec.origin).parent
        self.home.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(self.home / "paperwatch-server-start.lock", thread_local=False)
        self._lock.acquire()
        try:
            self._setup_key = setup_key(package)
            seeded = (
                self.template is not None
                and self._setup_key is not None
                and seed_database(self.home, self.template)
            )
            self._fresh = not seeded and not (self.home / DATABASE_NAME).exists()
            skips: dict[str, str] = {}
            if self._setup_key is not None and (seeded or set_up_for(self.home, self._setup_key)):
                # Set up already (by the first start of this installation, which made the
                # template, or by an earlier start here): what the user set explicitly wins.
                skips = {k: v for k, v in SETUP_SKIPS.items() if k not in os.environ}
            with (
                socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock,
                self.log_path.open("ab" if _size(self.log_path) < SERVER_LOG_MAX else "wb") as log,
            ):
                stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                log.write(f"--- {stamp} server of paperwatch pid {os.getpid()}\n".encode())
                log.flush()
                sock.bind(("127.0.0.1", 0))
                sock.listen(128)
                port = sock.getsockname()[1]
                command = [sys.executable, "-m", "paperwatch.prefect_server", str(os.getpid())]
                command += ["--app-dir", str(package.parent)]
                command += ["--factory", SERVER_APP, "--fd", str(sock.fileno())]
                command += ["--log-level", "error", "--lifespan", "on"]
                self.process = subprocess.Popen(
                    command,
                    pass_fds=[sock.fileno()],
                    # A process group of its own: Ctrl-C in the terminal interrupts the
                    # command, which ends its run and then stops the server; a server
                    # interrupted too would fail the run's last API calls instead.
                    process_group=0,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    env={
                        **os.environ,
                        **skips,
                        "PREFECT_UI_ENABLED": "0",
                        "PREFECT__SERVER_EPHEMERAL": "1",
                        "PREFECT__SERVER_FINAL": "1",
                    },
                )
            self.api_url = f"http://127.0.0.1:{port}/api"
        except BaseException:
            self.stop()
            self._lock.release()
            raise

    def wait(self) -> None:
        """Block until the API answers ``GET /health`` with 200, for as long as the server
        makes progress: it fails only when the server used no CPU time for ``timeout_s``
        wall seconds, or more than ``timeout_s`` CPU seconds in all, without answering (a
        loaded machine slows the start down; it does not stop it).

        Raises:
            ServerExited: the server exited (the message names its log).
            RuntimeError: it stalled or spun.
        """
        import urllib.error
        import urllib.request

        assert self.process is not None, "start() first"
        try:
            used = cpu_seconds(self.process.pid) or 0.0
            last_progress = time.monotonic()
            while True:
                code = self.process.poll()
                if code is not None:
                    raise ServerExited(f"it exited with code {code}; its output: {self.log_path}")
                try:
                    with urllib.request.urlopen(f"{self.api_url}/health", timeout=5) as answer:
                        if answer.status == 200:
                            break
                except (urllib.error.URLError, OSError):
                    pass
                now_used = cpu_seconds(self.process.pid)
                if now_used is not None and now_used > used:
                    used, last_progress = now_used, time.monotonic()
                if used > self.timeout_s:
                    raise RuntimeError(
                        f"it used {used:.0f} CPU seconds without answering; its output: "
                        f"{self.log_path}"
                    )
                if time.monotonic() - last_progress > self.timeout_s:
                    raise RuntimeError(
                        f"it made no progress for {self.timeout_s:.0f} s; its output: "
                        f"{self.log_path}"
                    )
                time.sleep(0.1)
            if self._setup_key is not None:
                if self._fresh and self.template is not None:
                    keep_template(self.home, self.template)
                version = migration_version(self.home / DATABASE_NAME)
                if version is not None:
                    _write(self.home / SETUP_MARKER, f"{self._setup_key}\n{version}")
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
    a module that fails to import is left for the flow to report.

    Python's cyclic garbage collector is paused meanwhile, and what the process holds then
    is moved to the permanent generation (:func:`gc.freeze`): imports make next to no
    garbage (why and what it saves: docs/design.md, "Warm imports").
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        for name in modules:
            with contextlib.suppress(Exception):
                importlib.import_module(name)
    finally:
        if enabled:
            gc.enable()
        gc.freeze()


def prepare_template(timeout_s: float = 180.0) -> str:
    """Write this installation's template (:func:`template_path`) now, as the first
    command-line run otherwise does on its way: start the temporary server once in a
    throwaway home, let it migrate its database, keep that as the template, stop it.

    ``make install`` runs it (``python -m paperwatch.prefect_server --prepare-template``),
    so that a newcomer's first ``make run`` starts from a migrated database. ``timeout_s``
    is :meth:`TemporaryServer.wait`'s. Returns one line saying what was done; nothing is
    raised when there is no cache folder, no Prefect metadata, or the user chose a
    database of their own (``PREFECT_API_DATABASE_CONNECTION_URL``): the line says so.
    Raises what :meth:`TemporaryServer.start` and :meth:`TemporaryServer.wait` raise.
    """
    import tempfile

    key = setup_key()
    template = None if key is None else template_path(key)
    if template is None:
        return "Prefect template: no cache folder or Prefect metadata; the first run migrates"
    if {"PREFECT_API_DATABASE_CONNECTION_URL", "PREFECT_SERVER_DATABASE_CONNECTION_URL"} & set(
        os.environ
    ):
        return "Prefect template: not used (a Prefect database of your own is set)"
    if usable_template(template):
        return f"Prefect template: {template} (already made)"
    previous = os.environ.get("PREFECT_HOME")
    with tempfile.TemporaryDirectory(prefix="paperwatch-prefect-") as home:
        os.environ["PREFECT_HOME"] = home
        server = TemporaryServer(Path(home), template, timeout_s)
        try:
            server.start()
            server.wait()
        finally:
            server.stop()
            if previous is None:
                os.environ.pop("PREFECT_HOME", None)
            else:
                os.environ["PREFECT_HOME"] = previous
    made = "made" if usable_template(template) else "not made (see the server log)"
    return f"Prefect template: {template} ({made})"


def run_server(argv: list[str]) -> None:
    """The server process (``python -m paperwatch.prefect_server <command pid> <uvicorn
    arguments>``, started by :meth:`TemporaryServer.start`): ask Linux to send it SIGTERM
    when the thread that started it ends (``PR_SET_PDEATHSIG``, prctl(2)), even by
    SIGKILL and before any guard process runs; exit (status 70) when that command is
    already gone; then run uvicorn as ``python -m uvicorn <uvicorn arguments>`` would.
    Elsewhere than Linux only the guard process and :meth:`TemporaryServer.stop` stop it."""
    import ctypes
    import runpy
    import signal

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != int(argv[0]):
        sys.exit(70)
    sys.argv = ["uvicorn", *argv[1:]]
    runpy.run_module("uvicorn", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--prepare-template"]:
        print(prepare_template())
    else:
        run_server(sys.argv[1:])
