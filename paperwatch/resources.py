"""Where the project's non-Python files live (sql/, reports/templates/, expectations/).

In a checkout (an editable install) they are the top-level folders of the
repository; in a built wheel they are copied under ``paperwatch/_resources/``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_ALIASES = {"templates": Path("reports") / "templates"}


@cache
def resource_dir(name: str) -> Path:
    """Return the folder ``name`` (``sql``, ``templates`` or ``expectations``).

    Raises:
        FileNotFoundError: neither the checkout nor the wheel layout has it.
    """
    candidates = [_PACKAGE / "_resources" / name, _PACKAGE.parent / _ALIASES.get(name, Path(name))]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"paperwatch resource folder {name!r} not found in {candidates}")
