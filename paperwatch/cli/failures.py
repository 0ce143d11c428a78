"""What a failed command prints and exits with: settings, database and file-system errors.

Each function returns the :class:`typer.Exit` to raise after printing one ``error:`` line
(:func:`paperwatch.exits.fail`); exit statuses are those of docs/cli.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from paperwatch.exits import EXIT_DAMAGED, EXIT_LOCKED, EXIT_REFUSED, fail

if TYPE_CHECKING:
    from paperwatch.settings import Settings


def load_settings_or_exit(**overrides: object) -> Settings:
    """The settings with the command's options as ``overrides``; exit 2 when invalid.

    A ``PAPERWATCH_*`` variable that names no setting gets a ``warning:`` line on stderr
    (with the setting it probably means): it is otherwise ignored."""
    from pydantic import ValidationError

    from paperwatch.settings import load_settings, unknown_variables

    for name, close in unknown_variables(os.environ):
        hint = f" (did you mean {close}?)" if close else ""
        typer.secho(
            f"warning: {name} names no setting and is ignored{hint}",
            fg=typer.colors.YELLOW,
            err=True,
        )
    try:
        return load_settings(**overrides)
    except ValidationError as exc:
        raise fail(settings_errors(exc), code=EXIT_REFUSED) from None
    except ValueError as exc:
        raise fail(str(exc), code=EXIT_REFUSED) from None


def settings_errors(exc: Any) -> str:
    """A pydantic ``ValidationError`` of the settings as one line naming each setting, its
    environment variable and what is wrong (``timezone (PAPERWATCH_TIMEZONE): unknown …``)."""
    parts = []
    for error in exc.errors():
        path = [str(p) for p in error.get("loc", ())]
        name = ".".join(path) or "settings"
        variable = "PAPERWATCH_" + "__".join(p.upper() for p in path)
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        given = error.get("input")
        shown = f" (given {given!r})" if isinstance(given, str | int | float) else ""
        parts.append(f"{name} ({variable} or paperwatch.toml): {message}{shown}")
    return "invalid settings: " + "; ".join(parts)


def database_failures() -> tuple[type[Exception], ...]:
    """The failures of the database itself, which :func:`database_exit` maps to an exit."""
    from paperwatch.db import DatabaseDamagedError, DatabaseError, DatabaseLockedError
    from paperwatch.db.writer_lock import WriterLockTimeout

    return (DatabaseLockedError, WriterLockTimeout, DatabaseDamagedError, DatabaseError)


@contextmanager
def run_exits(settings: Settings, *plain: type[Exception]) -> Iterator[None]:
    """Around a run: a failure of the database ends the command as :func:`database_exit`
    says, one of ``plain`` with its message (exit 1), any other ``OSError`` as
    :func:`os_error_exit` says. An exit already decided (``typer.Exit``, which is a
    ``RuntimeError`` too) passes unchanged."""
    try:
        yield
    except typer.Exit:
        raise
    except database_failures() as exc:
        raise database_exit(settings, exc) from None
    except plain as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise os_error_exit(settings, exc) from None


def database_exit(settings: Settings, exc: Exception) -> typer.Exit:
    """One ``error:`` line and the exit status for a failure of the database itself:
    3 when another process held it too long, 4 when the file is damaged, 1 otherwise."""
    from paperwatch import db
    from paperwatch.db.writer_lock import WriterLockTimeout

    if isinstance(exc, db.DatabaseLockedError | WriterLockTimeout):
        return fail(str(exc), code=EXIT_LOCKED)
    if isinstance(exc, db.DatabaseDamagedError):
        return fail(str(exc), code=EXIT_DAMAGED)
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if db.is_disk_full(exc):
        return fail(
            f"the disk holding {settings.database} is full ({first}); the write that failed "
            "was rolled back, so the database holds what it held before it (a run records "
            "the files it loaded before). Free some space and run again"
        )
    if re.search(r"read-only file system|permission denied", first, re.IGNORECASE):
        return fail(
            f"cannot write {settings.database} or its folder ({first}); paperwatch writes "
            "the database, its write-ahead log and its lock file there, and wrote nothing: "
            "make them writable for this user, or give --database in a writable folder"
        )
    if db.is_damage(exc):
        damaged = db.damaged_error(settings.database, first, before_write=False)
        return fail(str(damaged), code=EXIT_DAMAGED)
    return fail(f"cannot use {settings.database} as a paperwatch database: {first}")


def os_error_exit(settings: Settings, exc: OSError) -> typer.Exit:
    """One ``error:`` line for a file-system failure of a run (exit status 1): a full disk,
    or a folder paperwatch cannot write (the database's: the database, its write-ahead
    log and lock files; the report folder), named with what to do."""
    from paperwatch import db

    database = settings.database
    reason = exc.strerror or str(exc)
    name = str(exc.filename) if exc.filename else ""
    if db.is_disk_full(exc):
        return fail(
            f"the disk holding {name or database} is full ({reason}); the write that failed "
            "was rolled back, so the database holds what it held before it (a run records "
            "the files it loaded before). Free some space and run again"
        )
    report_dir = settings.report_dir.resolve()
    if name and (
        Path(name).resolve() == report_dir or Path(name).resolve().is_relative_to(report_dir)
    ):
        remedy = (
            "move the folder aside, or give --report-dir"
            if isinstance(exc, IsADirectoryError)
            else f"make the report folder {settings.report_dir} writable for this user, or "
            "give --report-dir"
        )
        return fail(f"cannot write the report ({reason}: {name}); {remedy}")
    if name and Path(name).resolve().parent == database.resolve().parent:
        return fail(
            f"cannot write in the database's folder {database.parent} ({reason}: {name}); "
            "paperwatch writes the database, its write-ahead log and its lock file there, "
            "and wrote nothing: make the folder writable for this user, or give --database "
            "in a writable one"
        )
    return fail(f"{reason}{': ' + name if name else ''}")
