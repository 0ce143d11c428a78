"""How a command ends: one ``error:`` line on stderr and an exit status.

Exit statuses (docs/cli.md): 0 done, 1 failed, 2 refused (bad usage, already sent, a future
--as-of), 3 the database stayed locked, 4 the database is damaged.
"""

from __future__ import annotations

import typer

EXIT_FAILED, EXIT_REFUSED, EXIT_LOCKED, EXIT_DAMAGED = 1, 2, 3, 4


def fail(message: str, code: int = EXIT_FAILED) -> typer.Exit:
    """Print ``error: <message>`` on stderr; the exit to raise (1: failed, 2: refused)."""
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(code=code)


class Terminated(SystemExit):
    """SIGTERM, raised in the main thread (status 143) so that ``finally`` blocks run."""


def terminated(signum: int, frame: object) -> None:
    """A SIGTERM handler: raise :class:`Terminated`."""
    raise Terminated(128 + signum)


def interrupted(by: str) -> None:
    """Print the ``error:`` line of a command stopped by ``by`` (Ctrl-C, SIGTERM)."""
    typer.secho(
        f"error: stopped by {by} before it finished; what it committed stays (an "
        "ingestion keeps the batches it loaded): run it again to finish",
        fg=typer.colors.RED,
        err=True,
    )
