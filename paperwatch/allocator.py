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
    """Keep memory Polars freed for up to 30 s (:data:`ALLOCATOR_CONF`) instead of about 1.5 s.

    Sets :data:`ALLOCATOR_CONF_ENV` in ``os.environ`` when it is unset, empty or exactly
    :data:`POLARS_OWN_ALLOCATOR_CONF`; any other (the user's) value is left alone. Takes
    effect in processes started from now on, and in this one if Polars is not imported yet.
    Why, with figures: docs/design.md, "Polars' allocator: keeping freed memory".

    Returns:
        True when the option was added, False when the user's value was kept.
    """
    current = os.environ.get(ALLOCATOR_CONF_ENV, "")
    if current not in ("", POLARS_OWN_ALLOCATOR_CONF):
        return False
    os.environ[ALLOCATOR_CONF_ENV] = f"{current},{ALLOCATOR_CONF}" if current else ALLOCATOR_CONF
    return True
