"""How the ``paperwatch`` process ends: its exit status, without the interpreter's teardown."""

from __future__ import annotations

import contextlib
import logging
import os
import sys


class ExitStatus:
    """The status the ``paperwatch`` process exits with (set by :func:`paperwatch.cli.main`)."""

    code = 1


def status_of(code: object) -> int:
    """A ``SystemExit.code`` as the process's exit status, as Python maps it (None: 0; an
    integer: itself; anything else, which Python prints to stderr: 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 1


def exit_without_teardown() -> None:
    """The last exit handler of the ``paperwatch`` process: flush logging and the standard
    streams, then end the process with :data:`ExitStatus.code` at once.

    By then the command's work is closed, threads are joined and the other exit handlers
    have run; what teardown would still do is free every object of every imported module
    one by one (docs/design.md, "Exit without the interpreter's teardown").
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(ExitStatus.code)
