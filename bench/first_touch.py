"""What it costs this machine to touch memory a process has not used yet.

``python bench/first_touch.py [--mb 400] [--pauses 0,0,3,0,6,0]``

For each pause: sleep that many seconds, then allocate ``--mb`` MB with NumPy, write
every page once, and free it; print the seconds the writing took. With no pause the
pages just freed are handed out again; after a pause of a few seconds a virtual machine
whose balloon reports free pages to its host (virtio-balloon free page reporting) has
given them back, and every page faults through to the host again.

Why it matters for paperwatch: an ingest allocates and frees the same few hundred
megabytes per batch (Polars frames, NumPy arrays of shingle hashes, DuckDB buffers), and
Polars gives freed memory back to the system within about 1.5 s (the jemalloc options
``dirty_decay_ms:500,muzzy_decay_ms:1000`` that ``polars/__init__.py`` sets). Where this
script shows a large gap between the two kinds of row, a run's system time and part of
its user time go to faulting memory in again; bench/RESULTS.md says what was tried
against it. The first round touches memory the process never used.
"""

from __future__ import annotations

import argparse
import mmap
import time

import numpy as np


def touch(mb: int) -> float:
    """Seconds to allocate ``mb`` MiB and write one byte of each page (``mmap.PAGESIZE``
    bytes) once; the array is then freed."""
    started = time.perf_counter()
    block = np.empty(mb << 20, dtype=np.uint8)
    block[:: mmap.PAGESIZE] = 1
    elapsed = time.perf_counter() - started
    del block
    return elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=400, help="MiB per round [default: 400]")
    parser.add_argument(
        "--pauses",
        default="0,0,3,0,6,0",
        help="seconds to wait before each round, comma-separated [default: 0,0,3,0,6,0]",
    )
    args = parser.parse_args(argv)
    for pause in (float(p) for p in args.pauses.split(",")):
        time.sleep(pause)
        seconds = touch(args.mb)
        print(
            f"after {pause:4.1f} s idle: {args.mb} MiB touched in {seconds:6.3f} s "
            f"({args.mb / seconds:8.0f} MiB/s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
