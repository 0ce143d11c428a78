"""Where the trending section of a week's report spends its time.

Opens a database read-only, computes the week's trending terms (``persist=False``:
nothing is stored) ``--repeat`` times and prints, per run, the wall seconds of the whole
and of each step of :mod:`paperwatch.db.trends` (acronym aliases, document frequencies,
paper-set keys, examples, charts). Prints the load average before and after.

    python bench/trending_profile.py DATABASE WEEK [--repeat 3]

A database of the 100k corpus: ``python bench/cli.py --size 100k --cases ingest`` leaves
it in ``/tmp/paperwatch-bench/db-100k/``; its week is 2026-W41.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paperwatch import db  # noqa: E402
from paperwatch.db import trends  # noqa: E402
from paperwatch.settings import Settings  # noqa: E402

#: The steps of trends.trending_terms_for_week that are timed (module-level functions).
STEPS = (
    "_week_sizes",
    "_aliases",
    "_document_frequencies",
    "paper_set_keys",
    "_examples",
    "_histories",
)


def _timed(name: str, times: dict[str, float]) -> None:
    """Replace ``trends.<name>`` by a wrapper adding its wall seconds to ``times[name]``."""
    original: Callable[..., Any] = getattr(trends, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            times[name] = times.get(name, 0.0) + time.perf_counter() - start

    setattr(trends, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", type=Path)
    parser.add_argument("week")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, float] = {}
    for name in STEPS:
        if hasattr(trends, name):
            _timed(name, times)
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    with db.reader(args.database) as con:
        for run in range(1, args.repeat + 1):
            times.clear()
            start = time.perf_counter()
            result = trends.trending_terms_for_week(con, args.week, Settings(), persist=False)
            total = time.perf_counter() - start
            steps = "  ".join(f"{k.strip('_')} {v:.2f}" for k, v in times.items())
            print(f"run {run}: trending {total:.2f} s ({len(result.shown)} rows)  {steps}")
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
