"""The two deployments, built from the settings: what ``paperwatch serve`` serves.

``prefect.yaml`` at the top of the repository declares the same two deployments
for ``prefect deploy`` with a process work pool; keep them in step.

- ``ingest-listings/ingest-listings``: an interval schedule (every
  ``schedule.ingest_interval_minutes``, the safety net) and a
  :class:`~prefect.events.DeploymentEventTrigger` on the watcher's event
  (:data:`paperwatch.ingest.watch.EVENT_NAME`, resource ``paperwatch.folder.<folder>``),
  so a run starts seconds after a file lands. A deployment concurrency limit of 1
  with the ``ENQUEUE`` collision strategy serialises the runs: a run triggered
  while one is going waits (state ``AwaitingConcurrencySlot``) instead of being
  cancelled (``CANCEL_NEW`` would drop it; see PITFALLS). Every run processes every
  pending file, so several queued runs after a burst cost a stat each.
- ``weekly-report/weekly-report``: a cron schedule (``schedule.report_cron``,
  default Monday 08:00) in ``timezone`` (IANA; the cron is evaluated in local
  time, so 08:00 stays 08:00 across daylight saving changes), reporting the ISO
  week that ended before the run (``last_completed_week=True``).

Both flows also hold the writer lock beside the database
(:mod:`paperwatch.db.writer_lock`), so the report waits for a running ingestion and
manual CLI runs never write at the same time as a served run.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
from prefect.deployments.runner import RunnerDeployment
from prefect.events import DeploymentEventTrigger
from prefect.schedules import Cron
from prefect.types.entrypoint import EntrypointType

from paperwatch.flows.ingest import ingest_listings
from paperwatch.flows.report import weekly_report
from paperwatch.ingest.watch import EVENT_NAME, folder_resource_id
from paperwatch.settings import Settings

#: Deployment names (each equal to its flow's name: ``ingest-listings/ingest-listings``).
INGEST_DEPLOYMENT = "ingest-listings"
REPORT_DEPLOYMENT = "weekly-report"


def ingest_concurrency() -> ConcurrencyLimitConfig:
    """One ingestion run at a time; further runs queue (``ENQUEUE``), never cancelled."""
    return ConcurrencyLimitConfig(limit=1, collision_strategy=ConcurrencyLimitStrategy.ENQUEUE)


def arrival_trigger(folder: Path) -> DeploymentEventTrigger:
    """Run the deployment on each :data:`~paperwatch.ingest.watch.EVENT_NAME` event about ``folder``.

    The match is on the event's resource id, ``paperwatch.folder.<absolute path>``,
    so a watcher of another folder does not start this deployment. Each event
    starts one run (the watcher already batches files into few events).
    """
    return DeploymentEventTrigger(
        name="listing-arrived",
        description=f"a listing file settled in {folder.resolve()}",
        expect={EVENT_NAME},
        match={"prefect.resource.id": folder_resource_id(folder)},
    )


def build_deployments(settings: Settings) -> list[RunnerDeployment]:
    """Build the ``ingest-listings`` and ``weekly-report`` deployments from ``settings``.

    Paths (watched folder, database, report folder) are made absolute, so runs do
    not depend on the working directory; entrypoints are module paths
    (``paperwatch.flows.ingest.ingest_listings``): importable wherever paperwatch is
    installed.

    Returns:
        ``[ingest_deployment, report_deployment]``, ready for :func:`prefect.serve`.
    """
    folder = settings.watch_dir.resolve()
    database = settings.database.resolve()
    ingest = ingest_listings.to_deployment(
        name=INGEST_DEPLOYMENT,
        description="Load every new or changed listing file of the watched folder.",
        interval=timedelta(minutes=settings.schedule.ingest_interval_minutes),
        triggers=[arrival_trigger(folder)],
        concurrency_limit=ingest_concurrency(),
        parameters={"folder": str(folder), "database": str(database)},
        tags=["paperwatch"],
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    report = weekly_report.to_deployment(
        name=REPORT_DEPLOYMENT,
        description="Render the report of the ISO week that just ended.",
        schedules=[Cron(settings.schedule.report_cron, timezone=settings.timezone)],
        # The report holds the writer lock too; the limit only keeps a late run and
        # a manual one from queueing up on the lock side by side.
        concurrency_limit=ConcurrencyLimitConfig(
            limit=1, collision_strategy=ConcurrencyLimitStrategy.ENQUEUE
        ),
        parameters={
            "database": str(database),
            "report_dir": str(settings.report_dir.resolve()),
            "last_completed_week": True,
            # E-mail the report once readers are configured (smtp.recipients or smtp.readers).
            "send": bool(settings.smtp.recipients or settings.smtp.readers),
        },
        tags=["paperwatch"],
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    # to_deployment is sync-compatible: called from sync code it returns the deployment.
    assert isinstance(ingest, RunnerDeployment) and isinstance(report, RunnerDeployment)
    return [ingest, report]


def serve_deployments(settings: Settings, limit: int | None = None) -> None:
    """Serve both deployments from this process until it is stopped (blocks).

    Stopping it (Ctrl-C, SIGTERM) leaves the schedules active
    (``pause_on_shutdown=False``; Prefect's default would pause them), so a
    restarted ``paperwatch serve`` or a worker picks up where it left off.

    Args:
        settings: the settings the deployments are built from.
        limit: most flow runs this process executes at once (None: no limit).
    """
    from prefect import serve

    serve(*build_deployments(settings), pause_on_shutdown=False, limit=limit)
