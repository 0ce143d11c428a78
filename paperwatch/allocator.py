"""Polars' allocator options for the processes paperwatch runs: memory Polars freed is
kept a while for reuse (:func:`keep_freed_memory`).

Only the standard library is imported here: the command line calls it at start-up, before
anything imports Polars, and ``--help`` should not pay for more.
"""

from __future__ import annotations

import os

#: The environment variable Polars' allocator (jemalloc) reads its options from, once, when
#: Polars is first imported in a process; ``polars/__init__.py`` writes its own options
#: there first (:data:`POLARS_OWN_ALLOCATOR_CONF`) and the user's after them.
ALLOCATOR_CONF_ENV = "_RJEM_MALLOC_CONF"
#: What Polars 2.1 writes to :data:`ALLOCATOR_CONF_ENV` when the user set nothing.
POLARS_OWN_ALLOCATOR_CONF = "dirty_decay_ms:500,muzzy_decay_ms:1000"
#: paperwatch's option: memory Polars freed stays with the process for up to 30 s (Polars'
#: own: 0.5 s, then 1 s more before it is handed back). See :func:`keep_freed_memory`.
ALLOCATOR_CONF = "dirty_decay_ms:30000"


def keep_freed_memory() -> bool:
    """Let the processes paperwatch starts from now on, and this one when Polars is not
    imported yet, keep memory Polars freed for up to 30 s (:data:`ALLOCATOR_CONF`)
    instead of Polars' about 1.5 s, by adding it to :data:`ALLOCATOR_CONF_ENV` in
    ``os.environ`` when it is unset, empty, or exactly :data:`POLARS_OWN_ALLOCATOR_CONF`
    (which Polars writes there when it loads, so processes a run starts inherit it);
    any other value, the user's, is left alone.

    Why: a backfill frees and allocates hundreds of megabytes per batch in each process,
    and memory handed back to the system comes back through page faults (on the
    project's kind of virtual machine at about 200 MB/s, 40 times slower than memory
    the process kept: ``bench/first_touch.py``). In a 100,000-abstract backfill the
    run's processes took about 3.3 million minor page faults and 9 CPU-s of system time;
    with 30 s, 1.7-1.8 million and 6 CPU-s, and the run 1-2 s shorter; at 1,000,000
    abstracts the process tree's peak RSS grew by about 400-450 MiB (bench/RESULTS.md,
    round of 2026-12-05, morning).

    Returns:
        True when the option was added, False when the user's value was kept.
    """
    current = os.environ.get(ALLOCATOR_CONF_ENV, "")
    if current not in ("", POLARS_OWN_ALLOCATOR_CONF):
        return False
    os.environ[ALLOCATOR_CONF_ENV] = f"{current},{ALLOCATOR_CONF}" if current else ALLOCATOR_CONF
    return True
