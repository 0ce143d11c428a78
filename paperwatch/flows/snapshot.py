"""The ``publish-snapshot`` task: republish the analysts' read-only snapshot after a run wrote.

Both flows call :func:`publish_after_run` at their end, while they still hold the
writer lock (:mod:`paperwatch.db.writer_lock`), so no other run writes during the copy.
The work is :func:`paperwatch.db.snapshot.publish_snapshot`.
"""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from paperwatch.db.snapshot import PublishedSnapshot, publish_snapshot
from paperwatch.settings import Settings


@task(name="publish-snapshot", retries=1, retry_delay_seconds=[2], cache_policy=NO_CACHE)
def publish_snapshot_task(settings: Settings) -> PublishedSnapshot | None:
    """Copy the database to ``settings.snapshot_path`` atomically; None when disabled.

    Raises:
        paperwatch.db.DatabaseLockedError, duckdb.Error, OSError: from
            :func:`~paperwatch.db.snapshot.publish_snapshot` (after one retry).
    """
    target = settings.snapshot_path
    if target is None:
        return None
    published = publish_snapshot(settings.database, target, settings.lock_timeout_s)
    get_run_logger().info(
        "snapshot for SQL: %s (%d papers, %.1f MB, %.1f s)",
        published.path,
        published.papers,
        published.size_bytes / 1e6,
        published.seconds,
    )
    return published


def publish_after_run(settings: Settings) -> PublishedSnapshot | None:
    """Run :func:`publish_snapshot_task`; a failure is logged, not raised: the run's own
    work is done and committed, and the next run that writes publishes again.

    Returns:
        What was published; None when disabled or when it failed.
    """
    try:
        return publish_snapshot_task(settings)
    except Exception as exc:  # the snapshot is a convenience; the run's data is committed
        get_run_logger().error(
            "the snapshot for SQL (%s) was not republished: %s; it still shows the previous run",
            settings.snapshot_path,
            exc,
        )
        return None
