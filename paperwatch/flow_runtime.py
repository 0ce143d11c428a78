"""The Prefect runtime of the command line: where flow runs of a command report.

The entry is :func:`flow_run`: around a command's flow run, a Prefect home of the
project's own (:func:`prefect_home`, set before Prefect is imported), the API the run
reports to, started or checked and stopped at the end (:func:`server_guard`), and the
run's Prefect noise kept off the terminal and in the log file (:func:`short_run_errors`).
Why paperwatch starts its own temporary server: docs/design.md.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from paperwatch.exits import fail, terminated

if TYPE_CHECKING:
    from paperwatch.prefect_server import TemporaryServer
    from paperwatch.settings import Settings

#: Seconds of waiting for Prefect's temporary server to answer (Prefect's default: 20). The
#: server paperwatch starts itself is waited on while it makes progress: this bounds the
#: seconds it may use no CPU, and the CPU seconds it may use, before it answers
#: (:meth:`paperwatch.prefect_server.TemporaryServer.wait`).
SERVER_STARTUP_TIMEOUT_S = 180

#: ``--debug``: Prefect's error lines and tracebacks on the terminal too (set by the CLI).
show_debug = False


@contextmanager
def flow_run(
    settings: Settings,
    *expected: type[BaseException],
    warm: tuple[str, ...] = (),
    own_home: bool = True,
) -> Iterator[None]:
    """Around one flow run of a command: :func:`server_guard` (in the database's own
    Prefect home unless ``own_home`` is False) and :func:`short_run_errors` for the
    ``expected`` exceptions, which pass through for the command to map to an exit."""
    home = prefect_home(settings.database) if own_home else None
    with server_guard(home, warm=warm), short_run_errors(*expected, settings=settings):
        yield


def prefect_home(database: Path) -> Path | None:
    """Give Prefect a home of this project's own, ``<database folder>/.prefect``, unless the
    user chose one or chose a server; call it before Prefect is imported.

    Without ``PREFECT_API_URL`` every flow run of the command line starts Prefect's
    temporary API server, whose SQLite database lives in ``PREFECT_HOME`` (``~/.prefect``
    by default): shared by every project and every Prefect process of the user, where
    two first starts at once raced on its schema migration. A home beside the database
    is shared only by the runs of that database, which the writer lock already orders,
    and :func:`server_guard` starts its server under a lock file in that home.

    The user's own setting wins: nothing changes when ``PREFECT_HOME`` or
    ``PREFECT_API_URL`` is in the environment, when the active profile of the user's
    ``profiles.toml`` or a settings file of the working directory sets either
    (:func:`_home_or_server_in_settings_files`), or when Prefect is already imported (its settings
    are read at import). The user's profiles file stays in use
    (``PREFECT_PROFILES_PATH``).

    Args:
        database: the DuckDB file of the run.

    The home is created (with the database's folder) when it is set: Prefect makes its
    home at import with a plain ``mkdir``, which fails, with a ``UserWarning`` on the
    terminal, when the database's folder does not exist yet (the first run of a fresh
    clone has no ``data/``).

    Returns:
        The home set, or None when it was left alone.
    """

    if "prefect" in sys.modules or {"PREFECT_HOME", "PREFECT_API_URL"} & set(os.environ):
        return None
    if _home_or_server_in_settings_files():
        return None
    # os.path.expanduser, not Path's: without HOME and a password entry it leaves "~" (no
    # such file) where Path.expanduser raises.
    profiles = Path(
        os.path.expanduser(os.environ.get("PREFECT_PROFILES_PATH", "~/.prefect/profiles.toml"))
    )
    if profiles.is_file():
        import tomllib

        try:
            data = tomllib.loads(profiles.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return None  # Prefect will say what is wrong with it
        active = os.environ.get("PREFECT_PROFILE") or data.get("active") or "ephemeral"
        chosen = data.get("profiles", {}).get(active, {})
        if isinstance(chosen, dict) and {"PREFECT_HOME", "PREFECT_API_URL"} & set(chosen):
            return None
        os.environ.setdefault("PREFECT_PROFILES_PATH", str(profiles))
    home = database.resolve().parent / ".prefect"
    # Prefect creates its home at import without parents: a fresh clone has no data/.
    # An unwritable database folder is named by the run's own error.
    with contextlib.suppress(OSError):
        home.mkdir(parents=True, exist_ok=True)
    os.environ["PREFECT_HOME"] = str(home)
    return home


_guarded_servers: set[int] = set()


@contextmanager
def server_guard(home: Path | None = None, warm: tuple[str, ...] = ()) -> Iterator[None]:
    """Around a flow run of the command line: SIGTERM ends the run like Ctrl-C (finally
    blocks run: the preparation workers are killed, the run is recorded as failed, and
    Prefect's temporary server is stopped at exit), and when no ``PREFECT_API_URL`` is set,
    Prefect's temporary server is started here with a guard process that stops it if this
    process is killed outright (:func:`paperwatch.ingest.workers.start_server_guard`); the flow
    runs then send no heartbeats (:func:`_no_heartbeats`).

    Args:
        home: the Prefect home :func:`prefect_home` set (None: it set none). With a home
            and Prefect not imported yet, the server starts before Prefect is imported
            (:class:`paperwatch.prefect_server.TemporaryServer`, from this Prefect
            version's migrated template when the home is fresh) while the modules named
            in ``warm`` are imported here; otherwise Prefect starts its own.
        warm: dotted module names the flow will need (its module, Great Expectations).
    """
    import signal

    from paperwatch.prefect_server import ServerExited, warm_imports

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        early = _start_early_server(home)
        warm_imports(warm)
        try:
            if early is not None:
                early.wait()
                temporary = True
            else:
                temporary = _start_prefects_server()
        except typer.Exit:  # a RuntimeError too (click's): the error line is printed
            raise
        except ServerExited as exc:
            raise fail(
                f"Prefect's temporary API server did not start ({exc}: it says why); "
                f"when it names its database, move {home}/prefect.db aside (a new one is "
                "made), or start a server (`prefect server start`) and set PREFECT_API_URL"
            ) from None
        except RuntimeError as exc:
            raise fail(
                f"Prefect's temporary API server did not start ({exc}); on a busy machine "
                "give it longer (PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, "
                f"paperwatch's default {SERVER_STARTUP_TIMEOUT_S}) or start a server "
                "(`prefect server start`) and set PREFECT_API_URL"
            ) from None
        with _no_heartbeats() if temporary else contextlib.nullcontext():
            yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _no_heartbeats() -> Iterator[None]:
    """Flow runs without Prefect's flow-run heartbeats, for a server that lives only as long
    as this process (Prefect's temporary server, started here).

    Heartbeats let a lasting server mark a run whose process died as crashed; a temporary
    server dies with the process, so nobody reads them, and they cost each run time at its
    end (docs/design.md, "Warm imports"). With a server of the user's own
    (``PREFECT_API_URL``), deployments' runs and runs of the command line keep them.
    """
    from prefect.settings import temporary_settings

    with temporary_settings(updates={"flows.heartbeat_frequency": None}):
        yield


def _start_early_server(home: Path | None) -> TemporaryServer | None:
    """Start Prefect's temporary server for this process before Prefect is imported, and
    point Prefect at it (``PREFECT_API_URL``); None when it is not this process's to start
    (no home set by :func:`prefect_home`, a server chosen, Prefect already imported)."""
    import atexit

    from paperwatch.prefect_server import TemporaryServer, setup_key, template_path

    if home is None or "PREFECT_API_URL" in os.environ or "prefect" in sys.modules:
        return None
    if _prefect_settings_files():
        return None  # Prefect reads them, and may be told of a server there: its own start
    own_database = {
        "PREFECT_API_DATABASE_CONNECTION_URL",
        "PREFECT_SERVER_DATABASE_CONNECTION_URL",
    } & set(os.environ)
    key = None if own_database else setup_key()
    template = None if key is None else template_path(key)
    timeout = float(
        os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", SERVER_STARTUP_TIMEOUT_S)
    )
    server = TemporaryServer(home, template, timeout)
    server.start()
    atexit.register(server.stop)
    assert server.process is not None
    from paperwatch.ingest.workers import start_server_guard

    start_server_guard(server.process.pid)
    os.environ["PREFECT_API_URL"] = server.api_url
    # Its UI is off (as in Prefect's own temporary server): no "View at <url>" run links.
    os.environ.setdefault("PREFECT_UI_URL", "")
    return server


def _prefect_settings_files() -> list[Path]:
    """The files of the working directory Prefect reads settings from besides profiles:
    ``prefect.toml``, ``.env`` holding a ``PREFECT_`` variable, ``pyproject.toml`` with a
    ``[tool.prefect]`` table (Prefect 3's settings sources)."""
    found = []
    for name, mark in (
        ("prefect.toml", ""),
        (".env", "PREFECT_"),
        ("pyproject.toml", "tool.prefect"),
    ):
        path = Path(name)
        try:
            if path.is_file() and mark in path.read_text(encoding="utf-8", errors="replace"):
                found.append(path)
        except OSError:
            continue
    return found


def _home_or_server_in_settings_files() -> bool:
    """True when a settings file of the working directory that Prefect reads
    (:func:`_prefect_settings_files`) sets its home or its server: ``home`` or ``[api]
    url`` in ``prefect.toml`` (``[tool.prefect]`` of ``pyproject.toml``), ``PREFECT_HOME``
    or ``PREFECT_API_URL`` in ``.env``. A file that cannot be read or parsed counts as
    not setting them (Prefect reports it)."""
    import tomllib

    for path in _prefect_settings_files():
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
            if path.name == ".env":
                if re.search(r"^\s*(export\s+)?PREFECT_(HOME|API_URL)\s*=", text, re.M):
                    return True
                continue
            data = tomllib.loads(text)
        except (OSError, tomllib.TOMLDecodeError):
            continue
        if path.name == "pyproject.toml":
            data = data.get("tool", {}).get("prefect", {})
        api = data.get("api", {})
        if "home" in data or (isinstance(api, dict) and "url" in api):
            return True
    return False


def _start_prefects_server() -> bool:
    """Without ``PREFECT_API_URL``: start Prefect's own temporary server now (the instance its
    client uses), one start at a time per home (the server migrates the home's SQLite
    database while it starts, which two servers must not do at once), with the guard.

    Returns:
        True when the runs go to that temporary server; False when a server was chosen
        (``PREFECT_API_URL`` from a profile or a settings file), which is checked instead.
    """
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    if url:
        _check_chosen_server(str(url))
        return False
    from filelock import FileLock
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_HOME

    from paperwatch.ingest.workers import start_server_guard

    server = SubprocessASGIServer()
    home = Path(str(PREFECT_HOME.value()))
    home.mkdir(parents=True, exist_ok=True)
    with FileLock(home / "paperwatch-server-start.lock", thread_local=False):
        server.start()
    process = server.server_process
    if process is not None and process.pid not in _guarded_servers:
        _guarded_servers.add(process.pid)
        start_server_guard(process.pid)
    return True


def _check_chosen_server(url: str) -> None:
    """Before a flow runs against the server the user chose (``PREFECT_API_URL`` from the
    environment, a profile, ``prefect.toml`` or ``.env``): check that it answers and speaks
    this Prefect's API (Prefect's own ``raise_for_api_version_mismatch``, the check its
    first flow run makes), so that a server that is down is one clear ``error:`` line
    naming the URL and where it was set, not an unexpected ``RuntimeError``.

    Raises:
        typer.Exit: (1) the server does not answer or runs an incompatible Prefect.
    """
    from prefect.client.orchestration import get_client

    try:
        with get_client(sync_client=True) as client:
            client.raise_for_api_version_mismatch()
    except RuntimeError as exc:
        raise fail(
            f"the Prefect server at {url} ({_api_url_source()}) cannot be used: {exc}. "
            "Start it (`prefect server start`), or remove PREFECT_API_URL there and "
            "paperwatch starts a temporary server of its own"
        ) from None


def _api_url_source() -> str:
    """Where ``PREFECT_API_URL`` was set: the environment, the active profile, or the
    working directory's settings files (:func:`_prefect_settings_files`)."""
    if "PREFECT_API_URL" in os.environ:
        return "set in the environment"
    from prefect.context import get_settings_context

    profile = get_settings_context().profile
    if "PREFECT_API_URL" in {getattr(key, "name", str(key)) for key in profile.settings}:
        return f"set by the profile {profile.name!r} of {profile.source}"
    files = _prefect_settings_files()
    if files:
        return "set in " + " or ".join(str(path) for path in files)
    return "set in Prefect's settings"


class _HoldErrors(logging.Filter):
    """On the terminal's log handlers during a flow run: hold back the records that repeat
    a failure (:meth:`holds`: Prefect's "Encountered exception", "Finished in state Failed",
    task retries, tracebacks). When the command then fails, its one ``error:`` line
    says what happened and they are dropped (the log file has them); when it succeeds they
    are shown at the end."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[tuple[logging.Handler, logging.LogRecord]] = []
        self.handler: logging.Handler | None = None

    @staticmethod
    def holds(record: logging.LogRecord) -> bool:
        """True for a record that repeats a failure the ``error:`` line will state: errors,
        tracebacks, a run's "Finished in state Failed/Crashed", a failed send attempt."""
        if record.levelno >= logging.ERROR or record.exc_info:
            return True
        if record.name == "paperwatch.report.smtp" and record.levelno >= logging.WARNING:
            return True
        message = record.getMessage()
        return message.startswith("Finished in state") and not message.startswith(
            "Finished in state Completed"
        )

    def filter(self, record: logging.LogRecord) -> bool:
        if self.holds(record):
            if self.handler is not None:
                self.held.append((self.handler, record))
            return False
        return True


def _console_handlers() -> list[logging.Handler]:
    """The handlers that write to the terminal: stream handlers of the root logger (where
    Prefect's console handler sits; the flow-run loggers propagate to it) that are not files."""
    return [
        h
        for h in logging.getLogger().handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]


def _not_shutdown_noise(record: logging.LogRecord) -> bool:
    """False for Prefect's note at exit that it is still sending events or logs to its API
    ("Still processing items: n items remaining..."): housekeeping of the client, printed
    after the command's last line on a busy machine; it stays in the log file."""
    return not record.getMessage().startswith("Still processing items:")


class _LogFile(logging.FileHandler):
    """The run's log file; a write that fails (a full disk) stops it quietly instead of
    printing logging's own error report on the terminal."""

    def handleError(self, record: logging.LogRecord) -> None:
        self.setLevel(logging.CRITICAL + 1)


def _open_log_file(log_path: Path | None) -> logging.Handler | None:
    """A handler appending to ``log_path`` (its folder made), or None when there is no log
    file or it cannot be opened (a read-only folder: the terminal still says what failed)."""
    if log_path is None:
        return None
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        handler = _LogFile(log_path, encoding="utf-8")
    except OSError:
        return None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    return handler


def _traceback(exc: BaseException) -> str:
    import traceback

    return "".join(traceback.format_exception(exc))


@contextmanager
def short_run_errors(
    *expected: type[BaseException], settings: Settings | None = None
) -> Iterator[None]:
    """Around a flow run of the command line: one error, one line.

    Every log record of the run also goes to the log file (setting ``log_file``, default
    ``<database name>.log`` beside the database), tracebacks included. On the terminal,
    Prefect's error records are held back (:class:`_HoldErrors`) and dropped when the run
    fails, so that the command's own ``error:`` line is the only one; with ``--debug``
    they are shown as they come. An exception not among ``expected`` (a fault of
    paperwatch itself) ends in one ``error:`` line naming it and the log file, which holds
    its traceback (``--debug`` raises it instead).
    """
    log_path = settings.log_path if settings is not None else None
    root = logging.getLogger()
    file_handler = _open_log_file(log_path)
    if file_handler is not None:
        root.addHandler(file_handler)
    filters: list[tuple[logging.Handler, _HoldErrors]] = []
    for handler in _console_handlers():
        if _not_shutdown_noise not in handler.filters:  # kept until exit, where it is logged
            handler.addFilter(_not_shutdown_noise)
    if not show_debug:
        for handler in _console_handlers():
            hold = _HoldErrors()
            hold.handler = handler
            handler.addFilter(hold)
            filters.append((handler, hold))
    failed = False
    try:
        yield
    except BaseException as exc:
        failed = True
        passes = (*expected, typer.Exit)
        if isinstance(exc, passes) or not isinstance(exc, Exception):
            raise
        if file_handler is not None:
            file_handler.emit(
                logging.LogRecord(
                    "paperwatch.cli", logging.ERROR, __file__, 0, _traceback(exc), None, None
                )
            )
        if show_debug:
            raise
        where = (
            f"the traceback is in {log_path}; --debug shows it here"
            if file_handler
            else "--debug shows the traceback"
        )
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise fail(
            f"unexpected {type(exc).__name__}{': ' + first if first else ''} ({where}); "
            "please report it"
        ) from None
    finally:
        for handler, hold in filters:
            handler.removeFilter(hold)
            if not failed:
                for target, record in hold.held:
                    target.handle(record)
        if file_handler is not None:
            root.removeHandler(file_handler)
            with contextlib.suppress(OSError):  # the buffered rest could not be written
                file_handler.close()
